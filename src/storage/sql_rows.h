// The rows both SQL backends keep, as values: an execution's t_state row
// (ExecutionState) and a t_join_set_response row, with the one set of rules
// that maps them to columns and back. Each backend reads its columns into a
// StateColumns / ResponseColumns with its own driver (SQLite statements,
// PostgreSQL text results) and writes them with its own SQL; what the
// columns mean and which combinations are valid is decided here, once.
//
// t_state: which nullable columns are set is a strict function of `state`,
// and DecodeState rejects any other combination:
//   pending_at           pending_expires_finished = scheduled_at;
//                        executor_id/run_id = last lock (both or none)
//   locked               = lock_expires_at; last_lock_version, executor_id,
//                        run_id set
//   blocked_by_join_set  = the JoinNext's lease; join_set_id and
//                        join_set_closing set; executor_id/run_id kept
//   finished             = finished_at; result_kind set; nothing else
// `paused` and `cancelling` are independent of `state` and read only while
// unfinished (core::PendingState). Instants are INTEGER microseconds since
// the Unix epoch; ids are their display strings.
//
// Decoding never throws; a malformed row is a DbErrorGeneric naming the
// table, the execution and what is wrong (the database was damaged or
// written by something else).
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/time.h"
#include "core/component_id.h"
#include "core/duration.h"
#include "core/ids.h"
#include "core/pending_state.h"
#include "core/version.h"
#include "storage/db_errors.h"
#include "storage/requests.h"

namespace stele::storage {

inline constexpr std::string_view kStatePendingAt = "pending_at";
inline constexpr std::string_view kStateLocked = "locked";
inline constexpr std::string_view kStateBlocked = "blocked_by_join_set";
inline constexpr std::string_view kStateFinished = "finished";

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
  DateTime updated_at;
  // The next response's cursor where the row keeps it (PostgreSQL, whose
  // parent row lock orders responses); nullopt where the cursor is derived
  // from t_join_set_response (SQLite's single writer).
  std::optional<uint64_t> response_count;

  bool IsFinished() const { return pending_state.IsFinished(); }
  // The version the next append must carry. A finished execution takes no
  // more events; its log's next_version is still last version + 1.
  Version NextVersion() const { return corresponding_version.Increment(); }
};

// The t_state columns as the driver reads and writes them. `digest` is
// decoded by the backend (a BLOB in SQLite, bytea text in PostgreSQL).
struct StateColumns {
  std::string execution_id;
  std::string state;
  int64_t pending_expires_finished = 0;
  core::InputContentDigest digest;
  int64_t corresponding_version = 0;
  std::optional<int64_t> last_lock_version;
  std::optional<std::string> executor_id;
  std::optional<std::string> run_id;
  std::optional<std::string> join_set_id;
  std::optional<bool> join_set_closing;
  std::optional<std::string> result_kind;  // JSON
  int64_t intermittent_event_count = 0;
  std::string ffqn;
  std::optional<int64_t> max_retries;
  std::optional<std::string> retry_exp_backoff;  // JSON
  int64_t created_at = 0;
  int64_t first_scheduled_at = 0;
  int64_t updated_at = 0;
  std::optional<int64_t> response_count;
  bool paused = false;
  bool cancelling = false;
};

Result<ExecutionState, DbErrorGeneric> DecodeState(const StateColumns& columns);

// The columns `state` implies (the inverse of DecodeState). ValidationFailed
// when a value cannot be represented.
Result<StateColumns, DbErrorWriteNonRetriable> EncodeState(const ExecutionState& state);

// A t_join_set_response row joined with its child's Finished event when the
// result is not stored inline (`finished_event`, JSON of the event).
struct ResponseColumns {
  int64_t idx = 0;
  int64_t created_at = 0;
  std::string join_set_id;
  std::optional<std::string> delay_id;
  std::optional<bool> delay_success;
  std::optional<std::string> child_execution_id;
  std::optional<int64_t> finished_version;
  std::optional<std::string> child_result;  // JSON, when stored inline
  std::optional<std::string> finished_event;
  std::optional<std::string> message_id;
  std::optional<std::string> message_body;  // JSON
};

// `execution_id` names the row in errors.
Result<ResponseWithCursor, DbErrorGeneric> DecodeResponse(const ResponseColumns& columns,
                                                          std::string_view execution_id);

// Scalars ----------------------------------------------------------------------

inline int64_t TimeColumn(DateTime t) { return ToMicros(t); }
inline DateTime TimeFromColumn(int64_t micros) { return DateTimeFromMicros(micros); }

// "corrupt <table> row of `<id>`: <what>".
DbErrorGeneric CorruptRow(std::string_view table, std::string_view execution_id,
                          std::string_view what);

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

}  // namespace stele::storage
