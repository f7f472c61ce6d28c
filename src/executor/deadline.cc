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
  const core::SupportedFunctionReturnValue result = core::FinishedExecutionError{
      core::ExecutionFailureKind::kTimedOut, reason, std::nullopt};
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

}  // namespace

std::string DeadlinePassedReason(DateTime deadline) {
  return "the execution's deadline " + FormatRfc3339(deadline) + " passed";
}

Result<DeadlineOutcome, storage::DbErrorWrite> ExpireDeadline(storage::DbConnection& db,
                                                              CancelRegistry* registry,
                                                              const storage::ExpiredDeadline& expired,
                                                              DateTime now) {
  const core::ExecutionId& id = expired.execution_id;
  auto created = db.GetCreateRequest(id);
  if (!created) return Unexpected(storage::DbErrorWrite(created.error()));
  const std::string reason = DeadlinePassedReason(expired.deadline);
  if (core::IsWorkflowComponentType(created->component_id.component_type)) {
    const core::HistoryCancelRequest request{now, /*terminate=*/true, reason, /*timed_out=*/true};
    STELE_ASSIGN_OR_RETURN(storage::CancelOutcome outcome,
                           storage::AppendCancelRequest(db, id, request, now));
    if (outcome == storage::CancelOutcome::kAlreadyFinished) {
      return DeadlineOutcome::kAlreadyFinished;
    }
    STELE_LOG(kInfo, id.ToString() << ": " << reason << "; terminating it");
    return DeadlineOutcome::kTerminateRequested;
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
