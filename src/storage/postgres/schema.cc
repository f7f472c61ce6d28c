#include "storage/postgres/schema.h"

#include <iterator>
#include <string>
#include <string_view>

#include "core/list_key.h"

namespace stele::storage::postgres::internal {

namespace {

// An arbitrary constant naming the migration advisory lock ("stele" in hex).
constexpr const char* kMigrationLockKey = "7374656c65";

constexpr std::string_view kCreateMetadata = R"sql(
CREATE TABLE IF NOT EXISTS t_metadata (
  id bigserial PRIMARY KEY,
  schema_version bigint NOT NULL CHECK (schema_version > 0),
  created_at bigint NOT NULL
);
)sql";

// V1: the initial schema; the same tables and hot-path indexes as the
// SQLite backend (storage/sqlite/schema.cc explains each index), plus
// t_state.response_count: the per-execution response sequence. It is
// advanced under the parent's row lock, so response cursors follow the
// order in which writers took that lock, never commit timing.
constexpr std::string_view kMigrationV1 = R"sql(
CREATE TABLE t_execution_log (
  execution_id text NOT NULL,
  version bigint NOT NULL CHECK (version >= 0),
  created_at bigint NOT NULL,
  json_value json NOT NULL,
  variant text NOT NULL,
  join_set_id text,
  history_event_type text
    GENERATED ALWAYS AS (json_value #>> '{history_event,event,type}') STORED,
  PRIMARY KEY (execution_id, version)
);
CREATE INDEX idx_t_execution_log_join_next
  ON t_execution_log (execution_id, join_set_id)
  WHERE history_event_type = 'join_next';

CREATE TABLE t_join_set_response (
  execution_id text NOT NULL,
  idx bigint NOT NULL CHECK (idx >= 0),
  created_at bigint NOT NULL,
  join_set_id text NOT NULL,
  delay_id text,
  delay_success boolean,
  child_execution_id text,
  finished_version bigint CHECK (finished_version >= 0),
  child_result json,
  CHECK ((delay_id IS NOT NULL AND delay_success IS NOT NULL AND child_execution_id IS NULL
          AND finished_version IS NULL AND child_result IS NULL)
      OR (delay_id IS NULL AND delay_success IS NULL AND child_execution_id IS NOT NULL
          AND finished_version IS NOT NULL)),
  PRIMARY KEY (execution_id, idx)
);
CREATE INDEX idx_t_join_set_response_join_set
  ON t_join_set_response (execution_id, join_set_id, idx);
CREATE UNIQUE INDEX idx_t_join_set_response_child
  ON t_join_set_response (child_execution_id) WHERE child_execution_id IS NOT NULL;
CREATE UNIQUE INDEX idx_t_join_set_response_delay
  ON t_join_set_response (delay_id) WHERE delay_id IS NOT NULL;

CREATE TABLE t_state (
  -- "C": ids and ffqns order bytewise, as in the other backends, whatever
  -- the database's default collation.
  execution_id text COLLATE "C" NOT NULL PRIMARY KEY,
  is_top_level boolean NOT NULL,
  corresponding_version bigint NOT NULL CHECK (corresponding_version >= 0),
  ffqn text COLLATE "C" NOT NULL,
  created_at bigint NOT NULL,
  component_id_input_digest bytea NOT NULL CHECK (length(component_id_input_digest) = 32),
  first_scheduled_at bigint NOT NULL,
  pending_expires_finished bigint NOT NULL,
  state text NOT NULL
    CHECK (state IN ('pending_at', 'locked', 'blocked_by_join_set', 'finished')),
  updated_at bigint NOT NULL,
  intermittent_event_count bigint NOT NULL CHECK (intermittent_event_count >= 0),
  max_retries bigint CHECK (max_retries >= 0),
  retry_exp_backoff json,
  last_lock_version bigint CHECK (last_lock_version >= 0),
  executor_id text,
  run_id text,
  join_set_id text,
  join_set_closing boolean,
  result_kind json,
  response_count bigint NOT NULL DEFAULT 0 CHECK (response_count >= 0)
);
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
  ON t_state (created_at, execution_id) WHERE is_top_level;
CREATE INDEX idx_t_state_top_ffqn_created_at
  ON t_state (ffqn, created_at, execution_id) WHERE is_top_level;
CREATE INDEX idx_t_state_ffqn_id ON t_state (ffqn, execution_id);

CREATE TABLE t_delay (
  execution_id text NOT NULL,
  join_set_id text NOT NULL,
  delay_id text NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (execution_id, join_set_id, delay_id)
);
CREATE INDEX idx_t_delay_expires_at ON t_delay (expires_at);

CREATE TABLE t_backtrace (
  seq bigserial NOT NULL,
  execution_id text NOT NULL,
  component_id json NOT NULL,
  version_min_including bigint NOT NULL CHECK (version_min_including >= 0),
  version_max_excluding bigint NOT NULL CHECK (version_max_excluding >= 0),
  wasm_backtrace json NOT NULL,
  PRIMARY KEY (execution_id, version_min_including, version_max_excluding)
);
)sql";

// V2: CHECK constraints V1 lacked — on every instant column, and on
// t_delay, which had none. An instant (bigint µs) must lie in years
// 0000–9999, the range RFC 3339 — the API's text form, and the SQLite
// backend's column format — can express:
// -62167219200000000 (0000-01-01T00:00:00Z) to 253402300799999999
// (9999-12-31T23:59:59.999999Z). Not `>= 0`: an instant before 1970 is a
// valid DateTime that the API accepts and the other backends store. A value
// outside fails its write with ValidationFailed (pg_conn.cc maps SQLSTATE
// 23514). ADD CONSTRAINT validates the rows already there (one scan of each
// table, inside the migration's transaction).
constexpr std::string_view kMigrationV2 = R"sql(
ALTER TABLE t_metadata
  ADD CONSTRAINT t_metadata_created_at_range
    CHECK (created_at BETWEEN -62167219200000000 AND 253402300799999999);
ALTER TABLE t_execution_log
  ADD CONSTRAINT t_execution_log_created_at_range
    CHECK (created_at BETWEEN -62167219200000000 AND 253402300799999999);
ALTER TABLE t_join_set_response
  ADD CONSTRAINT t_join_set_response_created_at_range
    CHECK (created_at BETWEEN -62167219200000000 AND 253402300799999999);
ALTER TABLE t_state
  ADD CONSTRAINT t_state_created_at_range
    CHECK (created_at BETWEEN -62167219200000000 AND 253402300799999999),
  ADD CONSTRAINT t_state_first_scheduled_at_range
    CHECK (first_scheduled_at BETWEEN -62167219200000000 AND 253402300799999999),
  ADD CONSTRAINT t_state_pending_expires_finished_range
    CHECK (pending_expires_finished BETWEEN -62167219200000000 AND 253402300799999999),
  ADD CONSTRAINT t_state_updated_at_range
    CHECK (updated_at BETWEEN -62167219200000000 AND 253402300799999999);
ALTER TABLE t_delay
  ADD CONSTRAINT t_delay_expires_at_range
    CHECK (expires_at BETWEEN -62167219200000000 AND 253402300799999999),
  ADD CONSTRAINT t_delay_ids_not_empty
    CHECK (execution_id <> '' AND join_set_id <> '' AND delay_id <> '');
)sql";

