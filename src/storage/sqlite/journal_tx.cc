#include "storage/sqlite/journal_tx.h"

#include <algorithm>
#include <string>
#include <utility>
#include <variant>

#include "core/list_key.h"
#include "storage/pending_state_rules.h"
#include "storage/request_rules.h"
#include "storage/sqlite/queries.h"
#include "storage/sqlite/row_codec.h"

namespace stele::storage::sqlite::internal {

namespace {

// --- t_state updates -----------------------------------------------------------
// Each leaves exactly the columns row_codec.h prescribes for the new state.

// PendingAt(scheduled_at); the last lock holder (executor_id, run_id) is kept
// so that it may extend its lock. `temporary` counts a retry.
Result<void, DbErrorGeneric> SetPendingAt(Connection& db, std::string_view id, Version version,
                                          DateTime scheduled_at, bool temporary,
                                          DateTime updated_at) {
  STELE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("UPDATE t_state SET state = 'pending_at', corresponding_version = ?, "
                 "pending_expires_finished = ?, updated_at = ?, "
                 "intermittent_event_count = intermittent_event_count + ?, "
                 "last_lock_version = NULL, join_set_id = NULL, join_set_closing = NULL, "
                 "result_kind = NULL WHERE execution_id = ?"));
  stmt.BindInt64(1, version.value());
  stmt.BindInt64(2, TimeColumn(scheduled_at));
  stmt.BindInt64(3, TimeColumn(updated_at));
  stmt.BindInt64(4, temporary ? 1 : 0);
  stmt.BindText(5, id);
  return stmt.Run();
}

Result<void, DbErrorWrite> SetLocked(Connection& db, std::string_view id, Version version,
                                     const core::Locked& locked, DateTime updated_at) {
  STELE_ASSIGN_OR_RETURN(std::string backoff, EncodeJson(locked.retry_config.retry_exp_backoff));
  STELE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("UPDATE t_state SET state = 'locked', corresponding_version = ?, "
                 "pending_expires_finished = ?, updated_at = ?, last_lock_version = ?, "
                 "executor_id = ?, run_id = ?, max_retries = ?, retry_exp_backoff = ?, "
                 "join_set_id = NULL, join_set_closing = NULL, result_kind = NULL "
                 "WHERE execution_id = ?"));
  stmt.BindInt64(1, version.value());
  stmt.BindInt64(2, TimeColumn(locked.lock_expires_at));
  stmt.BindInt64(3, TimeColumn(updated_at));
  stmt.BindInt64(4, version.value());
  stmt.BindText(5, locked.executor_id.ToString());
  stmt.BindText(6, locked.run_id.ToString());
  std::optional<int64_t> max_retries;
  if (locked.retry_config.max_retries) max_retries = *locked.retry_config.max_retries;
  stmt.BindOptionalInt64(7, max_retries);
  stmt.BindText(8, backoff);
  stmt.BindText(9, id);
  STELE_TRY(stmt.Run());
  return {};
}

// The pause and cancel flags (row_codec.h), independent of the state.
Result<void, DbErrorGeneric> SetFlags(Connection& db, std::string_view id, bool paused,
                                      bool cancelling) {
  STELE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("UPDATE t_state SET paused = ?, cancelling = ? WHERE execution_id = ?"));
  stmt.BindInt64(1, paused ? 1 : 0);
  stmt.BindInt64(2, cancelling ? 1 : 0);
  stmt.BindText(3, id);
  return stmt.Run();
}

Result<void, DbErrorGeneric> SetBlocked(Connection& db, std::string_view id, Version version,
                                        const core::JoinSetId& join_set_id, DateTime lease,
                                        bool closing, DateTime updated_at) {
  STELE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("UPDATE t_state SET state = 'blocked_by_join_set', corresponding_version = ?, "
                 "pending_expires_finished = ?, updated_at = ?, last_lock_version = NULL, "
                 "join_set_id = ?, join_set_closing = ?, result_kind = NULL "
                 "WHERE execution_id = ?"));
  stmt.BindInt64(1, version.value());
  stmt.BindInt64(2, TimeColumn(lease));
  stmt.BindInt64(3, TimeColumn(updated_at));
  stmt.BindText(4, join_set_id.ToString());
  stmt.BindInt64(5, closing ? 1 : 0);
  stmt.BindText(6, id);
  return stmt.Run();
}

