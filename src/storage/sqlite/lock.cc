// Locking pending executions. Selection and locking happen in one logical
// operation on the writer thread, so no other write can slip in between;
// each selected row is still re-validated by the full append rules (lock
// rules of CanAppendLock, version) and, if that fails, skipped alone under
// its own nested savepoint.
#include <algorithm>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>

#include "base/log.h"
#include "storage/sqlite/connection.h"
#include "storage/sqlite/event_codec.h"
#include "storage/sqlite/journal_tx.h"
#include "storage/sqlite/row_codec.h"

namespace stele::storage::sqlite::internal {

struct LockCandidate {
  DateTime scheduled_at;
  std::string execution_id;
  Version next_version;
};

namespace {

// Due PendingAt rows selected by `sql` (key, time, limit), oldest first,
// ties by id; served by the partial pending indexes.
Result<std::vector<LockCandidate>, DbErrorGeneric> SelectDue(
    Connection& db, const std::string& sql, std::string_view key_text, const void* key_blob,
    size_t key_blob_size, DateTime pending_at_or_sooner, uint32_t limit) {
  STELE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare(sql));
  if (key_blob != nullptr) {
    stmt.BindBlob(1, key_blob, key_blob_size);
  } else {
    stmt.BindText(1, key_text);
  }
  stmt.BindInt64(2, TimeColumn(pending_at_or_sooner));
  stmt.BindInt64(3, limit);
  std::vector<LockCandidate> candidates;
  while (true) {
    STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return candidates;
    const int64_t version = stmt.Int64(2);
    if (version < 0 || version >= int64_t{UINT32_MAX}) continue;
    candidates.push_back(LockCandidate{TimeFromColumn(stmt.Int64(0)), stmt.Text(1),
                                       Version(static_cast<Version::Type>(version + 1))});
  }
}

constexpr const char* kSelectDueByFfqn =
    "SELECT pending_expires_finished, execution_id, corresponding_version FROM t_state "
    "WHERE state = 'pending_at' AND paused = 0 AND ffqn = ? AND pending_expires_finished <= ? "
    "ORDER BY pending_expires_finished, execution_id LIMIT ?";
constexpr const char* kSelectDueByDigest =
    "SELECT pending_expires_finished, execution_id, corresponding_version FROM t_state "
    "WHERE state = 'pending_at' AND paused = 0 AND component_id_input_digest = ? AND "
    "pending_expires_finished <= ? ORDER BY pending_expires_finished, execution_id LIMIT ?";

// The Locked event every execution of a lock operation gets, encoded on
// the caller's thread and filed under `locked` (event_codec.h).
PreEncodedEvents PreEncodeLock(const core::Locked& locked) {
  PreEncodedEvents rows;
  rows.Add(&locked, core::ExecutionRequest(locked));
  return rows;
}

}  // namespace

Result<std::vector<LockedExecution>, DbErrorGeneric> SqliteConnection::LockCandidates(
    WriteContext& tx, std::vector<LockCandidate> candidates, uint32_t batch_size,
    const core::Locked& locked, DateTime created_at) {
  std::sort(
      candidates.begin(), candidates.end(), [](const LockCandidate& a, const LockCandidate& b) {
        return std::tie(a.scheduled_at, a.execution_id) < std::tie(b.scheduled_at, b.execution_id);
      });
  if (candidates.size() > batch_size) candidates.resize(batch_size);

  std::vector<LockedExecution> result;
  const AppendRequest request{created_at, locked};
  for (const LockCandidate& candidate : candidates) {
    auto id = ParseColumn<ExecutionId>(candidate.execution_id, "t_state.execution_id");
    if (!id) {
      STELE_LOG(kWarn, "skipping pending row: " << id.error().reason());
      continue;
    }
    // A failing row must not take the batch with it.
    STELE_TRY(tx.connection.Exec("SAVEPOINT lock_row"));
    auto appended = AppendEventTx(tx, *id, candidate.next_version, request, created_at, &locked);
    Result<LockedExecution, DbErrorGeneric> loaded =
        appended ? LoadLockedExecution(tx.connection, *id, locked, *appended)
                 : Result<LockedExecution, DbErrorGeneric>(
                       Unexpected(DbErrorGeneric::Uncategorized(appended.error().ToString())));
    if (loaded) {
      STELE_TRY(tx.connection.Exec("RELEASE lock_row"));
      result.push_back(std::move(*loaded));
    } else {
      // A row refused by the lock rules (e.g. a lease of another run that
      // ends after `created_at`) is routine; anything else is not.
      if (!appended && appended.error().kind() == DbErrorWrite::Kind::kNonRetriable) {
        STELE_LOG(kDebug,
                  "not locking " << candidate.execution_id << ": " << loaded.error().reason());
      } else {
        STELE_LOG(kWarn,
                  "not locking " << candidate.execution_id << ": " << loaded.error().reason());
      }
      STELE_TRY(tx.connection.Exec("ROLLBACK TO lock_row"));
      STELE_TRY(tx.connection.Exec("RELEASE lock_row"));
    }
  }
  return result;
}

