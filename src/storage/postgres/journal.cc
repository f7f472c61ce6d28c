#include "storage/postgres/journal.h"

#include <algorithm>
#include <string>
#include <utility>
#include <variant>

#include "storage/pending_state_rules.h"

namespace stele::storage::postgres::internal {

std::string PendingFfqnKey(std::string_view ffqn) { return "f:" + std::string(ffqn); }
std::string PendingDigestKey(const core::InputContentDigest& digest) {
  return "d:" + DigestParam(digest).substr(2);
}
std::string ResponseKey(std::string_view execution_id) { return "r:" + std::string(execution_id); }
std::string FinishedKey(std::string_view execution_id) { return "x:" + std::string(execution_id); }

namespace {

Result<PgResult, DbErrorGeneric> Q(PgConn& db, const std::string& sql,
                                   const Params& params = Params()) {
  auto res = db.Exec(sql, params);
  if (!res) return Unexpected(res.error().ToGeneric());
  return std::move(*res);
}

// A write whose values PostgreSQL refuses (e.g. invalid text encoding) is the
// caller's fault, not the database's.
Result<PgResult, DbErrorWrite> QW(PgConn& db, const std::string& sql, const Params& params) {
  auto res = db.Exec(sql, params);
  if (!res) {
    if (res.error().kind == PgError::Kind::kInvalidValue) {
      return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(res.error().message));
    }
    return Unexpected(res.error().ToGeneric());
  }
  return std::move(*res);
}

Result<core::ExecutionEvent, DbErrorGeneric> DecodeEventRow(const PgResult& res, int row,
                                                            std::string_view id) {
  const int64_t version = res.Int(row, 0);
  if (version < 0 || version > int64_t{UINT32_MAX}) {
    return Unexpected(DbErrorGeneric::Uncategorized("corrupt t_execution_log row of `" +
                                                    std::string(id) + "`: version out of range"));
  }
  STELE_ASSIGN_OR_RETURN(auto event, DecodeEvent(res.Text(row, 2), id, version));
  return core::ExecutionEvent{TimeFromColumn(res.Int(row, 1)), std::move(event), std::nullopt,
                              Version(static_cast<Version::Type>(version))};
}

void NotifyPending(Tx& tx, const ExecutionState& state, DateTime scheduled_at,
                   DateTime current_time) {
  tx.notices.push_back(Notice{PendingFfqnKey(state.ffqn), scheduled_at, current_time});
  tx.notices.push_back(Notice{PendingDigestKey(state.digest), scheduled_at, current_time});
}

// --- t_state updates (each leaves exactly the columns codec.h prescribes) ---

Result<void, DbErrorGeneric> SetPendingAt(Tx& tx, std::string_view id, Version version,
                                          DateTime scheduled_at, bool temporary,
                                          DateTime updated_at) {
  STELE_TRY(
      tx.Q("UPDATE t_state SET state = 'pending_at', corresponding_version = $1, "
           "pending_expires_finished = $2, updated_at = $3, "
           "intermittent_event_count = intermittent_event_count + $4, "
           "last_lock_version = NULL, join_set_id = NULL, join_set_closing = NULL, "
           "result_kind = NULL WHERE execution_id = $5",
           Params()
               .Int(version.value())
               .Int(TimeColumn(scheduled_at))
               .Int(TimeColumn(updated_at))
               .Int(temporary ? 1 : 0)
               .Text(id)));
  return {};
}

Result<void, DbErrorWrite> SetLocked(Tx& tx, std::string_view id, Version version,
                                     const core::Locked& locked, DateTime updated_at) {
  STELE_ASSIGN_OR_RETURN(std::string backoff, EncodeJson(locked.retry_config.retry_exp_backoff));
  std::optional<int64_t> max_retries;
  if (locked.retry_config.max_retries) max_retries = *locked.retry_config.max_retries;
  STELE_TRY(
      tx.Q("UPDATE t_state SET state = 'locked', corresponding_version = $1, "
           "pending_expires_finished = $2, updated_at = $3, last_lock_version = $1, "
           "executor_id = $4, run_id = $5, max_retries = $6, retry_exp_backoff = $7, "
           "join_set_id = NULL, join_set_closing = NULL, result_kind = NULL "
           "WHERE execution_id = $8",
           Params()
               .Int(version.value())
               .Int(TimeColumn(locked.lock_expires_at))
               .Int(TimeColumn(updated_at))
               .Text(locked.executor_id.ToString())
               .Text(locked.run_id.ToString())
               .OptInt(max_retries)
               .Text(backoff)
               .Text(id)));
  return {};
}

Result<void, DbErrorGeneric> SetBlocked(Tx& tx, std::string_view id, Version version,
                                        const core::JoinSetId& join_set_id, DateTime lease,
                                        bool closing, DateTime updated_at) {
  STELE_TRY(
      tx.Q("UPDATE t_state SET state = 'blocked_by_join_set', corresponding_version = $1, "
           "pending_expires_finished = $2, updated_at = $3, last_lock_version = NULL, "
           "join_set_id = $4, join_set_closing = $5, result_kind = NULL "
           "WHERE execution_id = $6",
           Params()
               .Int(version.value())
               .Int(TimeColumn(lease))
               .Int(TimeColumn(updated_at))
               .Text(join_set_id.ToString())
               .Bool(closing)
               .Text(id)));
  return {};
}

Result<void, DbErrorWrite> SetFinished(Tx& tx, std::string_view id, Version version,
                                       DateTime finished_at,
                                       const core::SupportedFunctionReturnValue& result) {
  STELE_ASSIGN_OR_RETURN(std::string kind,
                         EncodeJson(core::PendingStateFinishedResultKind::From(result)));
  STELE_TRY(
      tx.Q("UPDATE t_state SET state = 'finished', corresponding_version = $1, "
           "pending_expires_finished = $2, updated_at = $2, last_lock_version = NULL, "
           "executor_id = NULL, run_id = NULL, join_set_id = NULL, "
           "join_set_closing = NULL, result_kind = $3 WHERE execution_id = $4",
           Params().Int(version.value()).Int(TimeColumn(finished_at)).Text(kind).Text(id)));
  return {};
}

Result<void, DbErrorGeneric> BumpVersion(Tx& tx, std::string_view id, Version version,
                                         DateTime updated_at) {
  STELE_TRY(
      tx.Q("UPDATE t_state SET corresponding_version = $1, updated_at = $2 "
           "WHERE execution_id = $3",
           Params().Int(version.value()).Int(TimeColumn(updated_at)).Text(id)));
  return {};
}

Result<void, DbErrorWrite> InsertEvent(Tx& tx, std::string_view id, Version version,
                                       DateTime created_at, const core::ExecutionRequest& event) {
  STELE_ASSIGN_OR_RETURN(std::string json, EncodeEvent(event));
  std::optional<std::string> join_set;
  if (auto join_set_id = core::ExecutionRequestJoinSetId(event)) {
    join_set = join_set_id->ToString();
  }
  auto inserted = tx.conn.Exec(
      "INSERT INTO t_execution_log (execution_id, version, created_at, json_value, variant, "
      "join_set_id) VALUES ($1, $2, $3, $4::json, $5, $6)",
      Params()
          .Text(id)
          .Int(version.value())
          .Int(TimeColumn(created_at))
          .Text(json)
          .Text(core::ExecutionRequestVariantTag(event))
          .OptText(join_set));
  if (!inserted) {
    if (inserted.error().kind == PgError::Kind::kInvalidValue) {
      return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(inserted.error().message));
    }
    // The row lock makes a duplicate version impossible for well-behaved
    // writers; the key still fences anything else.
    if (inserted.error().kind == PgError::Kind::kUniqueViolation) {
      return Unexpected(DbErrorWriteNonRetriable::VersionConflict(version.Increment(), version));
    }
    return Unexpected(inserted.error().ToGeneric());
  }
  return {};
}

