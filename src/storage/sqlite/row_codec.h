// Row codecs: how core values map to SQLite columns and back.
//
//  - Instants: INTEGER microseconds since the Unix epoch.
//  - Ids, ffqns, join set ids: their display strings; digests: 32-byte BLOBs.
//  - Events: core::ToJson(ExecutionRequest) text (docs/model.md §3.7).
//  - t_state: which nullable columns are set is a strict function of
//    `state`, and the decoder rejects any other combination:
//      pending_at           pending_expires_finished = scheduled_at;
//                           executor_id/run_id = last lock (both or none)
//      locked               = lock_expires_at; last_lock_version, executor_id,
//                           run_id set
//      blocked_by_join_set  = the JoinNext's lease; join_set_id and
//                           join_set_closing set; executor_id/run_id kept
//      finished             = finished_at; result_kind set; nothing else
//    `paused` and `cancelling` (0/1) are independent of `state` and read
//    only while unfinished (core::PendingState).
//
// Decoding never throws; a malformed row is a DbErrorGeneric naming the
// table, the execution and what is wrong (it means the file was damaged or
// written by something else).
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/time.h"
#include "core/component_id.h"
#include "core/duration.h"
#include "core/execution_event.h"
#include "core/ids.h"
#include "core/pending_state.h"
#include "core/version.h"
#include "storage/db_errors.h"
#include "storage/row_json.h"
#include "storage/requests.h"
#include "storage/sqlite/sqlite_handle.h"

namespace stele::storage::sqlite::internal {

inline constexpr std::string_view kStatePendingAt = "pending_at";
inline constexpr std::string_view kStateLocked = "locked";
inline constexpr std::string_view kStateBlocked = "blocked_by_join_set";
inline constexpr std::string_view kStateFinished = "finished";

// SELECT list of t_state matching ReadStateRow (19 columns, from index 0).
inline constexpr std::string_view kStateColumns =
    "execution_id, state, pending_expires_finished, component_id_input_digest, "
    "corresponding_version, last_lock_version, executor_id, run_id, join_set_id, "
    "join_set_closing, result_kind, intermittent_event_count, ffqn, max_retries, "
    "retry_exp_backoff, created_at, first_scheduled_at, paused, cancelling";

// One decoded t_state row.
struct ExecutionState {
  std::string execution_id;
  core::PendingState pending_state;
  Version corresponding_version;  // version of the last event
  std::string ffqn;
  core::InputContentDigest digest;
  uint32_t intermittent_event_count = 0;
  std::optional<Version> last_lock_version;  // set when locked
  std::optional<core::LockedBy> last_lock;   // the last lock holder, if any
  std::optional<uint32_t> max_retries;
  std::optional<core::Duration> retry_exp_backoff;
  DateTime created_at;
  DateTime first_scheduled_at;

  bool IsFinished() const { return pending_state.IsFinished(); }
  // The version the next append must carry. A finished execution takes no
  // more events; its log's next_version is still last version + 1.
  Version NextVersion() const { return corresponding_version.Increment(); }
};

// Decodes the columns of kStateColumns from the current row of `stmt`.
Result<ExecutionState, DbErrorGeneric> DecodeStateRow(const Statement& stmt);

// Events ---------------------------------------------------------------------

// The JSON columns' codec is shared by both SQL backends (storage/row_json.h).
using storage::DecodeEvent;
using storage::DecodeJson;
using storage::DecodeRawJson;
using storage::EncodeEvent;
using storage::EncodeJson;
using storage::EncodeRawJson;

// Responses ------------------------------------------------------------------

// SELECT list + FROM clause of responses (11 columns) matching
// DecodeResponseRow; callers append WHERE/ORDER BY on alias `r`. A child's
// result comes from its Finished row unless it was stored inline.
inline constexpr std::string_view kResponseSelect =
    "SELECT r.idx, r.created_at, r.join_set_id, r.delay_id, r.delay_success, "
    "r.child_execution_id, r.finished_version, r.child_result, l.json_value, r.message_id, "
    "r.message_body "
    "FROM t_join_set_response r LEFT JOIN t_execution_log l "
    "ON r.child_result IS NULL AND l.execution_id = r.child_execution_id "
    "AND l.version = r.finished_version AND l.variant = 'finished' ";

Result<ResponseWithCursor, DbErrorGeneric> DecodeResponseRow(const Statement& stmt,
                                                             std::string_view execution_id);

// Scalars --------------------------------------------------------------------

inline int64_t TimeColumn(DateTime t) { return ToMicros(t); }
inline DateTime TimeFromColumn(int64_t micros) { return DateTimeFromMicros(micros); }

Result<core::InputContentDigest, DbErrorGeneric> DecodeDigest(const std::vector<uint8_t>& blob,
                                                              std::string_view execution_id);

// Parses an id-like column (anything with a static Parse returning
// Result<T, IdParseError>), naming `what` in the error.
template <class T>
Result<T, DbErrorGeneric> ParseColumn(std::string_view text, std::string_view what) {
  auto parsed = T::Parse(text);
  if (!parsed) {
    return Unexpected(DbErrorGeneric::Uncategorized("corrupt " + std::string(what) + " `" +
                                                    std::string(text) +
                                                    "`: " + parsed.error().message));
  }
  return std::move(*parsed);
}

}  // namespace stele::storage::sqlite::internal