Result<std::vector<LockedExecution>, DbErrorGeneric> SqliteConnection::LockPendingByFfqns(
    uint32_t batch_size, DateTime pending_at_or_sooner, const std::vector<core::FunctionFqn>& ffqns,
    DateTime created_at, const core::ComponentId& component_id, const core::ExecutorId& executor_id,
    DateTime lock_expires_at, const core::RunId& run_id,
    const core::ComponentRetryConfig& retry_config) {
  const core::Locked locked{component_id, executor_id, run_id, lock_expires_at, retry_config};
  const PreEncodedEvents pre_encoded = PreEncodeLock(locked);
  return store_->WriteUnsynced<std::vector<LockedExecution>, DbErrorGeneric>(
      [&](WriteContext& tx) -> Result<std::vector<LockedExecution>, DbErrorGeneric> {
        tx.pre_encoded = &pre_encoded;
        // One index range per ffqn, each bounded by the batch size; the
        // merge below keeps the global (scheduled_at, id) order.
        std::vector<std::string> names;
        for (const auto& ffqn : ffqns) names.push_back(ffqn.ToString());
        std::sort(names.begin(), names.end());
        names.erase(std::unique(names.begin(), names.end()), names.end());
        std::vector<LockCandidate> candidates;
        for (const std::string& name : names) {
          STELE_ASSIGN_OR_RETURN(auto due, SelectDue(tx.connection, kSelectDueByFfqn, name, nullptr,
                                                     0, pending_at_or_sooner, batch_size));
          std::move(due.begin(), due.end(), std::back_inserter(candidates));
        }
        return LockCandidates(tx, std::move(candidates), batch_size, locked, created_at);
      });
}

Result<std::vector<LockedExecution>, DbErrorGeneric> SqliteConnection::LockPendingByComponentId(
    uint32_t batch_size, DateTime pending_at_or_sooner, const core::ComponentId& component_id,
    DateTime created_at, const core::ExecutorId& executor_id, DateTime lock_expires_at,
    const core::RunId& run_id, const core::ComponentRetryConfig& retry_config) {
  const core::Locked locked{component_id, executor_id, run_id, lock_expires_at, retry_config};
  const PreEncodedEvents pre_encoded = PreEncodeLock(locked);
  return store_->WriteUnsynced<std::vector<LockedExecution>, DbErrorGeneric>(
      [&](WriteContext& tx) -> Result<std::vector<LockedExecution>, DbErrorGeneric> {
        tx.pre_encoded = &pre_encoded;
        const auto& digest = component_id.input_digest.bytes();
        STELE_ASSIGN_OR_RETURN(auto candidates,
                               SelectDue(tx.connection, kSelectDueByDigest, {}, digest.data(),
                                         digest.size(), pending_at_or_sooner, batch_size));
        return LockCandidates(tx, std::move(candidates), batch_size, locked, created_at);
      });
}

Result<LockedExecution, DbErrorWrite> SqliteConnection::LockOne(
    DateTime created_at, const core::ComponentId& component_id, const ExecutionId& execution_id,
    const core::RunId& run_id, Version version, const core::ExecutorId& executor_id,
    DateTime lock_expires_at, const core::ComponentRetryConfig& retry_config) {
  const core::Locked locked{component_id, executor_id, run_id, lock_expires_at, retry_config};
  const PreEncodedEvents pre_encoded = PreEncodeLock(locked);
  return store_->WriteUnsynced<LockedExecution, DbErrorWrite>(
      [&](WriteContext& tx) -> Result<LockedExecution, DbErrorWrite> {
        tx.pre_encoded = &pre_encoded;
        STELE_ASSIGN_OR_RETURN(
            Version next, AppendEventTx(tx, execution_id, version,
                                        AppendRequest{created_at, locked}, created_at, &locked));
        STELE_ASSIGN_OR_RETURN(auto result,
                               LoadLockedExecution(tx.connection, execution_id, locked, next));
        return result;
      });
}

}  // namespace stele::storage::sqlite::internal
