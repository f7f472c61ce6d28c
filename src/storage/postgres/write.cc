// Writes and locking of the PostgreSQL backend: each is one transaction on
// one pooled connection (journal.h has the rules).
#include <string>
#include <utility>

#include "base/log.h"
#include "storage/postgres/connection.h"
#include "storage/postgres/journal.h"

namespace stele::storage::postgres::internal {

namespace {

// A text[] literal: {"a","b"} with " and \ escaped.
std::string TextArray(const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += '"';
    for (char c : values[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

// Due PendingAt rows, oldest first (ties by id), locked FOR UPDATE SKIP
// LOCKED: a row another transaction is locking right now is skipped, not
// waited for, so concurrent lockers divide the work.
const std::string kSelectDueByFfqns =
    "SELECT " + std::string(kStateColumns) +
    " FROM t_state WHERE state = 'pending_at' AND ffqn = ANY($1::text[]) AND "
    "pending_expires_finished <= $2 ORDER BY pending_expires_finished, execution_id "
    "LIMIT $3 FOR UPDATE SKIP LOCKED";
const std::string kSelectDueByDigest =
    "SELECT " + std::string(kStateColumns) +
    " FROM t_state WHERE state = 'pending_at' AND component_id_input_digest = $1::bytea AND "
    "pending_expires_finished <= $2 ORDER BY pending_expires_finished, execution_id "
    "LIMIT $3 FOR UPDATE SKIP LOCKED";

Result<std::vector<LockedExecution>, DbErrorGeneric> LockSelected(Tx& tx, const std::string& sql,
                                                                  const Params& params,
                                                                  const core::Locked& locked,
                                                                  DateTime created_at) {
  STELE_ASSIGN_OR_RETURN(PgResult rows, tx.Q(sql, params));
  std::vector<LockedExecution> result;
  const AppendRequest request{created_at, locked};
  for (int row = 0; row < rows.rows(); ++row) {
    auto state = DecodeStateRow(rows, row);
    if (!state) {
      STELE_LOG(kWarn, "skipping pending row: " << state.error().reason());
      continue;
    }
    auto id = ParseColumn<ExecutionId>(state->execution_id, "t_state.execution_id");
    if (!id) {
      STELE_LOG(kWarn, "skipping pending row: " << id.error().reason());
      continue;
    }
    // The lock rules are checked before anything is written, so a refused
    // row leaves no trace and the others go on.
    auto appended = AppendEventLockedTx(tx, *state, state->NextVersion(), request, created_at);
    if (!appended) {
      if (appended.error().kind() == DbErrorWrite::Kind::kGeneric) {
        return Unexpected(appended.error().generic());
      }
      STELE_LOG(kDebug,
                "not locking " << state->execution_id << ": " << appended.error().ToString());
      continue;
    }
    STELE_ASSIGN_OR_RETURN(auto loaded, LoadLockedExecution(tx.conn, *id, locked, *appended,
                                                            state->intermittent_event_count));
    result.push_back(std::move(loaded));
  }
  return result;
}

}  // namespace

Result<std::vector<LockedExecution>, DbErrorGeneric> PostgresConnection::LockPendingByFfqns(
    uint32_t batch_size, DateTime pending_at_or_sooner, const std::vector<core::FunctionFqn>& ffqns,
    DateTime created_at, const core::ComponentId& component_id, const core::ExecutorId& executor_id,
    DateTime lock_expires_at, const core::RunId& run_id,
    const core::ComponentRetryConfig& retry_config) {
  const core::Locked locked{component_id, executor_id, run_id, lock_expires_at, retry_config};
  std::vector<std::string> names;
  for (const auto& ffqn : ffqns) names.push_back(ffqn.ToString());
  return store_->Write<std::vector<LockedExecution>, DbErrorGeneric>([&](Tx& tx) {
    return LockSelected(
        tx, kSelectDueByFfqns,
        Params().Text(TextArray(names)).Int(TimeColumn(pending_at_or_sooner)).Int(batch_size),
        locked, created_at);
  });
}

Result<std::vector<LockedExecution>, DbErrorGeneric> PostgresConnection::LockPendingByComponentId(
    uint32_t batch_size, DateTime pending_at_or_sooner, const core::ComponentId& component_id,
    DateTime created_at, const core::ExecutorId& executor_id, DateTime lock_expires_at,
    const core::RunId& run_id, const core::ComponentRetryConfig& retry_config) {
  const core::Locked locked{component_id, executor_id, run_id, lock_expires_at, retry_config};
  return store_->Write<std::vector<LockedExecution>, DbErrorGeneric>([&](Tx& tx) {
    return LockSelected(tx, kSelectDueByDigest,
                        Params()
                            .Text(DigestParam(component_id.input_digest))
                            .Int(TimeColumn(pending_at_or_sooner))
                            .Int(batch_size),
                        locked, created_at);
  });
}

Result<LockedExecution, DbErrorWrite> PostgresConnection::LockOne(
    DateTime created_at, const core::ComponentId& component_id, const ExecutionId& execution_id,
    const core::RunId& run_id, Version version, const core::ExecutorId& executor_id,
    DateTime lock_expires_at, const core::ComponentRetryConfig& retry_config) {
  const core::Locked locked{component_id, executor_id, run_id, lock_expires_at, retry_config};
  return store_->Write<LockedExecution, DbErrorWrite>(
      [&](Tx& tx) -> Result<LockedExecution, DbErrorWrite> {
        STELE_ASSIGN_OR_RETURN(auto state, LoadState(tx.conn, execution_id.ToString(), true));
        if (!state) return Unexpected(DbErrorWrite::NotFound());
        STELE_ASSIGN_OR_RETURN(Version next,
                               AppendEventLockedTx(tx, *state, version,
                                                   AppendRequest{created_at, locked}, created_at));
        STELE_ASSIGN_OR_RETURN(auto result, LoadLockedExecution(tx.conn, execution_id, locked, next,
                                                                state->intermittent_event_count));
        return result;
      });
}

Result<Version, DbErrorWrite> PostgresConnection::Append(const ExecutionId& execution_id,
                                                         Version version,
                                                         const AppendRequest& req) {
  return store_->Write<Version, DbErrorWrite>(
      [&](Tx& tx) { return AppendEventTx(tx, execution_id, version, req, req.created_at); });
}

Result<Version, DbErrorWrite> PostgresConnection::AppendBatch(
    DateTime current_time, const std::vector<AppendRequest>& batch, const ExecutionId& execution_id,
    Version version) {
  return store_->Write<Version, DbErrorWrite>(
      [&](Tx& tx) { return AppendBatchTx(tx, execution_id, version, batch, current_time); });
}

Result<Version, DbErrorWrite> PostgresConnection::AppendBatchCreateNewExecution(
    DateTime current_time, const std::vector<AppendRequest>& batch, const ExecutionId& execution_id,
    Version version, const std::vector<CreateRequest>& child_requests) {
  return store_->Write<Version, DbErrorWrite>([&](Tx& tx) -> Result<Version, DbErrorWrite> {
    STELE_ASSIGN_OR_RETURN(Version next,
                           AppendBatchTx(tx, execution_id, version, batch, current_time));
    // Any child that exists already rolls back the whole transaction.
    for (const CreateRequest& child : child_requests) STELE_TRY(CreateTx(tx, child, current_time));
    return next;
  });
}

Result<Version, DbErrorWrite> PostgresConnection::AppendBatchRespondToParent(
    const AppendEventsToExecution& events, const AppendResponseToExecution& response,
    DateTime current_time) {
  return store_->Write<Version, DbErrorWrite>([&](Tx& tx) -> Result<Version, DbErrorWrite> {
    STELE_ASSIGN_OR_RETURN(Version next, AppendBatchTx(tx, events.execution_id, events.version,
                                                       events.batch, current_time));
    core::JoinSetResponseEventOuter outer{
        response.created_at,
        core::JoinSetResponseEvent{
            response.join_set_id,
            core::ChildExecutionFinished{response.child_execution_id, response.finished_version,
                                         response.result}}};
    STELE_TRY(InsertResponseTx(tx, response.parent_execution_id, outer, current_time));
    return next;
  });
}

Result<Version, DbErrorWrite> PostgresConnection::Create(const CreateRequest& req) {
  return store_->Write<Version, DbErrorWrite>(
      [&](Tx& tx) { return CreateTx(tx, req, req.created_at); });
}

Result<AppendDelayResponseOutcome, DbErrorWrite> PostgresConnection::AppendDelayResponse(
    DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
    const core::DelayId& delay_id, bool ok) {
  auto outcome = store_->Write<AppendDelayResponseOutcome, DbErrorWrite>(
      [&](Tx& tx) -> Result<AppendDelayResponseOutcome, DbErrorWrite> {
        // Lock the parent first: the delay's first response decides, and a
        // concurrent one waits here and then sees it.
        STELE_ASSIGN_OR_RETURN(auto state, LoadState(tx.conn, execution_id.ToString(), true));
        if (!state) return Unexpected(DbErrorWrite::NotFound());
        STELE_ASSIGN_OR_RETURN(auto existing, FindDelayResponse(tx.conn, delay_id));
        if (existing) {
          return *existing ? AppendDelayResponseOutcome::kAlreadyFinished
                           : AppendDelayResponseOutcome::kAlreadyCancelled;
        }
        core::JoinSetResponseEventOuter outer{
            created_at, core::JoinSetResponseEvent{join_set_id, core::DelayFinished{delay_id, ok}}};
        STELE_TRY(InsertResponseTx(tx, execution_id, outer, created_at));
        return AppendDelayResponseOutcome::kSuccess;
      });
  // Lost a race on the delay id's unique index (another parent row): the
  // committed winner decides.
  if (!outcome && outcome.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kConflict)) {
    auto existing = store_->Read<std::optional<bool>, DbErrorWrite>(
        false, [&](PgConn& db) -> Result<std::optional<bool>, DbErrorWrite> {
          STELE_ASSIGN_OR_RETURN(auto found, FindDelayResponse(db, delay_id));
          return found;
        });
    if (existing && *existing) {
      return **existing ? AppendDelayResponseOutcome::kAlreadyFinished
                        : AppendDelayResponseOutcome::kAlreadyCancelled;
    }
  }
  return outcome;
}

Result<void, DbErrorWrite> PostgresConnection::AppendResponse(
    DateTime created_at, const ExecutionId& execution_id,
    const core::JoinSetResponseEvent& response) {
  return store_->Write<void, DbErrorWrite>([&](Tx& tx) {
    return InsertResponseTx(tx, execution_id, core::JoinSetResponseEventOuter{created_at, response},
                            created_at);
  });
}

Result<void, DbErrorWrite> PostgresConnection::AppendBacktrace(const core::BacktraceInfo& info) {
  return AppendBacktraceBatch({info});
}

Result<void, DbErrorWrite> PostgresConnection::AppendBacktraceBatch(
    const std::vector<core::BacktraceInfo>& batch) {
  if (batch.empty()) return {};
  return store_->Write<void, DbErrorWrite>([&](Tx& tx) -> Result<void, DbErrorWrite> {
    // The first backtrace of a version range wins (as in the reference model).
    for (const core::BacktraceInfo& info : batch) {
      STELE_ASSIGN_OR_RETURN(std::string component, EncodeJson(info.component_id));
      STELE_ASSIGN_OR_RETURN(std::string backtrace, EncodeJson(info.wasm_backtrace));
      auto inserted = tx.conn.Exec(
          "INSERT INTO t_backtrace (execution_id, component_id, version_min_including, "
          "version_max_excluding, wasm_backtrace) VALUES ($1, $2::json, $3, $4, $5::json) "
          "ON CONFLICT DO NOTHING",
          Params()
              .Text(info.execution_id.ToString())
              .Text(component)
              .Int(info.version_min_including.value())
              .Int(info.version_max_excluding.value())
              .Text(backtrace));
      if (!inserted) {
        if (inserted.error().kind == PgError::Kind::kInvalidValue) {
          return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(inserted.error().message));
        }
        return Unexpected(inserted.error().ToGeneric());
      }
    }
    return {};
  });
}

Result<void, DbErrorWrite> PostgresConnection::UpgradeExecutionComponent(
    const ExecutionId& execution_id, const core::InputContentDigest& old_digest,
    const core::InputContentDigest& new_digest) {
  return store_->Write<void, DbErrorWrite>(
      [&](Tx& tx) { return UpgradeComponentTx(tx, execution_id, old_digest, new_digest); });
}

}  // namespace stele::storage::postgres::internal
