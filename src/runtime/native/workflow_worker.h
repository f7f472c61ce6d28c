// NativeWorkflowWorker: runs registered C++ coroutine workflows
// (stele/workflow_context.h) over the replay engine as an executor::Worker.
//
// One run: build a workflow::WorkflowRun from the WorkerContext, call the
// registered function with a WorkflowContext, and drive the returned Task
// until it finishes or suspends.
//   - finished with a value → WorkflowRun::Finish (closes join sets, writes
//     cached events; Finished is appended by the executor);
//   - suspended on an interruption (blocked on a join set, nondeterminism,
//     a DB error, ...) → the coroutine frames are destroyed (this is how a
//     blocked workflow is unloaded) and the interruption's WorkerResult is
//     returned;
//   - suspended on anything that is not a stele operation, or an exception
//     escaped the workflow → a permanent workflow trap.
// With store_backtraces, the run's backtraces are written when it ends, in
// one DbConnection::StoreBacktraces (before the run's result is written).
//
// Threading: Run is called concurrently; the worker is immutable after
// construction. Ownership: borrows the DbConnection's owner (shared), the
// Clock and the FunctionRegistry, which must outlive it.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "base/clock.h"
#include "core/function_fqn.h"
#include "executor/worker.h"
#include "runtime/workflow/function_registry.h"
#include "runtime/workflow/workflow_run.h"
#include "stele/workflow_context.h"
#include "storage/db_connection.h"

namespace stele::runtime::native {

class NativeRun;

// A registered workflow and the settings of its runs (blocking strategy,
// batching, ...: each workflow has its own, stele::WorkflowOptions).
struct NativeWorkflow {
  WorkflowFnWithErr fn;
  workflow::WorkflowRunOptions run_options;
  // Store the call sites of operations that wrote as backtraces
  // (native_run.h), one batch per run (EngineOptions::store_backtraces).
  bool store_backtraces = false;
};

class NativeWorkflowWorker final : public executor::Worker {
 public:
  // REQUIRES: db, clock, functions non-null; functions (and dispatch,
  // handoff, cancels when set) outlive the worker. The clock is shared.
  NativeWorkflowWorker(std::map<core::FunctionFqn, NativeWorkflow> workflows,
                       std::shared_ptr<storage::DbConnection> db, SharedClock clock,
                       const workflow::FunctionRegistry* functions,
                       const executor::LocalDispatch* dispatch = nullptr,
                       executor::ResponseHandoff* handoff = nullptr,
                       executor::CancelRegistry* cancels = nullptr);

  executor::WorkerResult Run(executor::WorkerContext ctx) override;
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

 private:
  void StoreBacktraces(NativeRun& native);

  std::map<core::FunctionFqn, NativeWorkflow> workflows_;
  std::vector<core::FunctionFqn> ffqns_;
  std::shared_ptr<storage::DbConnection> db_;
  SharedClock clock_;
  const workflow::FunctionRegistry* functions_;
  const executor::LocalDispatch* dispatch_;  // may be null
  executor::ResponseHandoff* handoff_;       // may be null
  executor::CancelRegistry* cancels_;        // may be null
};

// Adapts a workflow returning Task<Json> (ok only) to the ok-or-err form.
WorkflowFnWithErr AdaptOkOnly(WorkflowFn fn);

}  // namespace stele::runtime::native
