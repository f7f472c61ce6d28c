#include "storage/sqlite/schema.h"

#include <exception>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "base/log.h"
#include "core/list_key.h"

namespace stele::storage::sqlite::internal {

namespace {

// t_metadata exists before any migration so that the version can be read.
constexpr std::string_view kCreateMetadata = R"sql(
CREATE TABLE IF NOT EXISTS t_metadata (
  id INTEGER PRIMARY KEY,
  schema_version INTEGER NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;
)sql";

// V1: the initial schema. Index notes (each hot query → its index):
//  - lock pending by ffqn / by component digest, ordered by scheduled_at
//    then id: partial indexes over state='pending_at' only, so finished
//    executions (the vast majority of a long-lived store) are not in them.
//  - expired locks: partial index over state='locked'.
//  - expired delays: t_delay(expires_at); t_delay holds live timers only.
//  - list executions by created_at / by id, with and without the ffqn and
//    top-level filters: one index per combination, each matching the
//    ORDER BY so that a page is a bounded index range scan.
//  - count the JoinNexts of a join set: partial index over join_next events.
//  - k-th response of a join set: (execution_id, join_set_id, idx)
//    (dropped in V8: the planner uses the primary key).
//  - next response cursor / responses from a cursor: the primary key.
constexpr std::string_view kMigrationV1 = R"sql(
CREATE TABLE t_execution_log (
  execution_id TEXT NOT NULL,
  version INTEGER NOT NULL CHECK (version >= 0),
  created_at INTEGER NOT NULL,
  json_value TEXT NOT NULL,
  variant TEXT NOT NULL,
  join_set_id TEXT,
  history_event_type TEXT
    GENERATED ALWAYS AS (json_extract(json_value, '$.history_event.event.type')) VIRTUAL,
  PRIMARY KEY (execution_id, version)
) STRICT;
CREATE INDEX idx_t_execution_log_join_next
  ON t_execution_log (execution_id, join_set_id, history_event_type)
  WHERE history_event_type = 'join_next';

CREATE TABLE t_join_set_response (
  execution_id TEXT NOT NULL,
  idx INTEGER NOT NULL CHECK (idx >= 0),
  created_at INTEGER NOT NULL,
  join_set_id TEXT NOT NULL,
  delay_id TEXT,
  delay_success INTEGER,
  child_execution_id TEXT,
  finished_version INTEGER CHECK (finished_version >= 0),
  -- The child's result when its Finished event was not in the log when the
  -- response was written (test-only AppendResponse); otherwise the result is
  -- joined from the child's Finished row, never duplicated.
  child_result TEXT,
  CHECK ((delay_id IS NOT NULL AND delay_success IS NOT NULL AND child_execution_id IS NULL
          AND finished_version IS NULL AND child_result IS NULL)
      OR (delay_id IS NULL AND delay_success IS NULL AND child_execution_id IS NOT NULL
          AND finished_version IS NOT NULL)),
  PRIMARY KEY (execution_id, idx)
) STRICT, WITHOUT ROWID;
CREATE INDEX idx_t_join_set_response_join_set
  ON t_join_set_response (execution_id, join_set_id, idx);
CREATE UNIQUE INDEX idx_t_join_set_response_child
  ON t_join_set_response (child_execution_id) WHERE child_execution_id IS NOT NULL;
CREATE UNIQUE INDEX idx_t_join_set_response_delay
  ON t_join_set_response (delay_id) WHERE delay_id IS NOT NULL;

CREATE TABLE t_state (
  execution_id TEXT NOT NULL PRIMARY KEY,
  is_top_level INTEGER NOT NULL CHECK (is_top_level IN (0, 1)),
  corresponding_version INTEGER NOT NULL CHECK (corresponding_version >= 0),
  ffqn TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  component_id_input_digest BLOB NOT NULL,
  first_scheduled_at INTEGER NOT NULL,
  -- pending: scheduled_at; locked: lock_expires_at; blocked: the lease;
  -- finished: finished_at.
  pending_expires_finished INTEGER NOT NULL,
  state TEXT NOT NULL
    CHECK (state IN ('pending_at', 'locked', 'blocked_by_join_set', 'finished')),
  updated_at INTEGER NOT NULL,
  intermittent_event_count INTEGER NOT NULL CHECK (intermittent_event_count >= 0),
  -- Retry config of the last Locked event (JSON Duration for exactness).
  max_retries INTEGER CHECK (max_retries >= 0),
  retry_exp_backoff TEXT,
  last_lock_version INTEGER CHECK (last_lock_version >= 0),
  -- The last lock holder; kept after the lock ends (lock extension) and
  -- cleared when finished.
  executor_id TEXT,
  run_id TEXT,
  join_set_id TEXT,
  join_set_closing INTEGER CHECK (join_set_closing IN (0, 1)),
  result_kind TEXT
) STRICT, WITHOUT ROWID;
CREATE INDEX idx_t_state_pending_ffqn
  ON t_state (ffqn, pending_expires_finished, execution_id) WHERE state = 'pending_at';
CREATE INDEX idx_t_state_pending_digest
  ON t_state (component_id_input_digest, pending_expires_finished, execution_id)
  WHERE state = 'pending_at';
CREATE INDEX idx_t_state_expired_locks
  ON t_state (pending_expires_finished) WHERE state = 'locked';
CREATE INDEX idx_t_state_created_at ON t_state (created_at, execution_id);
CREATE INDEX idx_t_state_ffqn_created_at ON t_state (ffqn, created_at, execution_id);
CREATE INDEX idx_t_state_top_created_at
  ON t_state (created_at, execution_id) WHERE is_top_level = 1;
CREATE INDEX idx_t_state_top_ffqn_created_at
  ON t_state (ffqn, created_at, execution_id) WHERE is_top_level = 1;
CREATE INDEX idx_t_state_ffqn_id ON t_state (ffqn, execution_id);
CREATE INDEX idx_t_state_top_id ON t_state (execution_id) WHERE is_top_level = 1;
CREATE INDEX idx_t_state_top_ffqn_id ON t_state (ffqn, execution_id) WHERE is_top_level = 1;

CREATE TABLE t_delay (
  execution_id TEXT NOT NULL,
  join_set_id TEXT NOT NULL,
  delay_id TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (execution_id, join_set_id, delay_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX idx_t_delay_expires_at ON t_delay (expires_at);

CREATE TABLE t_backtrace (
  execution_id TEXT NOT NULL,
  component_id TEXT NOT NULL,
  version_min_including INTEGER NOT NULL CHECK (version_min_including >= 0),
  version_max_excluding INTEGER NOT NULL CHECK (version_max_excluding >= 0),
  wasm_backtrace TEXT NOT NULL,
  PRIMARY KEY (execution_id, version_min_including, version_max_excluding)
) STRICT;
)sql";

// V2: t_state.list_key, the listing order of execution ids
// (core::ListKey, docs/storage_contract.md "Listing order"):
// lists that include children page by it, so that `_2` lists before `_10`,
// served by idx_t_state_list_key and idx_t_state_ffqn_list_key (which
// replaces idx_t_state_ffqn_id). Lists of top-level executions only keep
// ordering by execution_id and its indexes: for them the key is the id.
// Nullable only because SQLite adds a NOT NULL column with a default alone;
// every insert sets it, and BackfillListKeys fills the rows already there
// before the indexes are built, in the migration's transaction.
constexpr std::string_view kMigrationV2 = R"sql(
ALTER TABLE t_state ADD COLUMN list_key TEXT;
)sql";
constexpr std::string_view kMigrationV2After = R"sql(
DROP INDEX idx_t_state_ffqn_id;
CREATE INDEX idx_t_state_list_key ON t_state (list_key);
CREATE INDEX idx_t_state_ffqn_list_key ON t_state (ffqn, list_key);
)sql";

// Sets list_key of every t_state row, in pages of execution ids (bounded
// memory, whatever the size of the table).
Result<void, DbErrorGeneric> BackfillListKeys(Connection& connection) {
  constexpr int64_t kPage = 1000;
  std::string after;
  while (true) {
    std::vector<std::string> ids;
    {
      STELE_ASSIGN_OR_RETURN(Statement select,
                             connection.Prepare("SELECT execution_id FROM t_state WHERE "
                                                "execution_id > ? ORDER BY execution_id LIMIT ?"));
      select.BindText(1, after);
      select.BindInt64(2, kPage);
      while (true) {
        STELE_ASSIGN_OR_RETURN(bool row, select.Step());
        if (!row) break;
        ids.push_back(select.Text(0));
      }
    }
    if (ids.empty()) return {};
    STELE_ASSIGN_OR_RETURN(
        Statement update,
        connection.Prepare("UPDATE t_state SET list_key = ? WHERE execution_id = ?"));
    for (const std::string& text : ids) {
      auto id = core::ExecutionId::Parse(text);
      if (!id) {
        return Unexpected(DbErrorGeneric::Uncategorized("t_state.execution_id `" + text +
                                                        "`: " + id.error().message));
      }
      update.BindText(1, core::ListKey(*id));
      update.BindText(2, text);
      STELE_TRY(update.Run());
      update.Reset();
    }
    after = ids.back();
  }
}

// V3: t_schedule, the cron schedules (docs/storage_contract.md,
// "Schedules"). Small (one row per schedule), read whole by the ticker.
constexpr std::string_view kMigrationV3 = R"sql(
CREATE TABLE t_schedule (
  name TEXT NOT NULL PRIMARY KEY CHECK (name <> ''),
  expression TEXT NOT NULL,
  time_zone TEXT NOT NULL,
  ffqn TEXT NOT NULL,
  params TEXT NOT NULL,
  overlap TEXT NOT NULL,
  catch_up TEXT NOT NULL,
  catch_up_limit INTEGER NOT NULL CHECK (catch_up_limit >= 0),
  from_config INTEGER NOT NULL CHECK (from_config IN (0, 1)),
  paused INTEGER NOT NULL CHECK (paused IN (0, 1)),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_tick INTEGER NOT NULL,
  last_execution_id TEXT
) STRICT, WITHOUT ROWID;
)sql";