Result<void, DbErrorWrite> SetFinished(Connection& db, std::string_view id, Version version,
                                       DateTime finished_at,
                                       const core::SupportedFunctionReturnValue& result) {
  STELE_ASSIGN_OR_RETURN(std::string kind,
                         EncodeJson(core::PendingStateFinishedResultKind::From(result)));
  STELE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("UPDATE t_state SET state = 'finished', corresponding_version = ?, "
                 "pending_expires_finished = ?, updated_at = ?, last_lock_version = NULL, "
                 "executor_id = NULL, run_id = NULL, join_set_id = NULL, "
                 "join_set_closing = NULL, result_kind = ? WHERE execution_id = ?"));
  stmt.BindInt64(1, version.value());
  stmt.BindInt64(2, TimeColumn(finished_at));
  stmt.BindInt64(3, TimeColumn(finished_at));
  stmt.BindText(4, kind);
  stmt.BindText(5, id);
  STELE_TRY(stmt.Run());
  return {};
}

// Removes the execution's deadline (t_deadline): it finished, or a
// terminate request disarmed it.
Result<void, DbErrorGeneric> DisarmDeadline(Connection& db, std::string_view id) {
  STELE_ASSIGN_OR_RETURN(Statement stmt,
                         db.Prepare("DELETE FROM t_deadline WHERE execution_id = ?"));
  stmt.BindText(1, id);
  return stmt.Run();
}

Result<void, DbErrorGeneric> BumpVersion(Connection& db, std::string_view id, Version version,
                                         DateTime updated_at) {
  STELE_ASSIGN_OR_RETURN(Statement stmt,
                         db.Prepare("UPDATE t_state SET corresponding_version = ?, updated_at = ? "
                                    "WHERE execution_id = ?"));
  stmt.BindInt64(1, version.value());
  stmt.BindInt64(2, TimeColumn(updated_at));
  stmt.BindText(3, id);
  return stmt.Run();
}

// --- journal rows ----------------------------------------------------------------

Result<void, DbErrorWrite> InsertEvent(Connection& db, std::string_view id, Version version,
                                       DateTime created_at, const core::ExecutionRequest& event) {
  STELE_ASSIGN_OR_RETURN(std::string json, EncodeEvent(event));
  STELE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("INSERT INTO t_execution_log "
                 "(execution_id, version, created_at, json_value, variant, join_set_id) "
                 "VALUES (?, ?, ?, ?, ?, ?)"));
  stmt.BindText(1, id);
  stmt.BindInt64(2, version.value());
  stmt.BindInt64(3, TimeColumn(created_at));
  stmt.BindText(4, json);
  stmt.BindText(5, core::ExecutionRequestVariantTag(event));
  if (auto join_set_id = core::ExecutionRequestJoinSetId(event)) {
    stmt.BindText(6, join_set_id->ToString());
  } else {
    stmt.BindNull(6);
  }
  STELE_TRY(stmt.Run());
  return {};
}

// A live timer, keyed by its delay id within the execution (a repeated
// DelayRequest replaces the timer, as in the reference model).
Result<void, DbErrorGeneric> UpsertDelay(Connection& db, std::string_view id,
                                         const core::JoinSetId& join_set_id,
                                         const core::DelayRequest& delay) {
  const std::string delay_id = delay.delay_id.ToString();
  STELE_ASSIGN_OR_RETURN(Statement remove,
                         db.Prepare("DELETE FROM t_delay WHERE execution_id = ? AND delay_id = ?"));
  remove.BindText(1, id);
  remove.BindText(2, delay_id);
  STELE_TRY(remove.Run());
  STELE_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO t_delay (execution_id, join_set_id, delay_id, expires_at) "
                 "VALUES (?, ?, ?, ?)"));
  insert.BindText(1, id);
  insert.BindText(2, join_set_id.ToString());
  insert.BindText(3, delay_id);
  insert.BindInt64(4, TimeColumn(delay.expires_at));
  return insert.Run();
}

