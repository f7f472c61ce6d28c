// The SQLite schema and how a file gets there: connection PRAGMAs, the
// integrity check at open, and forward migrations recorded in t_metadata.
//
// Schema (V9), all tables STRICT, all instants INTEGER microseconds since
// the Unix epoch (index-friendly; base/time.h):
//   t_metadata           one row per applied migration (schema_version).
//   t_state              the materialised PendingState, one row per execution,
//                        PK the text execution_id (row_codec.h says which
//                        columns each state sets); list_key = core::ListKey
//                        (V2), the order of lists that include children;
//                        exec_key (V9) the execution's integer key.
//   t_sequence           the next exec_key (V9; never reused).
//   t_execution_log      the append-only journal, PK (exec_key, version);
//                        json_value = core::ToJson(ExecutionRequest), a
//                        compressed BLOB since V7 (event_codec.h);
//                        history_event_type = the history event's tag.
//   t_join_set_response  responses per execution in arrival order, PK
//                        (exec_key, idx) with idx the 0-based cursor;
//                        unique per child id and per delay id.
//   t_delay              live timers; deleted when their response arrives.
//   t_backtrace          backtraces per version range of an exec_key, each
//                        naming its text in t_backtrace_text (V9: stored
//                        once per distinct component and backtrace).
// docs/storage_contract.md, "Execution keys (schema V9)".
// Every hot query is served by an index; see the comments in schema.cc.
//
// Threading: functions here run on one connection from one thread.
#pragma once

#include <cstdint>

#include "base/result.h"
#include "base/time.h"
#include "storage/db_errors.h"
#include "storage/sqlite/sqlite_handle.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele::storage::sqlite::internal {

// The newest schema version this code knows (and migrates to).
inline constexpr int64_t kLatestSchemaVersion = 9;

// What a connection is for; decides its PRAGMAs.
enum class ConnectionRole {
  kWriter,        // the one write connection (writer thread)
  kReader,        // read-only API reads
  kCheckpointer,  // copies the WAL into the database file (checkpointer.h)
};

// Applies the PRAGMAs: for the writer page_size on a fresh file,
// journal_mode=WAL (verified), journal_size_limit and no automatic
// checkpoints (the checkpointer thread does them); for every role
// busy_timeout, synchronous, foreign_keys, cache_size, temp_store=MEMORY,
// mmap_size; for readers query_only. Then `options.extra_pragmas` (which
// the writer must accept; other roles skip the ones they cannot apply).
// Errors: Generic (including a malformed extra PRAGMA).
Result<void, DbErrorGeneric> ConfigureConnection(Connection& connection,
                                                 const SqliteOptions& options, ConnectionRole role);

// `PRAGMA quick_check`; Generic "integrity check failed: ..." unless it
// answers "ok".
Result<void, DbErrorGeneric> CheckIntegrity(Connection& connection);

// Brings the schema to `target` (kLatestSchemaVersion; tests pass an older
// version to build the database an older build left) in one IMMEDIATE
// transaction: creates t_metadata when missing, refuses a newer schema
// version, runs every missing migration and records it with `now`. A no-op
// on an up-to-date file.
Result<void, DbErrorGeneric> Migrate(Connection& connection, DateTime now,
                                     int64_t target = kLatestSchemaVersion);

// Highest schema_version recorded, 0 for a fresh file.
Result<int64_t, DbErrorGeneric> ReadSchemaVersion(Connection& connection);

}  // namespace stele::storage::sqlite::internal
