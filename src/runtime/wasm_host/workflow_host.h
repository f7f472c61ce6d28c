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
// is kept for the worker to store (DbConnection::AppendBacktraceBatch).
//
// Threading: used by the one thread running the instance. Ownership: borrows
// the run and the watchdog; must outlive the instance it was bound to.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

  // Pauses the guest's slice while inside host functions.
  void SetWatchdog(GuestWatchdog* watchdog, uint64_t handle) {
    watchdog_ = watchdog;
    watch_handle_ = handle;
  }

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
  void Leave();

 private:
  workflow::WorkflowRun* run_;
  core::ComponentId component_id_;
  GuestWatchdog* watchdog_ = nullptr;
  uint64_t watch_handle_ = 0;
  std::optional<workflow::Interruption> own_interruption_;
  std::vector<core::BacktraceInfo> backtraces_;
  std::optional<std::pair<core::Version, core::WasmBacktrace>> pending_backtrace_;
  uint64_t host_calls_ = 0;
};

// The limits a workflow module is compiled under: exactly the "stele"
// functions of the ABI (no WASI) and the memory cap.
wasm::ModuleLimits WorkflowModuleLimits(uint32_t max_memory_pages);

}  // namespace stele::runtime::wasm_host