Result<int64_t, DbErrorGeneric> CountJoinNexts(Connection& db, std::string_view id,
                                               const core::JoinSetId& join_set_id) {
  // Served by the partial index idx_t_execution_log_join_next.
  STELE_ASSIGN_OR_RETURN(
      Statement stmt, db.Prepare("SELECT COUNT(*) FROM t_execution_log WHERE execution_id = ? AND "
                                 "join_set_id = ? AND history_event_type = 'join_next'"));
  stmt.BindText(1, id);
  stmt.BindText(2, join_set_id.ToString());
  STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  return row ? stmt.Int64(0) : int64_t{0};
}

// created_at of the k-th (1-based) response of the join set, in arrival order.
Result<std::optional<DateTime>, DbErrorGeneric> KthResponseTime(Connection& db, std::string_view id,
                                                                const core::JoinSetId& join_set_id,
                                                                int64_t k) {
  STELE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("SELECT created_at FROM t_join_set_response WHERE execution_id = ? AND "
                 "join_set_id = ? ORDER BY idx LIMIT 1 OFFSET ?"));
  stmt.BindText(1, id);
  stmt.BindText(2, join_set_id.ToString());
  stmt.BindInt64(3, k - 1);
  STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<DateTime>();
  return std::optional<DateTime>(TimeFromColumn(stmt.Int64(0)));
}

void NotifyPending(WriteContext& tx, const ExecutionState& state, DateTime scheduled_at,
                   DateTime current_time) {
  tx.notes.pending.push_back(PendingNotice{state.ffqn, state.digest, scheduled_at, current_time});
}

// Applies the transition of a history event appended at `version`.
Result<void, DbErrorWrite> ApplyHistoryEvent(WriteContext& tx, const ExecutionState& state,
                                             Version version, const AppendRequest& req,
                                             const core::HistoryEvent& event,
                                             DateTime current_time) {
  Connection& db = tx.connection;
  const std::string& id = state.execution_id;
  if (const auto* request = std::get_if<core::HistoryJoinSetRequest>(&event)) {
    if (const auto* delay = std::get_if<core::DelayRequest>(&request->request)) {
      STELE_TRY(UpsertDelay(db, id, request->join_set_id, *delay));
    }
    STELE_TRY(BumpVersion(db, id, version, req.created_at));
    return {};
  }
  if (const auto* cancel = std::get_if<core::HistoryCancelRequest>(&event)) {
    if (cancel->terminate) STELE_TRY(DisarmDeadline(db, id));
    // Whatever the run was doing or waiting for, a run must see the
    // request; a paused workflow is resumed so that it can end.
    STELE_TRY(SetPendingAt(db, id, version, req.created_at, /*temporary=*/false, req.created_at));
    STELE_TRY(SetFlags(db, id, /*paused=*/false, /*cancelling=*/true));
    NotifyPending(tx, state, req.created_at, current_time);
    return {};
  }
  const auto* join_next = std::get_if<core::HistoryJoinNext>(&event);
  if (join_next == nullptr) {
    // Persist, JoinSetCreate, JoinNextTooMany, Schedule, Stub, Step: version only.
    STELE_TRY(BumpVersion(db, id, version, req.created_at));
    return {};
  }
  // k counts this join set's JoinNexts including the one just inserted; the
  // k-th response (arrival order) is the one it awaits.
  STELE_ASSIGN_OR_RETURN(int64_t k, CountJoinNexts(db, id, join_next->join_set_id));
  STELE_ASSIGN_OR_RETURN(auto response_at, KthResponseTime(db, id, join_next->join_set_id, k));
  if (response_at) {
    // The warm run keeps its lease; after it anyone may continue.
    DateTime scheduled_at = std::max(join_next->run_expires_at, *response_at);
    STELE_TRY(SetPendingAt(db, id, version, scheduled_at, /*temporary=*/false, req.created_at));
    NotifyPending(tx, state, scheduled_at, current_time);
  } else {
    STELE_TRY(SetBlocked(db, id, version, join_next->join_set_id, join_next->run_expires_at,
                         join_next->closing, req.created_at));
  }
  return {};
}

}  // namespace