// V4: pause and cancel flags of t_state (docs/model.md §9.5, §9.6). A
// paused row is never locked, so the lock indexes leave it out; `cancelling`
// is backfilled from the cancel requests already in the logs of unfinished
// executions (their log only: the primary key's prefix).
constexpr std::string_view kMigrationV4 = R"sql(
ALTER TABLE t_state ADD COLUMN paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1));
ALTER TABLE t_state ADD COLUMN cancelling INTEGER NOT NULL DEFAULT 0
  CHECK (cancelling IN (0, 1));
UPDATE t_state SET cancelling = 1 WHERE state <> 'finished' AND EXISTS (
  SELECT 1 FROM t_execution_log l WHERE l.execution_id = t_state.execution_id
    AND l.history_event_type = 'cancel_request');
DROP INDEX idx_t_state_pending_ffqn;
CREATE INDEX idx_t_state_pending_ffqn
  ON t_state (ffqn, pending_expires_finished, execution_id)
  WHERE state = 'pending_at' AND paused = 0;
DROP INDEX idx_t_state_pending_digest;
CREATE INDEX idx_t_state_pending_digest
  ON t_state (component_id_input_digest, pending_expires_finished, execution_id)
  WHERE state = 'pending_at' AND paused = 0;
)sql";

// V5: t_deadline, the deadlines of unfinished executions
// (core::ExecutionPolicy; GetExpiredTimers' ExpiredDeadline). A row lives
// from the execution's creation until it finishes or a terminate request
// disarms it, so the index holds live deadlines only.
constexpr std::string_view kMigrationV5 = R"sql(
CREATE TABLE t_deadline (
  execution_id TEXT NOT NULL PRIMARY KEY,
  deadline INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX idx_t_deadline_deadline ON t_deadline (deadline);
)sql";

