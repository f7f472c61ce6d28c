// Helpers shared by the HTTP handlers (api.cc, api_ops.cc): JSON replies,
// the error envelope of docs/api.md, storage-error mapping, parsing of
// path and query parameters. Internal to src/server.
//
// Threading: stateless functions, called on ServerImpl's worker pools.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "base/result.h"
#include "core/execution_event.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/return_value.h"
#include "http/message.h"
#include "service/service_error.h"

namespace stele::server::api {

// An API error: HTTP status plus the envelope's kind and message.
struct ApiError {
  int status = 400;
  std::string kind;  // "validation", "unauthorized", "not_found", ...
  std::string message;
};

ApiError Validation(std::string message);
ApiError NotFound(std::string message);
ApiError Conflict(std::string message);
ApiError Unavailable(std::string message);   // 503: database unavailable
ApiError Overloaded(std::string message);    // 503: a connection or waiter limit
ApiError ShuttingDown(std::string message);  // 503: the server is stopping
// The one mapping of the service's errors to HTTP (docs/api.md): 400
// validation, 404 not_found, 409 conflict / already_finished, 408 timeout, 503
// database_unavailable / shutting_down.
ApiError FromService(const service::ServiceError& e);
template <class T>
Result<T, ApiError> FromService(Result<T, service::ServiceError> result) {
  if (!result) return Unexpected(FromService(result.error()));
  if constexpr (std::is_void_v<T>) {
    return {};
  } else {
    return std::move(*result);
  }
}

void ReplyJson(http::Response& res, int status, const core::Json& body);
void ReplyError(http::Response& res, const ApiError& error);

// The request body as a JSON object (depth-limited parse); errors name the problem.
Result<core::Json, ApiError> ParseBodyObject(const http::Request& req);
// Rejects keys of `body` not in `allowed`.
Result<void, ApiError> CheckKeys(const core::Json& body,
                                 std::initializer_list<std::string_view> allowed);

// Path segment 1 (an id; the service parses it).
std::string PathSegment(const http::Request& req);

// Query parameter as an unsigned integer within [min, max]; nullopt when absent.
Result<std::optional<uint64_t>, ApiError> QueryUint(const http::Request& req,
                                                    const std::string& name, uint64_t min,
                                                    uint64_t max);
// "true"/"false"/"1"/"0"; `fallback` when absent.
Result<bool, ApiError> QueryBool(const http::Request& req, const std::string& name, bool fallback);

// Results in the API's shape: {"ok": v} | {"err": v} | {"execution_error": {...}}.
// The one shape of every result the API shows: results, events, responses.
core::Json ResultToJson(const core::SupportedFunctionReturnValue& value);
// A result without a value in the same shape: {"ok": null} | {"err": null}.
core::Json UnitResultToJson(bool ok);
// An event and a response as the API shows them (docs/api.md, "Results"):
// the core JSON codec's encoding (core/json_codec.h, which is also the
// stored one and keeps the serde shapes of the seed) with every result as
// ResultToJson gives it — a Finished event's, a stub's, a child's — and
// every unit result as UnitResultToJson: a delay that fired ({"ok": null})
// or was cancelled ({"err": null}), a stub's persist_result, the status of
// an HTTP trace ({"ok": 200} | {"err": "message"}).
core::Json EventToJson(const core::ExecutionEvent& event);
core::Json ResponseToJson(const core::JoinSetResponseEventOuter& response);
// {"ok": v} / {"err": v} (v may be null or absent) → a return value.
Result<core::SupportedFunctionReturnValue, ApiError> ResultFromJson(const core::Json& json);

}  // namespace stele::server::api
