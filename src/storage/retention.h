// Retention: which finished executions may be deleted, stated once for every
// backend (DbExternalApi::DeleteFinishedExecutions, docs/storage_contract.md
// "Retention").
//
// The rule: a top-level execution is collectable at `cutoff` when it and
// every descendant are Finished at or before `cutoff`. Descendants are the
// executions whose ids extend its id (core/ids.h: `E_<ULID>.<join set>_<n>`
// and so on), so a tree is one range of ids: from the top-level id up to
// the id followed by '/' (the character after '.'), which no other
// top-level id falls into (they all have the same length).
//
// The SQL backends run RetentionCandidatesSql, which evaluates the rule in
// the database (one statement per batch); the memory model evaluates
// IsCollectable on its journals. The conformance suite holds them to the
// same answers.
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/time.h"
#include "storage/db_errors.h"

namespace stele::storage {

// The largest batch one call may examine.
inline constexpr uint32_t kMaxRetentionBatch = 10000;

// ValidationFailed unless 1 <= batch_size <= kMaxRetentionBatch.
Result<void, DbErrorWrite> ValidateRetentionBatch(uint32_t batch_size);

// One member of a tree as the rule sees it.
struct RetentionMember {
  bool finished = false;
  DateTime finished_at;  // when finished
};
// The rule over a whole tree (the top-level execution and its
// descendants, in any order).
bool IsCollectable(const std::vector<RetentionMember>& tree, DateTime cutoff);

// The first id after every id of the tree of `top_level_id` (exclusive
// upper bound of its id range).
std::string TreeIdEnd(const std::string& top_level_id);

enum class SqlDialect { kSqlite, kPostgres };

// The candidate query of one batch, on t_state: top-level executions
// created at or before the cutoff, after the cursor, oldest first, each
// with whether its tree is collectable. Parameters (placeholders ?N on
// SQLite, $N on PostgreSQL): 1 the cutoff, 2 and 3 the cursor's created_at
// and id (the cursor row itself excluded; INT64_MIN and '' for none), 4
// the batch size; instants in microseconds since the epoch. Columns: 0 the
// id, 1 created_at, 2 collectable (1/0 on SQLite, t/f on PostgreSQL).
// Served by the top-level created_at index (a range scan of at most the
// batch) and the primary key of t_state (each tree's range).
std::string RetentionCandidatesSql(SqlDialect dialect);

}  // namespace stele::storage