// V3: t_state.list_key, the listing order of execution ids
// (core::ListKey, docs/storage_contract.md "Listing order"), as
// in the SQLite backend's V2: lists page by it, so that `_2` lists before
// `_10`. BackfillListKeys fills the rows already there; then the column
// becomes NOT NULL and its indexes are built (idx_t_state_ffqn_list_key
// replaces idx_t_state_ffqn_id, which only served the id order).
constexpr std::string_view kMigrationV3 = R"sql(
ALTER TABLE t_state ADD COLUMN list_key text COLLATE "C";
)sql";
constexpr std::string_view kMigrationV3After = R"sql(
ALTER TABLE t_state ALTER COLUMN list_key SET NOT NULL;
DROP INDEX idx_t_state_ffqn_id;
CREATE INDEX idx_t_state_list_key ON t_state (list_key);
CREATE INDEX idx_t_state_ffqn_list_key ON t_state (ffqn, list_key);
)sql";

// Sets list_key of every t_state row, a page of execution ids per round
// trip (bounded memory, whatever the size of the table).
Result<void, DbErrorGeneric> BackfillListKeys(PgConn& conn) {
  constexpr int kPage = 1000;
  std::string after;
  while (true) {
    auto page = conn.Exec(
        "SELECT execution_id FROM t_state WHERE execution_id > $1 ORDER BY execution_id "
        "LIMIT $2",
        Params().Text(after).Int(kPage));
    if (!page) return Unexpected(page.error().ToGeneric());
    if (page->rows() == 0) return {};
    ArrayParam ids, keys;
    for (int row = 0; row < page->rows(); ++row) {
      std::string text = page->Str(row, 0);
      auto id = core::ExecutionId::Parse(text);
      if (!id) {
        return Unexpected(DbErrorGeneric::Uncategorized("t_state.execution_id `" + text +
                                                        "`: " + id.error().message));
      }
      ids.Text(text);
      keys.Text(core::ListKey(*id));
      after = std::move(text);
    }
    auto updated = conn.Exec(
        "UPDATE t_state SET list_key = k.key FROM unnest($1::text[], $2::text[]) AS k(id, key) "
        "WHERE t_state.execution_id = k.id",
        Params().Text(ids.Literal()).Text(keys.Literal()));
    if (!updated) return Unexpected(updated.error().ToGeneric());
  }
}

