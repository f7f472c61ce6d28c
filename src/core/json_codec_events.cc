// JSON shapes of the event log: ExecutionRequest and its HistoryEvents,
// ExecutionEvent, join set responses and PendingState.
#include <algorithm>
#include <iterator>
#include <optional>
#include <string>

#include "core/json_codec.h"
#include "core/json_codec_internal.h"

namespace stele::core {
namespace json_internal {
namespace {

JsonResult<uint8_t> ReadByte(const Json& json, const std::string& path) {
  return ReadU8(json, path);
}

JsonResult<std::vector<uint8_t>> ReadBytes(const Json& json, const std::string& path) {
  return ReadArray(json, path, &ReadByte);
}

JsonResult<HttpClientTraces> ReadHttpClientTraces(const Json& json, const std::string& path) {
  if (json.is_null()) return HttpClientTraces();
  STELE_ASSIGN_OR_RETURN(std::vector<HttpClientTrace> traces,
                         ReadArray(json, path, &DecodeHttpClientTrace));
  return HttpClientTraces(std::move(traces));
}

// `engine` of the run-ending events: absent (rows written before it
// existed, or without a wasm engine) or null reads as nullopt.
JsonResult<std::optional<std::string>> EngineField(const ObjectReader& object) {
  return OptionalField(object, "engine", &ReadString);
}

JsonResult<HttpClientTraces> TracesField(const ObjectReader& object) {
  const Json* traces = object.Find("http_client_traces");
  if (traces == nullptr) return HttpClientTraces();
  return ReadHttpClientTraces(*traces, object.PathOf("http_client_traces"));
}

// `parent`: null or [execution_id, join_set_id].
JsonResult<std::pair<ExecutionId, JoinSetId>> ReadParent(const Json& json,
                                                         const std::string& path) {
  if (!json.is_array() || json.size() != 2) {
    return Error(path, "expected [execution_id, join_set_id]");
  }
  STELE_ASSIGN_OR_RETURN(ExecutionId execution_id, ReadExecutionId(json[0], IndexPath(path, 0)));
  STELE_ASSIGN_OR_RETURN(JoinSetId join_set_id, ReadJoinSetId(json[1], IndexPath(path, 1)));
  return std::pair<ExecutionId, JoinSetId>(std::move(execution_id), std::move(join_set_id));
}

JsonResult<LockedBy> DecodeLockedBy(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  STELE_ASSIGN_OR_RETURN(ExecutorId executor_id, Field(object, "executor_id", &ReadExecutorId));
  STELE_ASSIGN_OR_RETURN(RunId run_id, Field(object, "run_id", &ReadRunId));
  return LockedBy{executor_id, run_id};
}

Json LockedByJson(const LockedBy& locked_by) {
  Json out = Json::object();
  out["executor_id"] = locked_by.executor_id.ToString();
  out["run_id"] = locked_by.run_id.ToString();
  return out;
}

Json TracesJson(const HttpClientTraces& traces) {
  if (!traces) return Json(nullptr);
  Json out = Json::array();
  for (const HttpClientTrace& trace : *traces) out.push_back(ToJson(trace));
  return out;
}

// `engine` is written only when set, so the JSON of events without one —
// every run outside wasm — stays exactly what it was before the field.
// {"deadline": t, "retry": {"max_retries": n, "retry_exp_backoff": d,
// "max_backoff": d, "jitter_percent": p}}, every field optional.
JsonResult<ExecutionPolicy> DecodePolicy(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  ExecutionPolicy policy;
  STELE_ASSIGN_OR_RETURN(policy.deadline, OptionalField(object, "deadline", &ReadDateTime));
  if (const Json* retry_json = object.Find("retry");
      retry_json != nullptr && !retry_json->is_null()) {
    STELE_ASSIGN_OR_RETURN(ObjectReader retry,
                           ObjectReader::Make(*retry_json, object.PathOf("retry")));
    STELE_ASSIGN_OR_RETURN(policy.retry.max_retries, OptionalField(retry, "max_retries", &ReadU32));
    STELE_ASSIGN_OR_RETURN(policy.retry.retry_exp_backoff,
                           OptionalField(retry, "retry_exp_backoff", &DecodeDuration));
    STELE_ASSIGN_OR_RETURN(policy.retry.max_backoff,
                           OptionalField(retry, "max_backoff", &DecodeDuration));
    STELE_ASSIGN_OR_RETURN(policy.retry.jitter_percent,
                           OptionalField(retry, "jitter_percent", &ReadU32));
    if (policy.retry.jitter_percent && *policy.retry.jitter_percent > 100) {
      return Error(retry.PathOf("jitter_percent"), "expected 0..100");
    }
  }
  return policy;
}

Json PolicyJson(const ExecutionPolicy& policy) {
  Json out = Json::object();
  if (policy.deadline) out["deadline"] = DateTimeJson(*policy.deadline);
  if (!policy.retry.IsEmpty()) {
    Json retry = Json::object();
    const RetryOverride& r = policy.retry;
    if (r.max_retries) retry["max_retries"] = *r.max_retries;
    if (r.retry_exp_backoff) retry["retry_exp_backoff"] = ToJson(*r.retry_exp_backoff);
    if (r.max_backoff) retry["max_backoff"] = ToJson(*r.max_backoff);
    if (r.jitter_percent) retry["jitter_percent"] = *r.jitter_percent;
    out["retry"] = std::move(retry);
  }
  return out;
}

// "attempt" and "max_attempts" of a temporary failure; absent in events
// written before they existed (and max_attempts when unlimited).
JsonResult<std::optional<RetryAttempt>> AttemptFields(const ObjectReader& object) {
  STELE_ASSIGN_OR_RETURN(std::optional<uint32_t> attempt,
                         OptionalField(object, "attempt", &ReadU32));
  STELE_ASSIGN_OR_RETURN(std::optional<uint32_t> max_attempts,
                         OptionalField(object, "max_attempts", &ReadU32));
  if (!attempt) return std::optional<RetryAttempt>();
  return std::optional<RetryAttempt>(RetryAttempt{*attempt, max_attempts});
}

void AddAttempt(Json& body, const std::optional<RetryAttempt>& attempt) {
  if (!attempt) return;
  body["attempt"] = attempt->attempt;
  if (attempt->max_attempts) body["max_attempts"] = *attempt->max_attempts;
}

void AddEngine(Json& body, const std::optional<std::string>& engine) {
  if (engine) body["engine"] = *engine;
}

JsonResult<HistoryEvent> DecodeHistoryEventObject(const ObjectReader& object,
                                                  const std::string& type) {
  if (type == "persist") {
    HistoryPersist event;
    STELE_ASSIGN_OR_RETURN(event.value, Field(object, "value", &ReadBytes));
    STELE_ASSIGN_OR_RETURN(event.kind, Field(object, "kind", &DecodePersistKind));
    return event;
  }
  if (type == "join_set_create") {
    STELE_ASSIGN_OR_RETURN(JoinSetId join_set_id, Field(object, "join_set_id", &ReadJoinSetId));
    return HistoryJoinSetCreate{std::move(join_set_id)};
  }
  if (type == "join_set_request") {
    STELE_ASSIGN_OR_RETURN(JoinSetId join_set_id, Field(object, "join_set_id", &ReadJoinSetId));
    STELE_ASSIGN_OR_RETURN(JoinSetRequest request, Field(object, "request", &DecodeJoinSetRequest));
    return HistoryJoinSetRequest{std::move(join_set_id), std::move(request)};
  }
  if (type == "join_next") {
    STELE_ASSIGN_OR_RETURN(JoinSetId join_set_id, Field(object, "join_set_id", &ReadJoinSetId));
    STELE_ASSIGN_OR_RETURN(DateTime run_expires_at, Field(object, "run_expires_at", &ReadDateTime));
    STELE_ASSIGN_OR_RETURN(std::optional<FunctionFqn> requested_ffqn,
                           OptionalField(object, "requested_ffqn", &ReadFfqn));
    STELE_ASSIGN_OR_RETURN(bool closing, Field(object, "closing", &ReadBool));
    return HistoryJoinNext{std::move(join_set_id), run_expires_at, std::move(requested_ffqn),
                           closing};
  }
  if (type == "join_next_too_many") {
    STELE_ASSIGN_OR_RETURN(JoinSetId join_set_id, Field(object, "join_set_id", &ReadJoinSetId));
    STELE_ASSIGN_OR_RETURN(std::optional<FunctionFqn> requested_ffqn,
                           OptionalField(object, "requested_ffqn", &ReadFfqn));
    return HistoryJoinNextTooMany{std::move(join_set_id), std::move(requested_ffqn)};
  }
  if (type == "schedule") {
    STELE_ASSIGN_OR_RETURN(ExecutionId execution_id,
                           Field(object, "execution_id", &ReadExecutionId));
    STELE_ASSIGN_OR_RETURN(HistoryEventScheduleAt schedule_at,
                           Field(object, "schedule_at", &DecodeScheduleAt));
    return HistorySchedule{std::move(execution_id), schedule_at};
  }
  if (type == "stub") {
    STELE_ASSIGN_OR_RETURN(ExecutionIdDerived target,
                           Field(object, "target_execution_id", &ReadExecutionIdDerived));
    STELE_ASSIGN_OR_RETURN(SupportedFunctionReturnValue result,
                           Field(object, "result", &DecodeReturnValue));
    STELE_ASSIGN_OR_RETURN(bool persist_result_ok,
                           Field(object, "persist_result", &ReadUnitResult));
    return HistoryStub{std::move(target), std::move(result), persist_result_ok};
  }
  if (type == "step") {
    STELE_ASSIGN_OR_RETURN(std::string name, Field(object, "name", &ReadString));
    STELE_ASSIGN_OR_RETURN(SupportedFunctionReturnValue result,
                           Field(object, "result", &DecodeReturnValue));
    return HistoryStep{std::move(name), std::move(result)};
  }
  if (type == "join_next_try") {
    STELE_ASSIGN_OR_RETURN(JoinSetId join_set_id, Field(object, "join_set_id", &ReadJoinSetId));
    return HistoryJoinNextTry{std::move(join_set_id)};
  }
  if (type == "cancel_request") {
    STELE_ASSIGN_OR_RETURN(DateTime grace_expires_at,
                           Field(object, "grace_expires_at", &ReadDateTime));
    STELE_ASSIGN_OR_RETURN(bool terminate, Field(object, "terminate", &ReadBool));
    STELE_ASSIGN_OR_RETURN(std::string reason, Field(object, "reason", &ReadString));
    STELE_ASSIGN_OR_RETURN(std::optional<bool> timed_out,
                           OptionalField(object, "timed_out", &ReadBool));
    return HistoryCancelRequest{grace_expires_at, terminate, std::move(reason),
                                timed_out.value_or(false)};
  }
  if (type == "publish") {
    STELE_ASSIGN_OR_RETURN(std::string key, Field(object, "key", &ReadString));
    const Json* value = object.Find("value");
    if (value == nullptr) return Error(object.PathOf("value"), "missing field");
    return HistoryPublish{std::move(key), *value};
  }
  if (type == "send_message") {
    STELE_ASSIGN_OR_RETURN(ExecutionId target,
                           Field(object, "target_execution_id", &ReadExecutionId));
    STELE_ASSIGN_OR_RETURN(std::string channel, Field(object, "channel", &ReadString));
    STELE_ASSIGN_OR_RETURN(std::string message_id, Field(object, "message_id", &ReadString));
    const Json* body = object.Find("body");
    if (body == nullptr) return Error(object.PathOf("body"), "missing field");
    STELE_ASSIGN_OR_RETURN(std::string outcome_text, Field(object, "outcome", &ReadString));
    SendOutcome outcome = SendOutcome::kDelivered;
    if (outcome_text == "not_found") {
      outcome = SendOutcome::kNotFound;
    } else if (outcome_text == "already_finished") {
      outcome = SendOutcome::kAlreadyFinished;
    } else if (outcome_text != "delivered") {
      return UnknownVariant(object.PathOf("outcome"), outcome_text,
                            "`delivered`, `not_found`, `already_finished`");
    }
    return HistorySendMessage{std::move(target), std::move(channel), std::move(message_id), *body,
                              outcome};
  }
  return UnknownVariant(object.PathOf("type"), type,
                        "`persist`, `join_set_create`, `join_set_request`, `join_next`, "
                        "`join_next_too_many`, `schedule`, `stub`, `step`, `cancel_request`, "
                        "`join_next_try`, `publish`, `send_message`");
}

JsonResult<ExecutionRequest> DecodeExecutionRequestBody(const ObjectReader& object,
                                                        const std::string& tag) {
  if (tag == "created") {
    STELE_ASSIGN_OR_RETURN(FunctionFqn ffqn, Field(object, "ffqn", &ReadFfqn));
    STELE_ASSIGN_OR_RETURN(Params params, Field(object, "params", &ReadParams));
    STELE_ASSIGN_OR_RETURN(auto parent, OptionalField(object, "parent", &ReadParent));
    STELE_ASSIGN_OR_RETURN(DateTime scheduled_at, Field(object, "scheduled_at", &ReadDateTime));
    STELE_ASSIGN_OR_RETURN(ComponentId component_id,
                           Field(object, "component_id", &DecodeComponentId));
    ExecutionMetadata metadata;
    if (const Json* json = object.Find("metadata")) {
      STELE_ASSIGN_OR_RETURN(metadata, DecodeMetadata(*json, object.PathOf("metadata")));
    }
    STELE_ASSIGN_OR_RETURN(std::optional<ExecutionId> scheduled_by,
                           OptionalField(object, "scheduled_by", &ReadExecutionId));
    ExecutionPolicy policy;
    if (const Json* json = object.Find("policy"); json != nullptr && !json->is_null()) {
      STELE_ASSIGN_OR_RETURN(policy, DecodePolicy(*json, object.PathOf("policy")));
    }
    return Created{
        std::move(ffqn),         std::move(params),   std::move(parent),       scheduled_at,
        std::move(component_id), std::move(metadata), std::move(scheduled_by), std::move(policy)};
  }
  if (tag == "locked") {
    STELE_ASSIGN_OR_RETURN(ComponentId component_id,
                           Field(object, "component_id", &DecodeComponentId));
    STELE_ASSIGN_OR_RETURN(ExecutorId executor_id, Field(object, "executor_id", &ReadExecutorId));
    STELE_ASSIGN_OR_RETURN(RunId run_id, Field(object, "run_id", &ReadRunId));
    STELE_ASSIGN_OR_RETURN(DateTime lock_expires_at,
                           Field(object, "lock_expires_at", &ReadDateTime));
    STELE_ASSIGN_OR_RETURN(ComponentRetryConfig retry_config,
                           Field(object, "retry_config", &DecodeRetryConfig));
    return Locked{std::move(component_id), executor_id, run_id, lock_expires_at, retry_config};
  }
  if (tag == "unlocked") {
    STELE_ASSIGN_OR_RETURN(DateTime backoff_expires_at,
                           Field(object, "backoff_expires_at", &ReadDateTime));
    STELE_ASSIGN_OR_RETURN(std::string reason, Field(object, "reason", &ReadString));
    STELE_ASSIGN_OR_RETURN(std::optional<std::string> engine, EngineField(object));
    return Unlocked{backoff_expires_at, std::move(reason), std::move(engine)};
  }
  if (tag == "temporarily_failed") {
    STELE_ASSIGN_OR_RETURN(DateTime backoff_expires_at,
                           Field(object, "backoff_expires_at", &ReadDateTime));
    STELE_ASSIGN_OR_RETURN(std::string reason, Field(object, "reason", &ReadString));
    STELE_ASSIGN_OR_RETURN(std::optional<std::string> detail,
                           OptionalField(object, "detail", &ReadString));
    STELE_ASSIGN_OR_RETURN(HttpClientTraces traces, TracesField(object));
    STELE_ASSIGN_OR_RETURN(std::optional<std::string> engine, EngineField(object));
    STELE_ASSIGN_OR_RETURN(std::optional<RetryAttempt> attempt, AttemptFields(object));
    return TemporarilyFailed{backoff_expires_at, std::move(reason), std::move(detail),
                             std::move(traces),  std::move(engine), attempt};
  }
  if (tag == "temporarily_timed_out") {
    STELE_ASSIGN_OR_RETURN(DateTime backoff_expires_at,
                           Field(object, "backoff_expires_at", &ReadDateTime));
    STELE_ASSIGN_OR_RETURN(HttpClientTraces traces, TracesField(object));
    STELE_ASSIGN_OR_RETURN(std::optional<std::string> engine, EngineField(object));
    // Absent in events stored before timeouts had a reason.
    STELE_ASSIGN_OR_RETURN(std::optional<std::string> reason,
                           OptionalField(object, "reason", &ReadString));
    STELE_ASSIGN_OR_RETURN(std::optional<RetryAttempt> attempt, AttemptFields(object));
    return TemporarilyTimedOut{backoff_expires_at, std::move(traces), std::move(engine),
                               std::move(reason), attempt};
  }
  if (tag == "finished") {
    STELE_ASSIGN_OR_RETURN(SupportedFunctionReturnValue result,
                           Field(object, "result", &DecodeReturnValue));
    STELE_ASSIGN_OR_RETURN(HttpClientTraces traces, TracesField(object));
    STELE_ASSIGN_OR_RETURN(std::optional<std::string> engine, EngineField(object));
    return Finished{std::move(result), std::move(traces), std::move(engine)};
  }
  if (tag == "history_event") {
    STELE_ASSIGN_OR_RETURN(HistoryEvent event, Field(object, "event", &DecodeHistoryEvent));
    return HistoryEventRequest{std::move(event)};
  }
  if (tag == "paused") {
    STELE_ASSIGN_OR_RETURN(std::string reason, Field(object, "reason", &ReadString));
    return Paused{std::move(reason)};
  }
  if (tag == "resumed") {
    STELE_ASSIGN_OR_RETURN(std::string reason, Field(object, "reason", &ReadString));
    return Resumed{std::move(reason)};
  }
  return UnknownVariant(
      object.path(), tag,
      "`created`, `locked`, `unlocked`, `temporarily_failed`, "
      "`temporarily_timed_out`, `finished`, `history_event`, `paused`, `resumed`");
}

}  // namespace

JsonResult<JoinSetRequest> DecodeJoinSetRequest(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  STELE_ASSIGN_OR_RETURN(std::string type, InternalTag(object, "type"));
  if (type == "delay_request") {
    STELE_ASSIGN_OR_RETURN(DelayId delay_id, Field(object, "delay_id", &ReadDelayId));
    STELE_ASSIGN_OR_RETURN(DateTime expires_at, Field(object, "expires_at", &ReadDateTime));
    STELE_ASSIGN_OR_RETURN(HistoryEventScheduleAt schedule_at,
                           Field(object, "schedule_at", &DecodeScheduleAt));
    return DelayRequest{std::move(delay_id), expires_at, schedule_at};
  }
  if (type == "child_execution_request") {
    STELE_ASSIGN_OR_RETURN(ExecutionIdDerived child,
                           Field(object, "child_execution_id", &ReadExecutionIdDerived));
    STELE_ASSIGN_OR_RETURN(FunctionFqn target_ffqn, Field(object, "target_ffqn", &ReadFfqn));
    STELE_ASSIGN_OR_RETURN(Params params, Field(object, "params", &ReadParams));
    return ChildExecutionRequest{std::move(child), std::move(target_ffqn), std::move(params)};
  }
  return UnknownVariant(object.PathOf("type"), type, "`delay_request`, `child_execution_request`");
}

JsonResult<HistoryEvent> DecodeHistoryEvent(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  STELE_ASSIGN_OR_RETURN(std::string type, InternalTag(object, "type"));
  return DecodeHistoryEventObject(object, type);
}

JsonResult<ExecutionRequest> DecodeExecutionRequest(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(auto tagged, ExternalTag(json, path));
  const auto& [tag, body] = tagged;
  // The tag is checked before the body so that an unknown tag is reported as
  // such rather than as a malformed body.
  static constexpr std::string_view kTags[] = {"created",
                                               "locked",
                                               "unlocked",
                                               "temporarily_failed",
                                               "temporarily_timed_out",
                                               "finished",
                                               "history_event",
                                               "paused",
                                               "resumed"};
  if (std::find(std::begin(kTags), std::end(kTags), tag) == std::end(kTags)) {
    return UnknownVariant(
        path, tag,
        "`created`, `locked`, `unlocked`, `temporarily_failed`, "
        "`temporarily_timed_out`, `finished`, `history_event`, `paused`, `resumed`");
  }
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(*body, ChildPath(path, tag)));
  return DecodeExecutionRequestBody(object, tag);
}

JsonResult<ExecutionEvent> DecodeExecutionEvent(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  STELE_ASSIGN_OR_RETURN(DateTime created_at, Field(object, "created_at", &ReadDateTime));
  STELE_ASSIGN_OR_RETURN(ExecutionRequest event, Field(object, "event", &DecodeExecutionRequest));
  STELE_ASSIGN_OR_RETURN(std::optional<Version> backtrace_id,
                         OptionalField(object, "backtrace_id", &ReadVersion));
  STELE_ASSIGN_OR_RETURN(Version version, Field(object, "version", &ReadVersion));
  return ExecutionEvent{created_at, std::move(event), backtrace_id, version};
}

JsonResult<JoinSetResponse> DecodeJoinSetResponse(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  STELE_ASSIGN_OR_RETURN(std::string type, InternalTag(object, "type"));
  if (type == "delay_finished") {
    STELE_ASSIGN_OR_RETURN(DelayId delay_id, Field(object, "delay_id", &ReadDelayId));
    STELE_ASSIGN_OR_RETURN(bool ok, Field(object, "result", &ReadUnitResult));
    return DelayFinished{std::move(delay_id), ok};
  }
  if (type == "child_execution_finished") {
    STELE_ASSIGN_OR_RETURN(ExecutionIdDerived child,
                           Field(object, "child_execution_id", &ReadExecutionIdDerived));
    STELE_ASSIGN_OR_RETURN(Version finished_version,
                           Field(object, "finished_version", &ReadVersion));
    STELE_ASSIGN_OR_RETURN(SupportedFunctionReturnValue result,
                           Field(object, "result", &DecodeReturnValue));
    return ChildExecutionFinished{std::move(child), finished_version, std::move(result)};
  }
  if (type == "message_received") {
    STELE_ASSIGN_OR_RETURN(std::string message_id, Field(object, "message_id", &ReadString));
    const Json* body = object.Find("body");
    if (body == nullptr) return Error(object.PathOf("body"), "missing field");
    return MessageReceived{std::move(message_id), *body};
  }
  return UnknownVariant(object.PathOf("type"), type,
                        "`delay_finished`, `child_execution_finished`, `message_received`");
}

JsonResult<JoinSetResponseEvent> DecodeJoinSetResponseEvent(const Json& json,
                                                            const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  STELE_ASSIGN_OR_RETURN(JoinSetId join_set_id, Field(object, "join_set_id", &ReadJoinSetId));
  STELE_ASSIGN_OR_RETURN(JoinSetResponse event, Field(object, "event", &DecodeJoinSetResponse));
  return JoinSetResponseEvent{std::move(join_set_id), std::move(event)};
}

JsonResult<JoinSetResponseEventOuter> DecodeJoinSetResponseEventOuter(const Json& json,
                                                                      const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  STELE_ASSIGN_OR_RETURN(DateTime created_at, Field(object, "created_at", &ReadDateTime));
  STELE_ASSIGN_OR_RETURN(JoinSetResponseEvent event,
                         Field(object, "event", &DecodeJoinSetResponseEvent));
  return JoinSetResponseEventOuter{created_at, std::move(event)};
}

JsonResult<PendingState> DecodePendingStateValue(const ObjectReader& object,
                                                 const std::string& status,
                                                 const InputContentDigest& digest);

JsonResult<PendingState> DecodePendingState(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  STELE_ASSIGN_OR_RETURN(std::string status, InternalTag(object, "status"));
  if (status != "PendingAt" && status != "Locked" && status != "BlockedByJoinSet" &&
      status != "Finished") {
    return UnknownVariant(object.PathOf("status"), status,
                          "`PendingAt`, `Locked`, `BlockedByJoinSet`, `Finished`");
  }
  STELE_ASSIGN_OR_RETURN(InputContentDigest digest,
                         Field(object, "component_id_input_digest", &ReadDigest));
  // The flags are written only when set (core/pending_state.h).
  STELE_ASSIGN_OR_RETURN(std::optional<bool> paused, OptionalField(object, "paused", &ReadBool));
  STELE_ASSIGN_OR_RETURN(std::optional<bool> cancelling,
                         OptionalField(object, "cancelling", &ReadBool));
  STELE_ASSIGN_OR_RETURN(PendingState state, DecodePendingStateValue(object, status, digest));
  state.paused = paused.value_or(false);
  state.cancelling = cancelling.value_or(false);
  return state;
}

JsonResult<PendingState> DecodePendingStateValue(const ObjectReader& object,
                                                 const std::string& status,
                                                 const InputContentDigest& digest) {
  if (status == "PendingAt") {
    STELE_ASSIGN_OR_RETURN(DateTime scheduled_at, Field(object, "scheduled_at", &ReadDateTime));
    STELE_ASSIGN_OR_RETURN(std::optional<LockedBy> last_lock,
                           OptionalField(object, "last_lock", &DecodeLockedBy));
    return PendingState{PendingStatePendingAt{scheduled_at, last_lock, digest}};
  }
  if (status == "Locked") {
    STELE_ASSIGN_OR_RETURN(LockedBy locked_by, Field(object, "locked_by", &DecodeLockedBy));
    STELE_ASSIGN_OR_RETURN(DateTime lock_expires_at,
                           Field(object, "lock_expires_at", &ReadDateTime));
    return PendingState{PendingStateLocked{locked_by, lock_expires_at, digest}};
  }
  if (status == "BlockedByJoinSet") {
    STELE_ASSIGN_OR_RETURN(JoinSetId join_set_id, Field(object, "join_set_id", &ReadJoinSetId));
    STELE_ASSIGN_OR_RETURN(DateTime lock_expires_at,
                           Field(object, "lock_expires_at", &ReadDateTime));
    STELE_ASSIGN_OR_RETURN(bool closing, Field(object, "closing", &ReadBool));
    return PendingState{
        PendingStateBlockedByJoinSet{std::move(join_set_id), lock_expires_at, closing, digest}};
  }
  STELE_ASSIGN_OR_RETURN(uint32_t version, Field(object, "version", &ReadU32));
  STELE_ASSIGN_OR_RETURN(DateTime finished_at, Field(object, "finished_at", &ReadDateTime));
  STELE_ASSIGN_OR_RETURN(PendingStateFinishedResultKind result_kind,
                         Field(object, "result_kind", &DecodeResultKind));
  return PendingState{PendingStateFinished{version, finished_at, result_kind, digest}};
}

}  // namespace json_internal

