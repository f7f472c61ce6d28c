#include "runtime/js/js_workflow_worker.h"

#include <algorithm>
#include <string>
#include <utility>

#include "base/check.h"
#include "base/log.h"
#include "runtime/js/js_workflow_host.h"

namespace stele::runtime::js {

namespace {
namespace wf = runtime::workflow;
using Kind = JsError::Kind;

// The reason of a slice overrun in `limits.attempt` (final: permanent).
std::string SliceError(const JsRunLimits& limits, bool final) {
  std::string text = "the workflow exceeded its CPU time slice: it computed for " +
                     std::to_string(limits.slice.slice.count()) + " ms without a Stele operation";
  text += final ? ", in " + std::to_string(limits.attempt) + " attempts (an endless loop?)"
                : " (attempt " + std::to_string(limits.attempt) + " of " +
                      std::to_string(limits.slice_attempts) + ")";
  if (!limits.lock_expiry_setting.empty()) {
    text += "; the slice is a quarter of the workflow's lease, " + limits.lock_expiry_setting;
  }
  return text;
}
}  // namespace

JsWorkflowWorker::JsWorkflowWorker(std::shared_ptr<const JsComponent> component,
                                   JsWorkflowWorkerDeps deps)
    : component_(std::move(component)),
      deps_(std::move(deps)),
      engine_id_(component_->engine->EngineId()),
      ffqns_(component_->Ffqns()) {
  STELE_CHECK(component_->flavor == JsFlavor::kWorkflow,
              "JsWorkflowWorker needs a workflow component");
  // A run that writes its Finished itself names the engine there too.
  deps_.run_options.engine = engine_id_;
  slice_.slice = deps_.guest_slice;
  if (deps_.run_options.lock_extension.count() > 0) {
    slice_.slice = std::min(slice_.slice, deps_.run_options.lock_extension / 4);
  }
  slice_.margin = deps_.run_options.lock_extension_leeway;
}

executor::WorkerResult JsWorkflowWorker::Run(executor::WorkerContext ctx) {
  executor::WorkerResult result = RunGuest(std::move(ctx));
  result.engine = engine_id_;
  return result;
}

executor::WorkerResult RunJsWorkflow(const JsComponent& component, wf::WorkflowRun& run,
                                     const Clock* clock, const JsRunLimits& limits,
                                     const CancellationToken& cancel,
                                     const BacktraceSink& store_backtraces) {
  const std::string id = run.execution_id().ToString();
  const RunInfo info{id, run.ffqn().ToString(), 1, 0, {}};
  JsWorkflowHost host(run, component.component_id, clock, limits.slice);
  auto outcome = component.engine->Run(*component.module, info.ffqn, info, run.params(), host,
                                       RunBudget{limits.slice.slice, cancel});
  if (store_backtraces) {
    if (auto traces = host.TakeBacktraces(); !traces.empty()) store_backtraces(std::move(traces));
  }
  if (!outcome) {
    const JsError& error = outcome.error();
    if (auto interruption = host.interruption()) return run.ToWorkerResult(*interruption);
    switch (error.kind) {
      case Kind::kInterrupted:
        if (cancel.IsCancelled()) {
          return run.ToWorkerResult(wf::Interruption{wf::Interruption::Kind::kCancelled,
                                                     "the run was cancelled", std::nullopt});
        }
        // The slice ran out (the guest stopped before its lease did).
        if (limits.attempt >= limits.slice_attempts) {
          std::string reason = SliceError(limits, /*final=*/true);
          STELE_LOG(kWarn, id << ": " << reason);
          return run.Fail(executor::FatalErrorKind::kOutOfFuel, std::move(reason),
                          error.ToString());
        } else {
          std::string reason = SliceError(limits, /*final=*/false);
          STELE_LOG(kInfo, id << ": " << reason << "; will be retried");
          return executor::WorkerResult::Err(run.version(),
                                             executor::TemporaryTimeout{{}, std::move(reason)});
        }
      case Kind::kStackOverflow:
      case Kind::kEngine:
        return executor::WorkerResult::Err(run.version(), executor::LimitReached{error.ToString()});
      case Kind::kBadResult:
        return executor::WorkerResult::Fatal(
            run.version(), executor::FatalErrorKind::kResultParsingError, error.message);
      case Kind::kNoSuchFunction:
        return executor::WorkerResult::Fatal(
            run.version(), executor::FatalErrorKind::kCannotInstantiate, error.message);
      default:
        return run.Trap(error.message, error.ToString());
    }
  }
  return run.Finish(ToReturnValue(outcome->ok, std::move(outcome->value)));
}

executor::WorkerResult JsWorkflowWorker::RunGuest(executor::WorkerContext ctx) {
  if (component_->Find(ctx.ffqn) == nullptr) {
    return executor::WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kCannotInstantiate,
                                         "component " + component_->component_id.ToString() +
                                             " does not export " + ctx.ffqn.ToString());
  }
  const CancellationToken cancel = ctx.cancel;
  JsRunLimits limits;
  limits.slice = slice_;
  limits.attempt = ctx.intermittent_event_count + 1;
  limits.slice_attempts = deps_.guest_slice_attempts;
  if (deps_.run_options.lock_extension.count() > 0) {
    limits.lock_expiry_setting = deps_.lock_expiry_setting;
  }
  wf::WorkflowRun run(std::move(ctx),
                      wf::WorkflowRunDeps{deps_.db.get(), deps_.clock.get(), deps_.functions,
                                          deps_.dispatch, deps_.handoff, deps_.cancel_registry},
                      deps_.run_options);
  BacktraceSink store;
  if (deps_.store_backtraces) {
    store = [&](std::vector<core::BacktraceInfo> traces) {
      for (auto& trace : traces) trace.wasm_backtrace.engine = engine_id_;
      deps_.db->StoreBacktraces(std::move(traces));
    };
  }
  return RunJsWorkflow(*component_, run, deps_.clock.get(), limits, cancel, store);
}

}  // namespace stele::runtime::js