// V6: messages (docs/model.md §3.5) are responses too, in arrival order
// with the others: t_join_set_response gets message_id and message_body,
// the row CHECK a third kind of row, and a message id is unique per
// execution. SQLite cannot alter a CHECK, so the table is rebuilt (copy,
// drop, rename) with its indexes, in the migration's transaction.
constexpr std::string_view kMigrationV6 = R"sql(
CREATE TABLE t_join_set_response_v6 (
  execution_id TEXT NOT NULL,
  idx INTEGER NOT NULL CHECK (idx >= 0),
  created_at INTEGER NOT NULL,
  join_set_id TEXT NOT NULL,
  delay_id TEXT,
  delay_success INTEGER,
  child_execution_id TEXT,
  finished_version INTEGER CHECK (finished_version >= 0),
  child_result TEXT,
  message_id TEXT,
  message_body TEXT,
  CHECK ((delay_id IS NOT NULL AND delay_success IS NOT NULL AND child_execution_id IS NULL
          AND finished_version IS NULL AND child_result IS NULL AND message_id IS NULL
          AND message_body IS NULL)
      OR (delay_id IS NULL AND delay_success IS NULL AND child_execution_id IS NOT NULL
          AND finished_version IS NOT NULL AND message_id IS NULL AND message_body IS NULL)
      OR (delay_id IS NULL AND delay_success IS NULL AND child_execution_id IS NULL
          AND finished_version IS NULL AND child_result IS NULL AND message_id IS NOT NULL
          AND message_body IS NOT NULL)),
  PRIMARY KEY (execution_id, idx)
) STRICT, WITHOUT ROWID;
INSERT INTO t_join_set_response_v6 (execution_id, idx, created_at, join_set_id, delay_id,
    delay_success, child_execution_id, finished_version, child_result)
  SELECT execution_id, idx, created_at, join_set_id, delay_id, delay_success,
         child_execution_id, finished_version, child_result FROM t_join_set_response;
