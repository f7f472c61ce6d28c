// ExecutionService writes on existing executions: Cancel, CancelDelay,
// SetPaused, Stub, Upgrade.
#include "base/log.h"
#include "executor/cancel_registry.h"
#include "service/execution_service.h"
#include "service/parse.h"
#include "storage/operations.h"

namespace stele::service {

namespace {

CancelOutcome FromStorage(storage::CancelOutcome outcome) {
  return outcome == storage::CancelOutcome::kCancelled ? CancelOutcome::kCancelled
                                                       : CancelOutcome::kAlreadyFinished;
}

bool IsWorkflow(core::ComponentType type) { return core::IsWorkflowComponentType(type); }

}  // namespace

Result<CancelOutcome, ServiceError> ExecutionService::Cancel(std::string_view text,
                                                             const CancelOptions& options) {
  if (text.starts_with("Delay_")) return CancelDelay(text);
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(text));
  const std::string what = "cancel " + id.ToString();
  auto created = api_->GetCreateRequest(id);
  if (!created) return Unexpected(FromRead(created.error(), what));
  if (IsWorkflow(created->component_id.component_type)) return CancelWorkflow(id, options);
  auto outcome = executor::CancelActivity(*api_, cancels_.get(), id, options_.clock->Now());
  if (!outcome) return Unexpected(FromWrite(outcome.error(), what));
  if (*outcome == storage::CancelOutcome::kAlreadyFinished) return Unexpected(AlreadyFinished(id));
  ++cancelled_activities_;
  return CancelOutcome::kCancelled;
}

namespace {

// The cancel requests already in `id`'s log (docs/model.md §9.5).
struct RequestsInLog {
  bool cancel = false;
  bool terminate = false;
};

Result<RequestsInLog, ServiceError> FindCancelRequests(storage::DbExternalApi& api,
                                                       const core::ExecutionId& id) {
  constexpr core::Version::Type kPage = 1000;
  RequestsInLog found;
  core::Version since(0);
  for (;;) {
    auto page = api.ListExecutionEvents(id, since, kPage, false);
    if (!page) return Unexpected(FromRead(page.error(), "cancel " + id.ToString()));
    for (const core::ExecutionEvent& event : *page) {
      const auto* history = std::get_if<core::HistoryEventRequest>(&event.event);
      const auto* request =
          history != nullptr ? std::get_if<core::HistoryCancelRequest>(&history->event) : nullptr;
      if (request == nullptr) continue;
      found.cancel = true;
      found.terminate = found.terminate || request->terminate;
    }
    if (page->size() < kPage) return found;
    since = page->back().version.Increment();
  }
}

}  // namespace

ServiceError ExecutionService::AlreadyFinished(const core::ExecutionId& id) {
  return ServiceError::AlreadyFinished("execution " + id.ToString() +
                                       " is already finished; nothing was cancelled");
}

Result<CancelOutcome, ServiceError> ExecutionService::CancelWorkflow(const core::ExecutionId& id,
                                                                     const CancelOptions& options) {
  const std::string what = "cancel " + id.ToString();
  const std::chrono::milliseconds grace = options.grace.value_or(options_.cancel_grace);
  if (grace.count() < 0 || grace > std::chrono::hours(24 * 365)) {
    return Unexpected(ServiceError::InvalidArgument(
        "grace period of " + std::to_string(grace.count()) + " ms is out of range (0 to 1 year)"));
  }
  // The answer for a finished workflow: cancelled by a request, or not.
  auto finished_answer = [&]() -> Result<CancelOutcome, ServiceError> {
    auto result =
        api_->WaitForFinishedResult(id, storage::WaitOptions::For(std::chrono::seconds(5)));
    if (!result)
      return Unexpected(ServiceError::Unavailable(what + ": " + result.error().ToString()));
    const auto* failure = std::get_if<core::FinishedExecutionError>(&*result);
    if (failure != nullptr && failure->kind == core::ExecutionFailureKind::kCancelled) {
      return CancelOutcome::kCancelled;
    }
    return Unexpected(AlreadyFinished(id));
  };
  auto state = api_->GetPendingState(id);
  if (!state) return Unexpected(FromRead(state.error(), what));
  if (state->IsFinished()) return finished_answer();
  STELE_ASSIGN_OR_RETURN(RequestsInLog requests, FindCancelRequests(*api_, id));
  if (requests.terminate || (requests.cancel && !options.terminate)) {
    return CancelOutcome::kCancelling;  // asked already: nothing to write
  }
  const DateTime now = options_.clock->Now();
  const core::HistoryCancelRequest request{
      now + std::chrono::duration_cast<std::chrono::microseconds>(grace), options.terminate,
      options.reason};
  auto appended = storage::AppendCancelRequest(*api_, id, request, now);
  if (!appended) return Unexpected(FromWrite(appended.error(), what));
  if (*appended == storage::CancelOutcome::kAlreadyFinished) return finished_answer();
  ++(options.terminate ? workflow_terminates_ : workflow_cancels_);
  STELE_LOG(kInfo, "execution " << id.ToString() << ": "
                                << (options.terminate ? "terminate" : "cancel") << " requested"
                                << (options.reason.empty() ? "" : ": " + options.reason));
  return CancelOutcome::kCancelling;
}

