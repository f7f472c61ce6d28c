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
#include <set>
#include <string>
#include <vector>

#include "storage/sqlite/connection.h"

namespace stele::storage::sqlite::internal {

namespace {

// Everything stored for the executions of one id range, in this order:
// the rows keyed by exec_key find the range's keys in t_state, so t_state
// goes last; its count is the number of executions deleted. Backtraces go
// in DeleteBacktraces, between kDeleteRows and kDeleteStates.
constexpr const char* kDeleteRows[] = {
    "DELETE FROM t_execution_log WHERE exec_key IN "
    "(SELECT exec_key FROM t_state WHERE execution_id >= ?1 AND execution_id < ?2)",
    "DELETE FROM t_join_set_response WHERE exec_key IN "
    "(SELECT exec_key FROM t_state WHERE execution_id >= ?1 AND execution_id < ?2)",
    "DELETE FROM t_delay WHERE execution_id >= ?1 AND execution_id < ?2",
    "DELETE FROM t_deadline WHERE execution_id >= ?1 AND execution_id < ?2",
};
constexpr const char* kDeleteStates =
    "DELETE FROM t_state WHERE execution_id >= ?1 AND execution_id < ?2";

// The range's backtraces, then each text (t_backtrace_text, schema V9) no
// backtrace names any more; idx_t_backtrace_text finds whether one does.
Result<void, DbErrorGeneric> DeleteBacktraces(Connection& db, const std::string& begin,
                                              const std::string& end) {
  std::set<int64_t> texts;
  {
    STELE_ASSIGN_OR_RETURN(
        Statement del,
        db.Prepare("DELETE FROM t_backtrace WHERE exec_key IN (SELECT exec_key FROM t_state "
                   "WHERE execution_id >= ?1 AND execution_id < ?2) RETURNING text_id"));
    del.BindText(1, begin);
    del.BindText(2, end);
    while (true) {
      STELE_ASSIGN_OR_RETURN(bool row, del.Step());
      if (!row) break;
      texts.insert(del.Int64(0));
    }
  }
  STELE_ASSIGN_OR_RETURN(Statement orphan,
                         db.Prepare("DELETE FROM t_backtrace_text WHERE id = ?1 AND NOT EXISTS "
                                    "(SELECT 1 FROM t_backtrace WHERE text_id = ?1)"));
  for (int64_t id : texts) {
    orphan.BindInt64(1, id);
    STELE_TRY(orphan.Run());
    orphan.Reset();
  }
  return {};
}

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
          auto run = [&](const char* sql) -> Result<void, DbErrorGeneric> {
            STELE_ASSIGN_OR_RETURN(Statement del, tx.connection.Prepare(sql));
            del.BindText(1, candidate.id);
            del.BindText(2, end);
            return del.Run();
          };
          for (const char* sql : kDeleteRows) STELE_TRY(run(sql));
          STELE_TRY(DeleteBacktraces(tx.connection, candidate.id, end));
          STELE_TRY(run(kDeleteStates));
          out.deleted += static_cast<uint64_t>(tx.connection.Changes());
          ++out.deleted_top_level;
        }
        return out;
      });
}

}  // namespace stele::storage::sqlite::internal
