#include "storage/db_executor.h"

#include "base/log.h"

namespace stele::storage {

Result<Version, DbErrorWrite> DbExecutor::AppendBatchRespondToParent(
    const AppendEventsToExecution& events, const AppendResponseToExecution& response,
    DateTime current_time) {
  STELE_TRY(WriteStep(StepWrite{current_time,
                                events.execution_id,
                                events.version,
                                {},
                                {},
                                {},
                                {ChildOutcome{events, response, std::nullopt}}}));
  return Version(events.version.value() + events.batch.size());
}

Result<CancelOutcome, DbErrorWrite> DbExecutor::CancelActivity(const ExecutionId& execution_id,
                                                               DateTime cancelled_at) {
  auto last_event = GetLastExecutionEvent(execution_id);
  if (!last_event) return Unexpected(DbErrorWrite(last_event.error()));
  if (const auto* finished = std::get_if<core::Finished>(&last_event->event)) {
    const auto* failure = std::get_if<core::FinishedExecutionError>(&finished->result);
    if (failure && failure->kind == core::ExecutionFailureKind::kCancelled) {
      return CancelOutcome::kCancelled;
    }
    return CancelOutcome::kAlreadyFinished;
  }
  const Version finished_version = last_event->version.Increment();
  const core::SupportedFunctionReturnValue result = core::FinishedExecutionError{
      core::ExecutionFailureKind::kCancelled, std::nullopt, std::nullopt};
  AppendRequest cancel_request{cancelled_at, core::Finished{result, std::nullopt}};
  if (auto derived = execution_id.AsDerived()) {
    auto [parent_id, join_set_id] = derived->SplitToParts();
    STELE_TRY(AppendBatchRespondToParent(
        AppendEventsToExecution{execution_id, finished_version, {cancel_request}},
        AppendResponseToExecution{parent_id, cancelled_at, join_set_id, *derived, finished_version,
                                  result},
        cancelled_at));
  } else {
    STELE_TRY(Append(execution_id, finished_version, cancel_request));
  }
  return CancelOutcome::kCancelled;
}

Result<CancelOutcome, DbErrorWrite> DbExecutor::CancelActivityWithRetries(
    const ExecutionId& execution_id, DateTime cancelled_at) {
  // Versions race with a worker finishing the same execution; each attempt
  // re-reads the last event.
  int retries = 5;
  while (true) {
    auto res = CancelActivity(execution_id, cancelled_at);
    if (res || retries == 0) return res;
    STELE_LOG(kDebug, "cancel of " << execution_id.ToString()
                                   << " failed, retrying: " << res.error().ToString());
    --retries;
  }
}

}  // namespace stele::storage
