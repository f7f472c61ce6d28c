#include "storage/postgres/journal.h"

#include <algorithm>
#include <string>
#include <utility>
#include <variant>

#include "base/check.h"
#include "core/list_key.h"
#include "storage/pending_state_rules.h"
#include "storage/request_rules.h"
#include "storage/state_transition.h"

namespace stele::storage::postgres::internal {

std::string PendingFfqnKey(std::string_view ffqn) { return "f:" + std::string(ffqn); }
std::string PendingDigestKey(const core::InputContentDigest& digest) {
  return "d:" + DigestParam(digest).substr(2);
}
std::string ResponseKey(std::string_view execution_id) { return "r:" + std::string(execution_id); }
std::string FinishedKey(std::string_view execution_id) { return "x:" + std::string(execution_id); }
std::string PublishKey(std::string_view execution_id) { return "p:" + std::string(execution_id); }

// The execution finished, or a terminate request disarmed its deadline.
constexpr const char* kDisarmDeadline = "DELETE FROM t_deadline WHERE execution_id = $1";

namespace {

Result<PgResult, DbErrorGeneric> Q(PgConn& db, const std::string& sql,
                                   const Params& params = Params()) {
  auto res = db.Exec(sql, params);
  if (!res) return Unexpected(res.error().ToGeneric());
  return std::move(*res);
}

const std::string kSelectState =
    "SELECT " + std::string(kStateColumns) + " FROM t_state WHERE execution_id = $1";
const std::string kLockState = kSelectState + " FOR UPDATE";
const std::string kSelectEvents =
    "SELECT version, created_at, json_value::text FROM t_execution_log "
    "WHERE execution_id = $1 ORDER BY version";
const std::string kSelectEvent =
    "SELECT version, created_at, json_value::text FROM t_execution_log "
    "WHERE execution_id = $1 AND version = $2";
const std::string kSelectResponses =
    std::string(kResponseSelect) + "WHERE r.execution_id = $1 AND r.idx >= $2 ORDER BY r.idx";

// The created_at of the responses of a join set that its next JoinNexts
// await: the k-th JoinNext of a join set (counting the ones in the log)
// awaits its k-th response in cursor order. Offset $3 skips the JoinNexts
// this transaction applied already (not in the log yet).
const std::string kAwaitedResponses =
    "SELECT r.created_at FROM t_join_set_response r WHERE r.execution_id = $1 AND "
    "r.join_set_id = $2 ORDER BY r.idx OFFSET (SELECT COUNT(*) FROM t_execution_log l "
    "WHERE l.execution_id = $1 AND l.join_set_id = $2 AND l.history_event_type = 'join_next') "
    "+ $3 LIMIT $4";

const std::string kUpsertDelay =
    "WITH d AS (DELETE FROM t_delay WHERE execution_id = $1 AND delay_id = $3 "
    "AND join_set_id <> $2) "
    "INSERT INTO t_delay (execution_id, join_set_id, delay_id, expires_at) "
    "VALUES ($1, $2, $3, $4) ON CONFLICT (execution_id, join_set_id, delay_id) "
    "DO UPDATE SET expires_at = EXCLUDED.expires_at";

const std::string kInsertRows =
    "INSERT INTO t_state (execution_id, is_top_level, corresponding_version, ffqn, created_at, "
    "component_id_input_digest, first_scheduled_at, pending_expires_finished, state, updated_at, "
    "intermittent_event_count, max_retries, retry_exp_backoff, last_lock_version, executor_id, "
    "run_id, join_set_id, join_set_closing, result_kind, response_count, list_key) "
    "SELECT * FROM unnest($1::text[], $2::boolean[], $3::bigint[], $4::text[], $5::bigint[], "
    "$6::bytea[], $7::bigint[], $8::bigint[], $9::text[], $10::bigint[], $11::bigint[], "
    "$12::bigint[], $13::json[], $14::bigint[], $15::text[], $16::text[], $17::text[], "
    "$18::boolean[], $19::json[], $20::bigint[], $21::text[])";

const std::string kInsertEvents =
    "INSERT INTO t_execution_log (execution_id, version, created_at, json_value, variant, "
    "join_set_id) SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::json[], "
    "$5::text[], $6::text[])";

const std::string kUpdateRow =
    "UPDATE t_state SET state = $2, corresponding_version = $3, pending_expires_finished = $4, "
    "updated_at = $5, intermittent_event_count = $6, max_retries = $7, "
    "retry_exp_backoff = $8::json, last_lock_version = $9, executor_id = $10, run_id = $11, "
    "join_set_id = $12, join_set_closing = $13::boolean, result_kind = $14::json, "
    "response_count = $15, paused = $16, cancelling = $17 WHERE execution_id = $1";

// The first response of a delay (NULL: none yet) and whether its live timer
// (the request, until that first response) is there.
const std::string kDelayStatus =
    "SELECT (SELECT delay_success FROM t_join_set_response WHERE delay_id = $1), "
    "EXISTS (SELECT 1 FROM t_delay WHERE execution_id = $2 AND join_set_id = $3 "
    "AND delay_id = $1)";

const std::string kInsertResponse =
    "INSERT INTO t_join_set_response (execution_id, idx, created_at, join_set_id, delay_id, "
    "delay_success, child_execution_id, finished_version, child_result, message_id, "
    "message_body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::json, $10, $11::json)";

const std::string kSelectMessage =
    "SELECT join_set_id, message_body::text FROM t_join_set_response "
    "WHERE execution_id = $1 AND message_id = $2";

DbErrorWrite InvalidOr(const PgError& error, DbErrorWrite otherwise) {
  if (error.kind == PgError::Kind::kInvalidValue) {
    return DbErrorWriteNonRetriable::ValidationFailed(error.message);
  }
  return otherwise;
}

}  // namespace

// --- Reads outside a Journal ---------------------------------------------------

Statement SelectStateStatement(std::string_view id) {
  return Statement{kSelectState, Params().Text(id)};
}
Statement SelectEventsStatement(std::string_view id) {
  return Statement{kSelectEvents, Params().Text(id)};
}
Statement SelectResponsesStatement(std::string_view id, uint32_t from_cursor) {
  return Statement{kSelectResponses, Params().Text(id).Int(from_cursor)};
}

Result<std::optional<ExecutionState>, DbErrorGeneric> DecodeOptionalState(const PgResult& res) {
  if (res.rows() == 0) return std::optional<ExecutionState>();
  STELE_ASSIGN_OR_RETURN(ExecutionState state, DecodeStateRow(res, 0));
  return std::optional<ExecutionState>(std::move(state));
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

Result<std::optional<ExecutionState>, DbErrorGeneric> LoadState(PgConn& db, std::string_view id) {
  STELE_ASSIGN_OR_RETURN(PgResult res, Q(db, kSelectState, Params().Text(id)));
  return DecodeOptionalState(res);
}

Result<std::optional<core::ExecutionEvent>, DbErrorGeneric> LoadEvent(PgConn& db,
                                                                      std::string_view id,
                                                                      Version version) {
  STELE_ASSIGN_OR_RETURN(PgResult res, Q(db, kSelectEvent, Params().Text(id).Int(version.value())));
  if (res.rows() == 0) return std::optional<core::ExecutionEvent>();
  STELE_ASSIGN_OR_RETURN(auto event, DecodeEventRow(res, 0, id));
  return std::optional<core::ExecutionEvent>(std::move(event));
}

namespace {
Result<std::vector<ResponseWithCursor>, DbErrorGeneric> DecodeResponses(const PgResult& res,
                                                                        std::string_view id) {
  std::vector<ResponseWithCursor> responses;
  for (int row = 0; row < res.rows(); ++row) {
    STELE_ASSIGN_OR_RETURN(auto response, DecodeResponseRow(res, row, id));
    responses.push_back(std::move(response));
  }
  return responses;
}
}  // namespace

Result<std::vector<ResponseWithCursor>, DbErrorGeneric> LoadResponses(PgConn& db,
                                                                      std::string_view id,
                                                                      uint32_t from_cursor) {
  STELE_ASSIGN_OR_RETURN(PgResult res, Q(db, kSelectResponses, Params().Text(id).Int(from_cursor)));
  return DecodeResponses(res, id);
}

Result<std::optional<ExecutionLog>, DbErrorGeneric> LoadLog(PgConn& db,
                                                            const ExecutionId& execution_id) {
  const std::string id = execution_id.ToString();
  // One snapshot, one round trip.
  STELE_ASSIGN_OR_RETURN(auto results,
                         SnapshotRead(db, {SelectStateStatement(id), SelectEventsStatement(id),
                                           SelectResponsesStatement(id, 0)}));
  STELE_ASSIGN_OR_RETURN(auto state, DecodeOptionalState(results[0]));
  if (!state) return std::optional<ExecutionLog>();
  std::vector<core::ExecutionEvent> events;
  for (int row = 0; row < results[1].rows(); ++row) {
    STELE_ASSIGN_OR_RETURN(auto event, DecodeEventRow(results[1], row, id));
    events.push_back(std::move(event));
  }
  STELE_ASSIGN_OR_RETURN(auto responses, DecodeResponses(results[2], id));
  ExecutionLog log{
      execution_id, std::move(events), {}, state->NextVersion(), std::move(state->pending_state)};
  for (auto& response : responses) log.responses.push_back(std::move(response.event));
  return std::optional<ExecutionLog>(std::move(log));
}

// --- Journal: loading rows -------------------------------------------------------

Journal::Lookahead Journal::QueueLookahead(const std::string& id, const std::string& join_set,
                                           size_t offset, size_t limit) {
  Lookahead lookahead;
  lookahead.start = offset;
  lookahead.limit = limit;
  lookahead.used = offset;
  if (auto row = rows_.find(id); row != rows_.end()) {
    if (auto it = row->second.inserted_responses.find(join_set);
        it != row->second.inserted_responses.end()) {
      lookahead.inserted_before = it->second.size();
    }
  }
  lookahead.ticket = tx_.Read(kAwaitedResponses, Params()
                                                     .Text(id)
                                                     .Text(join_set)
                                                     .Int(static_cast<int64_t>(offset))
                                                     .Int(static_cast<int64_t>(limit)));
  return lookahead;
}

void Journal::Prefetch(const std::string& id, const std::vector<AppendRequest>* batch) {
  auto row = rows_.find(id);
  if (row == rows_.end() && !loading_.contains(id)) {
    loading_.emplace(id, tx_.Read(kLockState, Params().Text(id)));
  }
  if (batch == nullptr) return;
  std::map<std::string, size_t> join_nexts;
  for (const AppendRequest& req : *batch) {
    const auto* history = std::get_if<core::HistoryEventRequest>(&req.event);
    if (history == nullptr) continue;
    if (const auto* join_next = std::get_if<core::HistoryJoinNext>(&history->event)) {
      ++join_nexts[join_next->join_set_id.ToString()];
    }
  }
  auto& known = row != rows_.end() ? row->second.lookahead : loading_lookaheads_[id];
  for (const auto& [join_set, count] : join_nexts) {
    auto it = known.find(join_set);
    const size_t used = it != known.end() ? it->second.used : 0;
    if (it != known.end() && it->second.ticket &&
        used + count <= it->second.start + it->second.limit) {
      continue;  // asked for already
    }
    known[join_set] = QueueLookahead(id, join_set, used, count);
  }
}

Result<Journal::Row*, DbErrorWrite> Journal::Load(const std::string& id) {
  if (auto it = rows_.find(id); it != rows_.end()) return &it->second;
  if (!loading_.contains(id)) Prefetch(id);
  const size_t ticket = loading_.at(id);
  STELE_ASSIGN_OR_RETURN(const PgResult* res, tx_.Get(ticket));
  STELE_ASSIGN_OR_RETURN(auto state, DecodeOptionalState(*res));
  if (!state) return Unexpected(DbErrorWrite::NotFound());
  loading_.erase(id);
  Row& row = rows_[id];
  row.state = std::move(*state);
  if (auto it = loading_lookaheads_.find(id); it != loading_lookaheads_.end()) {
    row.lookahead = std::move(it->second);
    loading_lookaheads_.erase(it);
  }
  return &row;
}

void Journal::PrefetchDelay(const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
                            const core::DelayId& delay_id) {
  std::string key = delay_id.ToString();
  if (delays_.contains(key)) return;
  const size_t ticket = tx_.Read(
      kDelayStatus, Params().Text(key).Text(execution_id.ToString()).Text(join_set_id.ToString()));
  delays_.emplace(std::move(key), ticket);
}

Result<Journal::DelayStatus, DbErrorWrite> Journal::Delay(const ExecutionId& execution_id,
                                                          const core::JoinSetId& join_set_id,
                                                          const core::DelayId& delay_id) {
  PrefetchDelay(execution_id, join_set_id, delay_id);
  STELE_ASSIGN_OR_RETURN(const PgResult* res, tx_.Get(delays_.at(delay_id.ToString())));
  DelayStatus status;
  if (!res->IsNull(0, 0)) status.first_response = res->Bool(0, 0);
  status.live = res->Bool(0, 1);
  return status;
}

Result<const ExecutionState*, DbErrorWrite> Journal::State(const std::string& id) {
  STELE_ASSIGN_OR_RETURN(Row * row, Load(id));
  return &row->state;
}

Result<std::optional<DateTime>, DbErrorWrite> Journal::AwaitedResponse(
    Row& row, const core::JoinSetId& join_set) {
  const std::string key = join_set.ToString();
  Lookahead& lookahead = row.lookahead[key];
  const size_t i = lookahead.used++;
  if (!lookahead.ticket || i < lookahead.start || i >= lookahead.start + lookahead.limit) {
    // Not looked up with the row lock: its own round trip.
    Lookahead single = QueueLookahead(row.state.execution_id, key, i, 1);
    single.used = i + 1;
    lookahead = single;
  }
  STELE_ASSIGN_OR_RETURN(const PgResult* res, tx_.Get(*lookahead.ticket));
  const int j = static_cast<int>(i - lookahead.start);
  if (j < res->rows()) return std::optional<DateTime>(TimeFromColumn(res->Int(j, 0)));
  // Past what the database held (the lookup asked for more than it got):
  // the responses this Journal inserted after queueing the lookup follow.
  const auto inserted = row.inserted_responses.find(key);
  if (inserted == row.inserted_responses.end()) return std::optional<DateTime>();
  const size_t k = lookahead.inserted_before + static_cast<size_t>(j - res->rows());
  if (k >= inserted->second.size()) return std::optional<DateTime>();
  return std::optional<DateTime>(inserted->second[k]);
}

// --- Journal: applying events ----------------------------------------------------

void Journal::NotifyPending(const ExecutionState& state, DateTime scheduled_at,
                            DateTime current_time) {
  tx_.notices.push_back(Notice{PendingFfqnKey(state.ffqn), scheduled_at, current_time});
  tx_.notices.push_back(Notice{PendingDigestKey(state.digest), scheduled_at, current_time});
}

void Journal::AddEvent(std::string_view id, Version version, DateTime created_at, std::string json,
                       std::string_view variant, const std::optional<std::string>& join_set) {
  if (!first_event_version_) first_event_version_ = version;
  event_ids_.Text(id);
  event_versions_.Int(version.value());
  event_created_.Int(TimeColumn(created_at));
  event_json_.Text(json);
  event_variants_.Text(variant);
  event_join_sets_.OptText(join_set);
}

Result<Version, DbErrorWrite> Journal::Apply(Row& row, Version version, const AppendRequest& req,
                                             DateTime current_time) {
  ExecutionState& s = row.state;
  const std::string& id = s.execution_id;
  STELE_TRY(CheckAppend(s, version, req));
  STELE_ASSIGN_OR_RETURN(std::string json, EncodeEvent(req.event));
  std::optional<std::string> join_set;
  if (auto join_set_id = core::ExecutionRequestJoinSetId(req.event)) {
    join_set = join_set_id->ToString();
  }
  AddEvent(id, version, req.created_at, std::move(json),
           core::ExecutionRequestVariantTag(req.event), join_set);
  STELE_ASSIGN_OR_RETURN(AppendEffects effects,
                         ApplyAppend(s, version, req, [&](const core::JoinSetId& awaited_join_set) {
                           return AwaitedResponse(row, awaited_join_set);
                         }));
  row.dirty = true;
  if (effects.timer != nullptr) {
    // A repeated DelayRequest replaces the timer (as in the reference
    // model), keyed by delay id within the execution.
    const auto& timer = std::get<core::DelayRequest>(effects.timer->request);
    tx_.Write(kUpsertDelay, Params()
                                .Text(id)
                                .Text(effects.timer->join_set_id.ToString())
                                .Text(timer.delay_id.ToString())
                                .Int(TimeColumn(timer.expires_at)));
  }
  if (effects.disarm_deadline) tx_.Write(kDisarmDeadline, Params().Text(id));
  if (effects.pending_at) NotifyPending(s, *effects.pending_at, current_time);
  if (effects.finished != nullptr) {
    finished_here_.push_back(FinishedHere{id, version, &effects.finished->result});
    tx_.notices.push_back(Notice{FinishedKey(id), req.created_at, current_time});
  }
  if (effects.published) {
    tx_.notices.push_back(Notice{PublishKey(id), req.created_at, current_time});
  }
  return version.Increment();
}

Result<Version, DbErrorWrite> Journal::Append(const ExecutionId& execution_id, Version version,
                                              const AppendRequest& req, DateTime current_time) {
  STELE_TRY(ValidateAppendRequest(execution_id, req));
  const std::string id = execution_id.ToString();
  if (std::holds_alternative<core::HistoryEventRequest>(req.event)) {
    const std::vector<AppendRequest> one{req};
    Prefetch(id, &one);
  }
  STELE_ASSIGN_OR_RETURN(Row * row, Load(id));
  return Apply(*row, version, req, current_time);
}

Result<Version, DbErrorWrite> Journal::AppendBatch(const ExecutionId& execution_id, Version version,
                                                   const std::vector<AppendRequest>& batch,
                                                   DateTime current_time) {
  if (batch.empty()) {
    return Unexpected(DbErrorWriteNonRetriable::ValidationFailed("empty batch"));
  }
  for (const AppendRequest& req : batch) STELE_TRY(ValidateAppendRequest(execution_id, req));
  const std::string id = execution_id.ToString();
  Prefetch(id, &batch);
  STELE_ASSIGN_OR_RETURN(Row * row, Load(id));
  for (const AppendRequest& req : batch) {
    STELE_ASSIGN_OR_RETURN(version, Apply(*row, version, req, current_time));
  }
  return version;
}

Result<bool, DbErrorWrite> Journal::Create(const CreateRequest& req, DateTime current_time,
                                           const core::Locked* lock) {
  STELE_TRY(ValidateCreateRequest(req));
  const std::string id = req.execution_id.ToString();
  if (rows_.contains(id)) {
    return Unexpected(DbErrorWriteNonRetriable::IllegalState("execution already exists"));
  }
  STELE_ASSIGN_OR_RETURN(std::string json, EncodeEvent(req.ToCreatedEvent()));
  Row& row = rows_[id];
  row.created = true;
  row.dirty = true;
  row.state = ExecutionState{
      .execution_id = id,
      .pending_state = core::PendingState{core::PendingStatePendingAt{
          req.scheduled_at, std::nullopt, req.component_id.input_digest}},
      .corresponding_version = Version(0),
      .ffqn = req.ffqn.ToString(),
      .digest = req.component_id.input_digest,
      .intermittent_event_count = 0,
      .last_lock_version = std::nullopt,
      .last_lock = std::nullopt,
      .max_retries = std::nullopt,
      .retry_exp_backoff = std::nullopt,
      .created_at = req.created_at,
      .first_scheduled_at = req.scheduled_at,
      .updated_at = req.created_at,
      .response_count = 0,
  };
  created_order_.push_back(id);
  if (req.policy.deadline) {
    // Live until the execution finishes or a terminate request disarms it.
    // A duplicate id is refused by t_state's key (IllegalState), not here.
    tx_.Write(
        "INSERT INTO t_deadline (execution_id, deadline) VALUES ($1, $2) "
        "ON CONFLICT (execution_id) DO NOTHING",
        Params().Text(id).Int(TimeColumn(*req.policy.deadline)));
  }
  // The Created row carries no join set (only JoinNext counting reads it).
  AddEvent(id, Version(0), req.created_at, std::move(json), "created", std::nullopt);
  if (lock != nullptr && CanAppendLock(row.state.pending_state, current_time, lock->executor_id,
                                       lock->run_id, lock->lock_expires_at)) {
    STELE_TRY(Apply(row, Version(1), AppendRequest{current_time, *lock}, current_time));
    return true;
  }
  NotifyPending(row.state, req.scheduled_at, current_time);
  return false;
}

Result<std::optional<core::JoinSetResponseEvent>, DbErrorWrite> Journal::FindMessage(
    const ExecutionId& execution_id, const std::string& message_id) {
  STELE_ASSIGN_OR_RETURN(
      const PgResult* res,
      tx_.Q(kSelectMessage, Params().Text(execution_id.ToString()).Text(message_id)));
  if (res->rows() == 0) return std::optional<core::JoinSetResponseEvent>();
  STELE_ASSIGN_OR_RETURN(auto join_set_id,
                         ParseColumn<core::JoinSetId>(res->Str(0, 0), "response join_set_id"));
  STELE_ASSIGN_OR_RETURN(core::Json body,
                         DecodeRawJson(res->Str(0, 1), "t_join_set_response.message_body"));
  return std::optional<core::JoinSetResponseEvent>(core::JoinSetResponseEvent{
      std::move(join_set_id), core::MessageReceived{message_id, std::move(body)}});
}

Result<void, DbErrorWrite> Journal::InsertResponse(const ExecutionId& execution_id,
                                                   const core::JoinSetResponseEventOuter& response,
                                                   DateTime current_time) {
  const std::string id = execution_id.ToString();
  const core::JoinSetResponseEvent& event = response.event;
  STELE_TRY(CheckResponseAddressee(execution_id, event));
  const auto* delay = std::get_if<core::DelayFinished>(&event.event);
  const auto* message = std::get_if<core::MessageReceived>(&event.event);
  if (delay == nullptr && message == nullptr) {
    // A child exists only with its parent's request (ValidateChildCreation).
    // Its row first: children lock before their parent.
    STELE_TRY(
        Load(std::get<core::ChildExecutionFinished>(event.event).child_execution_id.ToString()));
  }
  // The parent's row lock orders its responses: the cursor is its
  // response_count while holding it.
  STELE_ASSIGN_OR_RETURN(Row * row, Load(id));
  ExecutionState& s = row->state;
  if (delay != nullptr) {
    STELE_ASSIGN_OR_RETURN(DelayStatus status,
                           Delay(execution_id, event.join_set_id, delay->delay_id));
    if (status.first_response) return Unexpected(DbErrorWriteNonRetriable::Conflict());
    if (!status.live) return Unexpected(DbErrorWrite::NotFound());  // never requested
  }
  Params params;
  params.Text(id)
      .Int(static_cast<int64_t>(s.response_count.value_or(0)))
      .Int(TimeColumn(response.created_at))
      .Text(event.join_set_id.ToString());
  if (delay != nullptr) {
    params.Text(delay->delay_id.ToString()).Bool(delay->ok).Null().Null().Null().Null().Null();
  } else if (message != nullptr) {
    // AppendMessage checked the rules; the unique index is the last guard.
    STELE_ASSIGN_OR_RETURN(std::string body, EncodeRawJson(message->body));
    params.Null().Null().Null().Null().Null().Text(message->message_id).Text(body);
  } else {
    const auto& child = std::get<core::ChildExecutionFinished>(event.event);
    const std::string child_id = child.child_execution_id.ToString();
    // The result is joined from the child's Finished row when it is there
    // with the same value (usually appended in this very transaction);
    // otherwise stored inline.
    std::optional<bool> same;
    for (const FinishedHere& here : finished_here_) {
      if (here.id == child_id && here.version == child.finished_version) {
        same = *here.result == child.result;
      }
    }
    if (!same) {
      STELE_ASSIGN_OR_RETURN(
          const PgResult* res,
          tx_.Q(kSelectEvent, Params().Text(child_id).Int(child.finished_version.value())));
      same = false;
      if (res->rows() == 1) {
        STELE_ASSIGN_OR_RETURN(auto finished_event, DecodeEventRow(*res, 0, child_id));
        const auto* finished = std::get_if<core::Finished>(&finished_event.event);
        same = finished != nullptr && finished->result == child.result;
      }
    }
    std::optional<std::string> inline_result;
    if (!*same) {
      STELE_ASSIGN_OR_RETURN(inline_result, EncodeJson(child.result));
    }
    params.Null()
        .Null()
        .Text(child_id)
        .Int(child.finished_version.value())
        .OptText(inline_result)
        .Null()
        .Null();
  }
  // A duplicate child or delay id violates a unique index → Conflict.
  tx_.Write(kInsertResponse, std::move(params), [](const PgError& error) -> DbErrorWrite {
    if (error.kind == PgError::Kind::kUniqueViolation) {
      return DbErrorWriteNonRetriable::Conflict();
    }
    return InvalidOr(error, error.ToGeneric());
  });
  s.response_count = s.response_count.value_or(0) + 1;
  row->dirty = true;
  row->inserted_responses[event.join_set_id.ToString()].push_back(response.created_at);
  if (auto scheduled_at = ApplyResponse(s, event.join_set_id, response.created_at)) {
    NotifyPending(s, *scheduled_at, current_time);
  }
  if (delay != nullptr) {
    tx_.Write("DELETE FROM t_delay WHERE execution_id = $1 AND delay_id = $2",
              Params().Text(id).Text(delay->delay_id.ToString()));
  }
  tx_.notices.push_back(Notice{ResponseKey(id), response.created_at, current_time});
  return {};
}

// --- Journal: writing back ----------------------------------------------------------

Result<void, DbErrorWrite> Journal::Flush() {
  STELE_CHECK(!flushed_, "Journal::Flush twice");
  flushed_ = true;
  if (!created_order_.empty()) {
    ArrayParam ids, top, versions, ffqns, created, digests, first, pending, states, updated,
        intermittent, max_retries, backoff, lock_version, executors, runs, join_sets, closing,
        kinds, responses, list_keys;
    for (const std::string& id : created_order_) {
      const ExecutionState& s = rows_.at(id).state;
      STELE_ASSIGN_OR_RETURN(StateColumns c, EncodeState(s));
      STELE_ASSIGN_OR_RETURN(auto parsed, ParseColumn<ExecutionId>(id, "execution id"));
      ids.Text(id);
      top.Bool(parsed.IsTopLevel());
      versions.Int(s.corresponding_version.value());
      ffqns.Text(s.ffqn);
      created.Int(TimeColumn(s.created_at));
      digests.Text(DigestParam(s.digest));
      first.Int(TimeColumn(s.first_scheduled_at));
      pending.Int(c.pending_expires_finished);
      states.Text(c.state);
      updated.Int(TimeColumn(s.updated_at));
      intermittent.Int(s.intermittent_event_count);
      max_retries.OptInt(c.max_retries);
      backoff.OptText(c.retry_exp_backoff);
      lock_version.OptInt(c.last_lock_version);
      executors.OptText(c.executor_id);
      runs.OptText(c.run_id);
      join_sets.OptText(c.join_set_id);
      if (c.join_set_closing) {
        closing.Bool(*c.join_set_closing);
      } else {
        closing.Null();
      }
      kinds.OptText(c.result_kind);
      responses.Int(c.response_count.value_or(0));
      list_keys.Text(core::ListKey(parsed));
    }
    Params params;
    for (const ArrayParam* column :
         {&ids,       &top,    &versions,  &ffqns,        &created,     &digests,   &first,
          &pending,   &states, &updated,   &intermittent, &max_retries, &backoff,   &lock_version,
          &executors, &runs,   &join_sets, &closing,      &kinds,       &responses, &list_keys}) {
      params.Text(column->Literal());
    }
    // An id that exists already violates t_state's key.
    tx_.Write(kInsertRows, std::move(params), [](const PgError& error) -> DbErrorWrite {
      if (error.kind == PgError::Kind::kUniqueViolation) {
        return DbErrorWriteNonRetriable::IllegalState("execution already exists");
      }
      return InvalidOr(error, error.ToGeneric());
    });
  }
  if (first_event_version_) {
    // The row locks make a duplicate version impossible for well-behaved
    // writers; the key still fences anything else.
    const Version first = *first_event_version_;
    tx_.Write(kInsertEvents,
              Params()
                  .Text(event_ids_.Literal())
                  .Text(event_versions_.Literal())
                  .Text(event_created_.Literal())
                  .Text(event_json_.Literal())
                  .Text(event_variants_.Literal())
                  .Text(event_join_sets_.Literal()),
              [first](const PgError& error) -> DbErrorWrite {
                if (error.kind == PgError::Kind::kUniqueViolation) {
                  return DbErrorWriteNonRetriable::VersionConflict(first.Increment(), first);
                }
                return InvalidOr(error, error.ToGeneric());
              });
  }
  for (const auto& [id, row] : rows_) {
    if (row.created || !row.dirty) continue;
    const ExecutionState& s = row.state;
    STELE_ASSIGN_OR_RETURN(StateColumns c, EncodeState(s));
    Params params;
    params.Text(id)
        .Text(c.state)
        .Int(s.corresponding_version.value())
        .Int(c.pending_expires_finished)
        .Int(TimeColumn(s.updated_at))
        .Int(s.intermittent_event_count)
        .OptInt(c.max_retries)
        .OptText(c.retry_exp_backoff)
        .OptInt(c.last_lock_version)
        .OptText(c.executor_id)
        .OptText(c.run_id)
        .OptText(c.join_set_id);
    if (c.join_set_closing) {
      params.Bool(*c.join_set_closing);
    } else {
      params.Null();
    }
    params.OptText(c.result_kind)
        .Int(c.response_count.value_or(0))
        .Bool(c.paused)
        .Bool(c.cancelling);
    tx_.Write(kUpdateRow, std::move(params));
  }
  return {};
}

}  // namespace stele::storage::postgres::internal