DROP TABLE t_join_set_response;
ALTER TABLE t_join_set_response_v6 RENAME TO t_join_set_response;
CREATE INDEX idx_t_join_set_response_join_set
  ON t_join_set_response (execution_id, join_set_id, idx);
CREATE UNIQUE INDEX idx_t_join_set_response_child
  ON t_join_set_response (child_execution_id) WHERE child_execution_id IS NOT NULL;
CREATE UNIQUE INDEX idx_t_join_set_response_delay
  ON t_join_set_response (delay_id) WHERE delay_id IS NOT NULL;
CREATE UNIQUE INDEX idx_t_join_set_response_message
  ON t_join_set_response (execution_id, message_id) WHERE message_id IS NOT NULL;
)sql";

// V7: compact event rows (storage/sqlite/event_codec.h). json_value
// becomes ANY: new rows are a compressed BLOB, rows already there stay
// TEXT and are not rewritten (the copy below moves them as they are).
// history_event_type, generated from the JSON in V1, becomes a stored
// column written with the row (SQL cannot read the compressed JSON); it is
// copied from the generated one. SQLite cannot change a column's type, so
// the table is rebuilt (copy, drop, rename) with its index, in the
// migration's transaction: on a large store this takes about as long as
// copying the log once. The rebuilt table is WITHOUT ROWID: its primary
// key was a second B-tree beside the rows (as large as the compressed rows
// of a small workflow); now the rows are stored in key order, once. Rows
// whose compressed event exceeds about 1 KB spill to an overflow page
// sooner than in a rowid table; events are mostly far smaller.
constexpr std::string_view kMigrationV7 = R"sql(
CREATE TABLE t_execution_log_v7 (
  execution_id TEXT NOT NULL,
  version INTEGER NOT NULL CHECK (version >= 0),
  created_at INTEGER NOT NULL,
  json_value ANY NOT NULL CHECK (typeof(json_value) IN ('text', 'blob')),
  variant TEXT NOT NULL,
  join_set_id TEXT,
  history_event_type TEXT,
  PRIMARY KEY (execution_id, version)
) STRICT, WITHOUT ROWID;
INSERT INTO t_execution_log_v7 (execution_id, version, created_at, json_value, variant,
    join_set_id, history_event_type)
  SELECT execution_id, version, created_at, json_value, variant, join_set_id,
         history_event_type FROM t_execution_log ORDER BY execution_id, version;
