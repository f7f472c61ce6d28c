// RunState's part in cancelling a workflow (workflow_run.h,
// "Cancellation"; docs/model.md §9.5): passing cancel requests, the grace
// period, and cancelling the open subtree at the end; and the look at the
// log and the responses a non-blocking JoinNext takes.
#include <chrono>
#include <string>
#include <utility>

#include "runtime/workflow/run_state.h"
#include "storage/operations.h"

namespace stele::runtime::workflow::internal {

const core::HistoryEvent* RunState::Recorded() {
  SkipCancelRequests();
  return cursor_ < history_.size() ? &history_[cursor_].first : nullptr;
}

Result<void, Interruption> RunState::PollResponses() {
  auto got = deps.db->SubscribeToNextResponses(
      ctx.execution_id, static_cast<uint32_t>(responses_.size()),
      storage::WaitOptions{std::chrono::steady_clock::now(), ctx.cancel});
  if (got) {
    AddResponses(*std::move(got));
    return {};
  }
  if (got.error().IsTimeout()) return {};  // nothing new
  return DbFailure("reading responses", storage::DbErrorWrite(got.error().read()));
}

bool RunState::ResponseKnown(const core::JoinSetId& join_set, uint64_t k) const {
  auto it = responses_by_join_set_.find(join_set);
  return it != responses_by_join_set_.end() && it->second.size() >= k;
}

Result<bool, Interruption> RunState::StepJoinNextTryIfNothing(const JoinSetState& join_set) {
  // What the first run found decides, as recorded; in new territory, what
  // has arrived by now.
  bool nothing = false;
  if (const core::HistoryEvent* recorded = Recorded()) {
    nothing = std::holds_alternative<core::HistoryJoinNextTry>(*recorded);
  } else {
    STELE_TRY(PollResponses());
    nothing = !ResponseKnown(join_set.id, join_set.join_nexts + 1);
  }
  if (!nothing) return false;
  STELE_TRY(Step(core::HistoryJoinNextTry{join_set.id}));
  STELE_TRY(MaybeFlush());
  return true;
}

void RunState::SkipCancelRequests() {
  while (cursor_ < history_.size() &&
         std::holds_alternative<core::HistoryCancelRequest>(history_[cursor_].first)) {
    Apply(history_[cursor_].first);
    ++cursor_;
  }
}

Interruption RunState::TerminatedInterruption() const {
  if (terminated_by_deadline_) {
    return Interruption{Interruption::Kind::kTerminated, "timed out: " + terminate_reason_,
                        std::nullopt};
  }
  std::string reason = "cancelled";
  if (cancel_request_ && !cancel_request_->reason.empty()) reason += ": " + cancel_request_->reason;
  return Interruption{Interruption::Kind::kTerminated, std::move(reason), std::nullopt};
}

Result<void, Interruption> RunState::PassCancelRequests() {
  SkipCancelRequests();
  if (ending_cancelled_ || !cancel_request_) return {};
  if (terminate_requested_) return Interrupt(TerminatedInterruption());
  // The grace period is a fact of new territory only: a replay takes the
  // path the log recorded, and the log records its end as a terminate
  // request written here.
  if (!replaying() && Now() >= cancel_request_->grace_expires_at) {
    STELE_TRY(Step(core::HistoryCancelRequest{cancel_request_->grace_expires_at, true,
                                              "the grace period of the cancel request ended"}));
    return Interrupt(TerminatedInterruption());
  }
  return {};
}

bool RunState::TakeCancellation() {
  if (!cancel_request_ || cancellation_taken_ || ending_cancelled_) return false;
  cancellation_taken_ = true;
  return true;
}

Result<void, Interruption> RunState::AddGraceDelay(JoinSetState& join_set) {
  if (!cancellation_taken_ || ending_cancelled_ || grace_delays_.contains(join_set.id)) return {};
  core::DelayId delay_id(ctx.execution_id, join_set.id, join_set.submissions + 1);
  grace_delays_.emplace(join_set.id, delay_id.ToString());
  grace_delay_ids_.insert(delay_id.ToString());
  const DateTime expires_at = cancel_request_->grace_expires_at;
  STELE_TRY(Step(core::HistoryJoinSetRequest{
      join_set.id,
      core::DelayRequest{delay_id, expires_at, core::HistoryEventScheduleAt::At(expires_at)}}));
  return {};
}

uint64_t RunState::GuestSubmissions(const JoinSetState& join_set) const {
  return join_set.submissions - (grace_delays_.contains(join_set.id) ? 1 : 0);
}

Result<void, Interruption> RunState::CancelOpenSubtree() {
  STELE_TRY(Flush(/*dispatch=*/false));  // what is cancelled must exist
  const DateTime now = Now();
  const core::HistoryCancelRequest terminate{now, true, "its parent was cancelled"};
  for (const core::JoinSetId& id : all_join_sets_) {
    const JoinSetState& join_set = join_sets_.at(id);
    for (const std::string& key : join_set.order) {
      auto it = join_set.unconsumed.find(key);
      if (it == join_set.unconsumed.end()) continue;
      const Submission& submission = it->second;
      const auto* child = std::get_if<core::ExecutionIdDerived>(&submission.id);
      std::optional<FunctionInfo> info =
          submission.ffqn ? deps.functions->Find(*submission.ffqn) : std::nullopt;
      if (child != nullptr && info && info->kind == FunctionKind::kWorkflow) {
        auto requested =
            storage::AppendCancelRequest(*deps.db, core::ExecutionId(*child), terminate, now);
        if (!requested) return DbFailure("terminating " + key, std::move(requested).error());
        continue;
      }
      if (auto cancelled = CancelSubmission(submission, now); !cancelled) {
        return DbFailure("cancelling " + key, std::move(cancelled).error());
      }
    }
  }
  return {};
}

}  // namespace stele::runtime::workflow::internal
