#include "storage/postgres/codec.h"

#include <utility>
#include <variant>

#include "core/backtrace.h"
#include "core/json_codec.h"
#include "core/return_value.h"

namespace stele::storage::postgres::internal {

namespace {

DbErrorGeneric Corrupt(std::string_view table, std::string_view execution_id,
                       std::string_view what) {
  return DbErrorGeneric::Uncategorized("corrupt " + std::string(table) + " row of `" +
                                       std::string(execution_id) + "`: " + std::string(what));
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string DigestParam(const core::InputContentDigest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\\x";
  for (uint8_t byte : digest.bytes()) {
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 0xf]);
  }
  return out;
}

Result<core::InputContentDigest, DbErrorGeneric> DecodeDigest(std::string_view text,
                                                              std::string_view execution_id) {
  core::InputContentDigest::Bytes bytes{};
  if (text.size() != 2 + 2 * bytes.size() || text.substr(0, 2) != "\\x") {
    return Unexpected(Corrupt("t_state", execution_id, "malformed component digest"));
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int hi = HexValue(text[2 + 2 * i]);
    const int lo = HexValue(text[3 + 2 * i]);
    if (hi < 0 || lo < 0) {
      return Unexpected(Corrupt("t_state", execution_id, "malformed component digest"));
    }
    bytes[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return core::InputContentDigest(bytes);
}

Result<ExecutionState, DbErrorGeneric> DecodeStateRow(const PgResult& res, int row, int c) {
  const std::string execution_id = res.Str(row, c + 0);
  const std::string state = res.Str(row, c + 1);
  const DateTime at = TimeFromColumn(res.Int(row, c + 2));
  STELE_ASSIGN_OR_RETURN(core::InputContentDigest digest,
                         DecodeDigest(res.Text(row, c + 3), execution_id));
  const int64_t version = res.Int(row, c + 4);
  const std::optional<int64_t> last_lock_version = res.OptInt(row, c + 5);
  const std::optional<std::string> executor_id = res.OptStr(row, c + 6);
  const std::optional<std::string> run_id = res.OptStr(row, c + 7);
  const std::optional<std::string> join_set_id = res.OptStr(row, c + 8);
  const bool has_closing = !res.IsNull(row, c + 9);
  const bool closing = has_closing && res.Bool(row, c + 9);
  const std::optional<std::string> result_kind = res.OptStr(row, c + 10);
  const int64_t intermittent = res.Int(row, c + 11);
  const std::optional<int64_t> max_retries = res.OptInt(row, c + 13);
  const std::optional<std::string> backoff = res.OptStr(row, c + 14);

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
  if (state == "pending_at") {
    STELE_TRY(require(!last_lock_version && !join_set_id && !has_closing && !result_kind,
                      "columns of another state"));
    pending_state.value = core::PendingStatePendingAt{at, last_lock, digest};
  } else if (state == "locked") {
    STELE_TRY(
        require(last_lock_version && last_lock && !join_set_id && !has_closing && !result_kind,
                "missing lock columns"));
    pending_state.value = core::PendingStateLocked{*last_lock, at, digest};
  } else if (state == "blocked_by_join_set") {
    STELE_TRY(require(!last_lock_version && join_set_id && has_closing && !result_kind,
                      "missing join set columns"));
    STELE_ASSIGN_OR_RETURN(auto join_set,
                           ParseColumn<core::JoinSetId>(*join_set_id, "join_set_id"));
    pending_state.value =
        core::PendingStateBlockedByJoinSet{std::move(join_set), at, closing, digest};
  } else if (state == "finished") {
    STELE_TRY(
        require(!last_lock_version && !last_lock && !join_set_id && !has_closing && result_kind,
                "missing result_kind"));
    STELE_ASSIGN_OR_RETURN(auto kind, DecodeJson<core::PendingStateFinishedResultKind>(
                                          *result_kind, "t_state.result_kind"));
    pending_state.value =
        core::PendingStateFinished{static_cast<Version::Type>(version), at, kind, digest};
  } else {
    return Unexpected(Corrupt("t_state", execution_id, "unknown state `" + state + "`"));
  }
  if (!pending_state.IsFinished()) {
    pending_state.paused = res.Bool(row, c + 19);
    pending_state.cancelling = res.Bool(row, c + 20);
  }
  ExecutionState decoded{
      .execution_id = execution_id,
      .pending_state = std::move(pending_state),
      .corresponding_version = Version(static_cast<Version::Type>(version)),
      .ffqn = res.Str(row, c + 12),
      .digest = digest,
      .intermittent_event_count = static_cast<uint32_t>(intermittent),
      .last_lock_version = std::nullopt,
      .last_lock = last_lock,
      .max_retries = std::nullopt,
      .retry_exp_backoff = std::nullopt,
      .created_at = TimeFromColumn(res.Int(row, c + 15)),
      .first_scheduled_at = TimeFromColumn(res.Int(row, c + 16)),
      .response_count = 0,
      .updated_at = TimeFromColumn(res.Int(row, c + 18)),
  };
  const int64_t response_count = res.Int(row, c + 17);
  if (response_count < 0 || response_count > int64_t{UINT32_MAX}) {
    return Unexpected(Corrupt("t_state", execution_id, "response_count out of range"));
  }
  decoded.response_count = static_cast<uint64_t>(response_count);
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

Result<ResponseWithCursor, DbErrorGeneric> DecodeResponseRow(const PgResult& res, int row,
                                                             std::string_view execution_id, int c) {
  const int64_t idx = res.Int(row, c + 0);
  if (idx < 0 || idx > int64_t{UINT32_MAX}) {
    return Unexpected(Corrupt("t_join_set_response", execution_id, "cursor out of range"));
  }
  STELE_ASSIGN_OR_RETURN(
      auto join_set_id, ParseColumn<core::JoinSetId>(res.Text(row, c + 2), "response join_set_id"));
  std::optional<core::JoinSetResponse> event;
  if (auto delay_id = res.OptStr(row, c + 3)) {
    STELE_ASSIGN_OR_RETURN(auto delay, ParseColumn<core::DelayId>(*delay_id, "delay_id"));
    event = core::DelayFinished{std::move(delay), res.Bool(row, c + 4)};
  } else if (auto message_id = res.OptStr(row, c + 9)) {
    STELE_ASSIGN_OR_RETURN(core::Json body,
                           DecodeRawJson(res.Str(row, c + 10), "t_join_set_response.message_body"));
    event = core::MessageReceived{std::move(*message_id), std::move(body)};
  } else {
    const std::string child_text = res.Str(row, c + 5);
    STELE_ASSIGN_OR_RETURN(auto child,
                           ParseColumn<core::ExecutionIdDerived>(child_text, "child_execution_id"));
    const int64_t finished_version = res.Int(row, c + 6);
    if (finished_version < 0 || finished_version > int64_t{UINT32_MAX}) {
      return Unexpected(
          Corrupt("t_join_set_response", execution_id, "finished_version out of range"));
    }
    core::SupportedFunctionReturnValue result;
    if (auto inline_result = res.OptStr(row, c + 7)) {
      STELE_ASSIGN_OR_RETURN(result, DecodeJson<core::SupportedFunctionReturnValue>(
                                         *inline_result, "t_join_set_response.child_result"));
    } else if (auto finished_json = res.OptStr(row, c + 8)) {
      STELE_ASSIGN_OR_RETURN(auto finished_event,
                             DecodeEvent(*finished_json, child_text, finished_version));
      const auto* finished = std::get_if<core::Finished>(&finished_event);
      if (finished == nullptr) {
        return Unexpected(
            Corrupt("t_join_set_response", execution_id, "joined child row is not Finished"));
      }
      result = finished->result;
    } else {
      return Unexpected(Corrupt("t_join_set_response", execution_id,
                                "child result of `" + child_text + "` is missing"));
    }
    event = core::ChildExecutionFinished{
        std::move(child), Version(static_cast<Version::Type>(finished_version)), std::move(result)};
  }
  return ResponseWithCursor{
      core::JoinSetResponseEventOuter{
          TimeFromColumn(res.Int(row, c + 1)),
          core::JoinSetResponseEvent{std::move(join_set_id), std::move(*event)}},
      static_cast<uint32_t>(idx)};
}

}  // namespace stele::storage::postgres::internal