// V4: t_schedule, the cron schedules (docs/storage_contract.md,
// "Schedules"), as in the SQLite backend's V3. Names in byte order
// (COLLATE "C"), as ListSchedules returns them on every backend.
constexpr std::string_view kMigrationV4 = R"sql(
CREATE TABLE t_schedule (
  name text COLLATE "C" NOT NULL PRIMARY KEY CHECK (name <> ''),
  expression text NOT NULL,
  time_zone text NOT NULL,
  ffqn text NOT NULL,
  params text NOT NULL,
  overlap text NOT NULL,
  catch_up text NOT NULL,
  catch_up_limit bigint NOT NULL CHECK (catch_up_limit >= 0),
  from_config boolean NOT NULL,
  paused boolean NOT NULL,
  created_at bigint NOT NULL
    CONSTRAINT t_schedule_created_at_range
      CHECK (created_at BETWEEN -62167219200000000 AND 253402300799999999),
  updated_at bigint NOT NULL
    CONSTRAINT t_schedule_updated_at_range
      CHECK (updated_at BETWEEN -62167219200000000 AND 253402300799999999),
  last_tick bigint NOT NULL
    CONSTRAINT t_schedule_last_tick_range
      CHECK (last_tick BETWEEN -62167219200000000 AND 253402300799999999),
  last_execution_id text
);
)sql";

// V5: pause and cancel flags of t_state, as in the SQLite backend's V4
// (docs/model.md §9.5, §9.6): paused rows leave the lock indexes;
// `cancelling` is backfilled from the logs of unfinished executions.
constexpr std::string_view kMigrationV5 = R"sql(
ALTER TABLE t_state ADD COLUMN paused boolean NOT NULL DEFAULT false;
ALTER TABLE t_state ADD COLUMN cancelling boolean NOT NULL DEFAULT false;
UPDATE t_state SET cancelling = true WHERE state <> 'finished' AND EXISTS (
  SELECT 1 FROM t_execution_log l WHERE l.execution_id = t_state.execution_id
    AND l.variant = 'history_event'
    AND l.json_value -> 'history_event' -> 'event' ->> 'type' = 'cancel_request');
DROP INDEX idx_t_state_pending_ffqn;
CREATE INDEX idx_t_state_pending_ffqn
  ON t_state (ffqn, pending_expires_finished, execution_id)
  WHERE state = 'pending_at' AND paused = false;
DROP INDEX idx_t_state_pending_digest;
CREATE INDEX idx_t_state_pending_digest
  ON t_state (component_id_input_digest, pending_expires_finished, execution_id)
  WHERE state = 'pending_at' AND paused = false;
)sql";

// V6: t_deadline, the deadlines of unfinished executions
// (core::ExecutionPolicy; GetExpiredTimers' ExpiredDeadline). A row lives
// from the execution's creation until it finishes or a terminate request
// disarms it, so the index holds live deadlines only.
constexpr std::string_view kMigrationV6 = R"sql(
CREATE TABLE t_deadline (
  execution_id text NOT NULL PRIMARY KEY,
  deadline bigint NOT NULL
    CONSTRAINT t_deadline_deadline_range
      CHECK (deadline BETWEEN -62167219200000000 AND 253402300799999999)
);
CREATE INDEX idx_t_deadline_deadline ON t_deadline (deadline);
)sql";

// V7: messages (docs/model.md §3.5) are responses too, as in the SQLite
// backend's V6: message_id and message_body, a third kind of row in the
// row CHECK (V1's unnamed table CHECK, named t_join_set_response_check by
// PostgreSQL), and a message id unique per execution.
constexpr std::string_view kMigrationV7 = R"sql(
ALTER TABLE t_join_set_response
  ADD COLUMN message_id text,
  ADD COLUMN message_body json,
  DROP CONSTRAINT t_join_set_response_check,
  ADD CONSTRAINT t_join_set_response_kind CHECK (
    (delay_id IS NOT NULL AND delay_success IS NOT NULL AND child_execution_id IS NULL
       AND finished_version IS NULL AND child_result IS NULL AND message_id IS NULL
       AND message_body IS NULL)
    OR (delay_id IS NULL AND delay_success IS NULL AND child_execution_id IS NOT NULL
       AND finished_version IS NOT NULL AND message_id IS NULL AND message_body IS NULL)
    OR (delay_id IS NULL AND delay_success IS NULL AND child_execution_id IS NULL
       AND finished_version IS NULL AND child_result IS NULL AND message_id IS NOT NULL
       AND message_body IS NOT NULL));
