#include "runtime/native/workflow_worker.h"

#include <exception>
#include <string>
#include <utility>

#include "base/log.h"
#include "runtime/native/native_run.h"

namespace stele::runtime::native {

namespace {

// Parameters are copied into the coroutine frame, so `fn` outlives the
// await even when the caller's std::function goes away.
Task<WorkflowResult> RunOkOnly(WorkflowFn fn, WorkflowContext& ctx, Json params) {
  Json value = co_await fn(ctx, std::move(params));
  co_return WorkflowResult(std::move(value));
}

std::string DescribeException(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return std::string("workflow threw: ") + e.what();
  } catch (...) {
    return "workflow threw a non-std::exception";
  }
}

}  // namespace

WorkflowFnWithErr AdaptOkOnly(WorkflowFn fn) {
  return [fn = std::move(fn)](WorkflowContext& ctx, Json params) {
    return RunOkOnly(fn, ctx, std::move(params));
  };
}

NativeWorkflowWorker::NativeWorkflowWorker(std::map<core::FunctionFqn, NativeWorkflow> workflows,
                                           std::shared_ptr<storage::DbConnection> db,
                                           SharedClock clock,
                                           const workflow::FunctionRegistry* functions,
                                           const executor::LocalDispatch* dispatch,
                                           executor::ResponseHandoff* handoff,
                                           executor::CancelRegistry* cancels)
    : workflows_(std::move(workflows)),
      db_(std::move(db)),
      clock_(CheckedClock(std::move(clock), "NativeWorkflowWorker needs a clock")),
      functions_(functions),
      dispatch_(dispatch),
      handoff_(handoff),
      cancels_(cancels) {
  for (const auto& [ffqn, fn] : workflows_) ffqns_.push_back(ffqn);
}

executor::WorkerResult NativeWorkflowWorker::Run(executor::WorkerContext ctx) {
  auto it = workflows_.find(ctx.ffqn);
  if (it == workflows_.end()) {
    return executor::WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kCannotInstantiate,
                                         "no workflow registered for " + ctx.ffqn.ToString());
  }
  Json params = ctx.params;
  std::optional<core::ComponentId> traced;
  if (it->second.store_backtraces) traced = ctx.locked_event.component_id;
  workflow::WorkflowRun run(
      std::move(ctx),
      workflow::WorkflowRunDeps{db_.get(), clock_.get(), functions_, dispatch_, handoff_, cancels_},
      it->second.run_options);
  NativeRun native(run, std::move(traced));
  WorkflowContext wctx(native);
  // Whichever way the run ends (destroyed before `native`).
  struct StoreOnExit {
    NativeWorkflowWorker* worker;
    NativeRun* native;
    ~StoreOnExit() { worker->StoreBacktraces(*native); }
  } store_on_exit{this, &native};

  std::optional<TaskDriver<WorkflowResult>> driver;
  try {
    driver.emplace(it->second.fn(wctx, std::move(params)));
  } catch (...) {
    return run.Trap(DescribeException(std::current_exception()));
  }
  if (!driver->valid()) return run.Trap("workflow function returned an empty Task");
  driver->Start();
  // The guest has stopped: its backtraces go in before the run writes how
  // it ended, so a client that sees the result also finds them.
  StoreBacktraces(native);

  if (!driver->done()) {
    // Suspended: unload by destroying the frames, then record why.
    driver->Destroy();
    if (auto interruption = native.interruption()) return run.ToWorkerResult(*interruption);
    return run.Trap("workflow suspended on an awaitable that is not a stele operation");
  }
  if (auto error = driver->exception()) {
    driver->Destroy();
    return run.Trap(DescribeException(error));
  }
  WorkflowResult value = driver->TakeValue();
  driver->Destroy();
  if (value) return run.Finish(core::ReturnValueOk{std::move(*value)});
  return run.Finish(core::ReturnValueErr{std::move(value.error())});
}

void NativeWorkflowWorker::StoreBacktraces(NativeRun& native) {
  db_->StoreBacktraces(native.TakeBacktraces());
}

}  // namespace stele::runtime::native