Result<void, DbErrorWrite> RejectCreated(const AppendRequest& req) {
  if (std::holds_alternative<core::Created>(req.event)) {
    return Unexpected(
        DbErrorWriteNonRetriable::ValidationFailed("cannot append a Created event; use Create"));
  }
  return {};
}

Result<void, DbErrorWrite> ApplyHistoryEvent(Tx& tx, const ExecutionState& state, Version version,
                                             const AppendRequest& req,
                                             const core::HistoryEvent& event,
                                             DateTime current_time) {
  const std::string& id = state.execution_id;
  if (const auto* delay = std::get_if<core::HistoryJoinSetRequest>(&event)) {
    if (const auto* timer = std::get_if<core::DelayRequest>(&delay->request)) {
      // A repeated DelayRequest replaces the timer (as in the reference model).
      // Keyed by delay id within the execution; one statement.
      STELE_TRY(
          tx.Q("WITH d AS (DELETE FROM t_delay WHERE execution_id = $1 AND delay_id = $3 "
               "AND join_set_id <> $2) "
               "INSERT INTO t_delay (execution_id, join_set_id, delay_id, expires_at) "
               "VALUES ($1, $2, $3, $4) ON CONFLICT (execution_id, join_set_id, delay_id) "
               "DO UPDATE SET expires_at = EXCLUDED.expires_at",
               Params()
                   .Text(id)
                   .Text(delay->join_set_id.ToString())
                   .Text(timer->delay_id.ToString())
                   .Int(TimeColumn(timer->expires_at))));
    }
    STELE_TRY(BumpVersion(tx, id, version, req.created_at));
    return {};
  }
  const auto* join_next = std::get_if<core::HistoryJoinNext>(&event);
  if (join_next == nullptr) {
    STELE_TRY(BumpVersion(tx, id, version, req.created_at));
    return {};
  }
  // k counts this join set's JoinNexts including the one just inserted; the
  // k-th response (cursor order) is the one it awaits. One round trip.
  STELE_ASSIGN_OR_RETURN(
      PgResult res,
      tx.Q("SELECT (SELECT r.created_at FROM t_join_set_response r WHERE r.execution_id = $1 "
           "AND r.join_set_id = $2 ORDER BY r.idx LIMIT 1 OFFSET "
           "(SELECT COUNT(*) - 1 FROM t_execution_log l WHERE l.execution_id = $1 AND "
           "l.join_set_id = $2 AND l.history_event_type = 'join_next'))",
           Params().Text(id).Text(join_next->join_set_id.ToString())));
  if (res.rows() == 1 && !res.IsNull(0, 0)) {
    DateTime scheduled_at = std::max(join_next->run_expires_at, TimeFromColumn(res.Int(0, 0)));
    STELE_TRY(SetPendingAt(tx, id, version, scheduled_at, false, req.created_at));
    NotifyPending(tx, state, scheduled_at, current_time);
  } else {
    STELE_TRY(SetBlocked(tx, id, version, join_next->join_set_id, join_next->run_expires_at,
                         join_next->closing, req.created_at));
  }
  return {};
}

}  // namespace

