// Helpers shared by the HTTP handlers (api.cc, api_ops.cc): JSON replies,
// the error envelope of docs/api.md, storage-error mapping, parsing of
// path and query parameters. Internal to src/server.
//
// Threading: stateless functions, called on httplib's worker threads.
#pragma once

#include <httplib.h>

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/return_value.h"
#include "storage/db_errors.h"

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
ApiError Unavailable(std::string message);  // 503: database unavailable
ApiError Overloaded(std::string message);   // 503: a connection or waiter limit
ApiError ShuttingDown(std::string message);  // 503: the server is stopping
ApiError FromWrite(const storage::DbErrorWrite& e, std::string_view what);
ApiError FromRead(const storage::DbErrorRead& e, std::string_view what);
ApiError FromGeneric(const storage::DbErrorGeneric& e, std::string_view what);

void ReplyJson(httplib::Response& res, int status, const core::Json& body);
void ReplyError(httplib::Response& res, const ApiError& error);

// The request body as a JSON object (depth-limited parse); errors name the problem.
Result<core::Json, ApiError> ParseBodyObject(const httplib::Request& req);
// Rejects keys of `body` not in `allowed`.
Result<void, ApiError> CheckKeys(const core::Json& body, std::initializer_list<std::string_view> allowed);

// Path segment 1 as an execution id (400 on anything else).
Result<core::ExecutionId, ApiError> PathExecutionId(const httplib::Request& req);

// Query parameter as an unsigned integer within [min, max]; nullopt when absent.
Result<std::optional<uint64_t>, ApiError> QueryUint(const httplib::Request& req,
                                                    const std::string& name, uint64_t min,
                                                    uint64_t max);
// "true"/"false"/"1"/"0"; `fallback` when absent.
Result<bool, ApiError> QueryBool(const httplib::Request& req, const std::string& name,
                                 bool fallback);

// Results in the API's shape: {"ok": v} | {"err": v} | {"execution_error": {...}}.
core::Json ResultToJson(const core::SupportedFunctionReturnValue& value);
// {"ok": v} / {"err": v} (v may be null or absent) → a return value.
Result<core::SupportedFunctionReturnValue, ApiError> ResultFromJson(const core::Json& json);

}  // namespace stele::server::api
