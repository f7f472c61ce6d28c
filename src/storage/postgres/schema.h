// Schema of the PostgreSQL backend and its numbered, forward-only
// migrations (like storage/sqlite/schema.h). Column types are native:
//   - instants: bigint microseconds since the Unix epoch (see
//     docs/postgres.md: exact round trip of every core DateTime, the same
//     integer arithmetic as the SQLite backend, no session time zone),
//     with CHECK (years 0000–9999, the RFC 3339 range) since V2;
//   - events, results, backtraces: json — not jsonb, which reorders object
//     keys: a record's field order is part of the value (the conformance
//     test EventsPreserveRecordFieldOrder) and must survive the round trip;
//   - versions, cursors, counters: bigint with CHECK (>= 0);
//   - component digests: bytea; flags: boolean;
//   - t_state.list_key (V3): core::ListKey, the order lists of
//     executions page by.
//
// Threading: Migrate runs on the connection it is given.
#pragma once

#include <cstdint>

#include "base/result.h"
#include "base/time.h"
#include "storage/db_errors.h"
#include "storage/postgres/pg_conn.h"

namespace stele::storage::postgres::internal {

inline constexpr int64_t kLatestSchemaVersion = 7;

// Brings the database to `target` (kLatestSchemaVersion; tests pass an
// older one to make a database as an older build left it) in one
// transaction. Opening twice (or from many processes at once) is a no-op
// after the first: a transaction-scoped advisory lock serialises
// concurrent migrators. Refuses a schema newer than this build.
Result<void, DbErrorGeneric> Migrate(PgConn& conn, DateTime now,
                                     int64_t target = kLatestSchemaVersion);

// The schema version recorded in t_metadata (0 on an empty database).
Result<int64_t, DbErrorGeneric> ReadSchemaVersion(PgConn& conn);

}  // namespace stele::storage::postgres::internal
