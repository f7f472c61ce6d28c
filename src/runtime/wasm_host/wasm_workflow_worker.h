// WasmWorkflowWorker: runs the workflows of one wasm component over the
// replay engine (runtime/workflow/workflow_run.h) as an executor::Worker.
//
// One run: build a WorkflowRun from the WorkerContext, instantiate the
// module on the calling thread with the "stele" host functions bound to the
// run (workflow_host.h), place the params JSON in guest memory, call the
// export and map how it ended:
//   returned {"ok"|"err": v}        → WorkflowRun::Finish(v)
//   returned anything else           → FatalError kResultParsingError
//   aborted by a host function       → run.ToWorkerResult(interruption)
//     (blocked and unloaded, nondeterminism, lease expired, bad input ...)
//   trap (unreachable, OOB, out of memory, div by zero ...)
//                                    → permanent FatalError kWorkflowTrap,
//                                      detail = the guest backtrace
//   interrupted by the guest watchdog (computed `guest_slice` without a
//     host call: an infinite loop)   → TemporaryTimeout: retried, never an
//                                      outcome of the workflow
//   interrupted by ctx.cancel        → Interruption kCancelled's result
//   stack overflow, engine out of resources
//                                    → LimitReached: retried, not counted
// The instance is discarded after every run; the next run instantiates
// afresh and replays.
// Every result names the engine (WasmEngine::EngineId, WorkerResult::engine),
// so the event the executor records for the run carries it, and so does
// each backtrace the run stores (WasmBacktrace::engine): together they
// record the engine of every run that wrote anything (docs/wasm_engine.md).
//
// Threading: Run is called concurrently; the worker is immutable after
// construction apart from the watchdog (thread-safe). Ownership: shares the
// component and the DbConnection; borrows the Clock and the
// FunctionRegistry, which must outlive it.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "executor/worker.h"
#include "runtime/wasm_host/guest_watchdog.h"
#include "runtime/wasm_host/wasm_component.h"
#include "runtime/workflow/function_registry.h"
#include "runtime/workflow/workflow_run.h"
#include "storage/db_connection.h"

namespace stele::runtime::wasm_host {

struct WasmWorkflowWorkerDeps {
  std::shared_ptr<storage::DbConnection> db;     // REQUIRES: non-null
  SharedClock clock = nullptr;                   // REQUIRES: non-null
  const workflow::FunctionRegistry* functions = nullptr;  // REQUIRES: non-null
  // Eager dispatch of children (executor/local_dispatch.h); may be null.
  const executor::LocalDispatch* dispatch = nullptr;
  // Children's results handed over in memory (executor/response_handoff.h); may be null.
  executor::ResponseHandoff* handoff = nullptr;
  workflow::WorkflowRunOptions run_options;
  // Longest the guest may compute between two host calls.
  std::chrono::milliseconds guest_slice{5000};
  // Store the backtrace of every host call that wrote events.
  bool store_backtraces = true;
  // Running activities of this process, to stop the ones the workflow
  // cancels (executor/cancel_registry.h); may be null.
  executor::CancelRegistry* cancel_registry = nullptr;
};

class WasmWorkflowWorker final : public executor::Worker {
 public:
  // REQUIRES: component->kind == GuestKind::kWorkflow.
  WasmWorkflowWorker(std::shared_ptr<const WasmComponent> component, WasmWorkflowWorkerDeps deps);

  executor::WorkerResult Run(executor::WorkerContext ctx) override;
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

  const GuestWatchdog& watchdog() const { return *watchdog_; }

 private:
  executor::WorkerResult RunGuest(executor::WorkerContext ctx);

  std::shared_ptr<const WasmComponent> component_;
  WasmWorkflowWorkerDeps deps_;
  std::string engine_id_;
  std::vector<core::FunctionFqn> ffqns_;
  std::unique_ptr<GuestWatchdog> watchdog_;
};

}  // namespace stele::runtime::wasm_host
