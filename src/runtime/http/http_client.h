// The traced HTTP client of activities: wasm activities' stele_http.request
// (runtime/wasm_host/http_host.h, docs/guest_abi.md §5.1) and JS
// activities' fetch (runtime/js, docs/js.md) both send their requests
// through PerformRequest, with the same allow-list, limits and traces.
//
// A request is a JSON object {"method", "url", "headers"?, "body"?,
// "timeout_ms"?}; the response {"status", "headers", "body"}, whatever the
// HTTP status. Every request is recorded as a core::HttpClientTrace
// (method, url, time sent; status or transport error, time finished) for
// the event that records the attempt.
//
// Policy: http and https only; redirects are not followed (the guest sees
// the 3xx and its Location) so the allow-list cannot be bypassed; bodies are
// UTF-8 text (invalid bytes in a response become U+FFFD). A request honours
// the attempt's cancellation token (lock deadline, shutdown, cancel): the
// transfer is aborted and the failure says it was interrupted.
//
// Threading: one HttpState per attempt, used from the thread running the
// guest. libcurl is initialised once per process (thread-safe).
// Ownership: plain values; the caller owns the state.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/cancellation.h"
#include "base/result.h"
#include "core/metadata.h"

namespace stele::runtime::http {

// Largest request JSON accepted.
inline constexpr size_t kMaxRequestJsonBytes = 8 * 1024 * 1024;

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

struct HttpFailure {
  std::string message;
  bool interrupted = false;  // the state's cancellation token fired
};

// Sends one request (see above) and returns the response JSON. A refused
// or failed request is an HttpFailure with a plain-text message: malformed
// request, a url that is not http/https, a host off the allow-list, more
// than max_requests_per_attempt, a transport error, a response over the
// limit. Requests that reached the network are traced in `state`.
Result<std::string, HttpFailure> PerformRequest(HttpState& state, std::string_view request_json);

// Whether `host` (lower case, no brackets for IPv6) and `port` pass the
// allow-list (see HttpClientConfig::allowed_hosts).
bool HostAllowed(const std::vector<std::string>& allowed_hosts, std::string_view host, int port);

// The recorded traces of an attempt, or nullopt when it made no request.
core::HttpClientTraces TakeTraces(HttpState& state);

}  // namespace stele::runtime::http
