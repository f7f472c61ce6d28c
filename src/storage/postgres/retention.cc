// Retention of the PostgreSQL backend (DbExternalApi::DeleteFinishedExecutions):
// one READ COMMITTED transaction per batch in three round trips — the
// candidates (storage/retention.h), the trees' t_state rows deleted, then
// everything else stored for the deleted ids and COMMIT.
//
// Concurrency: a collectable tree is all finished, so no writer can add to
// it but a late response (a live timer firing on a finished execution),
// and every writer takes the execution's t_state row lock first
// (journal.cc). Deleting the t_state rows first takes those locks: a writer
// that held one has committed before the deletes below start (each
// statement sees what committed before it), and one that comes after finds
// no row (NotFound). Two processes collecting at once both select a tree;
// the second's delete waits for the first and finds nothing left.
#include "storage/retention.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "storage/postgres/connection.h"

namespace stele::storage::postgres::internal {

namespace {

// t_state's ids are COLLATE "C", so the tree's id range is a range of its
// primary key; the other tables are keyed in the default collation, so
// they are deleted by the ids themselves.
const std::string kDeleteTreeStates =
    "DELETE FROM t_state WHERE execution_id >= $1 AND execution_id < $2 "
    "RETURNING execution_id::text";
constexpr const char* kDeleteByIds[] = {
    "DELETE FROM t_execution_log WHERE execution_id = ANY($1::text[])",
    "DELETE FROM t_join_set_response WHERE execution_id = ANY($1::text[])",
    "DELETE FROM t_delay WHERE execution_id = ANY($1::text[])",
    "DELETE FROM t_deadline WHERE execution_id = ANY($1::text[])",
    "DELETE FROM t_backtrace WHERE execution_id = ANY($1::text[])",
};

}  // namespace

Result<DeletedExecutions, DbErrorWrite> PostgresConnection::DeleteFinishedExecutions(
    DateTime cutoff, uint32_t batch_size, const std::optional<RetentionCursor>& after) {
  STELE_TRY(ValidateRetentionBatch(batch_size));
  return store_->Write<DeletedExecutions, DbErrorWrite>(
      [&](Tx& tx) -> Result<DeletedExecutions, DbErrorWrite> {
        static const std::string kCandidates = RetentionCandidatesSql(SqlDialect::kPostgres);
        STELE_ASSIGN_OR_RETURN(
            const PgResult* rows,
            tx.Q(kCandidates,
                 Params()
                     .Int(ToMicros(cutoff))
                     .Int(after ? ToMicros(after->created_at) : std::numeric_limits<int64_t>::min())
                     .Text(after ? after->execution_id.ToString() : std::string())
                     .Int(batch_size)));
        DeletedExecutions out;
        out.examined = static_cast<uint32_t>(rows->rows());
        if (rows->rows() == static_cast<int>(batch_size)) {
          const int last = rows->rows() - 1;
          auto id = ExecutionId::Parse(rows->Text(last, 0));
          if (!id) {
            return Unexpected(DbErrorGeneric::Uncategorized(
                "t_state.execution_id `" + rows->Str(last, 0) + "`: " + id.error().message));
          }
          out.next = RetentionCursor{DateTimeFromMicros(rows->Int(last, 1)), *id};
        }
        std::vector<size_t> tickets;
        for (int row = 0; row < rows->rows(); ++row) {
          if (!rows->Bool(row, 2)) continue;
          const std::string id = rows->Str(row, 0);
          tickets.push_back(tx.Read(kDeleteTreeStates, Params().Text(id).Text(TreeIdEnd(id))));
        }
        if (tickets.empty()) return out;
        ArrayParam ids;
        for (size_t ticket : tickets) {
          STELE_ASSIGN_OR_RETURN(const PgResult* deleted, tx.Get(ticket));
          if (deleted->rows() == 0) continue;  // collected by another process meanwhile
          ++out.deleted_top_level;
          out.deleted += static_cast<uint64_t>(deleted->rows());
          for (int row = 0; row < deleted->rows(); ++row) ids.Text(deleted->Text(row, 0));
        }
        if (out.deleted == 0) return out;
        for (const char* sql : kDeleteByIds) tx.Write(sql, Params().Text(ids.Literal()));
        return out;
      });
}

}  // namespace stele::storage::postgres::internal
