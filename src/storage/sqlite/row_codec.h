// Row codecs: how core values map to SQLite columns and back.
//
//  - Instants: INTEGER microseconds since the Unix epoch.
//  - Ids, ffqns, join set ids: their display strings; digests: 32-byte BLOBs.
//  - Events: core::ToJson(ExecutionRequest) text (docs/model.md §3.7).
//  - t_state and t_join_set_response: the rules are the SQL backends'
//    shared ones (storage/sql_rows.h); this file reads the columns.
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
#include "storage/requests.h"
#include "storage/row_json.h"
#include "storage/sql_rows.h"
#include "storage/sqlite/sqlite_handle.h"

namespace stele::storage::sqlite::internal {

using storage::ExecutionState;
using storage::kStateBlocked;
using storage::kStateFinished;
using storage::kStateLocked;
using storage::kStatePendingAt;
using storage::ParseColumn;
using storage::TimeColumn;
using storage::TimeFromColumn;

// SELECT list of t_state matching DecodeStateRow (20 columns, from index 0).
inline constexpr std::string_view kStateColumns =
    "execution_id, state, pending_expires_finished, component_id_input_digest, "
    "corresponding_version, last_lock_version, executor_id, run_id, join_set_id, "
    "join_set_closing, result_kind, intermittent_event_count, ffqn, max_retries, "
    "retry_exp_backoff, created_at, first_scheduled_at, paused, cancelling, updated_at";

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
    "ON r.child_result IS NULL AND l.exec_key = (SELECT c.exec_key FROM t_state c "
    "WHERE c.execution_id = r.child_execution_id) AND l.version = r.finished_version ";

Result<ResponseWithCursor, DbErrorGeneric> DecodeResponseRow(const Statement& stmt,
                                                             std::string_view execution_id);

// Scalars --------------------------------------------------------------------

Result<core::InputContentDigest, DbErrorGeneric> DecodeDigest(const std::vector<uint8_t>& blob,
                                                              std::string_view execution_id);

}  // namespace stele::storage::sqlite::internal
