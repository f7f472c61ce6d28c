#include "storage/sqlite/row_codec.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "core/backtrace.h"
#include "core/json_codec.h"
#include "core/return_value.h"

namespace stele::storage::sqlite::internal {

namespace {

DbErrorGeneric Corrupt(std::string_view table, std::string_view execution_id,
                       std::string_view what) {
  return DbErrorGeneric::Uncategorized("corrupt " + std::string(table) + " row of `" +
                                       std::string(execution_id) + "`: " + std::string(what));
}

}  // namespace

Result<core::InputContentDigest, DbErrorGeneric> DecodeDigest(const std::vector<uint8_t>& blob,
                                                              std::string_view execution_id) {
  core::InputContentDigest::Bytes bytes{};
  if (blob.size() != bytes.size()) {
    return Unexpected(Corrupt("t_state", execution_id,
                              "component digest of " + std::to_string(blob.size()) + " bytes"));
  }
  std::copy(blob.begin(), blob.end(), bytes.begin());
  return core::InputContentDigest(bytes);
}

Result<ExecutionState, DbErrorGeneric> DecodeStateRow(const Statement& stmt) {
  const std::string execution_id = stmt.Text(0);
  const std::string state = stmt.Text(1);
  const DateTime at = TimeFromColumn(stmt.Int64(2));
  STELE_ASSIGN_OR_RETURN(core::InputContentDigest digest, DecodeDigest(stmt.Blob(3), execution_id));
  const int64_t version = stmt.Int64(4);
  const std::optional<int64_t> last_lock_version = stmt.OptionalInt64(5);
  const std::optional<std::string> executor_id = stmt.OptionalText(6);
  const std::optional<std::string> run_id = stmt.OptionalText(7);
  const std::optional<std::string> join_set_id = stmt.OptionalText(8);
  const std::optional<int64_t> join_set_closing = stmt.OptionalInt64(9);
  const std::optional<std::string> result_kind = stmt.OptionalText(10);
  const int64_t intermittent = stmt.Int64(11);
  const std::optional<int64_t> max_retries = stmt.OptionalInt64(13);
  const std::optional<std::string> backoff = stmt.OptionalText(14);

  if (version < 0 || version > int64_t{UINT32_MAX} || intermittent < 0 ||
      intermittent > int64_t{UINT32_MAX}) {
    return Unexpected(Corrupt("t_state", execution_id, "version or counter out of range"));
  }
  if (executor_id.has_value() != run_id.has_value()) {
    return Unexpected(Corrupt("t_state", execution_id, "executor_id and run_id disagree"));
  }
  std::optional<core::LockedBy> last_lock;
  if (executor_id) {
    STELE_ASSIGN_OR_RETURN(auto executor,
                           ParseColumn<core::ExecutorId>(*executor_id, "executor_id"));
    STELE_ASSIGN_OR_RETURN(auto run, ParseColumn<core::RunId>(*run_id, "run_id"));
    last_lock = core::LockedBy{executor, run};
  }

  core::PendingState pending_state;
  auto require = [&](bool ok, std::string_view what) -> Result<void, DbErrorGeneric> {
    if (ok) return {};
    return Unexpected(
        Corrupt("t_state", execution_id, "state `" + state + "` with " + std::string(what)));
  };
  if (state == kStatePendingAt) {
    STELE_TRY(require(!last_lock_version && !join_set_id && !join_set_closing && !result_kind,
                      "columns of another state"));
    pending_state.value = core::PendingStatePendingAt{at, last_lock, digest};
  } else if (state == kStateLocked) {
    STELE_TRY(
        require(last_lock_version && last_lock && !join_set_id && !join_set_closing && !result_kind,
                "missing lock columns"));
    pending_state.value = core::PendingStateLocked{*last_lock, at, digest};
  } else if (state == kStateBlocked) {
    STELE_TRY(require(!last_lock_version && join_set_id && join_set_closing && !result_kind,
                      "missing join set columns"));
    STELE_ASSIGN_OR_RETURN(auto join_set,
                           ParseColumn<core::JoinSetId>(*join_set_id, "join_set_id"));
    pending_state.value =
        core::PendingStateBlockedByJoinSet{std::move(join_set), at, *join_set_closing != 0, digest};
  } else if (state == kStateFinished) {
    STELE_TRY(require(
        !last_lock_version && !last_lock && !join_set_id && !join_set_closing && result_kind,
        "missing result_kind"));
    STELE_ASSIGN_OR_RETURN(auto kind, DecodeJson<core::PendingStateFinishedResultKind>(
                                          *result_kind, "t_state.result_kind"));
    pending_state.value =
        core::PendingStateFinished{static_cast<Version::Type>(version), at, kind, digest};
  } else {
    return Unexpected(Corrupt("t_state", execution_id, "unknown state `" + state + "`"));
  }

  if (!pending_state.IsFinished()) {
    pending_state.paused = stmt.Int64(17) != 0;
    pending_state.cancelling = stmt.Int64(18) != 0;
  }
  ExecutionState decoded{
      .execution_id = execution_id,
      .pending_state = std::move(pending_state),
      .corresponding_version = Version(static_cast<Version::Type>(version)),
      .ffqn = stmt.Text(12),
      .digest = digest,
      .intermittent_event_count = static_cast<uint32_t>(intermittent),
      .last_lock_version = std::nullopt,
      .last_lock = last_lock,
      .max_retries = std::nullopt,
      .retry_exp_backoff = std::nullopt,
      .created_at = TimeFromColumn(stmt.Int64(15)),
      .first_scheduled_at = TimeFromColumn(stmt.Int64(16)),
  };
  if (last_lock_version) {
    if (*last_lock_version < 0 || *last_lock_version > int64_t{UINT32_MAX}) {
      return Unexpected(Corrupt("t_state", execution_id, "last_lock_version out of range"));
    }
    decoded.last_lock_version = Version(static_cast<Version::Type>(*last_lock_version));
  }
  if (max_retries) {
    if (*max_retries < 0 || *max_retries > int64_t{UINT32_MAX}) {
      return Unexpected(Corrupt("t_state", execution_id, "max_retries out of range"));
    }
    decoded.max_retries = static_cast<uint32_t>(*max_retries);
  }
  if (backoff) {
    STELE_ASSIGN_OR_RETURN(decoded.retry_exp_backoff,
                           DecodeJson<core::Duration>(*backoff, "t_state.retry_exp_backoff"));
  }
  return decoded;
}

Result<ResponseWithCursor, DbErrorGeneric> DecodeResponseRow(const Statement& stmt,
                                                             std::string_view execution_id) {
  const int64_t idx = stmt.Int64(0);
  if (idx < 0 || idx > int64_t{UINT32_MAX}) {
    return Unexpected(Corrupt("t_join_set_response", execution_id, "cursor out of range"));
  }
  STELE_ASSIGN_OR_RETURN(auto join_set_id,
                         ParseColumn<core::JoinSetId>(stmt.Text(2), "response join_set_id"));
  std::optional<core::JoinSetResponse> event;
  if (auto delay_id = stmt.OptionalText(3)) {
    STELE_ASSIGN_OR_RETURN(auto delay, ParseColumn<core::DelayId>(*delay_id, "delay_id"));
    event = core::DelayFinished{std::move(delay), stmt.Int64(4) != 0};
  } else if (auto message_id = stmt.OptionalText(9)) {
    STELE_ASSIGN_OR_RETURN(core::Json body,
                           DecodeRawJson(stmt.Text(10), "t_join_set_response.message_body"));
    event = core::MessageReceived{std::move(*message_id), std::move(body)};
  } else {
    STELE_ASSIGN_OR_RETURN(
        auto child, ParseColumn<core::ExecutionIdDerived>(stmt.Text(5), "child_execution_id"));
    const int64_t finished_version = stmt.Int64(6);
    if (finished_version < 0 || finished_version > int64_t{UINT32_MAX}) {
      return Unexpected(
          Corrupt("t_join_set_response", execution_id, "finished_version out of range"));
    }
    core::SupportedFunctionReturnValue result;
    if (auto inline_result = stmt.OptionalText(7)) {
      STELE_ASSIGN_OR_RETURN(result, DecodeJson<core::SupportedFunctionReturnValue>(
                                         *inline_result, "t_join_set_response.child_result"));
    } else if (auto finished_json = stmt.OptionalText(8)) {
      STELE_ASSIGN_OR_RETURN(auto finished_event,
                             DecodeEvent(*finished_json, stmt.Text(5), finished_version));
      const auto* finished = std::get_if<core::Finished>(&finished_event);
      if (finished == nullptr) {
        return Unexpected(
            Corrupt("t_join_set_response", execution_id, "joined child row is not Finished"));
      }
      result = finished->result;
    } else {
      return Unexpected(Corrupt("t_join_set_response", execution_id,
                                "child result of `" + stmt.Text(5) + "` is missing"));
    }
    event = core::ChildExecutionFinished{
        std::move(child), Version(static_cast<Version::Type>(finished_version)), std::move(result)};
  }
  return ResponseWithCursor{
      core::JoinSetResponseEventOuter{
          TimeFromColumn(stmt.Int64(1)),
          core::JoinSetResponseEvent{std::move(join_set_id), std::move(*event)}},
      static_cast<uint32_t>(idx)};
}

}  // namespace stele::storage::sqlite::internal