using json_internal::DateTimeJson;
using json_internal::OptionalJson;

Json ToJson(const JoinSetRequest& value) {
  Json out = Json::object();
  std::visit(json_internal::Overloaded{
                 [&](const DelayRequest& r) {
                   out["type"] = "delay_request";
                   out["delay_id"] = r.delay_id.ToString();
                   out["expires_at"] = DateTimeJson(r.expires_at);
                   out["schedule_at"] = ToJson(r.schedule_at);
                 },
                 [&](const ChildExecutionRequest& r) {
                   out["type"] = "child_execution_request";
                   out["child_execution_id"] = r.child_execution_id.ToString();
                   out["target_ffqn"] = r.target_ffqn.ToString();
                   out["params"] = r.params;
                 },
             },
             value);
  return out;
}

Json ToJson(const HistoryEvent& value) {
  const auto ffqn_json = [](const FunctionFqn& ffqn) { return ffqn.ToString(); };
  Json out = Json::object();
  out["type"] = std::string(HistoryEventTypeTag(value));
  std::visit(
      json_internal::Overloaded{
          [&](const HistoryPersist& e) {
            Json bytes = Json::array();
            for (uint8_t byte : e.value) bytes.push_back(byte);
            out["value"] = std::move(bytes);
            out["kind"] = ToJson(e.kind);
          },
          [&](const HistoryJoinSetCreate& e) { out["join_set_id"] = e.join_set_id.ToString(); },
          [&](const HistoryJoinSetRequest& e) {
            out["join_set_id"] = e.join_set_id.ToString();
            out["request"] = ToJson(e.request);
          },
          [&](const HistoryJoinNext& e) {
            out["join_set_id"] = e.join_set_id.ToString();
            out["run_expires_at"] = DateTimeJson(e.run_expires_at);
            out["requested_ffqn"] = OptionalJson(e.requested_ffqn, ffqn_json);
            out["closing"] = e.closing;
          },
          [&](const HistoryJoinNextTooMany& e) {
            out["join_set_id"] = e.join_set_id.ToString();
            out["requested_ffqn"] = OptionalJson(e.requested_ffqn, ffqn_json);
          },
          [&](const HistorySchedule& e) {
            out["execution_id"] = e.execution_id.ToString();
            out["schedule_at"] = ToJson(e.schedule_at);
          },
          [&](const HistoryStub& e) {
            out["target_execution_id"] = e.target_execution_id.ToString();
            out["result"] = ToJson(e.result);
            out["persist_result"] = json_internal::UnitResultJson(e.persist_result_ok);
          },
          [&](const HistoryStep& e) {
            out["name"] = e.name;
            out["result"] = ToJson(e.result);
          },
          [&](const HistoryJoinNextTry& e) { out["join_set_id"] = e.join_set_id.ToString(); },
          [&](const HistoryPublish& e) {
            out["key"] = e.key;
            out["value"] = e.value;
          },
          [&](const HistorySendMessage& e) {
            out["target_execution_id"] = e.target_execution_id.ToString();
            out["channel"] = e.channel;
            out["message_id"] = e.message_id;
            out["body"] = e.body;
            out["outcome"] = std::string(SendOutcomeName(e.outcome));
          },
          [&](const HistoryCancelRequest& e) {
            out["grace_expires_at"] = DateTimeJson(e.grace_expires_at);
            out["terminate"] = e.terminate;
            out["reason"] = e.reason;
            if (e.timed_out)
              out["timed_out"] = true;  // omitted otherwise: old rows read back as stored
          },
      },
      value);
  return out;
}