namespace {

// The checks every append makes against the current state.
Result<void, DbErrorWrite> CheckAppendable(const ExecutionState& state, Version version) {
  if (state.IsFinished()) {
    return Unexpected(DbErrorWriteNonRetriable::IllegalState("already finished"));
  }
  if (version != state.NextVersion()) {
    return Unexpected(DbErrorWriteNonRetriable::VersionConflict(state.NextVersion(), version));
  }
  return {};
}

// History events whose only effect on t_state is the version (and, for a
// DelayRequest, a live timer): everything but JoinNext and CancelRequest.
bool ChangesOnlyTheVersion(const AppendRequest& req) {
  const auto* history = std::get_if<core::HistoryEventRequest>(&req.event);
  return history != nullptr && !std::holds_alternative<core::HistoryJoinNext>(history->event) &&
         !std::holds_alternative<core::HistoryCancelRequest>(history->event);
}

// AppendEventTx on the execution's current `state` (as LoadState reads it).
Result<Version, DbErrorWrite> AppendEventToStateTx(WriteContext& tx, const ExecutionState& state,
                                                   Version version, const AppendRequest& req,
                                                   DateTime current_time);

}  // namespace

Result<Version, DbErrorWrite> AppendEventTx(WriteContext& tx, const ExecutionId& execution_id,
                                            Version version, const AppendRequest& req,
                                            DateTime current_time) {
  STELE_TRY(ValidateAppendRequest(execution_id, req));
  STELE_ASSIGN_OR_RETURN(auto loaded, LoadState(tx.connection, execution_id.ToString()));
  if (!loaded) return Unexpected(DbErrorWrite::NotFound());
  return AppendEventToStateTx(tx, *loaded, version, req, current_time);
}

namespace {

Result<Version, DbErrorWrite> AppendEventToStateTx(WriteContext& tx, const ExecutionState& state,
                                                   Version version, const AppendRequest& req,
                                                   DateTime current_time) {
  Connection& db = tx.connection;
  const std::string& id = state.execution_id;
  STELE_TRY(CheckAppendable(state, version));
  if (const auto* locked = std::get_if<core::Locked>(&req.event)) {
    STELE_TRY(CanAppendLock(state.pending_state, req.created_at, locked->executor_id,
                            locked->run_id, locked->lock_expires_at));
  }
  STELE_TRY(InsertEvent(db, id, version, req.created_at, req.event));

  if (const auto* locked = std::get_if<core::Locked>(&req.event)) {
    STELE_TRY(SetLocked(db, id, version, *locked, req.created_at));
  } else if (const auto* unlocked = std::get_if<core::Unlocked>(&req.event)) {
    // Unlocked never counts as a retry.
    STELE_TRY(SetPendingAt(db, id, version, unlocked->backoff_expires_at, false, req.created_at));
    NotifyPending(tx, state, unlocked->backoff_expires_at, current_time);
  } else if (const auto* failed = std::get_if<core::TemporarilyFailed>(&req.event)) {
    STELE_TRY(SetPendingAt(db, id, version, failed->backoff_expires_at, true, req.created_at));
    NotifyPending(tx, state, failed->backoff_expires_at, current_time);
  } else if (const auto* timed_out = std::get_if<core::TemporarilyTimedOut>(&req.event)) {
    STELE_TRY(SetPendingAt(db, id, version, timed_out->backoff_expires_at, true, req.created_at));
    NotifyPending(tx, state, timed_out->backoff_expires_at, current_time);
  } else if (const auto* finished = std::get_if<core::Finished>(&req.event)) {
    STELE_TRY(SetFinished(db, id, version, req.created_at, finished->result));
    STELE_TRY(DisarmDeadline(db, id));
    tx.notes.finished.push_back(FinishedNotice{id, finished->result});
  } else if (const auto* history = std::get_if<core::HistoryEventRequest>(&req.event)) {
    STELE_TRY(ApplyHistoryEvent(tx, state, version, req, history->event, current_time));
    if (std::holds_alternative<core::HistoryPublish>(history->event)) {
      tx.notes.published.push_back(id);
    }
  } else if (std::holds_alternative<core::Paused>(req.event)) {
    // A run holding the lock is fenced out by the version; the execution
    // waits, pending, for the resume (docs/model.md §9.6).
    if (std::holds_alternative<core::PendingStateLocked>(state.pending_state.value)) {
      STELE_TRY(SetPendingAt(db, id, version, req.created_at, false, req.created_at));
    } else {
      STELE_TRY(BumpVersion(db, id, version, req.created_at));
    }
    STELE_TRY(SetFlags(db, id, /*paused=*/true, state.pending_state.cancelling));
  } else if (std::holds_alternative<core::Resumed>(req.event)) {
    STELE_TRY(BumpVersion(db, id, version, req.created_at));
    STELE_TRY(SetFlags(db, id, /*paused=*/false, state.pending_state.cancelling));
    if (const auto* pending = std::get_if<core::PendingStatePendingAt>(&state.pending_state.value)) {
      NotifyPending(tx, state, pending->scheduled_at, current_time);
    }
  }
  return version.Increment();
}

}  // namespace

