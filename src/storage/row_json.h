// JSON text of the values both SQL backends store in JSON columns (events,
// results, component ids, backoffs, backtraces) and the way back. The
// column layout is each backend's own; only the JSON mapping (core's JSON
// codec) and its failure modes are shared, so they live here once.
//
// Encoding fails with ValidationFailed when a value cannot be represented
// (nlohmann refuses strings that are not valid UTF-8); decoding fails with
// a DbErrorGeneric naming `what` (the table, row and column) — a corrupt
// row is never silently skipped.
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "core/execution_event.h"
#include "storage/db_errors.h"

namespace stele::storage {

// Instantiated for ComponentId, Duration, PendingStateFinishedResultKind,
// WasmBacktrace and SupportedFunctionReturnValue (row_json.cc).
template <class T>
Result<std::string, DbErrorWriteNonRetriable> EncodeJson(const T& value);
template <class T>
Result<T, DbErrorGeneric> DecodeJson(std::string_view json, std::string_view what);

// A JSON value stored as is (a message's body).
Result<std::string, DbErrorWriteNonRetriable> EncodeRawJson(const core::Json& value);
Result<core::Json, DbErrorGeneric> DecodeRawJson(std::string_view json, std::string_view what);

Result<std::string, DbErrorWriteNonRetriable> EncodeEvent(const core::ExecutionRequest& event);
// `execution_id` and `version` only name the row in errors.
Result<core::ExecutionRequest, DbErrorGeneric> DecodeEvent(std::string_view json,
                                                           std::string_view execution_id,
                                                           int64_t version);

}  // namespace stele::storage