CREATE UNIQUE INDEX idx_t_join_set_response_message
  ON t_join_set_response (execution_id, message_id) WHERE message_id IS NOT NULL;
)sql";

struct Migration {
  int64_t version;
  std::string_view sql;
  // Run after `sql`, in the same transaction: data changes SQL alone cannot
  // make, then `sql_after` (constraints and indexes over the new data).
  Result<void, DbErrorGeneric> (*backfill)(PgConn&) = nullptr;
  std::string_view sql_after = {};
};
// Append new migrations at the end; never edit a released one.
constexpr Migration kMigrations[] = {
    {1, kMigrationV1}, {2, kMigrationV2}, {3, kMigrationV3, &BackfillListKeys, kMigrationV3After},
    {4, kMigrationV4}, {5, kMigrationV5}, {6, kMigrationV6},
    {7, kMigrationV7},
};
static_assert(std::size(kMigrations) == kLatestSchemaVersion);

}  // namespace

Result<int64_t, DbErrorGeneric> ReadSchemaVersion(PgConn& conn) {
  auto exists = conn.Exec("SELECT to_regclass('t_metadata') IS NOT NULL");
  if (!exists) return Unexpected(exists.error().ToGeneric());
  if (!exists->Bool(0, 0)) return int64_t{0};
  auto version = conn.Exec("SELECT COALESCE(MAX(schema_version), 0) FROM t_metadata");
  if (!version) return Unexpected(version.error().ToGeneric());
  return version->Int(0, 0);
}

Result<void, DbErrorGeneric> Migrate(PgConn& conn, DateTime now, int64_t target) {
  if (auto begun = conn.ExecScript("BEGIN"); !begun) return Unexpected(begun.error().ToGeneric());
  auto body = [&]() -> Result<void, DbErrorGeneric> {
    // Held until COMMIT/ROLLBACK: a second migrator waits here and then
    // sees the first one's schema version.
    if (auto locked = conn.ExecScript(std::string("SELECT pg_advisory_xact_lock(x'") +
                                      kMigrationLockKey + "'::bigint)");
        !locked) {
      return Unexpected(locked.error().ToGeneric());
    }
    if (auto created = conn.ExecScript(std::string(kCreateMetadata)); !created) {
      return Unexpected(created.error().ToGeneric());
    }
    STELE_ASSIGN_OR_RETURN(int64_t current, ReadSchemaVersion(conn));
    if (current > kLatestSchemaVersion) {
      return Unexpected(DbErrorGeneric::Uncategorized(
          "database has schema version " + std::to_string(current) +
          ", newer than the newest this build knows (" + std::to_string(kLatestSchemaVersion) +
          "); refusing to open it — upgrade Stele"));
    }
    for (const Migration& migration : kMigrations) {
      if (migration.version <= current || migration.version > target) continue;
      auto failed = [&](const std::string& why) {
        return Unexpected(DbErrorGeneric::Uncategorized("migration to schema version " +
                                                        std::to_string(migration.version) +
                                                        " failed: " + why));
      };
      if (auto applied = conn.ExecScript(std::string(migration.sql)); !applied) {
        return failed(applied.error().message);
      }
      if (migration.backfill != nullptr) {
        if (auto filled = migration.backfill(conn); !filled) return failed(filled.error().reason());
      }
      if (!migration.sql_after.empty()) {
        if (auto applied = conn.ExecScript(std::string(migration.sql_after)); !applied) {
          return failed(applied.error().message);
        }
      }
      auto recorded =
          conn.Exec("INSERT INTO t_metadata (schema_version, created_at) VALUES ($1, $2)",
                    Params().Int(migration.version).Int(ToMicros(now)));
      if (!recorded) return Unexpected(recorded.error().ToGeneric());
    }
    return {};
  };
  auto result = body();
  if (!result) {
    (void)conn.ExecScript("ROLLBACK");
    return result;
  }
  if (auto committed = conn.ExecScript("COMMIT"); !committed) {
    return Unexpected(committed.error().ToGeneric());
  }
  return {};
}

}  // namespace stele::storage::postgres::internal
