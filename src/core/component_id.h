// ComponentId: the unit of code that runs executions (a WASM file, an exec
// command, a set of C++ functions), identified by type, name and the sha256
// of its original input (`sha256:<64 lowercase hex>`).
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "core/ids.h"

namespace stele::core {

class InputContentDigest {
 public:
  using Bytes = std::array<uint8_t, 32>;
  InputContentDigest() : bytes_{} {}
  explicit InputContentDigest(const Bytes& bytes) : bytes_(bytes) {}
  // Parses "sha256:<64 lowercase hex>".
  static Result<InputContentDigest, IdParseError> Parse(std::string_view text);
  const Bytes& bytes() const { return bytes_; }
  std::string ToString() const;
  friend bool operator==(const InputContentDigest&, const InputContentDigest&) = default;
  friend auto operator<=>(const InputContentDigest&, const InputContentDigest&) = default;

 private:
  Bytes bytes_;
};

enum class ComponentType {
  kActivityWasm,
  kActivityStub,
  kActivityExternal,
  kActivityExec,
  kActivityNative,
  kWorkflow,
  kWorkflowNative,
  kWebhookEndpoint,
  kActivityJs,  // JavaScript (runtime/js, docs/js.md)
  kWorkflowJs,
};
// Whether components of `type` run workflows (kWorkflow is wasm's).
bool IsWorkflowComponentType(ComponentType type);

// snake_case names: "activity_wasm", "activity_stub", ..., "workflow_native",
// "activity_js", "workflow_js".
std::string_view ComponentTypeName(ComponentType type);
Result<ComponentType, IdParseError> ParseComponentType(std::string_view text);

struct ComponentId {
  ComponentType component_type = ComponentType::kActivityWasm;
  std::string name;  // [A-Za-z0-9_-]+
  InputContentDigest input_digest;

  // Dummy used by tests and by the differential generator.
  static ComponentId DummyActivity();
  static ComponentId DummyWorkflow();
  static bool IsValidName(std::string_view name);
  // "<type>:<name>"
  std::string ToString() const;
  friend bool operator==(const ComponentId&, const ComponentId&) = default;
};

}  // namespace stele::core