Result<std::optional<ExecutionState>, DbErrorGeneric> LoadState(PgConn& db, std::string_view id,
                                                                bool for_update) {
  static const std::string kSql =
      "SELECT " + std::string(kStateColumns) + " FROM t_state WHERE execution_id = $1";
  static const std::string kSqlForUpdate = kSql + " FOR UPDATE";
  STELE_ASSIGN_OR_RETURN(PgResult res, Q(db, for_update ? kSqlForUpdate : kSql, Params().Text(id)));
  if (res.rows() == 0) return std::optional<ExecutionState>();
  STELE_ASSIGN_OR_RETURN(ExecutionState state, DecodeStateRow(res, 0));
  return std::optional<ExecutionState>(std::move(state));
}

Result<std::optional<core::ExecutionEvent>, DbErrorGeneric> LoadEvent(PgConn& db,
                                                                      std::string_view id,
                                                                      Version version) {
  STELE_ASSIGN_OR_RETURN(PgResult res,
                         Q(db,
                           "SELECT version, created_at, json_value::text FROM t_execution_log "
                           "WHERE execution_id = $1 AND version = $2",
                           Params().Text(id).Int(version.value())));
  if (res.rows() == 0) return std::optional<core::ExecutionEvent>();
  STELE_ASSIGN_OR_RETURN(auto event, DecodeEventRow(res, 0, id));
  return std::optional<core::ExecutionEvent>(std::move(event));
}

Result<std::vector<ResponseWithCursor>, DbErrorGeneric> LoadResponses(PgConn& db,
                                                                      std::string_view id,
                                                                      uint32_t from_cursor) {
  static const std::string kSql =
      std::string(kResponseSelect) + "WHERE r.execution_id = $1 AND r.idx >= $2 ORDER BY r.idx";
  STELE_ASSIGN_OR_RETURN(PgResult res, Q(db, kSql, Params().Text(id).Int(from_cursor)));
  std::vector<ResponseWithCursor> responses;
  for (int row = 0; row < res.rows(); ++row) {
    STELE_ASSIGN_OR_RETURN(auto response, DecodeResponseRow(res, row, id));
    responses.push_back(std::move(response));
  }
  return responses;
}

