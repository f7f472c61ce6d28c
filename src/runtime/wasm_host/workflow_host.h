// WorkflowHost: the "stele" import module of a wasm workflow
// (docs/guest_abi.md §3), bound to one WorkflowRun. Each host function reads
// its arguments from guest memory, asks the replay engine, and writes the
// result back through the guest's stele_alloc. When the engine returns an
// Interruption (blocked, nondeterminism, lease expired, ...) — or the
// guest passed something unusable (a malformed ffqn or params) — the host
// function records it and returns an error, which aborts the guest; the
// worker then reports run.ToWorkerResult(*interruption()).
//
// Backtraces: before every host call made outside replay, the guest stack
// (HostCall::Backtrace) is captured; when the call moved the run's version
// (it wrote events: a blocking call flushes the cached non-blocking events
// of earlier calls too), a BacktraceInfo for [version before, version after)
// is kept for the worker to store (DbConnection::StoreBacktraces).
//
// Threading: used by the one thread running the instance. Ownership: borrows
// the run and the watchdog; must outlive the instance it was bound to.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "core/backtrace.h"
#include "core/component_id.h"
#include "runtime/wasm/wasm_engine.h"
#include "runtime/wasm_host/guest_watchdog.h"
#include "runtime/workflow/workflow_run.h"

namespace stele::runtime::wasm_host {

class WorkflowHost {
 public:
  // `run` null: the table is only used for its signatures (WorkflowModuleLimits).
  WorkflowHost(workflow::WorkflowRun* run, core::ComponentId component_id)
      : run_(run), component_id_(std::move(component_id)) {}

  // The import table bound to this host (every function of the ABI).
  std::shared_ptr<const wasm::ImportTable> Imports();

  // How long the guest may compute between host calls (see StartSlice).
  struct SlicePolicy {
    std::chrono::milliseconds slice{0};
    // The slice ends at least this long before the run's lease does.
    std::chrono::milliseconds margin{0};
  };
  // Watches the guest's slices with `watchdog` (the instance's `handle`),
  // the lease on `clock` (the run's). nullptr: none.
  void SetWatchdog(GuestWatchdog* watchdog, uint64_t handle, const Clock* clock,
                   SlicePolicy policy) {
    watchdog_ = watchdog;
    watch_handle_ = handle;
    clock_ = clock;
    policy_ = policy;
  }
  // The guest is about to run (entered, or a host function returns to it):
  // the lease is made to outlast the slice and its margin
  // (WorkflowRun::EnsureLease), and the watchdog interrupts the guest at
  // min(now + slice, lease end - margin) — always before the lease ends,
  // so no other run can start while this guest still computes. False when
  // the run was interrupted (the lease could not be kept); the guest must
  // not run.
  bool StartSlice();

  // The interruption that aborted the guest: the host's own (bad input)
  // first, else the run's.
  std::optional<workflow::Interruption> interruption() const;
  std::vector<core::BacktraceInfo> TakeBacktraces() { return std::move(backtraces_); }
  // Host calls served (tests, metrics).
  uint64_t host_calls() const { return host_calls_; }

  // --- used by the bound functions ---
  workflow::WorkflowRun& run() { return *run_; }
  void Interrupt(workflow::Interruption::Kind kind, std::string reason);
  // The error that aborts the guest after an interruption.
  wasm::WasmError Abort() const;
  void Enter(wasm::HostCall& call);
  // False when the guest must not continue (StartSlice failed).
  bool Leave();

 private:
  workflow::WorkflowRun* run_;
  core::ComponentId component_id_;
  GuestWatchdog* watchdog_ = nullptr;
  uint64_t watch_handle_ = 0;
  const Clock* clock_ = nullptr;
  SlicePolicy policy_;
  std::optional<workflow::Interruption> own_interruption_;
  std::vector<core::BacktraceInfo> backtraces_;
  std::optional<std::pair<core::Version, core::WasmBacktrace>> pending_backtrace_;
  uint64_t host_calls_ = 0;
};

// The limits a workflow module is compiled under: exactly the "stele"
// functions of the ABI (no WASI) and the memory cap.
wasm::ModuleLimits WorkflowModuleLimits(uint32_t max_memory_pages);

}  // namespace stele::runtime::wasm_host