Json ToJson(const ExecutionRequest& value) {
  using json_internal::AddAttempt;
  using json_internal::AddEngine;
  using json_internal::PolicyJson;
  using json_internal::TracesJson;
  Json body = Json::object();
  std::visit(json_internal::Overloaded{
                 [&](const Created& e) {
                   body["ffqn"] = e.ffqn.ToString();
                   body["params"] = e.params;
                   body["parent"] = OptionalJson(e.parent, [](const auto& parent) {
                     return Json::array({parent.first.ToString(), parent.second.ToString()});
                   });
                   body["scheduled_at"] = DateTimeJson(e.scheduled_at);
                   body["component_id"] = ToJson(e.component_id);
                   body["metadata"] = ToJson(e.metadata);
                   body["scheduled_by"] = OptionalJson(
                       e.scheduled_by, [](const ExecutionId& id) { return id.ToString(); });
                   // Omitted when empty, so an old event reads back as stored.
                   if (!e.policy.IsEmpty()) body["policy"] = PolicyJson(e.policy);
                 },
                 [&](const Locked& e) {
                   body["component_id"] = ToJson(e.component_id);
                   body["executor_id"] = e.executor_id.ToString();
                   body["run_id"] = e.run_id.ToString();
                   body["lock_expires_at"] = DateTimeJson(e.lock_expires_at);
                   body["retry_config"] = ToJson(e.retry_config);
                 },
                 [&](const Unlocked& e) {
                   body["backoff_expires_at"] = DateTimeJson(e.backoff_expires_at);
                   body["reason"] = e.reason;
                   AddEngine(body, e.engine);
                 },
                 [&](const TemporarilyFailed& e) {
                   body["backoff_expires_at"] = DateTimeJson(e.backoff_expires_at);
                   body["reason"] = e.reason;
                   body["detail"] = OptionalJson(e.detail, [](const std::string& d) { return d; });
                   body["http_client_traces"] = TracesJson(e.http_client_traces);
                   AddEngine(body, e.engine);
                   AddAttempt(body, e.attempt);
                 },
                 [&](const TemporarilyTimedOut& e) {
                   body["backoff_expires_at"] = DateTimeJson(e.backoff_expires_at);
                   // Omitted when unset, so an old event reads back as stored.
                   if (e.reason) body["reason"] = *e.reason;
                   body["http_client_traces"] = TracesJson(e.http_client_traces);
                   AddEngine(body, e.engine);
                   AddAttempt(body, e.attempt);
                 },
                 [&](const Finished& e) {
                   body["result"] = ToJson(e.result);
                   body["http_client_traces"] = TracesJson(e.http_client_traces);
                   AddEngine(body, e.engine);
                 },
                 [&](const HistoryEventRequest& e) { body["event"] = ToJson(e.event); },
                 [&](const Paused& e) { body["reason"] = e.reason; },
                 [&](const Resumed& e) { body["reason"] = e.reason; },
             },
             value);
  Json out = Json::object();
  out[std::string(ExecutionRequestVariantTag(value))] = std::move(body);
  return out;
}

