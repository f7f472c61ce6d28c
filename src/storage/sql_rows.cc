#include "storage/sql_rows.h"

#include <utility>
#include <variant>

#include "core/return_value.h"
#include "storage/row_json.h"

namespace stele::storage {

namespace {

// A uint32 column (versions, counters), or a corrupt-row error naming it.
Result<uint32_t, DbErrorGeneric> U32Column(int64_t value, std::string_view id,
                                           std::string_view table, std::string_view what) {
  if (value < 0 || value > int64_t{UINT32_MAX}) {
    return Unexpected(CorruptRow(table, id, std::string(what) + " out of range"));
  }
  return static_cast<uint32_t>(value);
}

}  // namespace

DbErrorGeneric CorruptRow(std::string_view table, std::string_view execution_id,
                          std::string_view what) {
  return DbErrorGeneric::Uncategorized("corrupt " + std::string(table) + " row of `" +
                                       std::string(execution_id) + "`: " + std::string(what));
}

Result<ExecutionState, DbErrorGeneric> DecodeState(const StateColumns& c) {
  const std::string& id = c.execution_id;
  if (c.corresponding_version < 0 || c.corresponding_version > int64_t{UINT32_MAX} ||
      c.intermittent_event_count < 0 || c.intermittent_event_count > int64_t{UINT32_MAX}) {
    return Unexpected(CorruptRow("t_state", id, "version or counter out of range"));
  }
  if (c.executor_id.has_value() != c.run_id.has_value()) {
    return Unexpected(CorruptRow("t_state", id, "executor_id and run_id disagree"));
  }
  std::optional<core::LockedBy> last_lock;
  if (c.executor_id) {
    STELE_ASSIGN_OR_RETURN(auto executor,
                           ParseColumn<core::ExecutorId>(*c.executor_id, "executor_id"));
    STELE_ASSIGN_OR_RETURN(auto run, ParseColumn<core::RunId>(*c.run_id, "run_id"));
    last_lock = core::LockedBy{executor, run};
  }

  const DateTime at = TimeFromColumn(c.pending_expires_finished);
  core::PendingState pending_state;
  auto require = [&](bool ok, std::string_view what) -> Result<void, DbErrorGeneric> {
    if (ok) return {};
    return Unexpected(
        CorruptRow("t_state", id, "state `" + c.state + "` with " + std::string(what)));
  };
  if (c.state == kStatePendingAt) {
    STELE_TRY(
        require(!c.last_lock_version && !c.join_set_id && !c.join_set_closing && !c.result_kind,
                "columns of another state"));
    pending_state.value = core::PendingStatePendingAt{at, last_lock, c.digest};
  } else if (c.state == kStateLocked) {
    STELE_TRY(require(
        c.last_lock_version && last_lock && !c.join_set_id && !c.join_set_closing && !c.result_kind,
        "missing lock columns"));
    pending_state.value = core::PendingStateLocked{*last_lock, at, c.digest};
  } else if (c.state == kStateBlocked) {
    STELE_TRY(require(!c.last_lock_version && c.join_set_id && c.join_set_closing && !c.result_kind,
                      "missing join set columns"));
    STELE_ASSIGN_OR_RETURN(auto join_set,
                           ParseColumn<core::JoinSetId>(*c.join_set_id, "join_set_id"));
    pending_state.value =
        core::PendingStateBlockedByJoinSet{std::move(join_set), at, *c.join_set_closing, c.digest};
  } else if (c.state == kStateFinished) {
    STELE_TRY(require(!c.last_lock_version && !last_lock && !c.join_set_id && !c.join_set_closing &&
                          c.result_kind,
                      "missing result_kind"));
    STELE_ASSIGN_OR_RETURN(auto kind, DecodeJson<core::PendingStateFinishedResultKind>(
                                          *c.result_kind, "t_state.result_kind"));
    pending_state.value = core::PendingStateFinished{
        static_cast<Version::Type>(c.corresponding_version), at, kind, c.digest};
  } else {
    return Unexpected(CorruptRow("t_state", id, "unknown state `" + c.state + "`"));
  }
  if (!pending_state.IsFinished()) {
    pending_state.paused = c.paused;
    pending_state.cancelling = c.cancelling;
  }

  ExecutionState decoded{
      .execution_id = id,
      .pending_state = std::move(pending_state),
      .corresponding_version = Version(static_cast<Version::Type>(c.corresponding_version)),
      .ffqn = c.ffqn,
      .digest = c.digest,
      .intermittent_event_count = static_cast<uint32_t>(c.intermittent_event_count),
      .last_lock_version = std::nullopt,
      .last_lock = last_lock,
      .max_retries = std::nullopt,
      .retry_exp_backoff = std::nullopt,
      .created_at = TimeFromColumn(c.created_at),
      .first_scheduled_at = TimeFromColumn(c.first_scheduled_at),
      .updated_at = TimeFromColumn(c.updated_at),
      .response_count = std::nullopt,
  };
  if (c.response_count) {
    STELE_ASSIGN_OR_RETURN(uint32_t count,
                           U32Column(*c.response_count, id, "t_state", "response_count"));
    decoded.response_count = count;
  }
  if (c.last_lock_version) {
    STELE_ASSIGN_OR_RETURN(uint32_t version,
                           U32Column(*c.last_lock_version, id, "t_state", "last_lock_version"));
    decoded.last_lock_version = Version(version);
  }
  if (c.max_retries) {
    STELE_ASSIGN_OR_RETURN(decoded.max_retries,
                           U32Column(*c.max_retries, id, "t_state", "max_retries"));
  }
  if (c.retry_exp_backoff) {
    STELE_ASSIGN_OR_RETURN(
        decoded.retry_exp_backoff,
        DecodeJson<core::Duration>(*c.retry_exp_backoff, "t_state.retry_exp_backoff"));
  }
  return decoded;
}

Result<StateColumns, DbErrorWriteNonRetriable> EncodeState(const ExecutionState& s) {
  StateColumns c;
  c.execution_id = s.execution_id;
  c.digest = s.digest;
  c.corresponding_version = s.corresponding_version.value();
  c.intermittent_event_count = s.intermittent_event_count;
  c.ffqn = s.ffqn;
  c.created_at = TimeColumn(s.created_at);
  c.first_scheduled_at = TimeColumn(s.first_scheduled_at);
  c.updated_at = TimeColumn(s.updated_at);
  if (s.response_count) c.response_count = static_cast<int64_t>(*s.response_count);
  if (s.max_retries) c.max_retries = *s.max_retries;
  if (s.retry_exp_backoff) {
    STELE_ASSIGN_OR_RETURN(std::string backoff, EncodeJson(*s.retry_exp_backoff));
    c.retry_exp_backoff = std::move(backoff);
  }
  if (s.last_lock) {
    c.executor_id = s.last_lock->executor_id.ToString();
    c.run_id = s.last_lock->run_id.ToString();
  }
  if (s.last_lock_version) c.last_lock_version = s.last_lock_version->value();
  if (const auto* p = std::get_if<core::PendingStatePendingAt>(&s.pending_state.value)) {
    c.state = kStatePendingAt;
    c.pending_expires_finished = TimeColumn(p->scheduled_at);
  } else if (const auto* l = std::get_if<core::PendingStateLocked>(&s.pending_state.value)) {
    c.state = kStateLocked;
    c.pending_expires_finished = TimeColumn(l->lock_expires_at);
  } else if (const auto* b =
                 std::get_if<core::PendingStateBlockedByJoinSet>(&s.pending_state.value)) {
    c.state = kStateBlocked;
    c.pending_expires_finished = TimeColumn(b->lock_expires_at);
    c.join_set_id = b->join_set_id.ToString();
    c.join_set_closing = b->closing;
  } else {
    const auto& f = std::get<core::PendingStateFinished>(s.pending_state.value);
    c.state = kStateFinished;
    c.pending_expires_finished = TimeColumn(f.finished_at);
    STELE_ASSIGN_OR_RETURN(std::string kind, EncodeJson(f.result_kind));
    c.result_kind = std::move(kind);
  }
  c.paused = s.pending_state.paused;
  c.cancelling = s.pending_state.cancelling;
  return c;
}

Result<ResponseWithCursor, DbErrorGeneric> DecodeResponse(const ResponseColumns& c,
                                                          std::string_view execution_id) {
  constexpr std::string_view kTable = "t_join_set_response";
  STELE_ASSIGN_OR_RETURN(uint32_t idx, U32Column(c.idx, execution_id, kTable, "cursor"));
  STELE_ASSIGN_OR_RETURN(auto join_set_id,
                         ParseColumn<core::JoinSetId>(c.join_set_id, "response join_set_id"));
  std::optional<core::JoinSetResponse> event;
  if (c.delay_id) {
    STELE_ASSIGN_OR_RETURN(auto delay, ParseColumn<core::DelayId>(*c.delay_id, "delay_id"));
    event = core::DelayFinished{std::move(delay), c.delay_success.value_or(false)};
  } else if (c.message_id) {
    STELE_ASSIGN_OR_RETURN(core::Json body, DecodeRawJson(c.message_body.value_or(""),
                                                          "t_join_set_response.message_body"));
    event = core::MessageReceived{*c.message_id, std::move(body)};
  } else {
    const std::string child_text = c.child_execution_id.value_or("");
    STELE_ASSIGN_OR_RETURN(auto child,
                           ParseColumn<core::ExecutionIdDerived>(child_text, "child_execution_id"));
    STELE_ASSIGN_OR_RETURN(
        uint32_t finished_version,
        U32Column(c.finished_version.value_or(0), execution_id, kTable, "finished_version"));
    core::SupportedFunctionReturnValue result;
    if (c.child_result) {
      STELE_ASSIGN_OR_RETURN(result, DecodeJson<core::SupportedFunctionReturnValue>(
                                         *c.child_result, "t_join_set_response.child_result"));
    } else if (c.finished_event) {
      STELE_ASSIGN_OR_RETURN(auto finished_event,
                             DecodeEvent(*c.finished_event, child_text, finished_version));
      const auto* finished = std::get_if<core::Finished>(&finished_event);
      if (finished == nullptr) {
        return Unexpected(CorruptRow(kTable, execution_id, "joined child row is not Finished"));
      }
      result = finished->result;
    } else {
      return Unexpected(
          CorruptRow(kTable, execution_id, "child result of `" + child_text + "` is missing"));
    }
    event = core::ChildExecutionFinished{std::move(child), Version(finished_version),
                                         std::move(result)};
  }
  return ResponseWithCursor{
      core::JoinSetResponseEventOuter{
          TimeFromColumn(c.created_at),
          core::JoinSetResponseEvent{std::move(join_set_id), std::move(*event)}},
      idx};
}

}  // namespace stele::storage
