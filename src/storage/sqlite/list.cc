// Paginated lists of the SQLite backend. Every page is one bounded range
// scan of an index whose order matches the ORDER BY (schema.cc lists one
// per filter combination), so page latency does not grow with the store.
#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "base/log.h"
#include "core/list_key.h"
#include "storage/sqlite/connection.h"
#include "storage/sqlite/queries.h"
#include "storage/sqlite/row_codec.h"

namespace stele::storage::sqlite::internal {

namespace {

template <class T>
bool IsNewer(const core::Pagination<T>& page) {
  return page.direction == core::Pagination<T>::Direction::kNewerThan;
}

}  // namespace

Result<std::vector<ExecutionWithState>, DbErrorGeneric> SqliteConnection::ListExecutions(
    const std::optional<core::FunctionFqn>& ffqn, bool top_level_only,
    const core::ExecutionListPagination& pagination) {
  return store_->Read(
      [&](Connection& db) -> Result<std::vector<ExecutionWithState>, DbErrorGeneric> {
        const bool by_created_at =
            std::holds_alternative<core::Pagination<std::optional<DateTime>>>(pagination);
        bool newer = false;
        bool has_cursor = false;
        std::string rel;
        uint16_t length = 0;
        std::visit(
            [&](const auto& page) {
              newer = IsNewer(page);
              has_cursor = page.cursor.has_value();
              rel = std::string(page.Rel());
              length = page.length;
            },
            pagination);

        // Literal filters (not parameters) so that the planner can pick the
        // matching partial index (is_top_level = 1).
        std::string sql = "SELECT " + std::string(kStateColumns) + " FROM t_state";
        std::vector<std::string> where;
        if (ffqn) where.push_back("ffqn = ?1");
        if (top_level_only) where.push_back("is_top_level = 1");
        // By id: lists with children in list_key order (ExecutionId::
        // ListKey: `_2` before `_10`); top-level ids are their own list
        // keys, so top-level lists use execution_id and its indexes.
        const char* key =
            by_created_at ? "created_at" : (top_level_only ? "execution_id" : "list_key");
        if (has_cursor) where.push_back(std::string(key) + " " + rel + " ?2");
        for (size_t i = 0; i < where.size(); ++i) sql += (i == 0 ? " WHERE " : " AND ") + where[i];
        // Descending pages read backwards from the cursor; ascending ones are
        // read forwards and reversed, so the result is always descending.
        const char* direction = newer ? " ASC" : " DESC";
        sql += std::string(" ORDER BY ") + key + direction;
        if (by_created_at) sql += std::string(", execution_id") + direction;
        sql += " LIMIT ?3";

        STELE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare(sql));
        if (ffqn) stmt.BindText(1, ffqn->ToString());
        if (has_cursor) {
          if (by_created_at) {
            stmt.BindInt64(2, TimeColumn(*std::get<0>(pagination).cursor));
          } else {
            stmt.BindText(2, core::ListKey(*std::get<1>(pagination).cursor));
          }
        }
        stmt.BindInt64(3, length);

        std::vector<ExecutionWithState> rows;
        while (true) {
          STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
          if (!row) break;
          // A damaged row must not hide the rest of the page.
          auto decoded = [&]() -> Result<ExecutionWithState, DbErrorGeneric> {
            STELE_ASSIGN_OR_RETURN(ExecutionState state, DecodeStateRow(stmt));
            STELE_ASSIGN_OR_RETURN(
                auto id, ParseColumn<ExecutionId>(state.execution_id, "t_state.execution_id"));
            STELE_ASSIGN_OR_RETURN(auto function,
                                   ParseColumn<core::FunctionFqn>(state.ffqn, "t_state.ffqn"));
            return ExecutionWithState{
                std::move(id),    std::move(function),      std::move(state.pending_state),
                state.created_at, state.first_scheduled_at, state.digest};
          }();
          if (decoded) {
            rows.push_back(std::move(*decoded));
          } else {
            STELE_LOG(kWarn, "skipping t_state row in a list: " << decoded.error().reason());
          }
        }
        if (newer) std::reverse(rows.begin(), rows.end());
        return rows;
      });
}

namespace {

// Adds `count` to the field of `counts` named by a t_state.state value.
void AddCount(ExecutionCounts& counts, std::string_view state, uint64_t count) {
  if (state == "paused") counts.paused += count;
  if (state == "pending_at") counts.pending_at += count;
  if (state == "locked") counts.locked += count;
  if (state == "blocked_by_join_set") counts.blocked_by_join_set += count;
  if (state == "finished") counts.finished += count;
}

}  // namespace