// The state is read once and kept while the batch's events only move the
// version (a workflow step is typically JoinSetCreate, JoinSetRequest,
// JoinNext): their t_state update is folded into the next event that
// writes the row anyway (every state change also sets the version), or one
// version bump at the end. Same rows as appending one by one.
Result<Version, DbErrorWrite> AppendBatchTx(WriteContext& tx, const ExecutionId& execution_id,
                                            Version version,
                                            const std::vector<AppendRequest>& batch,
                                            DateTime current_time) {
  if (batch.empty()) {
    return Unexpected(DbErrorWriteNonRetriable::ValidationFailed("empty batch"));
  }
  for (const AppendRequest& req : batch) STELE_TRY(ValidateAppendRequest(execution_id, req));
  Connection& db = tx.connection;
  const std::string id = execution_id.ToString();
  std::optional<ExecutionState> state;  // the row as of `version`, when known
  std::optional<DateTime> pending_bump;  // updated_at of a version bump not yet written
  for (const AppendRequest& req : batch) {
    if (!state) {
      STELE_ASSIGN_OR_RETURN(state, LoadState(db, id));
      if (!state) return Unexpected(DbErrorWrite::NotFound());
    }
    if (ChangesOnlyTheVersion(req)) {
      STELE_TRY(CheckAppendable(*state, version));
      STELE_TRY(InsertEvent(db, id, version, req.created_at, req.event));
      const auto& history = std::get<core::HistoryEventRequest>(req.event).event;
      if (std::holds_alternative<core::HistoryPublish>(history)) tx.notes.published.push_back(id);
      if (const auto* request = std::get_if<core::HistoryJoinSetRequest>(&history)) {
        if (const auto* delay = std::get_if<core::DelayRequest>(&request->request)) {
          STELE_TRY(UpsertDelay(db, id, request->join_set_id, *delay));
        }
      }
      state->corresponding_version = version;
      pending_bump = req.created_at;
      version = version.Increment();
      continue;
    }
    // Its own update of the row sets the version too.
    STELE_ASSIGN_OR_RETURN(version, AppendEventToStateTx(tx, *state, version, req, current_time));
    pending_bump.reset();
    state.reset();
  }
  if (pending_bump) {
    STELE_TRY(BumpVersion(db, id, Version(version.value() - 1), *pending_bump));
  }
  return version;
}

Result<std::optional<bool>, DbErrorGeneric> FindDelayResponse(Connection& db,
                                                              const core::DelayId& delay_id) {
  STELE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("SELECT delay_success FROM t_join_set_response WHERE delay_id = ?"));
  stmt.BindText(1, delay_id.ToString());
  STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<bool>();
  return std::optional<bool>(stmt.Int64(0) != 0);
}

Result<std::optional<core::JoinSetResponseEvent>, DbErrorGeneric> FindMessage(
    Connection& db, std::string_view id, const std::string& message_id) {
  STELE_ASSIGN_OR_RETURN(Statement stmt,
                         db.Prepare("SELECT join_set_id, message_body FROM t_join_set_response "
                                    "WHERE execution_id = ? AND message_id = ?"));
  stmt.BindText(1, id);
  stmt.BindText(2, message_id);
  STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<core::JoinSetResponseEvent>();
  STELE_ASSIGN_OR_RETURN(auto join_set_id,
                         ParseColumn<core::JoinSetId>(stmt.Text(0), "response join_set_id"));
  STELE_ASSIGN_OR_RETURN(core::Json body,
                         DecodeRawJson(stmt.Text(1), "t_join_set_response.message_body"));
  return std::optional<core::JoinSetResponseEvent>(core::JoinSetResponseEvent{
      std::move(join_set_id), core::MessageReceived{message_id, std::move(body)}});
}

