// FunctionRegistry: what the replay engine needs to know about a function a
// workflow calls — whether it exists, which component serves it (written
// into the child's Created event), and whether it is an activity or a
// workflow (join-set closing cancels unawaited activities and delays but
// awaits child workflows, docs/model.md §8.4).
//
// Threading: Find is called from many workflow runs at once; implementations
// must be safe for concurrent const use. Ownership: the registry is owned by
// the composition root and must outlive every WorkflowRun that uses it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "core/component_id.h"
#include "core/function_fqn.h"
#include "core/function_type.h"

namespace stele::runtime::workflow {

enum class FunctionKind {
  kActivity,
  kActivityStub,  // no executor: completed by `stub` (API or a workflow)
  kWorkflow,
};

struct FunctionInfo {
  core::ComponentId component_id;
  FunctionKind kind = FunctionKind::kActivity;
  // The declared parameter and return types; nullptr: any JSON. Params of
  // the children a workflow creates are checked against it, as
  // submissions are.
  std::shared_ptr<const core::FunctionSignature> signature = nullptr;
  friend bool operator==(const FunctionInfo&, const FunctionInfo&) = default;
};

class FunctionRegistry {
 public:
  virtual ~FunctionRegistry() = default;
  // nullopt: no component exports `ffqn`.
  virtual std::optional<FunctionInfo> Find(const core::FunctionFqn& ffqn) const = 0;
};

// A fixed map, filled before use. Thread-safe for concurrent Find once
// filled.
class MapFunctionRegistry final : public FunctionRegistry {
 public:
  MapFunctionRegistry& Add(core::FunctionFqn ffqn, FunctionInfo info) {
    functions_.insert_or_assign(std::move(ffqn), std::move(info));
    return *this;
  }
  std::optional<FunctionInfo> Find(const core::FunctionFqn& ffqn) const override {
    auto it = functions_.find(ffqn);
    if (it == functions_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::map<core::FunctionFqn, FunctionInfo> functions_;
};

}  // namespace stele::runtime::workflow
