#include "storage/sqlite/journal_tx.h"

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>

#include "core/list_key.h"
#include "storage/request_rules.h"
#include "storage/sqlite/event_codec.h"
#include "storage/sqlite/queries.h"
#include "storage/sqlite/row_codec.h"
#include "storage/state_transition.h"

namespace stele::storage::sqlite::internal {

namespace {

// --- t_state updates -----------------------------------------------------------

// Writes the row of `s` after a transition that changed more than its
// version (state_transition.h); EncodeState leaves exactly the columns
// sql_rows.h prescribes for the new state.
Result<void, DbErrorWrite> WriteStateRow(Connection& db, const ExecutionState& s) {
  STELE_ASSIGN_OR_RETURN(StateColumns c, EncodeState(s));
  STELE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("UPDATE t_state SET state = ?, corresponding_version = ?, "
                 "pending_expires_finished = ?, updated_at = ?, intermittent_event_count = ?, "
                 "last_lock_version = ?, executor_id = ?, run_id = ?, max_retries = ?, "
                 "retry_exp_backoff = ?, join_set_id = ?, join_set_closing = ?, result_kind = ?, "
                 "paused = ?, cancelling = ? WHERE execution_id = ?"));
  stmt.BindText(1, c.state);
  stmt.BindInt64(2, c.corresponding_version);
  stmt.BindInt64(3, c.pending_expires_finished);
  stmt.BindInt64(4, c.updated_at);
  stmt.BindInt64(5, c.intermittent_event_count);
  stmt.BindOptionalInt64(6, c.last_lock_version);
  stmt.BindOptionalText(7, c.executor_id);
  stmt.BindOptionalText(8, c.run_id);
  stmt.BindOptionalInt64(9, c.max_retries);
  stmt.BindOptionalText(10, c.retry_exp_backoff);
  stmt.BindOptionalText(11, c.join_set_id);
  std::optional<int64_t> closing;
  if (c.join_set_closing) closing = *c.join_set_closing ? 1 : 0;
  stmt.BindOptionalInt64(12, closing);
  stmt.BindOptionalText(13, c.result_kind);
  stmt.BindInt64(14, c.paused ? 1 : 0);
  stmt.BindInt64(15, c.cancelling ? 1 : 0);
  stmt.BindText(16, s.execution_id);
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

// Inserts an encoded event row. `join_set_id` and `history_type_tag` fill
// the columns the queries filter on (the row itself is compressed).
Result<void, DbErrorWrite> InsertEventRow(WriteContext& tx, std::string_view id, Version version,
                                          DateTime created_at, const std::string& row,
                                          const std::optional<core::JoinSetId>& join_set_id,
                                          std::optional<std::string_view> history_type_tag) {
  STELE_ASSIGN_OR_RETURN(
      Statement stmt,
      tx.connection.Prepare(
          "INSERT INTO t_execution_log "
          "(exec_key, version, created_at, json_value, join_set_id, history_event_type) "
          "VALUES ((SELECT exec_key FROM t_state WHERE execution_id = ?), ?, ?, ?, ?, ?)"));
  stmt.BindText(1, id);
  stmt.BindInt64(2, version.value());
  stmt.BindInt64(3, TimeColumn(created_at));
  stmt.BindBlob(4, row.data(), row.size());
  if (join_set_id) {
    stmt.BindText(5, join_set_id->ToString());
  } else {
    stmt.BindNull(5);
  }
  // Schema V7 stores what V1 generated from the JSON (which is compressed
  // now): the history event's type tag, NULL for other variants.
  if (history_type_tag) {
    stmt.BindText(6, *history_type_tag);
  } else {
    stmt.BindNull(6);
  }
  STELE_TRY(stmt.Run());
  return {};
}

// The row the caller encoded and filed under `source` in tx.pre_encoded
// (event_codec.h), or else `make_event()` encoded here into `scratch`: the
// event is built only when no row was.
template <class MakeEvent>
Result<const std::string*, DbErrorWrite> StoredRow(WriteContext& tx, const void* source,
                                                   std::string& scratch,
                                                   const MakeEvent& make_event) {
  const std::string* row = tx.pre_encoded != nullptr ? tx.pre_encoded->Find(source) : nullptr;
  if (row != nullptr) return row;
  STELE_ASSIGN_OR_RETURN(scratch, EncodeEventRow(make_event()));
  return &scratch;
}

Result<void, DbErrorWrite> InsertEvent(WriteContext& tx, std::string_view id, Version version,
                                       DateTime created_at, const core::ExecutionRequest& event,
                                       const void* source) {
  std::string scratch;
  STELE_ASSIGN_OR_RETURN(const std::string* stored_row,
                         StoredRow(
                             tx, source, scratch, [&]() -> const auto& { return event; }));
  std::optional<std::string_view> history_type_tag;
  if (const auto* history = std::get_if<core::HistoryEventRequest>(&event)) {
    history_type_tag = core::HistoryEventTypeTag(history->event);
  }
  return InsertEventRow(tx, id, version, created_at, *stored_row,
                        core::ExecutionRequestJoinSetId(event), history_type_tag);
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
  STELE_ASSIGN_OR_RETURN(Statement stmt,
                         db.Prepare("SELECT COUNT(*) FROM t_execution_log WHERE exec_key = "
                                    "(SELECT exec_key FROM t_state WHERE execution_id = ?) AND "
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
      db.Prepare("SELECT created_at FROM t_join_set_response WHERE exec_key = (SELECT exec_key "
                 "FROM t_state WHERE execution_id = ?) AND join_set_id = ? ORDER BY idx "
                 "LIMIT 1 OFFSET ?"));
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

// What an applied event asks for besides the row (state_transition.h).
Result<void, DbErrorWrite> WriteEffects(WriteContext& tx, const ExecutionState& state,
                                        const AppendEffects& effects, DateTime current_time) {
  const std::string& id = state.execution_id;
  if (effects.timer != nullptr) {
    STELE_TRY(UpsertDelay(tx.connection, id, effects.timer->join_set_id,
                          std::get<core::DelayRequest>(effects.timer->request)));
  }
  if (effects.disarm_deadline) STELE_TRY(DisarmDeadline(tx.connection, id));
  if (effects.pending_at) NotifyPending(tx, state, *effects.pending_at, current_time);
  if (effects.finished != nullptr) {
    tx.notes.finished.push_back(FinishedNotice{id, effects.finished->result});
  }
  if (effects.published) tx.notes.published.push_back(id);
  return {};
}

// Appends `batch` at consecutive versions. The row is read once and kept in
// memory; an event that only moves the version (a workflow step is
// typically JoinSetCreate, JoinSetRequest, JoinNext) does not write it: the
// next write of the row carries the version, or one bump at the end.
// `source`, when set, names the single event's pre-encoded row instead of
// its address (a request built inside the transaction).
Result<Version, DbErrorWrite> AppendEventsTx(WriteContext& tx, const ExecutionId& execution_id,
                                             Version version, std::span<const AppendRequest> batch,
                                             DateTime current_time, const void* source) {
  for (const AppendRequest& req : batch) STELE_TRY(ValidateAppendRequest(execution_id, req));
  Connection& db = tx.connection;
  const std::string id = execution_id.ToString();
  STELE_ASSIGN_OR_RETURN(auto loaded, LoadState(db, id));
  if (!loaded) return Unexpected(DbErrorWrite::NotFound());
  ExecutionState& state = *loaded;
  // k counts the join set's JoinNexts in the log, the one just inserted
  // included; the k-th response (arrival order) is the one it awaits.
  const AwaitedResponse awaited =
      [&](const core::JoinSetId& join_set) -> Result<std::optional<DateTime>, DbErrorWrite> {
    STELE_ASSIGN_OR_RETURN(int64_t k, CountJoinNexts(db, id, join_set));
    STELE_ASSIGN_OR_RETURN(auto response_at, KthResponseTime(db, id, join_set, k));
    return response_at;
  };
  bool row_behind = false;  // the row's version and updated_at trail `state`
  for (const AppendRequest& req : batch) {
    STELE_TRY(CheckAppend(state, version, req));
    STELE_TRY(InsertEvent(tx, id, version, req.created_at, req.event,
                          source != nullptr ? source : &req.event));
    STELE_ASSIGN_OR_RETURN(AppendEffects effects, ApplyAppend(state, version, req, awaited));
    if (effects.version_only) {
      row_behind = true;
    } else {
      STELE_TRY(WriteStateRow(db, state));
      row_behind = false;
    }
    STELE_TRY(WriteEffects(tx, state, effects, current_time));
    version = version.Increment();
  }
  if (row_behind) {
    STELE_TRY(BumpVersion(db, id, state.corresponding_version, state.updated_at));
  }
  return version;
}

}  // namespace

Result<Version, DbErrorWrite> AppendEventTx(WriteContext& tx, const ExecutionId& execution_id,
                                            Version version, const AppendRequest& req,
                                            DateTime current_time, const void* source) {
  return AppendEventsTx(tx, execution_id, version, std::span<const AppendRequest>(&req, 1),
                        current_time, source);
}

Result<Version, DbErrorWrite> AppendBatchTx(WriteContext& tx, const ExecutionId& execution_id,
                                            Version version,
                                            const std::vector<AppendRequest>& batch,
                                            DateTime current_time) {
  if (batch.empty()) {
    return Unexpected(DbErrorWriteNonRetriable::ValidationFailed("empty batch"));
  }
  return AppendEventsTx(tx, execution_id, version, batch, current_time, nullptr);
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
                                    "WHERE exec_key = (SELECT exec_key FROM t_state WHERE "
                                    "execution_id = ?) AND message_id = ?"));
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
                         db.Prepare("SELECT idx FROM t_join_set_response WHERE exec_key = "
                                    "(SELECT exec_key FROM t_state WHERE execution_id = ?) "
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
  ExecutionState& state = *loaded;

  STELE_ASSIGN_OR_RETURN(uint32_t cursor, NextCursor(db, id));
  STELE_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO t_join_set_response (exec_key, idx, created_at, join_set_id, "
                 "delay_id, delay_success, child_execution_id, finished_version, child_result, "
                 "message_id, message_body) VALUES ((SELECT exec_key FROM t_state WHERE "
                 "execution_id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
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

  if (auto scheduled_at = ApplyResponse(state, event.join_set_id, response.created_at)) {
    STELE_TRY(WriteStateRow(db, state));
    NotifyPending(tx, state, *scheduled_at, current_time);
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

namespace {

// The next t_state.exec_key (schema V9): taken from t_sequence in the
// creating transaction, so a key is never given twice, not even after its
// execution was deleted.
Result<int64_t, DbErrorGeneric> NextExecutionKey(Connection& db) {
  STELE_ASSIGN_OR_RETURN(Statement stmt,
                         db.Prepare("UPDATE t_sequence SET next_value = next_value + 1 "
                                    "WHERE name = 'exec_key' RETURNING next_value - 1"));
  STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return Unexpected(DbErrorGeneric::Uncategorized("t_sequence has no `exec_key` row"));
  return stmt.Int64(0);
}

}  // namespace

Result<Version, DbErrorWrite> CreateTx(WriteContext& tx, const CreateRequest& req,
                                       DateTime current_time) {
  Connection& db = tx.connection;
  STELE_TRY(ValidateCreateRequest(req));
  const std::string id = req.execution_id.ToString();
  STELE_ASSIGN_OR_RETURN(auto existing, LoadState(db, id));
  if (existing) {
    return Unexpected(DbErrorWriteNonRetriable::IllegalState("execution already exists"));
  }
  STELE_ASSIGN_OR_RETURN(int64_t key, NextExecutionKey(db));
  STELE_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO t_state (execution_id, is_top_level, corresponding_version, ffqn, "
                 "created_at, component_id_input_digest, first_scheduled_at, "
                 "pending_expires_finished, state, updated_at, intermittent_event_count, "
                 "list_key, exec_key) VALUES (?, ?, 0, ?, ?, ?, ?, ?, 'pending_at', ?, 0, ?, ?)"));
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
  insert.BindInt64(10, key);
  STELE_TRY(insert.Run());
  // After the t_state row: the event row takes its exec_key from there.
  // A row the caller encoded needs no Created event: building one would
  // copy the params on the writer's thread for nothing.
  std::string scratch;
  STELE_ASSIGN_OR_RETURN(const std::string* stored_row, StoredRow(tx, &req, scratch, [&] {
                           return core::ExecutionRequest(req.ToCreatedEvent());
                         }));
  std::optional<core::JoinSetId> parent_join_set;
  if (req.parent) parent_join_set = req.parent->second;
  STELE_TRY(InsertEventRow(tx, id, Version(0), req.created_at, *stored_row, parent_join_set,
                           std::nullopt));
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
      db.Prepare("SELECT version, json_value FROM t_execution_log WHERE exec_key = "
                 "(SELECT exec_key FROM t_state WHERE execution_id = ?) AND (version = 0 OR "
                 "history_event_type IS NOT NULL) ORDER BY version"));
  stmt.BindText(1, id);
  std::optional<core::Created> created;
  std::vector<std::pair<core::HistoryEvent, Version>> history;
  while (true) {
    STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    const int64_t version = stmt.Int64(0);
    STELE_ASSIGN_OR_RETURN(std::string json, EventJsonColumn(stmt, 1, id, version));
    STELE_ASSIGN_OR_RETURN(auto event, DecodeEvent(json, id, version));
    if (auto* c = std::get_if<core::Created>(&event)) {
      created = std::move(*c);
    } else if (auto* h = std::get_if<core::HistoryEventRequest>(&event)) {
      history.emplace_back(std::move(h->event), Version(static_cast<Version::Type>(version)));
    } else {
      return Unexpected(DbErrorGeneric::Uncategorized("corrupt t_execution_log row of `" + id +
                                                      "`: not a Created or history event"));
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