Result<std::optional<ExecutionLog>, DbErrorGeneric> LoadLog(PgConn& db,
                                                            const ExecutionId& execution_id) {
  const std::string id = execution_id.ToString();
  STELE_ASSIGN_OR_RETURN(auto state, LoadState(db, id));
  if (!state) return std::optional<ExecutionLog>();
  STELE_ASSIGN_OR_RETURN(PgResult res,
                         Q(db,
                           "SELECT version, created_at, json_value::text FROM t_execution_log "
                           "WHERE execution_id = $1 ORDER BY version",
                           Params().Text(id)));
  std::vector<core::ExecutionEvent> events;
  for (int row = 0; row < res.rows(); ++row) {
    STELE_ASSIGN_OR_RETURN(auto event, DecodeEventRow(res, row, id));
    events.push_back(std::move(event));
  }
  STELE_ASSIGN_OR_RETURN(auto responses, LoadResponses(db, id, 0));
  ExecutionLog log{
      execution_id, std::move(events), {}, state->NextVersion(), std::move(state->pending_state)};
  for (auto& response : responses) log.responses.push_back(std::move(response.event));
  return std::optional<ExecutionLog>(std::move(log));
}

Result<Version, DbErrorWrite> AppendEventLockedTx(Tx& tx, const ExecutionState& state,
                                                  Version version, const AppendRequest& req,
                                                  DateTime current_time) {
  const std::string& id = state.execution_id;
  if (state.IsFinished()) {
    return Unexpected(DbErrorWriteNonRetriable::IllegalState("already finished"));
  }
  if (version != state.NextVersion()) {
    return Unexpected(DbErrorWriteNonRetriable::VersionConflict(state.NextVersion(), version));
  }
  if (const auto* locked = std::get_if<core::Locked>(&req.event)) {
    STELE_TRY(CanAppendLock(state.pending_state, req.created_at, locked->executor_id,
                            locked->run_id, locked->lock_expires_at));
  }
  STELE_TRY(InsertEvent(tx, id, version, req.created_at, req.event));
  if (const auto* locked = std::get_if<core::Locked>(&req.event)) {
    STELE_TRY(SetLocked(tx, id, version, *locked, req.created_at));
  } else if (const auto* unlocked = std::get_if<core::Unlocked>(&req.event)) {
    STELE_TRY(SetPendingAt(tx, id, version, unlocked->backoff_expires_at, false, req.created_at));
    NotifyPending(tx, state, unlocked->backoff_expires_at, current_time);
  } else if (const auto* failed = std::get_if<core::TemporarilyFailed>(&req.event)) {
    STELE_TRY(SetPendingAt(tx, id, version, failed->backoff_expires_at, true, req.created_at));
    NotifyPending(tx, state, failed->backoff_expires_at, current_time);
  } else if (const auto* timed_out = std::get_if<core::TemporarilyTimedOut>(&req.event)) {
    STELE_TRY(SetPendingAt(tx, id, version, timed_out->backoff_expires_at, true, req.created_at));
    NotifyPending(tx, state, timed_out->backoff_expires_at, current_time);
  } else if (const auto* finished = std::get_if<core::Finished>(&req.event)) {
    STELE_TRY(SetFinished(tx, id, version, req.created_at, finished->result));
    tx.notices.push_back(Notice{FinishedKey(id), req.created_at, current_time});
  } else if (const auto* history = std::get_if<core::HistoryEventRequest>(&req.event)) {
    STELE_TRY(ApplyHistoryEvent(tx, state, version, req, history->event, current_time));
  }
  return version.Increment();
}

Result<Version, DbErrorWrite> AppendEventTx(Tx& tx, const ExecutionId& execution_id,
                                            Version version, const AppendRequest& req,
                                            DateTime current_time) {
  STELE_TRY(RejectCreated(req));
  STELE_ASSIGN_OR_RETURN(auto loaded, LoadState(tx.conn, execution_id.ToString(), true));
  if (!loaded) return Unexpected(DbErrorWrite::NotFound());
  return AppendEventLockedTx(tx, *loaded, version, req, current_time);
}

