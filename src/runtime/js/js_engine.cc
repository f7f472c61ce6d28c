#include "runtime/js/js_engine.h"

#include <openssl/rand.h>

#include <chrono>

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

Result<double, std::string> NonDeterministicJsHost::Now() {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count());
}

Result<double, std::string> NonDeterministicJsHost::Random() {
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

Result<void, std::string> NonDeterministicJsHost::RandomBytes(std::span<uint8_t> bytes) {
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    return Unexpected(std::string("the OS random source failed"));
  }
  return {};
}

}  // namespace stele::runtime::js
