// Row codecs of the PostgreSQL backend: how core values map to columns and
// back (schema.h lists the column types). Results are read in text format:
// bigint as decimal, boolean as t/f, bytea as \x-hex, json as its text.
// What t_state and t_join_set_response rows mean is shared with the SQLite
// backend (storage/sql_rows.h); this file reads the columns.
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
#include "core/execution_event.h"
#include "core/ids.h"
#include "core/pending_state.h"
#include "core/version.h"
#include "storage/db_errors.h"
#include "storage/postgres/pg_conn.h"
#include "storage/requests.h"
#include "storage/row_json.h"
#include "storage/sql_rows.h"

namespace stele::storage::postgres::internal {

// SELECT list of t_state matching DecodeStateRow (21 columns).
inline constexpr std::string_view kStateColumns =
    "execution_id, state, pending_expires_finished, component_id_input_digest, "
    "corresponding_version, last_lock_version, executor_id, run_id, join_set_id, "
    "join_set_closing, result_kind::text, intermittent_event_count, ffqn, max_retries, "
    "retry_exp_backoff::text, created_at, first_scheduled_at, response_count, updated_at, "
    "paused, cancelling";

using storage::ExecutionState;
using storage::ParseColumn;
using storage::TimeColumn;
using storage::TimeFromColumn;

Result<ExecutionState, DbErrorGeneric> DecodeStateRow(const PgResult& res, int row, int col0 = 0);

// The JSON columns' codec is shared by both SQL backends (storage/row_json.h).
using storage::DecodeEvent;
using storage::DecodeJson;
using storage::DecodeRawJson;
using storage::EncodeEvent;
using storage::EncodeJson;
using storage::EncodeRawJson;

// SELECT list + FROM of responses (11 columns) for DecodeResponseRow;
// callers append WHERE/ORDER BY on alias `r`.
inline constexpr std::string_view kResponseSelect =
    "SELECT r.idx, r.created_at, r.join_set_id, r.delay_id, r.delay_success, "
    "r.child_execution_id, r.finished_version, r.child_result::text, l.json_value::text, "
    "r.message_id, r.message_body::text "
    "FROM t_join_set_response r LEFT JOIN t_execution_log l "
    "ON r.child_result IS NULL AND l.execution_id = r.child_execution_id "
    "AND l.version = r.finished_version AND l.variant = 'finished' ";

// The 11 columns start at `col0`.
Result<ResponseWithCursor, DbErrorGeneric> DecodeResponseRow(const PgResult& res, int row,
                                                             std::string_view execution_id,
                                                             int col0 = 0);

// bytea text form ("\x" + lowercase hex) of a digest, and back.
std::string DigestParam(const core::InputContentDigest& digest);
Result<core::InputContentDigest, DbErrorGeneric> DecodeDigest(std::string_view text,
                                                              std::string_view execution_id);

}  // namespace stele::storage::postgres::internal