Result<Version, DbErrorWrite> AppendBatchTx(Tx& tx, const ExecutionId& execution_id,
                                            Version version,
                                            const std::vector<AppendRequest>& batch,
                                            DateTime current_time) {
  if (batch.empty()) {
    return Unexpected(DbErrorWriteNonRetriable::ValidationFailed("empty batch"));
  }
  for (const AppendRequest& req : batch) STELE_TRY(RejectCreated(req));
  for (const AppendRequest& req : batch) {
    STELE_ASSIGN_OR_RETURN(version, AppendEventTx(tx, execution_id, version, req, current_time));
  }
  return version;
}

Result<std::optional<bool>, DbErrorGeneric> FindDelayResponse(PgConn& db,
                                                              const core::DelayId& delay_id) {
  STELE_ASSIGN_OR_RETURN(PgResult res,
                         Q(db, "SELECT delay_success FROM t_join_set_response WHERE delay_id = $1",
                           Params().Text(delay_id.ToString())));
  if (res.rows() == 0) return std::optional<bool>();
  return std::optional<bool>(res.Bool(0, 0));
}

Result<void, DbErrorWrite> InsertResponseTx(Tx& tx, const ExecutionId& execution_id,
                                            const core::JoinSetResponseEventOuter& response,
                                            DateTime current_time) {
  const std::string id = execution_id.ToString();
  // The parent's row lock orders its responses: the cursor is taken from
  // its response_count while holding it.
  STELE_ASSIGN_OR_RETURN(auto loaded, LoadState(tx.conn, id, true));
  if (!loaded) return Unexpected(DbErrorWrite::NotFound());
  const ExecutionState& state = *loaded;
  const core::JoinSetResponseEvent& event = response.event;

  Params params;
  params.Text(id).Int(TimeColumn(response.created_at)).Text(event.join_set_id.ToString());
  const auto* delay = std::get_if<core::DelayFinished>(&event.event);
  if (delay != nullptr) {
    params.Text(delay->delay_id.ToString()).Bool(delay->ok).Null().Null().Null();
  } else {
    const auto& child = std::get<core::ChildExecutionFinished>(event.event);
    const std::string child_id = child.child_execution_id.ToString();
    // The result is joined from the child's Finished row when it is there
    // with the same value; otherwise stored inline.
    STELE_ASSIGN_OR_RETURN(auto finished_event,
                           LoadEvent(tx.conn, child_id, child.finished_version));
    const core::Finished* finished =
        finished_event ? std::get_if<core::Finished>(&finished_event->event) : nullptr;
    std::optional<std::string> inline_result;
    if (finished == nullptr || !(finished->result == child.result)) {
      STELE_ASSIGN_OR_RETURN(inline_result, EncodeJson(child.result));
    }
    params.Null().Null().Text(child_id).Int(child.finished_version.value()).OptText(inline_result);
  }
  // One statement: take the cursor and insert. A duplicate child or delay
  // id violates a unique index → Conflict.
  auto inserted = tx.conn.Exec(
      "WITH c AS (UPDATE t_state SET response_count = response_count + 1 "
      "WHERE execution_id = $1 RETURNING response_count - 1 AS idx) "
      "INSERT INTO t_join_set_response (execution_id, idx, created_at, join_set_id, delay_id, "
      "delay_success, child_execution_id, finished_version, child_result) "
      "SELECT $1::text, c.idx, $2::bigint, $3::text, $4::text, $5::boolean, $6::text, "
      "$7::bigint, $8::json FROM c RETURNING idx",
      params);
  if (!inserted) {
    if (inserted.error().kind == PgError::Kind::kUniqueViolation) {
      return Unexpected(DbErrorWriteNonRetriable::Conflict());
    }
    if (inserted.error().kind == PgError::Kind::kInvalidValue) {
      return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(inserted.error().message));
    }
    return Unexpected(inserted.error().ToGeneric());
  }
  const auto* blocked = std::get_if<core::PendingStateBlockedByJoinSet>(&state.pending_state.value);
  if (blocked != nullptr && blocked->join_set_id == event.join_set_id) {
    DateTime scheduled_at = std::max(blocked->lock_expires_at, response.created_at);
    STELE_TRY(SetPendingAt(tx, id, state.corresponding_version, scheduled_at, false,
                           response.created_at));
    NotifyPending(tx, state, scheduled_at, current_time);
  }
  if (delay != nullptr) {
    STELE_TRY(tx.Q("DELETE FROM t_delay WHERE execution_id = $1 AND delay_id = $2",
                   Params().Text(id).Text(delay->delay_id.ToString())));
  }
  tx.notices.push_back(Notice{ResponseKey(id), response.created_at, current_time});
  return {};
}

