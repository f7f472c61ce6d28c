// Retention of the SQLite backend (DbExternalApi::DeleteFinishedExecutions):
// one logical operation on the writer per batch, so a batch is atomic and a
// large backlog is deleted in many short transactions, never one long one.
//
// Freed pages: the deleted rows' pages go to the file's freelist and are
// reused by the next inserts, so a store that is collected regularly stops
// growing; the file does not shrink. auto_vacuum is not enabled (it can be
// switched on for an existing file only by a full VACUUM, and keeping the
// pointer map costs every commit); docs/storage_contract.md, "Retention".
#include "storage/retention.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "storage/sqlite/connection.h"

namespace stele::storage::sqlite::internal {

namespace {

// Everything stored for the executions of one id range; t_state last, its
// count is the number of executions deleted.
constexpr const char* kDeleteTree[] = {
    "DELETE FROM t_execution_log WHERE execution_id >= ?1 AND execution_id < ?2",
    "DELETE FROM t_join_set_response WHERE execution_id >= ?1 AND execution_id < ?2",
    "DELETE FROM t_delay WHERE execution_id >= ?1 AND execution_id < ?2",
    "DELETE FROM t_deadline WHERE execution_id >= ?1 AND execution_id < ?2",
    "DELETE FROM t_backtrace WHERE execution_id >= ?1 AND execution_id < ?2",
    "DELETE FROM t_state WHERE execution_id >= ?1 AND execution_id < ?2",
};

}  // namespace

Result<DeletedExecutions, DbErrorWrite> SqliteConnection::DeleteFinishedExecutions(
    DateTime cutoff, uint32_t batch_size, const std::optional<RetentionCursor>& after) {
  STELE_TRY(ValidateRetentionBatch(batch_size));
  return store_->Write<DeletedExecutions, DbErrorWrite>(
      [&](WriteContext& tx) -> Result<DeletedExecutions, DbErrorWrite> {
        static const std::string kCandidates = RetentionCandidatesSql(SqlDialect::kSqlite);
        struct Candidate {
          std::string id;
          int64_t created_at;
          bool collectable;
        };
        std::vector<Candidate> candidates;
        {
          STELE_ASSIGN_OR_RETURN(Statement select, tx.connection.Prepare(kCandidates));
          select.BindInt64(1, ToMicros(cutoff));
          select.BindInt64(
              2, after ? ToMicros(after->created_at) : std::numeric_limits<int64_t>::min());
          select.BindText(3, after ? after->execution_id.ToString() : std::string());
          select.BindInt64(4, batch_size);
          while (true) {
            STELE_ASSIGN_OR_RETURN(bool row, select.Step());
            if (!row) break;
            candidates.push_back({select.Text(0), select.Int64(1), select.Int64(2) != 0});
          }
        }
        DeletedExecutions out;
        out.examined = static_cast<uint32_t>(candidates.size());
        if (candidates.size() == batch_size) {
          auto id = ExecutionId::Parse(candidates.back().id);
          if (!id) {
            return Unexpected(DbErrorGeneric::Uncategorized(
                "t_state.execution_id `" + candidates.back().id + "`: " + id.error().message));
          }
          out.next = RetentionCursor{DateTimeFromMicros(candidates.back().created_at), *id};
        }
        for (const Candidate& candidate : candidates) {
          if (!candidate.collectable) continue;
          const std::string end = TreeIdEnd(candidate.id);
          for (const char* sql : kDeleteTree) {
            STELE_ASSIGN_OR_RETURN(Statement del, tx.connection.Prepare(sql));
            del.BindText(1, candidate.id);
            del.BindText(2, end);
            STELE_TRY(del.Run());
          }
          out.deleted += static_cast<uint64_t>(tx.connection.Changes());
          ++out.deleted_top_level;
        }
        return out;
      });
}

}  // namespace stele::storage::sqlite::internal