DROP TABLE t_execution_log;
ALTER TABLE t_execution_log_v7 RENAME TO t_execution_log;
CREATE INDEX idx_t_execution_log_join_next
  ON t_execution_log (execution_id, join_set_id, history_event_type)
  WHERE history_event_type = 'join_next';
)sql";

// V8: drops idx_t_join_set_response_join_set, which no query used: the
// only statement filtering responses by join set (KthResponseTime in
// journal_tx.cc, `… WHERE execution_id = ? AND join_set_id = ? ORDER BY
// idx LIMIT 1 OFFSET ?`) is planned on the primary key, whose order is the
// ORDER BY (docs/storage_contract.md, "SQLite query plans"). It cost every
// response a second copy of its execution id and join set id.
constexpr std::string_view kMigrationV8 = R"sql(
DROP INDEX IF EXISTS idx_t_join_set_response_join_set;
)sql";

// V9: integer execution keys (docs/storage_contract.md, "Execution keys").
// The text execution id (26 to 100+ bytes) was the first column of every
// log, response and backtrace row; now those rows carry t_state.exec_key,
// an integer given at creation from t_sequence and never reused, and the
// text id stays in t_state (and wherever a query looks an id up: child and
// delay responses, timers). Keys are numbered in creation order, so the
// rows of new executions are appended at the right edge of each B-tree.
// `variant` goes: Created is always version 0 and a history event is the
// row with a history_event_type. Backtraces are stored once per distinct
// (component, backtrace) in t_backtrace_text: the runs of one code point
// record the same text, which was most of a small workflow's backtrace
// bytes. t_backtrace stays a rowid table: its rowid orders ties ("the first
// recorded wins"). The tables are rebuilt (copy, drop, rename) in the
// migration's transaction; rows of an id with no t_state row (none are
// written) would be dropped.
constexpr std::string_view kMigrationV9 = R"sql(
ALTER TABLE t_state ADD COLUMN exec_key INTEGER CHECK (exec_key > 0);
UPDATE t_state SET exec_key = k.key
  FROM (SELECT execution_id, row_number() OVER (ORDER BY created_at, execution_id) AS key
        FROM t_state) AS k
  WHERE k.execution_id = t_state.execution_id;
CREATE TABLE t_sequence (
  name TEXT NOT NULL PRIMARY KEY,
  next_value INTEGER NOT NULL CHECK (next_value > 0)
) STRICT, WITHOUT ROWID;
INSERT INTO t_sequence (name, next_value)
  SELECT 'exec_key', COALESCE(MAX(exec_key), 0) + 1 FROM t_state;

CREATE TABLE t_execution_log_v9 (
  exec_key INTEGER NOT NULL,
  version INTEGER NOT NULL CHECK (version >= 0),
  created_at INTEGER NOT NULL,
  json_value ANY NOT NULL CHECK (typeof(json_value) IN ('text', 'blob')),
  join_set_id TEXT,
  history_event_type TEXT,
  PRIMARY KEY (exec_key, version)
) STRICT, WITHOUT ROWID;
INSERT INTO t_execution_log_v9 (exec_key, version, created_at, json_value, join_set_id,
    history_event_type)
  SELECT s.exec_key, l.version, l.created_at, l.json_value, l.join_set_id, l.history_event_type
  FROM t_execution_log l JOIN t_state s ON s.execution_id = l.execution_id
  ORDER BY s.exec_key, l.version;
DROP TABLE t_execution_log;
ALTER TABLE t_execution_log_v9 RENAME TO t_execution_log;
CREATE INDEX idx_t_execution_log_join_next
  ON t_execution_log (exec_key, join_set_id, history_event_type)
  WHERE history_event_type = 'join_next';