Result<Version, DbErrorWrite> CreateTx(Tx& tx, const CreateRequest& req, DateTime current_time) {
  STELE_TRY(ValidateCreateRequest(req));
  const std::string id = req.execution_id.ToString();
  const std::string ffqn = req.ffqn.ToString();
  STELE_ASSIGN_OR_RETURN(std::string json, EncodeEvent(req.ToCreatedEvent()));
  // One statement: the state row (ON CONFLICT: the id exists → no row) and,
  // only if it was inserted, the Created event.
  STELE_ASSIGN_OR_RETURN(
      PgResult res,
      QW(tx.conn,
         "WITH s AS (INSERT INTO t_state (execution_id, is_top_level, corresponding_version, "
         "ffqn, created_at, component_id_input_digest, first_scheduled_at, "
         "pending_expires_finished, state, updated_at, intermittent_event_count) "
         "VALUES ($1::text, $2::boolean, 0, $3::text, $4::bigint, $5::bytea, $6::bigint, $6, "
         "'pending_at', $4, 0) "
         "ON CONFLICT (execution_id) DO NOTHING RETURNING execution_id) "
         "INSERT INTO t_execution_log (execution_id, version, created_at, json_value, variant) "
         "SELECT execution_id, 0, $4::bigint, $7::json, 'created' FROM s RETURNING version",
         Params()
             .Text(id)
             .Bool(req.execution_id.IsTopLevel())
             .Text(ffqn)
             .Int(TimeColumn(req.created_at))
             .Text(DigestParam(req.component_id.input_digest))
             .Int(TimeColumn(req.scheduled_at))
             .Text(json)));
  if (res.rows() == 0) {
    return Unexpected(DbErrorWriteNonRetriable::IllegalState("execution already exists"));
  }
  tx.notices.push_back(Notice{PendingFfqnKey(ffqn), req.scheduled_at, current_time});
  tx.notices.push_back(
      Notice{PendingDigestKey(req.component_id.input_digest), req.scheduled_at, current_time});
  return Version(1);
}

Result<LockedExecution, DbErrorGeneric> LoadLockedExecution(PgConn& db,
                                                            const ExecutionId& execution_id,
                                                            const core::Locked& locked,
                                                            Version next_version,
                                                            uint32_t intermittent_event_count) {
  const std::string id = execution_id.ToString();
  STELE_ASSIGN_OR_RETURN(PgResult res,
                         Q(db,
                           "SELECT version, json_value::text FROM t_execution_log WHERE "
                           "execution_id = $1 AND variant IN ('created', 'history_event') "
                           "ORDER BY version",
                           Params().Text(id)));
  std::optional<core::Created> created;
  std::vector<std::pair<core::HistoryEvent, Version>> history;
  for (int row = 0; row < res.rows(); ++row) {
    const int64_t version = res.Int(row, 0);
    STELE_ASSIGN_OR_RETURN(auto event, DecodeEvent(res.Text(row, 1), id, version));
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
      .intermittent_event_count = intermittent_event_count,
  };
  for (auto& response : responses) result.responses.push_back(std::move(response.event));
  return result;
}

Result<void, DbErrorWrite> UpgradeComponentTx(Tx& tx, const ExecutionId& execution_id,
                                              const core::InputContentDigest& old_digest,
                                              const core::InputContentDigest& new_digest) {
  const std::string id = execution_id.ToString();
  STELE_ASSIGN_OR_RETURN(auto state, LoadState(tx.conn, id, true));
  if (!state) return Unexpected(DbErrorWrite::NotFound());
  if (state->IsFinished()) {
    return Unexpected(DbErrorWriteNonRetriable::IllegalState("already finished"));
  }
  if (state->digest != old_digest) return Unexpected(DbErrorWriteNonRetriable::Conflict());
  STELE_TRY(tx.Q("UPDATE t_state SET component_id_input_digest = $1::bytea WHERE execution_id = $2",
                 Params().Text(DigestParam(new_digest)).Text(id)));
  if (const auto* pending = std::get_if<core::PendingStatePendingAt>(&state->pending_state.value)) {
    tx.notices.push_back(
        Notice{PendingDigestKey(new_digest), pending->scheduled_at, pending->scheduled_at});
  }
  return {};
}

}  // namespace stele::storage::postgres::internal
