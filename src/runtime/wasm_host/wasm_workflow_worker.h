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
//   interrupted by the guest watchdog (computed its slice without a host
//     call: an endless loop)         → TemporaryTimeout naming the slice and
//                                      its setting, retried; in the
//                                      execution's `guest_slice_attempts`-th
//                                      attempt (counting every earlier
//                                      temporary failure or timeout) it is
//                                      permanent: FatalError kOutOfFuel
//   interrupted by ctx.cancel        → Interruption kCancelled's result
//   stack overflow, engine out of resources
//                                    → LimitReached: retried, not counted
// The next run replays from the start, in an instance in the state of a
// fresh one: a pooled instance restored after the previous run, or a new
// one (instance_pool.h). An instance that failed is never reused; one whose
// run was interrupted to wait (WorkflowHost::Abort stops the guest with
// kHostStop) is restored and kept like one whose run returned.
//
// The slice: the guest may compute at most
//   slice = min(guest_slice, run_options.lock_extension / 4)
// between host calls (without lock extension: guest_slice). Before the
// guest is entered and whenever a host function returns to it, the run's
// lease is extended if less than slice + lock_extension_leeway is left, and
// the watchdog is set to min(now + slice, lease end - lock_extension_leeway)
// (WorkflowHost::StartSlice). So a guest is always stopped before its lease
// ends: no other run of the execution can be locked while it still
// computes, and a spinning guest costs a bounded number of attempts. A
// quarter of the lease, so that keeping the lease ahead of the slice costs
// a Locked event only every three quarters of a lease of busy guest time.
// Every result names the engine (WasmEngine::EngineId, WorkerResult::engine),
// so the event the executor records for the run carries it, and so does
// each backtrace the run stores (WasmBacktrace::engine): together they
// record the engine of every run that wrote anything (docs/wasm_engine.md).
//
// Threading: Run is called concurrently; the worker is immutable after
// construction apart from the watchdog and the instance pool (thread-safe). Ownership: shares the
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
#include "runtime/wasm_host/instance_pool.h"
#include "runtime/wasm_host/wasm_component.h"
#include "runtime/wasm_host/workflow_host.h"
#include "runtime/workflow/function_registry.h"
#include "runtime/workflow/workflow_run.h"
#include "storage/db_connection.h"

namespace stele::runtime::wasm_host {

struct WasmWorkflowWorkerDeps {
  std::shared_ptr<storage::DbConnection> db;              // REQUIRES: non-null
  SharedClock clock = nullptr;                            // REQUIRES: non-null
  const workflow::FunctionRegistry* functions = nullptr;  // REQUIRES: non-null
  // Eager dispatch of children (executor/local_dispatch.h); may be null.
  const executor::LocalDispatch* dispatch = nullptr;
  // Children's results handed over in memory (executor/response_handoff.h); may be null.
  executor::ResponseHandoff* handoff = nullptr;
  workflow::WorkflowRunOptions run_options;
  // Longest the guest may compute between two host calls; the slice used
  // is also bounded by the lease (see "The slice" above).
  std::chrono::milliseconds guest_slice{5000};
  // Store the backtrace of every host call that wrote events.
  bool store_backtraces = true;
  // Running activities of this process, to stop the ones the workflow
  // cancels (executor/cancel_registry.h); may be null.
  executor::CancelRegistry* cancel_registry = nullptr;
  // The attempt (1-based, over the execution's temporary failures and
  // timeouts) whose slice overrun is permanent.
  uint32_t guest_slice_attempts = 3;
  // Where the workflow's lease (run_options.lock_extension) is set, in the
  // words of the embedding program: named by the slice errors.
  std::string lock_expiry_setting = "WorkflowRunOptions::lock_extension";
  // Warm instances kept for later runs (instance_pool.h).
  InstancePool::Options instance_pool = {};
};

class WasmWorkflowWorker final : public executor::Worker {
 public:
  // REQUIRES: component->kind == GuestKind::kWorkflow.
  WasmWorkflowWorker(std::shared_ptr<const WasmComponent> component, WasmWorkflowWorkerDeps deps);

  executor::WorkerResult Run(executor::WorkerContext ctx) override;
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

  const GuestWatchdog& watchdog() const { return *watchdog_; }
  // The slice in force (see "The slice" above).
  std::chrono::milliseconds slice() const { return slice_.slice; }

 private:
  executor::WorkerResult RunGuest(executor::WorkerContext ctx);
  // The reason of a slice overrun in `attempt` (final: permanent).
  std::string SliceError(uint32_t attempt, bool final) const;

  std::shared_ptr<const WasmComponent> component_;
  WasmWorkflowWorkerDeps deps_;
  std::string engine_id_;
  std::vector<core::FunctionFqn> ffqns_;
  std::unique_ptr<GuestWatchdog> watchdog_;
  WorkflowHost::SlicePolicy slice_;
  std::unique_ptr<InstancePool> pool_;
};

}  // namespace stele::runtime::wasm_host
