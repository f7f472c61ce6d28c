#include "core/component_id.h"

#include <string>

#include "base/check.h"

namespace stele::core {
namespace {

constexpr std::string_view kDigestPrefix = "sha256:";
constexpr char kHexDigits[] = "0123456789abcdef";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is rejected: the text form is canonical
}

struct ComponentTypeEntry {
  ComponentType type;
  std::string_view name;
};
constexpr ComponentTypeEntry kComponentTypes[] = {
    {ComponentType::kActivityWasm, "activity_wasm"},
    {ComponentType::kActivityStub, "activity_stub"},
    {ComponentType::kActivityExternal, "activity_external"},
    {ComponentType::kActivityExec, "activity_exec"},
    {ComponentType::kActivityNative, "activity_native"},
    {ComponentType::kWorkflow, "workflow"},
    {ComponentType::kWorkflowNative, "workflow_native"},
    {ComponentType::kWebhookEndpoint, "webhook_endpoint"},
    {ComponentType::kActivityJs, "activity_js"},
    {ComponentType::kWorkflowJs, "workflow_js"},
};

}  // namespace

bool IsWorkflowComponentType(ComponentType type) {
  return type == ComponentType::kWorkflow || type == ComponentType::kWorkflowNative ||
         type == ComponentType::kWorkflowJs;
}

Result<InputContentDigest, IdParseError> InputContentDigest::Parse(std::string_view text) {
  const auto error = [&] {
    return Unexpected(IdParseError{"invalid digest `" + std::string(text) +
                                   "`: expected `sha256:` and 64 lowercase hex digits"});
  };
  if (text.size() != kDigestPrefix.size() + 64 ||
      text.substr(0, kDigestPrefix.size()) != kDigestPrefix) {
    return error();
  }
  Bytes bytes{};
  const std::string_view hex = text.substr(kDigestPrefix.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int high = HexValue(hex[2 * i]);
    const int low = HexValue(hex[2 * i + 1]);
    if (high < 0 || low < 0) return error();
    bytes[i] = static_cast<uint8_t>(high * 16 + low);
  }
  return InputContentDigest(bytes);
}

std::string InputContentDigest::ToString() const {
  std::string out(kDigestPrefix);
  out.reserve(kDigestPrefix.size() + 2 * bytes_.size());
  for (uint8_t byte : bytes_) {
    out.push_back(kHexDigits[byte >> 4]);
    out.push_back(kHexDigits[byte & 0xf]);
  }
  return out;
}

std::string_view ComponentTypeName(ComponentType type) {
  for (const ComponentTypeEntry& entry : kComponentTypes) {
    if (entry.type == type) return entry.name;
  }
  STELE_CHECK(false, "unknown ComponentType");
  return {};
}

Result<ComponentType, IdParseError> ParseComponentType(std::string_view text) {
  for (const ComponentTypeEntry& entry : kComponentTypes) {
    if (entry.name == text) return entry.type;
  }
  return Unexpected(IdParseError{"unknown component type `" + std::string(text) + "`"});
}

// Named rather than empty (Obelisk's dummies have empty names) so that the
// dummies satisfy IsValidName like every other component id.
ComponentId ComponentId::DummyActivity() {
  return ComponentId{ComponentType::kActivityWasm, "dummy_activity", InputContentDigest()};
}

ComponentId ComponentId::DummyWorkflow() {
  return ComponentId{ComponentType::kWorkflow, "dummy_workflow", InputContentDigest()};
}

bool ComponentId::IsValidName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string ComponentId::ToString() const {
  std::string out(ComponentTypeName(component_type));
  out.push_back(':');
  out += name;
  return out;
}

}  // namespace stele::core