namespace {

Result<bool, DbErrorGeneric> ChildResponseExists(Connection& db, const std::string& child_id) {
  STELE_ASSIGN_OR_RETURN(
      Statement stmt, db.Prepare("SELECT 1 FROM t_join_set_response WHERE child_execution_id = ?"));
  stmt.BindText(1, child_id);
  return stmt.Step();
}

Result<bool, DbErrorGeneric> LiveDelayExists(Connection& db, std::string_view id,
                                             const core::JoinSetId& join_set_id,
                                             const core::DelayFinished& delay) {
  STELE_ASSIGN_OR_RETURN(Statement stmt,
                         db.Prepare("SELECT 1 FROM t_delay WHERE execution_id = ? AND "
                                    "join_set_id = ? AND delay_id = ?"));
  stmt.BindText(1, id);
  stmt.BindText(2, join_set_id.ToString());
  stmt.BindText(3, delay.delay_id.ToString());
  return stmt.Step();
}

// Whether the child's log already holds a Finished with exactly `result` at
// `version`; then the response need not repeat the result (it is joined).
Result<bool, DbErrorGeneric> ChildFinishedWith(Connection& db, const std::string& child_id,
                                               Version version,
                                               const core::SupportedFunctionReturnValue& result) {
  STELE_ASSIGN_OR_RETURN(auto event, LoadEvent(db, child_id, version));
  if (!event) return false;
  const auto* finished = std::get_if<core::Finished>(&event->event);
  return finished != nullptr && finished->result == result;
}

}  // namespace

Result<uint32_t, DbErrorGeneric> NextCursor(Connection& db, std::string_view id) {
  STELE_ASSIGN_OR_RETURN(Statement stmt,
                         db.Prepare("SELECT idx FROM t_join_set_response WHERE execution_id = ? "
                                    "ORDER BY idx DESC LIMIT 1"));
  stmt.BindText(1, id);
  STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return uint32_t{0};
  const int64_t last = stmt.Int64(0);
  if (last < 0 || last >= int64_t{UINT32_MAX}) {
    return Unexpected(
        DbErrorGeneric::Uncategorized("response cursor of `" + std::string(id) + "` out of range"));
  }
  return static_cast<uint32_t>(last + 1);
}

