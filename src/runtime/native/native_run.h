// NativeRun: the bridge between the public WorkflowContext and one replay
// engine run (runtime/workflow/workflow_run.h). It turns the SDK's string
// inputs into core values and remembers interruptions the SDK itself
// raises (an ffqn that does not parse), so that the driver can unload the
// coroutine and record the right outcome.
//
// Threading: used from the one thread driving the run. Ownership: borrows
// the WorkflowRun, which must outlive it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/function_fqn.h"
#include "runtime/workflow/workflow_run.h"

namespace stele::runtime::native {

class NativeRun {
 public:
  explicit NativeRun(workflow::WorkflowRun& run)
      : run_(run), execution_id_(run.execution_id().ToString()) {}

  workflow::WorkflowRun& run() { return run_; }
  const std::string& execution_id() const { return execution_id_; }

  // The interruption that ended the guest: the SDK's own, else the engine's.
  std::optional<workflow::Interruption> interruption() const {
    if (own_interruption_) return own_interruption_;
    return run_.interruption();
  }

  // Parses `text`; a malformed ffqn interrupts the run (permanent failure
  // kImportedFunctionCallError naming the text).
  std::optional<core::FunctionFqn> ParseFfqn(std::string_view text) {
    auto ffqn = core::FunctionFqn::Parse(text);
    if (ffqn) return std::move(*ffqn);
    Interrupt(workflow::Interruption::Kind::kImportedFunctionCallError,
              "invalid ffqn `" + std::string(text) + "`: " + ffqn.error().message);
    return std::nullopt;
  }
  // Parses a join set handle created by this run.
  std::optional<core::JoinSetId> ParseJoinSet(std::string_view text) {
    auto id = core::JoinSetId::Parse(text);
    if (id) return std::move(*id);
    Interrupt(workflow::Interruption::Kind::kConstraintViolation,
              "invalid join set `" + std::string(text) + "`");
    return std::nullopt;
  }

  void Interrupt(workflow::Interruption::Kind kind, std::string reason) {
    if (!own_interruption_) own_interruption_ = workflow::Interruption{kind, std::move(reason), {}};
  }

 private:
  workflow::WorkflowRun& run_;
  const std::string execution_id_;
  std::optional<workflow::Interruption> own_interruption_;
};

}  // namespace stele::runtime::native