Result<ExecutionCounts, DbErrorGeneric> SqliteConnection::CountExecutionsByState() {
  return store_->Read([&](Connection& db) -> Result<ExecutionCounts, DbErrorGeneric> {
    STELE_ASSIGN_OR_RETURN(
        Statement stmt,
        db.Prepare("SELECT CASE WHEN paused = 1 AND state <> 'finished' THEN 'paused' "
                   "ELSE state END AS s, COUNT(*) FROM t_state GROUP BY s"));
    ExecutionCounts counts;
    while (true) {
      STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      AddCount(counts, stmt.Text(0), static_cast<uint64_t>(stmt.Int64(1)));
    }
    return counts;
  });
}

Result<PendingCounts, DbErrorGeneric> SqliteConnection::CountPendingByFfqns(
    const std::vector<core::FunctionFqn>& ffqns, DateTime now) {
  if (ffqns.empty()) return PendingCounts{};
  return store_->Read([&](Connection& db) -> Result<PendingCounts, DbErrorGeneric> {
    // One statement (one snapshot): the pending half is a range scan of
    // idx_t_state_pending_ffqn per ffqn, the locked half a scan of
    // idx_t_state_expired_locks (locked rows only). IN dedups the ffqns.
    std::string in = "?2";
    for (size_t i = 1; i < ffqns.size(); ++i) in += ", ?" + std::to_string(i + 2);
    STELE_ASSIGN_OR_RETURN(
        Statement stmt,
        db.Prepare("SELECT COUNT(*) FILTER (WHERE pending_expires_finished <= ?1), "
                   "COUNT(*) FILTER (WHERE pending_expires_finished > ?1), 0 FROM t_state "
                   "WHERE state = 'pending_at' AND paused = 0 AND ffqn IN (" +
                   in +
                   ") "
                   "UNION ALL SELECT 0, 0, COUNT(*) FROM t_state "
                   "WHERE state = 'locked' AND ffqn IN (" +
                   in + ")"));
    stmt.BindInt64(1, TimeColumn(now));
    for (size_t i = 0; i < ffqns.size(); ++i) {
      stmt.BindText(static_cast<int>(i + 2), ffqns[i].ToString());
    }
    PendingCounts counts;
    while (true) {
      STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      counts.due += static_cast<uint64_t>(stmt.Int64(0));
      counts.scheduled_later += static_cast<uint64_t>(stmt.Int64(1));
      counts.locked += static_cast<uint64_t>(stmt.Int64(2));
    }
    return counts;
  });
}

Result<std::vector<DigestCount>, DbErrorGeneric> SqliteConnection::CountPendingByComponentDigest() {
  return store_->Read([&](Connection& db) -> Result<std::vector<DigestCount>, DbErrorGeneric> {
    // A scan of idx_t_state_pending_digest (pending rows only).
    STELE_ASSIGN_OR_RETURN(
        Statement stmt,
        db.Prepare("SELECT component_id_input_digest, COUNT(*) FROM t_state "
                   "WHERE state = 'pending_at' AND paused = 0 GROUP BY component_id_input_digest "
                   "ORDER BY component_id_input_digest"));
    std::vector<DigestCount> counts;
    while (true) {
      STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      STELE_ASSIGN_OR_RETURN(core::InputContentDigest digest,
                             DecodeDigest(stmt.Blob(0), "(pending count)"));
      counts.push_back(DigestCount{digest, static_cast<uint64_t>(stmt.Int64(1))});
    }
    return counts;
  });
}

Result<std::vector<ResponseWithCursor>, DbErrorRead> SqliteConnection::ListResponses(
    const ExecutionId& execution_id, const core::Pagination<uint32_t>& pagination) {
  return store_->Read([&](Connection& db) -> Result<std::vector<ResponseWithCursor>, DbErrorRead> {
    const std::string id = execution_id.ToString();
    STELE_ASSIGN_OR_RETURN(auto state, LoadState(db, id));
    if (!state) return Unexpected(DbErrorRead::NotFound());
    const bool newer = IsNewer(pagination);
    // NewerThan: the first `length` responses after the cursor; OlderThan:
    // the last `length` before it. Either way returned in arrival order.
    std::string sql = std::string(kResponseSelect) +
                      "WHERE r.exec_key = (SELECT exec_key FROM t_state WHERE "
                      "execution_id = ?1) AND r.idx " +
                      std::string(pagination.Rel()) + " ?2 ORDER BY r.idx" +
                      (newer ? " ASC" : " DESC") + " LIMIT ?3";
    STELE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare(sql));
    stmt.BindText(1, id);
    stmt.BindInt64(2, pagination.cursor);
    stmt.BindInt64(3, pagination.length);
    std::vector<ResponseWithCursor> page;
    while (true) {
      STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      STELE_ASSIGN_OR_RETURN(auto response, DecodeResponseRow(stmt, id));
      page.push_back(std::move(response));
    }
    if (!newer) std::reverse(page.begin(), page.end());
    return page;
  });
}

}  // namespace stele::storage::sqlite::internal
