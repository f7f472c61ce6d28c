// Webhook endpoints, independent of the guest's runtime (docs/api.md,
// "Webhooks"): the request a webhook guest reads, the response it returns,
// how it can fail, and WebhookHost, what the server lets it do (start
// executions, wait for their results). The wasm runner is
// runtime/wasm_host/webhook_guest.h; the routes, limits and metrics are the
// server's (server/webhooks.h).
//
// Threading: plain values and pure functions; a WebhookHost is called from
// the thread serving the request. Ownership: values.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "core/json.h"
#include "core/return_value.h"

namespace stele::runtime::webhook {

struct WebhookRequest {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> params;   // route :params, in order
  std::vector<std::pair<std::string, std::string>> query;    // by name
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
  std::string body;
  // {"method", "path", "params": {...}, "query": {...}, "headers": {...},
  //  "body": "..."}: a name given twice keeps its last value; bytes that
  // are not UTF-8 become U+FFFD.
  std::string ToJson() const;
};

struct WebhookResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// Parses what the guest returned: {"status": 200..599 (no 1xx: the
// server frames the exchange), "headers": {"name": "value"}, "body":
// "text" or any JSON value (sent as JSON)}. Only "status" is required.
// Errors name the problem.
Result<WebhookResponse, std::string> ParseWebhookResponse(std::string_view text);

// What a webhook guest may do besides answering: the server implements it
// over the execution service.
class WebhookHost {
 public:
  virtual ~WebhookHost() = default;
  struct Error {
    std::string kind;  // the API's error kinds (docs/api.md)
    std::string message;
  };
  // A new top-level execution; its id.
  virtual Result<std::string, Error> Submit(const std::string& ffqn, const core::Json& params) = 0;
  // The result once finished within `timeout`; nullopt when not finished
  // by then. Errors: an unknown or malformed id.
  virtual Result<std::optional<core::SupportedFunctionReturnValue>, Error> AwaitResult(
      const std::string& execution_id, std::chrono::milliseconds timeout) = 0;
};

struct WebhookFailure {
  enum class Kind {
    kTrap,         // trap, proc_exit, stack overflow, out of memory: 500
    kTimeout,      // over the time limit or cancelled: 504
    kBadResponse,  // not a response JSON: 500
  };
  Kind kind = Kind::kTrap;
  std::string message;  // short, for the client
  std::string detail;   // with the backtrace, for the log
};

}  // namespace stele::runtime::webhook
