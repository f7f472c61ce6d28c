// The HTTP client host function of wasm activities (docs/guest_abi.md §5.1):
// import module "stele_http", function
//
//   request(req_ptr i32, req_len i32, out i32) -> i32 status
//
// `req` is a JSON object {"method", "url", "headers"?, "body"?,
// "timeout_ms"?}. On STELE_OK the `out` slot gets {"status", "headers",
// "body"}; on STELE_ERR it gets a plain-text message (transport error,
// malformed request, host not allowed, response too large). Every request
// is recorded as a core::HttpClientTrace (method, url, time sent; status or
// transport error, time finished) and stored on the attempt's event
// (TemporarilyFailed / TemporarilyTimedOut / Finished), so an operator sees
// what an activity did on the network.
//
// Policy: http and https only; redirects are not followed (the guest sees
// the 3xx and its Location) so the allow-list cannot be bypassed; bodies are
// UTF-8 text (invalid bytes in a response become U+FFFD). A request honours
// the attempt's cancellation token (lock deadline, shutdown, cancel): the
// transfer is aborted and the host call fails with kInterrupted, which the
// worker records as a timeout.
//
// Threading: one HttpState per attempt, used from the thread running the
// guest. libcurl is initialised once per process (thread-safe).
// Ownership: the import table's function shares the state (shared_ptr).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/cancellation.h"
#include "core/metadata.h"
#include "runtime/wasm/wasm_engine.h"

namespace stele::runtime::wasm_host {

inline constexpr std::string_view kHttpModule = "stele_http";

struct HttpClientConfig {
  // Hosts the activity may reach: "example.com" (exactly that host, any
  // port), "example.com:8080" (that host and port), "*.example.com" (any
  // subdomain, not the domain itself). Empty: any host.
  std::vector<std::string> allowed_hosts;
  size_t max_request_body_bytes = 4 * 1024 * 1024;
  size_t max_response_body_bytes = 16 * 1024 * 1024;
  std::chrono::milliseconds default_timeout{30'000};
  // More requests in one attempt fail with STELE_ERR (a runaway loop).
  size_t max_requests_per_attempt = 1000;
};

struct HttpState {
  HttpClientConfig config;
  std::optional<CancellationToken> cancel;
  std::vector<core::HttpClientTrace> traces;
};

// Adds stele_http.request to `table`, bound to `state`.
void AddHttpImports(wasm::ImportTable& table, std::shared_ptr<HttpState> state);

// Whether `host` (lower case, no brackets for IPv6) and `port` pass the
// allow-list (see HttpClientConfig::allowed_hosts).
bool HostAllowed(const std::vector<std::string>& allowed_hosts, std::string_view host, int port);

// The recorded traces of an attempt, or nullopt when it made no request.
core::HttpClientTraces TakeTraces(HttpState& state);

}  // namespace stele::runtime::wasm_host
