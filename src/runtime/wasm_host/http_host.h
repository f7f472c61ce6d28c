// The HTTP client host function of wasm activities (docs/guest_abi.md §5.1):
// import module "stele_http", function
//
//   request(req_ptr i32, req_len i32, out i32) -> i32 status
//
// `req` is the request JSON of runtime/http/http_client.h. On STELE_OK the
// `out` slot gets the response JSON; on STELE_ERR a plain-text message
// (transport error, malformed request, host not allowed, response too
// large). The client itself — policy, limits, traces — is runtime/http's,
// shared with JS activities' fetch. A request interrupted by the attempt's
// cancellation fails the host call with kInterrupted, which the worker
// records as a timeout.
//
// Threading: one HttpState per attempt, used from the thread running the
// guest. Ownership: the import table's function shares the state
// (shared_ptr).
#pragma once

#include <memory>
#include <string_view>

#include "runtime/http/http_client.h"
#include "runtime/wasm/wasm_engine.h"

namespace stele::runtime::wasm_host {

inline constexpr std::string_view kHttpModule = "stele_http";

using http::HostAllowed;
using http::HttpClientConfig;
using http::HttpState;
using http::TakeTraces;

// Adds stele_http.request to `table`, bound to `state`.
void AddHttpImports(wasm::ImportTable& table, std::shared_ptr<HttpState> state);

}  // namespace stele::runtime::wasm_host
