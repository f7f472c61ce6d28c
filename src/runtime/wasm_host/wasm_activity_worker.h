// WasmActivityWorker: runs the activities of one wasm component (built
// against wasi-libc, docs/guest_abi.md §5) as an executor::Worker. Each
// attempt gets an instance with the WASI subset of wasi_host.h in the state
// right after the reactor's `_initialize`: a pooled one restored to that
// state, or a fresh one on which `_initialize` is called
// (instance_pool.h); then the export is called with the params JSON.
// Output to stdout/stderr is logged with the execution id (output of
// `_initialize` only with the attempt that created the instance).
//
// Mapping of one attempt (as runtime/native/activity_worker.h):
//   {"ok": v}                         WorkerOk(v)
//   {"err": e}, retry_on_err          ActivityReturnedError(e): retried, then e
//   {"err": e}, !retry_on_err         WorkerOk(err e), final at once
//   {"err": e, "retryable": false}    WorkerOk(err e), final at once
//   trap, proc_exit, stack overflow   ActivityTrap(reason, detail = backtrace)
//   ctx.cancel fired (lock deadline, shutdown, cancel)
//                                     TemporaryTimeout (the executor records the
//                                     timeout or the cancellation)
//   result not {"ok"|"err": v}        FatalError kResultParsingError
//   engine out of resources           LimitReached (not counted)
// The HTTP client host function (http_host.h) is imported as
// stele_http.request; the attempt's requests are recorded as
// HttpClientTraces on the event that records the attempt, and every result
// names the engine (WorkerResult::engine), which that event carries too.
//
// Threading: Run is called concurrently; the worker is immutable apart from
// its instance pool (thread-safe).
// Ownership: shares the component.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "executor/worker.h"
#include "runtime/wasm_host/http_host.h"
#include "runtime/wasm_host/instance_pool.h"
#include "runtime/wasm_host/wasi_host.h"
#include "runtime/wasm_host/wasm_component.h"

namespace stele::runtime::wasm_host {

struct WasmActivityOptions {
  bool retry_on_err = true;
  WasiConfig wasi;
  HttpClientConfig http;
  // Warm instances kept for later attempts (instance_pool.h).
  InstancePool::Options instance_pool = {};
};

class WasmActivityWorker final : public executor::Worker {
 public:
  // REQUIRES: component->kind == GuestKind::kActivity.
  WasmActivityWorker(std::shared_ptr<const WasmComponent> component, WasmActivityOptions options);

  executor::WorkerResult Run(executor::WorkerContext ctx) override;
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

 private:
  executor::WorkerResult RunGuest(executor::WorkerContext ctx);

  std::shared_ptr<const WasmComponent> component_;
  WasmActivityOptions options_;
  std::string engine_id_;
  std::vector<core::FunctionFqn> ffqns_;
  std::unique_ptr<InstancePool> pool_;
};

}  // namespace stele::runtime::wasm_host
