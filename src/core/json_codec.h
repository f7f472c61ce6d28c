// JSON encoding of the core model (docs/model.md §3.7; Obelisk's serde form).
//
// Shapes:
//  - ids, ffqns, digests, JoinSetIds: their display strings;
//  - DateTime: RFC 3339 strings; Duration: {"secs":u64,"nanos":u32};
//  - ExecutionRequest: externally tagged, snake_case
//    {"created":{...}}, {"locked":{...}}, {"history_event":{"event":{"type":"join_next",...}}};
//  - HistoryEvent, JoinSetRequest, PersistKind, JoinSetResponse: internally
//    tagged with "type" (snake_case);
//  - HistoryEventScheduleAt: "now" | {"at": t} | {"in": {secs,nanos}};
//  - SupportedFunctionReturnValue: {"ok":{"ok":v|null}} | {"err":{"err":v|null}}
//    | {"execution_error":{"kind":..,"reason":..,"detail":..}};
//  - persisted bytes: array of numbers.
// Decoding never throws and never crashes: every malformed input becomes a
// JsonError whose message names the path of the offending field.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "core/backtrace.h"
#include "core/execution_event.h"
#include "core/json.h"
#include "core/pending_state.h"

namespace stele::core {

struct JsonError {
  std::string message;  // e.g. "created.ffqn: expected string"
  friend bool operator==(const JsonError&, const JsonError&) = default;
};

// Parses text without throwing (depth-limited against hostile input).
Result<Json, JsonError> ParseJson(std::string_view text);
// Compact text of `json`, without throwing: Json::dump() throws on strings
// that are not valid UTF-8 (say a trap message), here they get U+FFFD.
std::string SerializeJson(const Json& json);

Json ToJson(const Duration& value);
Json ToJson(const ComponentId& value);
Json ToJson(const ComponentRetryConfig& value);
Json ToJson(const ExecutionMetadata& value);
Json ToJson(const HttpClientTrace& value);
Json ToJson(const SupportedFunctionReturnValue& value);
Json ToJson(const FinishedExecutionError& value);
Json ToJson(const PendingStateFinishedResultKind& value);
Json ToJson(const HistoryEventScheduleAt& value);
Json ToJson(const PersistKind& value);
Json ToJson(const JoinSetRequest& value);
Json ToJson(const HistoryEvent& value);
Json ToJson(const ExecutionRequest& value);
Json ToJson(const ExecutionEvent& value);
Json ToJson(const JoinSetResponse& value);
Json ToJson(const JoinSetResponseEvent& value);
Json ToJson(const JoinSetResponseEventOuter& value);
Json ToJson(const PendingState& value);
Json ToJson(const WasmBacktrace& value);

// FromJson<T> is defined for exactly the types that have a ToJson above, and
// round-trips them: FromJson<T>(ToJson(x)) == x.
template <class T>
Result<T, JsonError> FromJson(const Json& json);

}  // namespace stele::core