Result<bool, ServiceError> ExecutionService::SetPaused(std::string_view text, bool pause,
                                                       const std::string& reason) {
  constexpr size_t kMaxReasonBytes = 1024;
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(text));
  if (reason.size() > kMaxReasonBytes) {
    return Unexpected(ServiceError::InvalidArgument("reason of " + std::to_string(reason.size()) +
                                                    " bytes is over the limit of " +
                                                    std::to_string(kMaxReasonBytes)));
  }
  const std::string what = (pause ? "pause " : "resume ") + id.ToString();
  auto outcome = storage::AppendPauseChange(*api_, id, pause, reason, options_.clock->Now());
  if (!outcome) return Unexpected(FromWrite(outcome.error(), what));
  switch (*outcome) {
    case storage::PauseOutcome::kAlreadyFinished:
      return Unexpected(ServiceError::AlreadyFinished("execution " + id.ToString() +
                                                      " is already finished; nothing was " +
                                                      (pause ? "paused" : "resumed")));
    case storage::PauseOutcome::kUnchanged:
      return pause;
    case storage::PauseOutcome::kWritten:
      break;
  }
  ++(pause ? pauses_ : resumes_);
  // A run of this process stops at once (a warm workflow run before it
  // runs guest code on); its outcome loses to the fence.
  if (pause) {
    cancels_->NotifyCancelled(id);
    workflow_runs_->NotifyCancelled(id);
  }
  STELE_LOG(kInfo, "execution " << id.ToString() << (pause ? " paused" : " resumed")
                                << (reason.empty() ? "" : ": " + reason));
  return pause;
}

Result<CancelOutcome, ServiceError> ExecutionService::CancelDelay(std::string_view text) {
  STELE_ASSIGN_OR_RETURN(core::DelayId delay, internal::ParseDelayId(text));
  auto outcome = storage::CancelDelay(*api_, delay, options_.clock->Now());
  if (!outcome) return Unexpected(FromWrite(outcome.error(), "cancel " + delay.ToString()));
  return FromStorage(*outcome);
}

Result<void, ServiceError> ExecutionService::Stub(
    std::string_view text, const core::SupportedFunctionReturnValue& result) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(text));
  const std::string what = "stub " + id.ToString();
  auto derived = id.AsDerived();
  if (!derived) {
    return Unexpected(ServiceError::InvalidArgument(
        "execution " + id.ToString() +
        " is top-level; only child executions of stub activities can be stubbed"));
  }
  auto created = api_->GetCreateRequest(id);
  if (!created) return Unexpected(FromRead(created.error(), what));
  if (created->component_id.component_type != core::ComponentType::kActivityStub) {
    return Unexpected(ServiceError::InvalidArgument("execution " + id.ToString() + " runs " +
                                                    created->ffqn.ToString() +
                                                    ", which is not a stub activity"));
  }
  if (const core::FunctionSignature* signature = Signature(created->ffqn)) {
    Result<void, std::string> checked;
    if (const auto* ok = std::get_if<core::ReturnValueOk>(&result)) {
      checked = core::CheckReturnValue(*signature, *ok);
    } else if (const auto* err = std::get_if<core::ReturnValueErr>(&result)) {
      checked = core::CheckReturnValue(*signature, *err);
    }
    if (!checked) {
      return Unexpected(ServiceError::InvalidArgument("result of `" + created->ffqn.ToString() +
                                                      "`: " + checked.error()));
    }
  }
  auto [parent, join_set] = derived->SplitToParts();
  auto stubbed =
      storage::StubExecution(*api_, *derived, parent, join_set, options_.clock->Now(), result);
  if (stubbed) return {};
  if (stubbed.error().IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kConflict)) {
    return Unexpected(
        ServiceError::Conflict("execution " + id.ToString() + " holds a different result already"));
  }
  return Unexpected(FromWrite(stubbed.error(), what));
}

Result<void, ServiceError> ExecutionService::Upgrade(std::string_view text,
                                                     std::string_view old_digest_text,
                                                     std::string_view new_digest_text, bool force) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionId id, internal::ParseExecutionId(text));
  STELE_ASSIGN_OR_RETURN(auto old_digest, internal::ParseDigest(old_digest_text, "old digest"));
  STELE_ASSIGN_OR_RETURN(auto new_digest, internal::ParseDigest(new_digest_text, "new digest"));
  const bool served = Serves(new_digest);
  if (!served && !force) {
    return Unexpected(ServiceError::Conflict(
        "no component of this server serves digest " + new_digest.ToString() + ": execution " +
        id.ToString() + " would wait for it forever (upgrade with force to move it anyway)"));
  }
  auto upgraded = api_->UpgradeExecutionComponent(id, old_digest, new_digest);
  if (upgraded) {
    if (!served) {
      STELE_LOG(kWarn, "execution " << id.ToString() << " was moved to component digest "
                                    << new_digest.ToString()
                                    << ", which no component of this process serves: it waits "
                                       "until one does (gauge stele_executions_unserved)");
    }
    return {};
  }
  if (upgraded.error().IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kConflict)) {
    return Unexpected(ServiceError::Conflict(
        "execution " + id.ToString() + " does not run component digest " + old_digest.ToString()));
  }
  return Unexpected(FromWrite(upgraded.error(), "upgrade " + id.ToString()));
}

}  // namespace stele::service
