// JsWorkflowWorker: runs the workflows of one JavaScript component over the
// replay engine (runtime/workflow/workflow_run.h) as an executor::Worker,
// as WasmWorkflowWorker does for wasm (docs/js.md).
//
// One run: build a WorkflowRun from the WorkerContext, run the function in
// a fresh instance of the module with a JsWorkflowHost bound to the run,
// and map how it ended:
//   returned v                       → WorkflowRun::Finish(ok v)
//   threw / rejected with Err(v)     → WorkflowRun::Finish(err v)
//   stopped by the host              → run.ToWorkerResult(interruption)
//     (blocked and unloaded, nondeterminism, lease expired, bad input ...)
//   threw anything else, awaited what nothing settles, out of memory
//                                    → permanent FatalError kWorkflowTrap,
//                                      detail = the error with its JS stack
//   a value with no JSON form        → FatalError kResultParsingError
//   interrupted by the watchdog (computed its slice without an
//     operation: an endless loop)    → TemporaryTimeout naming the slice and
//                                      its setting, retried; in the
//                                      execution's `guest_slice_attempts`-th
//                                      attempt (counting every earlier
//                                      temporary failure or timeout) it is
//                                      permanent: FatalError kOutOfFuel
//   interrupted by ctx.cancel        → Interruption kCancelled's result
//   stack overflow, engine failure   → LimitReached: retried, not counted
//
// The slice is wasm's (runtime/wasm_host/wasm_workflow_worker.h, "The
// slice"): the guest may compute at most
//   slice = min(guest_slice, run_options.lock_extension / 4)
// between operations, and whenever it is about to compute, the lease is
// extended if less than slice + lock_extension_leeway is left; the guest
// is stopped by the lease's end less lock_extension_leeway
// (JsWorkflowHost::GuestDeadline), so it never computes while another run
// of the execution could be locked.
// Every result names the engine (WorkerResult::engine), and so does each
// backtrace the run stores.
//
// Threading: Run is called concurrently; the worker is immutable after
// construction. Ownership: shares the component and the DbConnection;
// borrows the FunctionRegistry, which must outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/cancellation.h"
#include "base/clock.h"
#include "core/backtrace.h"
#include "executor/worker.h"
#include "runtime/js/js_component.h"
#include "runtime/js/js_workflow_host.h"
#include "runtime/workflow/function_registry.h"
#include "runtime/workflow/workflow_run.h"
#include "storage/db_connection.h"

namespace stele::runtime::js {

struct JsWorkflowWorkerDeps {
  std::shared_ptr<storage::DbConnection> db;              // REQUIRES: non-null
  SharedClock clock = nullptr;                            // REQUIRES: non-null
  const workflow::FunctionRegistry* functions = nullptr;  // REQUIRES: non-null
  const executor::LocalDispatch* dispatch = nullptr;      // may be null
  executor::ResponseHandoff* handoff = nullptr;           // may be null
  executor::CancelRegistry* cancel_registry = nullptr;    // may be null
  workflow::WorkflowRunOptions run_options;
  // Longest the guest may compute between two operations; the slice used
  // is also bounded by the lease (see "The slice" above).
  std::chrono::milliseconds guest_slice{1000};
  // Store the backtrace of every operation that wrote events.
  bool store_backtraces = true;
  // The attempt (1-based, over the execution's temporary failures and
  // timeouts) whose slice overrun is permanent.
  uint32_t guest_slice_attempts = 3;
  // Where the workflow's lease (run_options.lock_extension) is set, in the
  // words of the embedding program: named by the slice errors.
  std::string lock_expiry_setting = "WorkflowRunOptions::lock_extension";
};

// How one run may compute (RunJsWorkflow).
struct JsRunLimits {
  JsWorkflowHost::SlicePolicy slice;
  // This run's attempt (WorkerContext::intermittent_event_count + 1) and
  // the attempt whose slice overrun is permanent.
  uint32_t attempt = 1;
  uint32_t slice_attempts = 3;
  // Named by slice errors when the slice is bounded by the lease; empty:
  // it is not (no lock extension).
  std::string lock_expiry_setting;
};

// Where a run's backtraces go: called once, when the guest has stopped and
// before the run writes how it ended, so a client that sees the result
// also finds the backtraces (docs/api.md, `GET .../backtrace`).
using BacktraceSink = std::function<void(std::vector<core::BacktraceInfo>)>;

// One run of `component`'s function `run.ffqn()` over `run`, mapped as
// above (the worker's Run without the WorkflowRun's construction; tests and
// benchmarks drive runs with it). `clock` may be null (no lease deadline).
// The backtraces of the operations that wrote events go to
// `store_backtraces` unless it is empty.
executor::WorkerResult RunJsWorkflow(const JsComponent& component, workflow::WorkflowRun& run,
                                     const Clock* clock, const JsRunLimits& limits,
                                     const CancellationToken& cancel,
                                     const BacktraceSink& store_backtraces);

class JsWorkflowWorker final : public executor::Worker {
 public:
  // REQUIRES: component->flavor == JsFlavor::kWorkflow.
  JsWorkflowWorker(std::shared_ptr<const JsComponent> component, JsWorkflowWorkerDeps deps);

  executor::WorkerResult Run(executor::WorkerContext ctx) override;
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }
  // The slice in force (see "The slice" above).
  std::chrono::milliseconds slice() const { return slice_.slice; }

 private:
  executor::WorkerResult RunGuest(executor::WorkerContext ctx);

  std::shared_ptr<const JsComponent> component_;
  JsWorkflowWorkerDeps deps_;
  std::string engine_id_;
  std::vector<core::FunctionFqn> ffqns_;
  JsWorkflowHost::SlicePolicy slice_;
};

}  // namespace stele::runtime::js