CREATE TABLE t_join_set_response_v9 (
  exec_key INTEGER NOT NULL,
  idx INTEGER NOT NULL CHECK (idx >= 0),
  created_at INTEGER NOT NULL,
  join_set_id TEXT NOT NULL,
  delay_id TEXT,
  delay_success INTEGER,
  child_execution_id TEXT,
  finished_version INTEGER CHECK (finished_version >= 0),
  child_result TEXT,
  message_id TEXT,
  message_body TEXT,
  CHECK ((delay_id IS NOT NULL AND delay_success IS NOT NULL AND child_execution_id IS NULL
          AND finished_version IS NULL AND child_result IS NULL AND message_id IS NULL
          AND message_body IS NULL)
      OR (delay_id IS NULL AND delay_success IS NULL AND child_execution_id IS NOT NULL
          AND finished_version IS NOT NULL AND message_id IS NULL AND message_body IS NULL)
      OR (delay_id IS NULL AND delay_success IS NULL AND child_execution_id IS NULL
          AND finished_version IS NULL AND child_result IS NULL AND message_id IS NOT NULL
          AND message_body IS NOT NULL)),
  PRIMARY KEY (exec_key, idx)
) STRICT, WITHOUT ROWID;
INSERT INTO t_join_set_response_v9 (exec_key, idx, created_at, join_set_id, delay_id,
    delay_success, child_execution_id, finished_version, child_result, message_id, message_body)
  SELECT s.exec_key, r.idx, r.created_at, r.join_set_id, r.delay_id, r.delay_success,
         r.child_execution_id, r.finished_version, r.child_result, r.message_id, r.message_body
  FROM t_join_set_response r JOIN t_state s ON s.execution_id = r.execution_id
  ORDER BY s.exec_key, r.idx;
DROP TABLE t_join_set_response;
ALTER TABLE t_join_set_response_v9 RENAME TO t_join_set_response;
CREATE UNIQUE INDEX idx_t_join_set_response_child
  ON t_join_set_response (child_execution_id) WHERE child_execution_id IS NOT NULL;
CREATE UNIQUE INDEX idx_t_join_set_response_delay
  ON t_join_set_response (delay_id) WHERE delay_id IS NOT NULL;
CREATE UNIQUE INDEX idx_t_join_set_response_message
  ON t_join_set_response (exec_key, message_id) WHERE message_id IS NOT NULL;

CREATE TABLE t_backtrace_text (
  id INTEGER PRIMARY KEY,
  component_id TEXT NOT NULL,
  wasm_backtrace TEXT NOT NULL,
  UNIQUE (component_id, wasm_backtrace)
) STRICT;
INSERT INTO t_backtrace_text (component_id, wasm_backtrace)
  SELECT component_id, wasm_backtrace FROM t_backtrace
  GROUP BY component_id, wasm_backtrace ORDER BY MIN(rowid);
CREATE TABLE t_backtrace_v9 (
  exec_key INTEGER NOT NULL,
  version_min_including INTEGER NOT NULL CHECK (version_min_including >= 0),
  version_max_excluding INTEGER NOT NULL CHECK (version_max_excluding >= 0),
  text_id INTEGER NOT NULL,
  PRIMARY KEY (exec_key, version_min_including, version_max_excluding)
) STRICT;
INSERT INTO t_backtrace_v9 (exec_key, version_min_including, version_max_excluding, text_id)
  SELECT s.exec_key, b.version_min_including, b.version_max_excluding, t.id
  FROM t_backtrace b JOIN t_state s ON s.execution_id = b.execution_id
  JOIN t_backtrace_text t ON t.component_id = b.component_id
    AND t.wasm_backtrace = b.wasm_backtrace
  ORDER BY b.rowid;
DROP TABLE t_backtrace;
ALTER TABLE t_backtrace_v9 RENAME TO t_backtrace;
CREATE INDEX idx_t_backtrace_text ON t_backtrace (text_id);
)sql";

