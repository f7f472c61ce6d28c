#include "storage/retention.h"

#include <algorithm>

namespace stele::storage {

Result<void, DbErrorWrite> ValidateRetentionBatch(uint32_t batch_size) {
  if (batch_size == 0 || batch_size > kMaxRetentionBatch) {
    return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(
        "retention batch size must be 1.." + std::to_string(kMaxRetentionBatch) + ", got " +
        std::to_string(batch_size)));
  }
  return {};
}

bool IsCollectable(const std::vector<RetentionMember>& tree, DateTime cutoff) {
  if (tree.empty()) return false;
  for (const RetentionMember& member : tree) {
    if (!member.finished || member.finished_at > cutoff) return false;
  }
  return true;
}

std::string TreeIdEnd(const std::string& top_level_id) { return top_level_id + "/"; }

std::string RetentionCandidatesSql(SqlDialect dialect) {
  // The tree's ids are [id, id || '/'): the id itself and its descendants
  // (TreeIdEnd). t_state's ids compare bytewise on both backends (COLLATE
  // "C" on PostgreSQL), so the range is a primary key range.
  std::string sql = R"sql(
SELECT t.execution_id, t.created_at,
  (t.state = 'finished' AND t.pending_expires_finished <= $1
   AND NOT EXISTS (SELECT 1 FROM t_state d
                   WHERE d.execution_id > t.execution_id
                     AND d.execution_id < t.execution_id || '/'
                     AND (d.state <> 'finished' OR d.pending_expires_finished > $1)))
  AS collectable
FROM t_state t
WHERE {top_level} AND t.created_at <= $1
  AND t.created_at >= $2 AND (t.created_at > $2 OR t.execution_id > $3)
ORDER BY t.created_at, t.execution_id
LIMIT $4)sql";
  // The partial index of top-level rows says `WHERE is_top_level = 1` on
  // SQLite and `WHERE is_top_level` on PostgreSQL; the query must say it
  // the same way to use it.
  const bool pg = dialect == SqlDialect::kPostgres;
  sql.replace(sql.find("{top_level}"), 11, pg ? "t.is_top_level" : "t.is_top_level = 1");
  if (!pg) std::replace(sql.begin(), sql.end(), '$', '?');  // ?N: SQLite's numbered parameters
  return sql;
}

}  // namespace stele::storage
