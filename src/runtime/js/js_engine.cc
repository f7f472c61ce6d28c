#include "runtime/js/js_engine.h"

namespace stele::runtime::js {

std::string FormatStack(const std::vector<JsFrame>& frames) {
  std::string out;
  for (const JsFrame& f : frames) {
    if (!out.empty()) out += '\n';
    out += "    at " + (f.function.empty() ? std::string("<anonymous>") : f.function) + " (" +
           f.file + ":" + std::to_string(f.line) + ":" + std::to_string(f.column) + ")";
  }
  return out;
}

std::string_view JsErrorKindName(JsError::Kind kind) {
  using Kind = JsError::Kind;
  switch (kind) {
    case Kind::kInvalidModule:
      return "invalid module";
    case Kind::kNoSuchFunction:
      return "no such function";
    case Kind::kThrown:
      return "uncaught exception";
    case Kind::kPendingAwait:
      return "awaits forever";
    case Kind::kBadResult:
      return "bad result";
    case Kind::kInterrupted:
      return "interrupted";
    case Kind::kOutOfMemory:
      return "out of memory";
    case Kind::kStackOverflow:
      return "stack overflow";
    case Kind::kHostAbort:
      return "stopped by the host";
    case Kind::kEngine:
      return "engine error";
  }
  return "unknown";
}

std::string JsError::ToString() const {
  std::string out = std::string(JsErrorKindName(kind)) + ": " + message;
  if (!stack.empty()) out += "\n" + FormatStack(stack);
  return out;
}

const JsDeclaredFunction* JsModule::Find(std::string_view ffqn) const {
  for (const auto& f : functions()) {
    if (f.ffqn == ffqn) return &f;
  }
  return nullptr;
}

}  // namespace stele::runtime::js
