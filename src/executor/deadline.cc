#include "executor/deadline.h"

#include <utility>
#include <variant>

#include "base/log.h"
#include "storage/operations.h"

namespace stele::executor {
namespace {

using storage::DbErrorWriteNonRetriable;

// Finished(timed_out) at the last version + 1, with the parent's response
// for a child; nullopt when the execution is finished already.
Result<bool, storage::DbErrorWrite> FinishTimedOut(storage::DbConnection& db,
                                                   const core::ExecutionId& id, DateTime now,
                                                   const std::string& reason) {
  auto last = db.GetLastExecutionEvent(id);
  if (!last) return Unexpected(storage::DbErrorWrite(last.error()));
  if (std::holds_alternative<core::Finished>(last->event)) return false;
  const core::Version version = last->version.Increment();
  const core::SupportedFunctionReturnValue result =
      core::FinishedExecutionError{core::ExecutionFailureKind::kTimedOut, reason, std::nullopt};
  storage::AppendRequest finished{now, core::Finished{result, std::nullopt}};
  if (auto derived = id.AsDerived()) {
    auto [parent_id, join_set_id] = derived->SplitToParts();
    STELE_TRY(db.AppendBatchRespondToParent(
        storage::AppendEventsToExecution{id, version, {finished}},
        storage::AppendResponseToExecution{parent_id, now, join_set_id, *derived, version, result},
        now));
  } else {
    STELE_TRY(db.Append(id, version, finished));
  }
  return true;
}

// Whether the log of `id` (up to `last`) holds a timed-out terminate
// request: another watcher — another server on the database — acted on
// the same deadline. Read only when `state` says a request is there at all.
Result<bool, storage::DbErrorRead> HasTimedOutRequest(storage::DbConnection& db,
                                                      const core::ExecutionId& id,
                                                      const core::PendingState& state,
                                                      core::Version last) {
  if (!state.cancelling) return false;
  for (core::Version::Type v = last.value(); v > 0; --v) {
    auto event = db.GetExecutionEvent(id, core::Version(v));
    if (!event) return Unexpected(std::move(event).error());
    if (const auto* request = std::get_if<core::HistoryEventRequest>(&event->event)) {
      const auto* cancel = std::get_if<core::HistoryCancelRequest>(&request->event);
      if (cancel != nullptr && cancel->timed_out) return true;
    }
  }
  return false;
}

// Appends the timed-out terminate `request` to workflow `id`, fenced at the
// version read. The storage contract leaves a second request to the caller
// (storage/operations.h): two watchers may both read this deadline before
// either writes, so each try first looks for the other's request — the
// loser's fenced write fails, it re-reads and finds it.
Result<DeadlineOutcome, storage::DbErrorWrite> RequestTermination(
    storage::DbConnection& db, const core::ExecutionId& id,
    const core::HistoryCancelRequest& request, DateTime now) {
  for (int retries = 5;; --retries) {
    auto last = db.GetLastExecutionEvent(id);
    if (!last) return Unexpected(storage::DbErrorWrite(last.error()));
    if (std::holds_alternative<core::Finished>(last->event)) {
      return DeadlineOutcome::kAlreadyFinished;
    }
    auto state = db.GetPendingState(id);
    if (!state) return Unexpected(storage::DbErrorWrite(state.error()));
    auto requested = HasTimedOutRequest(db, id, *state, last->version);
    if (!requested) return Unexpected(storage::DbErrorWrite(requested.error()));
    if (*requested) return DeadlineOutcome::kAlreadyFinished;
    auto appended = db.Append(id, last->version.Increment(),
                              storage::AppendRequest{now, core::HistoryEventRequest{request}});
    if (appended) return DeadlineOutcome::kTerminateRequested;
    const bool raced =
        appended.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kVersionConflict) ||
        appended.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kIllegalState);
    if (!raced || retries == 0) return Unexpected(std::move(appended).error());
  }
}

}  // namespace

std::string DeadlinePassedReason(DateTime deadline) {
  return "the execution's deadline " + FormatRfc3339(deadline) + " passed";
}

Result<DeadlineOutcome, storage::DbErrorWrite> ExpireDeadline(
    storage::DbConnection& db, CancelRegistry* registry, const storage::ExpiredDeadline& expired,
    DateTime now) {
  const core::ExecutionId& id = expired.execution_id;
  auto created = db.GetCreateRequest(id);
  if (!created) return Unexpected(storage::DbErrorWrite(created.error()));
  const std::string reason = DeadlinePassedReason(expired.deadline);
  if (core::IsWorkflowComponentType(created->component_id.component_type)) {
    const core::HistoryCancelRequest request{now, /*terminate=*/true, reason, /*timed_out=*/true};
    STELE_ASSIGN_OR_RETURN(DeadlineOutcome outcome, RequestTermination(db, id, request, now));
    if (outcome == DeadlineOutcome::kTerminateRequested) {
      STELE_LOG(kInfo, id.ToString() << ": " << reason << "; terminating it");
    }
    return outcome;
  }
  // An activity: versions race with its run finishing; each try re-reads.
  for (int retries = 5;; --retries) {
    auto finished = FinishTimedOut(db, id, now, reason);
    if (finished) {
      if (!*finished) return DeadlineOutcome::kAlreadyFinished;
      STELE_LOG(kInfo, id.ToString() << ": " << reason << "; timed out");
      if (registry != nullptr) registry->NotifyCancelled(id);
      return DeadlineOutcome::kTimedOut;
    }
    const bool raced =
        finished.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kVersionConflict) ||
        finished.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kIllegalState);
    if (!raced || retries == 0) return Unexpected(std::move(finished).error());
  }
}

}  // namespace stele::executor