struct Migration {
  int64_t version;
  std::string_view sql;
  // Run after `sql`, in the same transaction: data changes SQL alone cannot
  // make, then `sql_after` (say, indexes built once over the new data).
  Result<void, DbErrorGeneric> (*backfill)(Connection&) = nullptr;
  std::string_view sql_after = {};
};
// Append new migrations at the end; never edit a released one.
constexpr Migration kMigrations[] = {
    {1, kMigrationV1}, {2, kMigrationV2, &BackfillListKeys, kMigrationV2After},
    {3, kMigrationV3}, {4, kMigrationV4},
    {5, kMigrationV5}, {6, kMigrationV6},
    {7, kMigrationV7}, {8, kMigrationV8},
    {9, kMigrationV9},
};
static_assert(std::size(kMigrations) == kLatestSchemaVersion);

// PRAGMA names and values come from configuration; they cannot be bound as
// parameters, so they are restricted to a safe alphabet instead.
bool IsSafePragmaToken(std::string_view token) {
  if (token.empty() || token.size() > 64) return false;
  for (char c : token) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

Result<void, DbErrorGeneric> Pragma(Connection& connection, std::string_view name,
                                    std::string_view value) {
  // Some PRAGMAs answer with a row; QueryText steps through it either way.
  std::string sql = "PRAGMA " + std::string(name) + "=" + std::string(value);
  STELE_TRY(connection.QueryTexts(sql));
  return {};
}

}  // namespace

Result<void, DbErrorGeneric> ConfigureConnection(Connection& connection,
                                                 const SqliteOptions& options,
                                                 ConnectionRole role) {
  const bool writer = role == ConnectionRole::kWriter;
  STELE_TRY(Pragma(connection, "busy_timeout", std::to_string(options.busy_timeout_ms)));
  if (writer) {
    // Only effective on a fresh file (before the first table). 4 KiB, not
    // larger: a commit writes every page it dirtied to the WAL, and a
    // create dirties one page per t_state index, so smaller pages make the
    // small transactions of the single writer measurably cheaper (about a
    // third more creates per second than 8 KiB pages on the bench machine).
    STELE_TRY(Pragma(connection, "page_size", "4096"));
    STELE_ASSIGN_OR_RETURN(auto mode, connection.QueryText("PRAGMA journal_mode=WAL"));
    if (!mode || *mode != "wal") {
      return Unexpected(DbErrorGeneric::Uncategorized("cannot switch `" + connection.path() +
                                                      "` to WAL journal mode (got `" +
                                                      mode.value_or("") + "`)"));
    }
    STELE_TRY(Pragma(connection, "journal_size_limit", std::to_string(64 << 20)));
    // Checkpoints copy WAL pages into the (possibly huge) database file and
    // fsync it; done inline they would land on whichever commit crosses the
    // threshold. The checkpointer thread does them instead.
    STELE_TRY(Pragma(connection, "wal_autocheckpoint", "0"));
  }
  STELE_TRY(Pragma(connection, "synchronous",
                   options.synchronous == SqliteOptions::Synchronous::kFull ? "FULL" : "NORMAL"));
  STELE_TRY(Pragma(connection, "foreign_keys", "ON"));
  // The writer touches the hot part of every index on each commit: give it
  // the larger page cache (64 MiB); readers get 16 MiB each. Pages are only
  // allocated when used.
  STELE_TRY(Pragma(connection, "cache_size",
                   writer ? "-65536" : (role == ConnectionRole::kReader ? "-16384" : "-2048")));
  STELE_TRY(Pragma(connection, "temp_store", "MEMORY"));
  // Reads of the first 1 GiB come straight from the OS page cache, without
  // a read() per page miss.
  STELE_TRY(Pragma(connection, "mmap_size", std::to_string(int64_t{1} << 30)));
  if (role == ConnectionRole::kReader) STELE_TRY(Pragma(connection, "query_only", "ON"));
  for (const auto& [name, value] : options.extra_pragmas) {
    if (!IsSafePragmaToken(name) || !IsSafePragmaToken(value)) {
      return Unexpected(DbErrorGeneric::Uncategorized(
          "invalid extra PRAGMA `" + name + "=" + value +
          "`: names and values may only contain letters, digits, '_', '-' and '.'"));
    }
    auto applied = Pragma(connection, name, value);
    if (!applied && writer) return applied;
    // The writer accepted it first; on a read-only connection a PRAGMA that
    // writes the file (user_version, ...) fails and is not needed there.
    if (!applied) {
      STELE_LOG(kDebug,
                "extra PRAGMA not applied to a helper connection: " << applied.error().reason());
    }
  }
  return {};
}