Result<void, DbErrorWrite> InsertResponseTx(WriteContext& tx, const ExecutionId& execution_id,
                                            const core::JoinSetResponseEventOuter& response,
                                            DateTime current_time) {
  Connection& db = tx.connection;
  const std::string id = execution_id.ToString();
  const core::JoinSetResponseEvent& event = response.event;
  STELE_TRY(CheckResponseAddressee(execution_id, event));
  STELE_ASSIGN_OR_RETURN(auto loaded, LoadState(db, id));
  if (!loaded) return Unexpected(DbErrorWrite::NotFound());
  const ExecutionState& state = *loaded;

  STELE_ASSIGN_OR_RETURN(uint32_t cursor, NextCursor(db, id));
  STELE_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO t_join_set_response (execution_id, idx, created_at, join_set_id, "
                 "delay_id, delay_success, child_execution_id, finished_version, child_result, "
                 "message_id, message_body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  insert.BindText(1, id);
  insert.BindInt64(2, cursor);
  insert.BindInt64(3, TimeColumn(response.created_at));
  insert.BindText(4, event.join_set_id.ToString());
  if (const auto* delay = std::get_if<core::DelayFinished>(&event.event)) {
    STELE_ASSIGN_OR_RETURN(auto existing, FindDelayResponse(db, delay->delay_id));
    if (existing) return Unexpected(DbErrorWriteNonRetriable::Conflict());
    // Requested and not answered yet: its live timer is there.
    STELE_ASSIGN_OR_RETURN(bool requested, LiveDelayExists(db, id, event.join_set_id, *delay));
    if (!requested) return Unexpected(DbErrorWrite::NotFound());
    insert.BindText(5, delay->delay_id.ToString());
    insert.BindInt64(6, delay->ok ? 1 : 0);
    insert.BindNull(7);
    insert.BindNull(8);
    insert.BindNull(9);
    insert.BindNull(10);
    insert.BindNull(11);
  } else if (const auto* message = std::get_if<core::MessageReceived>(&event.event)) {
    // AppendMessage checked the rules; the unique index is the last guard.
    for (int column = 5; column <= 9; ++column) insert.BindNull(column);
    insert.BindText(10, message->message_id);
    STELE_ASSIGN_OR_RETURN(std::string body, EncodeRawJson(message->body));
    insert.BindText(11, body);
  } else {
    const auto& child = std::get<core::ChildExecutionFinished>(event.event);
    const std::string child_id = child.child_execution_id.ToString();
    STELE_ASSIGN_OR_RETURN(bool duplicate, ChildResponseExists(db, child_id));
    if (duplicate) return Unexpected(DbErrorWriteNonRetriable::Conflict());
    // A child exists only with its parent's request (ValidateChildCreation),
    // and its id names that parent and join set (checked above).
    STELE_ASSIGN_OR_RETURN(auto child_state, LoadState(db, child_id));
    if (!child_state) return Unexpected(DbErrorWrite::NotFound());
    insert.BindNull(5);
    insert.BindNull(6);
    insert.BindText(7, child_id);
    insert.BindInt64(8, child.finished_version.value());
    STELE_ASSIGN_OR_RETURN(bool joined,
                           ChildFinishedWith(db, child_id, child.finished_version, child.result));
    if (joined) {
      insert.BindNull(9);
    } else {
      STELE_ASSIGN_OR_RETURN(std::string result, EncodeJson(child.result));
      insert.BindText(9, result);
    }
    insert.BindNull(10);
    insert.BindNull(11);
  }
  STELE_TRY(insert.Run());

  // Only an execution blocked on this very join set is unblocked; in any
  // other state the response waits for its JoinNext.
  const auto* blocked = std::get_if<core::PendingStateBlockedByJoinSet>(&state.pending_state.value);
  if (blocked != nullptr && blocked->join_set_id == event.join_set_id) {
    DateTime scheduled_at = std::max(blocked->lock_expires_at, response.created_at);
    STELE_TRY(SetPendingAt(db, id, state.corresponding_version, scheduled_at, false,
                           response.created_at));
    NotifyPending(tx, state, scheduled_at, current_time);
  }
  if (const auto* delay = std::get_if<core::DelayFinished>(&event.event)) {
    STELE_ASSIGN_OR_RETURN(
        Statement remove,
        db.Prepare("DELETE FROM t_delay WHERE execution_id = ? AND delay_id = ?"));
    remove.BindText(1, id);
    remove.BindText(2, delay->delay_id.ToString());
    STELE_TRY(remove.Run());
  }
  tx.notes.responses.push_back(ResponseNotice{id, cursor, response});
  return {};
}

Result<Version, DbErrorWrite> CreateTx(WriteContext& tx, const CreateRequest& req,
                                       DateTime current_time) {
  Connection& db = tx.connection;
  STELE_TRY(ValidateCreateRequest(req));
  const std::string id = req.execution_id.ToString();
  STELE_ASSIGN_OR_RETURN(auto existing, LoadState(db, id));
  if (existing) {
    return Unexpected(DbErrorWriteNonRetriable::IllegalState("execution already exists"));
  }
  STELE_TRY(InsertEvent(db, id, Version(0), req.created_at, req.ToCreatedEvent()));
  STELE_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO t_state (execution_id, is_top_level, corresponding_version, ffqn, "
                 "created_at, component_id_input_digest, first_scheduled_at, "
                 "pending_expires_finished, state, updated_at, intermittent_event_count, "
                 "list_key) VALUES (?, ?, 0, ?, ?, ?, ?, ?, 'pending_at', ?, 0, ?)"));
  const std::string ffqn = req.ffqn.ToString();
  const auto& digest = req.component_id.input_digest.bytes();
  insert.BindText(1, id);
  insert.BindInt64(2, req.execution_id.IsTopLevel() ? 1 : 0);
  insert.BindText(3, ffqn);
  insert.BindInt64(4, TimeColumn(req.created_at));
  insert.BindBlob(5, digest.data(), digest.size());
  insert.BindInt64(6, TimeColumn(req.scheduled_at));
  insert.BindInt64(7, TimeColumn(req.scheduled_at));
  insert.BindInt64(8, TimeColumn(req.created_at));
  insert.BindText(9, core::ListKey(req.execution_id));
  STELE_TRY(insert.Run());
  if (req.policy.deadline) {
    STELE_ASSIGN_OR_RETURN(
        Statement deadline,
        db.Prepare("INSERT INTO t_deadline (execution_id, deadline) VALUES (?, ?)"));
    deadline.BindText(1, id);
    deadline.BindInt64(2, TimeColumn(*req.policy.deadline));
    STELE_TRY(deadline.Run());
  }
  tx.notes.pending.push_back(
      PendingNotice{ffqn, req.component_id.input_digest, req.scheduled_at, current_time});
  return Version(1);
}

