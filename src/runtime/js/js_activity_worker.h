// JsActivityWorker: runs the activities of one JavaScript component as an
// executor::Worker (docs/js.md, "Activities"). Each attempt runs the
// function in a fresh instance of the module; the context carries the
// execution id, the attempt number, the deadline, the configured `env`
// and an AbortSignal for the attempt; `fetch` goes through the traced HTTP
// client of activities (runtime/http, the same allow-list as wasm
// activities); Date and Math.random are the real ones; console and
// ctx.log go to the server's log, tagged with the execution id.
//
// Mapping of one attempt (as WasmActivityWorker):
//   returned v                        WorkerOk(v)
//   threw Err(e), retry_on_err        ActivityReturnedError(e): retried, then e
//   threw Err(e), !retry_on_err       WorkerOk(err e), final at once
//   threw Err(e, m, {retryable: false})  WorkerOk(err e), final at once
//   threw anything else, awaited what nothing settles, stack overflow,
//   out of memory                     ActivityTrap(reason, detail = JS stack)
//   ctx.cancel fired (lock deadline, shutdown, cancel)
//                                     TemporaryTimeout (the executor records the
//                                     timeout or the cancellation)
//   a value with no JSON form         FatalError kResultParsingError
//   engine failure                    LimitReached (not counted)
// The attempt's HTTP requests are recorded as HttpClientTraces on the
// event that records it; every result names the engine.
//
// Threading: Run is called concurrently; the worker is immutable.
// Ownership: shares the component.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "executor/worker.h"
#include "runtime/http/http_client.h"
#include "runtime/js/js_component.h"

namespace stele::runtime::js {

struct JsActivityOptions {
  bool retry_on_err = true;
  // ctx.env: exactly these values (nothing is inherited from the server).
  std::vector<std::pair<std::string, std::string>> env;
  http::HttpClientConfig http;
};

class JsActivityWorker final : public executor::Worker {
 public:
  // REQUIRES: component->flavor == JsFlavor::kActivity.
  JsActivityWorker(std::shared_ptr<const JsComponent> component, JsActivityOptions options);

  executor::WorkerResult Run(executor::WorkerContext ctx) override;
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

 private:
  executor::WorkerResult RunGuest(executor::WorkerContext ctx);

  std::shared_ptr<const JsComponent> component_;
  JsActivityOptions options_;
  std::string engine_id_;
  std::vector<core::FunctionFqn> ffqns_;
};

}  // namespace stele::runtime::js