Result<void, DbErrorGeneric> CheckIntegrity(Connection& connection) {
  std::string reason = "integrity check of `" + connection.path() + "` failed:";
  auto checked = connection.QueryTexts("PRAGMA quick_check");
  if (!checked) {
    // Damage bad enough that the check itself cannot run.
    return Unexpected(DbErrorGeneric::Uncategorized(reason + " " + checked.error().reason()));
  }
  const std::vector<std::string>& rows = *checked;
  if (rows.size() == 1 && rows[0] == "ok") return {};
  size_t shown = 0;
  for (const std::string& row : rows) {
    if (++shown > 5) {
      reason += " ... (" + std::to_string(rows.size()) + " problems)";
      break;
    }
    reason += " " + row + ";";
  }
  return Unexpected(DbErrorGeneric::Uncategorized(std::move(reason)));
}

Result<int64_t, DbErrorGeneric> ReadSchemaVersion(Connection& connection) {
  STELE_ASSIGN_OR_RETURN(auto exists,
                         connection.QueryText("SELECT name FROM sqlite_schema WHERE type = "
                                              "'table' AND name = 't_metadata'"));
  if (!exists) return int64_t{0};
  STELE_ASSIGN_OR_RETURN(auto version,
                         connection.QueryText("SELECT MAX(schema_version) FROM t_metadata"));
  if (!version) return int64_t{0};
  try {
    return static_cast<int64_t>(std::stoll(*version));
  } catch (const std::exception&) {
    return Unexpected(DbErrorGeneric::Uncategorized("t_metadata.schema_version is not a number: `" +
                                                    *version + "`"));
  }
}

Result<void, DbErrorGeneric> Migrate(Connection& connection, DateTime now, int64_t target) {
  // IMMEDIATE: two processes opening the same fresh file must not both
  // decide to run V1.
  STELE_TRY(connection.Exec("BEGIN IMMEDIATE"));
  auto body = [&]() -> Result<void, DbErrorGeneric> {
    STELE_TRY(connection.Exec(kCreateMetadata));
    STELE_ASSIGN_OR_RETURN(int64_t current, ReadSchemaVersion(connection));
    if (current > kLatestSchemaVersion) {
      return Unexpected(DbErrorGeneric::Uncategorized(
          "database `" + connection.path() + "` has schema version " + std::to_string(current) +
          ", newer than the newest this build knows (" + std::to_string(kLatestSchemaVersion) +
          "); refusing to open it — upgrade Stele"));
    }
    for (const Migration& migration : kMigrations) {
      if (migration.version <= current || migration.version > target) continue;
      auto applied = connection.Exec(migration.sql);
      if (applied && migration.backfill != nullptr) applied = migration.backfill(connection);
      if (applied && !migration.sql_after.empty()) applied = connection.Exec(migration.sql_after);
      if (!applied) {
        return Unexpected(DbErrorGeneric::Uncategorized("migration to schema version " +
                                                        std::to_string(migration.version) +
                                                        " failed: " + applied.error().reason()));
      }
      STELE_ASSIGN_OR_RETURN(
          Statement record,
          connection.Prepare("INSERT INTO t_metadata (schema_version, created_at) VALUES (?, ?)"));
      record.BindInt64(1, migration.version);
      record.BindInt64(2, ToMicros(now));
      STELE_TRY(record.Run());
    }
    return {};
  };
  auto result = body();
  if (!result) {
    (void)connection.Exec("ROLLBACK");
    return result;
  }
  STELE_TRY(connection.Exec("COMMIT"));
  return {};
}

}  // namespace stele::storage::sqlite::internal