Json ToJson(const ExecutionEvent& value) {
  Json out = Json::object();
  out["created_at"] = DateTimeJson(value.created_at);
  out["event"] = ToJson(value.event);
  // Omitted rather than null, as Obelisk's skip_serializing_if.
  if (value.backtrace_id) out["backtrace_id"] = value.backtrace_id->value();
  out["version"] = value.version.value();
  return out;
}

Json ToJson(const JoinSetResponse& value) {
  Json out = Json::object();
  std::visit(json_internal::Overloaded{
                 [&](const DelayFinished& r) {
                   out["type"] = "delay_finished";
                   out["delay_id"] = r.delay_id.ToString();
                   out["result"] = json_internal::UnitResultJson(r.ok);
                 },
                 [&](const ChildExecutionFinished& r) {
                   out["type"] = "child_execution_finished";
                   out["child_execution_id"] = r.child_execution_id.ToString();
                   out["finished_version"] = r.finished_version.value();
                   out["result"] = ToJson(r.result);
                 },
                 [&](const MessageReceived& r) {
                   out["type"] = "message_received";
                   out["message_id"] = r.message_id;
                   out["body"] = r.body;
                 },
             },
             value);
  return out;
}

Json ToJson(const JoinSetResponseEvent& value) {
  Json out = Json::object();
  out["join_set_id"] = value.join_set_id.ToString();
  out["event"] = ToJson(value.event);
  return out;
}