Result<LockedExecution, DbErrorGeneric> LoadLockedExecution(Connection& db,
                                                            const ExecutionId& execution_id,
                                                            const core::Locked& locked,
                                                            Version next_version) {
  const std::string id = execution_id.ToString();
  STELE_ASSIGN_OR_RETURN(auto state, LoadState(db, id));
  if (!state) {
    return Unexpected(DbErrorGeneric::Uncategorized("locked execution `" + id + "` vanished"));
  }
  STELE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("SELECT version, json_value FROM t_execution_log WHERE execution_id = ? AND "
                 "variant IN ('created', 'history_event') ORDER BY version"));
  stmt.BindText(1, id);
  std::optional<core::Created> created;
  std::vector<std::pair<core::HistoryEvent, Version>> history;
  while (true) {
    STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    const int64_t version = stmt.Int64(0);
    STELE_ASSIGN_OR_RETURN(auto event, DecodeEvent(stmt.Text(1), id, version));
    if (auto* c = std::get_if<core::Created>(&event)) {
      created = std::move(*c);
    } else if (auto* h = std::get_if<core::HistoryEventRequest>(&event)) {
      history.emplace_back(std::move(h->event), Version(static_cast<Version::Type>(version)));
    } else {
      return Unexpected(DbErrorGeneric::Uncategorized("corrupt t_execution_log row of `" + id +
                                                      "`: variant does not match the event"));
    }
  }
  if (!created) {
    return Unexpected(
        DbErrorGeneric::Uncategorized("execution log of `" + id + "` does not start with Created"));
  }
  STELE_ASSIGN_OR_RETURN(auto responses, LoadResponses(db, id, 0));
  LockedExecution result{
      .execution_id = execution_id,
      .next_version = next_version,
      .metadata = std::move(created->metadata),
      .locked_event = locked,
      .ffqn = std::move(created->ffqn),
      .params = std::move(created->params),
      .event_history = std::move(history),
      .responses = {},
      .parent = std::move(created->parent),
      .intermittent_event_count = state->intermittent_event_count,
      .policy = std::move(created->policy),
  };
  result.responses.reserve(responses.size());
  for (auto& response : responses) result.responses.push_back(std::move(response.event));
  return result;
}

Result<void, DbErrorWrite> UpgradeComponentTx(WriteContext& tx, const ExecutionId& execution_id,
                                              const core::InputContentDigest& old_digest,
                                              const core::InputContentDigest& new_digest) {
  Connection& db = tx.connection;
  const std::string id = execution_id.ToString();
  STELE_ASSIGN_OR_RETURN(auto state, LoadState(db, id));
  if (!state) return Unexpected(DbErrorWrite::NotFound());
  if (state->IsFinished()) {
    return Unexpected(DbErrorWriteNonRetriable::IllegalState("already finished"));
  }
  if (state->digest != old_digest) return Unexpected(DbErrorWriteNonRetriable::Conflict());
  STELE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("UPDATE t_state SET component_id_input_digest = ? WHERE execution_id = ?"));
  stmt.BindBlob(1, new_digest.bytes().data(), new_digest.bytes().size());
  stmt.BindText(2, id);
  STELE_TRY(stmt.Run());
  // The executor of the new component may be waiting for exactly this.
  if (const auto* pending = std::get_if<core::PendingStatePendingAt>(&state->pending_state.value)) {
    tx.notes.pending.push_back(
        PendingNotice{state->ffqn, new_digest, pending->scheduled_at, pending->scheduled_at});
  }
  return {};
}

}  // namespace stele::storage::sqlite::internal
