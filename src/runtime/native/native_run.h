// NativeRun: the bridge between the public WorkflowContext and one replay
// engine run (runtime/workflow/workflow_run.h). It turns the SDK's string
// inputs into core values and remembers interruptions the SDK itself
// raises (an ffqn that does not parse), so that the driver can unload the
// coroutine and record the right outcome.
//
// Backtraces: when the run traces calls (a component is given), every
// WorkflowContext operation is wrapped in a CallScope. An operation that
// started outside replay and moved the run's version (wrote events: its
// own and the batched ones of operations before it) gets a one-frame
// backtrace — its call site in the workflow — for [version before, version
// after), as the wasm host records one per host call. A blocking operation
// always writes, so the last backtrace shows where the workflow waits.
// Without tracing a scope costs a branch.
//
// Threading: used from the one thread driving the run. Ownership: borrows
// the WorkflowRun, which must outlive it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/source_location.h"
#include "core/backtrace.h"
#include "core/function_fqn.h"
#include "runtime/workflow/workflow_run.h"

namespace stele::runtime::native {

class NativeRun {
 public:
  // `traced_component`: the component the backtraces name; nullopt: no
  // backtraces are recorded.
  explicit NativeRun(workflow::WorkflowRun& run,
                     std::optional<core::ComponentId> traced_component = std::nullopt)
      : run_(run),
        execution_id_(run.execution_id().ToString()),
        traced_component_(std::move(traced_component)) {}

  // Spans one WorkflowContext operation called at `where`.
  class CallScope {
   public:
    CallScope(NativeRun& run, const SourceLocation& where)
        : run_(run.traced_component_ && !run.run_.IsReplaying() ? &run : nullptr), where_(where) {
      if (run_ != nullptr) before_ = run.run_.version();
    }
    ~CallScope() {
      if (run_ != nullptr) run_->RecordCall(before_, where_);
    }
    CallScope(const CallScope&) = delete;
    CallScope& operator=(const CallScope&) = delete;

   private:
    NativeRun* run_;
    SourceLocation where_;
    core::Version before_;
  };
  // The backtraces recorded so far; the run keeps none.
  std::vector<core::BacktraceInfo> TakeBacktraces() { return std::move(backtraces_); }

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
  void RecordCall(core::Version before, const SourceLocation& where) {
    const core::Version after = run_.version();
    if (after <= before) return;
    core::FrameSymbol symbol{
        where.function_name(), where.file_name(), where.line(),
        where.column() > 0 ? std::optional<uint32_t>(where.column()) : std::nullopt};
    core::WasmBacktrace trace;
    trace.frames.push_back(
        core::FrameInfo{traced_component_->name, where.function_name(), {std::move(symbol)}});
    backtraces_.push_back(core::BacktraceInfo{run_.execution_id(), *traced_component_, before,
                                              after, std::move(trace)});
  }

  workflow::WorkflowRun& run_;
  const std::string execution_id_;
  std::optional<workflow::Interruption> own_interruption_;
  const std::optional<core::ComponentId> traced_component_;
  std::vector<core::BacktraceInfo> backtraces_;
};

}  // namespace stele::runtime::native