Json ToJson(const JoinSetResponseEventOuter& value) {
  Json out = Json::object();
  out["created_at"] = DateTimeJson(value.created_at);
  out["event"] = ToJson(value.event);
  return out;
}

Json ToJson(const PendingState& value) {
  Json out = Json::object();
  out["status"] = std::string(value.StateName());
  std::visit(json_internal::Overloaded{
                 [&](const PendingStatePendingAt& s) {
                   out["scheduled_at"] = DateTimeJson(s.scheduled_at);
                   out["last_lock"] = OptionalJson(s.last_lock, &json_internal::LockedByJson);
                 },
                 [&](const PendingStateLocked& s) {
                   out["locked_by"] = json_internal::LockedByJson(s.locked_by);
                   out["lock_expires_at"] = DateTimeJson(s.lock_expires_at);
                 },
                 [&](const PendingStateBlockedByJoinSet& s) {
                   out["join_set_id"] = s.join_set_id.ToString();
                   out["lock_expires_at"] = DateTimeJson(s.lock_expires_at);
                   out["closing"] = s.closing;
                 },
                 [&](const PendingStateFinished& s) {
                   out["version"] = s.version;
                   out["finished_at"] = DateTimeJson(s.finished_at);
                   out["result_kind"] = ToJson(s.result_kind);
                 },
             },
             value.value);
  out["component_id_input_digest"] = value.ComponentIdInputDigest().ToString();
  if (value.paused) out["paused"] = true;
  if (value.cancelling) out["cancelling"] = true;
  return out;
}

}  // namespace stele::core
