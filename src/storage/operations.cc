#include "storage/operations.h"

#include "base/log.h"

namespace stele::storage {

Result<void, DbErrorWrite> StubExecution(DbConnection& db,
                                         const core::ExecutionIdDerived& execution_id,
                                         const ExecutionId& parent_execution_id,
                                         const core::JoinSetId& join_set_id, DateTime created_at,
                                         const core::SupportedFunctionReturnValue& return_value) {
  // A stub execution has only its Created event, so Finished is version 1.
  const Version stub_finished_version(1);
  auto write_attempt = db.AppendBatchRespondToParent(
      AppendEventsToExecution{
          execution_id,
          stub_finished_version,
          {AppendRequest{created_at, core::Finished{return_value, std::nullopt}}}},
      AppendResponseToExecution{parent_execution_id, created_at, join_set_id, execution_id,
                                stub_finished_version, return_value},
      created_at);
  if (write_attempt) return {};
  // No such child, or not requested by that parent in that join set.
  if (write_attempt.error().IsNotFound()) return Unexpected(std::move(write_attempt).error());
  STELE_LOG(kDebug, "stub write attempt failed: " << write_attempt.error().ToString());
  // The write may have lost to an earlier identical stub: compare values.
  auto found = db.GetExecutionEvent(execution_id, stub_finished_version);
  if (!found) return Unexpected(DbErrorWrite(found.error()));
  if (const auto* finished = std::get_if<core::Finished>(&found->event)) {
    if (finished->result == return_value) return {};
    return Unexpected(DbErrorWrite(DbErrorWriteNonRetriable::Conflict()));
  }
  return Unexpected(DbErrorWrite(
      DbErrorWriteNonRetriable::IllegalState("unexpected execution event at stubbed execution")));
}

Result<CancelOutcome, DbErrorWrite> CancelDelay(DbConnection& db, const core::DelayId& delay_id,
                                                DateTime created_at) {
  auto [parent_execution_id, join_set_id] = delay_id.SplitToParts();
  STELE_ASSIGN_OR_RETURN(
      AppendDelayResponseOutcome outcome,
      db.AppendDelayResponse(created_at, parent_execution_id, join_set_id, delay_id,
                             /*ok=*/false));
  switch (outcome) {
    case AppendDelayResponseOutcome::kSuccess:
    case AppendDelayResponseOutcome::kAlreadyCancelled:
      return CancelOutcome::kCancelled;
    case AppendDelayResponseOutcome::kAlreadyFinished:
      return CancelOutcome::kAlreadyFinished;
  }
  return CancelOutcome::kCancelled;
}

namespace {

enum class AppendAtEndOutcome { kWritten, kSkipped, kAlreadyFinished };

// Appends what `make` returns at the end of the log of `execution_id`,
// fenced at the version last read; a racing writer makes it re-read and
// retry, up to 5 more times. `make` sees the state read after the last
// event (so a state that no longer holds fails the fence) and returns
// nullopt to write nothing.
template <class Make>
Result<AppendAtEndOutcome, DbErrorWrite> AppendAtEnd(DbConnection& db,
                                                     const ExecutionId& execution_id,
                                                     DateTime created_at, std::string_view what,
                                                     const Make& make) {
  int retries = 5;
  while (true) {
    auto last = db.GetLastExecutionEvent(execution_id);
    if (!last) return Unexpected(DbErrorWrite(last.error()));
    if (std::holds_alternative<core::Finished>(last->event)) {
      return AppendAtEndOutcome::kAlreadyFinished;
    }
    auto state = db.GetPendingState(execution_id);
    if (!state) return Unexpected(DbErrorWrite(state.error()));
    std::optional<core::ExecutionRequest> event = make(*state);
    if (!event) return AppendAtEndOutcome::kSkipped;
    auto appended = db.Append(execution_id, last->version.Increment(),
                              AppendRequest{created_at, std::move(*event)});
    if (appended) return AppendAtEndOutcome::kWritten;
    const bool raced =
        appended.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kVersionConflict) ||
        appended.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kIllegalState);
    if (!raced || retries-- == 0) return Unexpected(std::move(appended).error());
    STELE_LOG(kDebug, what << " of " << execution_id.ToString()
                           << " raced a writer, retrying: " << appended.error().ToString());
  }
}

}  // namespace

Result<CancelOutcome, DbErrorWrite> AppendCancelRequest(DbConnection& db,
                                                        const ExecutionId& execution_id,
                                                        const core::HistoryCancelRequest& request,
                                                        DateTime created_at) {
  STELE_ASSIGN_OR_RETURN(
      AppendAtEndOutcome outcome,
      AppendAtEnd(db, execution_id, created_at, "cancel request", [&](const core::PendingState&) {
        return std::optional<core::ExecutionRequest>(core::HistoryEventRequest{request});
      }));
  return outcome == AppendAtEndOutcome::kAlreadyFinished ? CancelOutcome::kAlreadyFinished
                                                         : CancelOutcome::kCancelled;
}

Result<PauseOutcome, DbErrorWrite> AppendPauseChange(DbConnection& db,
                                                     const ExecutionId& execution_id, bool pause,
                                                     const std::string& reason,
                                                     DateTime created_at) {
  STELE_ASSIGN_OR_RETURN(
      AppendAtEndOutcome outcome,
      AppendAtEnd(db, execution_id, created_at, pause ? "pause" : "resume",
                  [&](const core::PendingState& state) -> std::optional<core::ExecutionRequest> {
                    if (state.paused == pause) return std::nullopt;
                    if (pause) return core::Paused{reason};
                    return core::Resumed{reason};
                  }));
  switch (outcome) {
    case AppendAtEndOutcome::kWritten:
      return PauseOutcome::kWritten;
    case AppendAtEndOutcome::kSkipped:
      return PauseOutcome::kUnchanged;
    case AppendAtEndOutcome::kAlreadyFinished:
      return PauseOutcome::kAlreadyFinished;
  }
  return PauseOutcome::kUnchanged;
}

}  // namespace stele::storage
