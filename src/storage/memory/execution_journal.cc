#include "storage/memory/execution_journal.h"

#include <algorithm>
#include <type_traits>
#include <utility>
#include <variant>

#include "base/check.h"
#include "storage/pending_state_rules.h"
#include "storage/request_rules.h"

namespace stele::storage::memory::internal {

namespace {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

const core::JoinSetId& ResponseJoinSet(const core::JoinSetResponseEventOuter& response) {
  return response.event.join_set_id;
}

}  // namespace

ExecutionJournal::ExecutionJournal(const CreateRequest& req)
    : execution_id_(req.execution_id),
      pending_state_{core::PendingStatePendingAt{req.scheduled_at, std::nullopt,
                                                 req.component_id.input_digest}},
      component_digest_(req.component_id.input_digest) {
  events_.push_back(
      core::ExecutionEvent{req.created_at, req.ToCreatedEvent(), std::nullopt, Version(0)});
}

const core::Created& ExecutionJournal::created() const {
  const auto* created = std::get_if<core::Created>(&events_.front().event);
  STELE_CHECK(created != nullptr, "a journal always starts with Created");
  return *created;
}

Version ExecutionJournal::next_version() const {
  return Version(static_cast<Version::Type>(events_.size()));
}

Result<void, DbErrorWrite> ExecutionJournal::Append(Version version, const AppendRequest& req) {
  // Order of the checks follows docs/model.md §4.2: the request shape,
  // then "already finished", then the version (the fencing token), then the
  // event-specific lock rules.
  STELE_TRY(ValidateAppendRequest(execution_id_, req));
  if (pending_state_.IsFinished()) {
    return Unexpected(DbErrorWriteNonRetriable::IllegalState("already finished"));
  }
  if (version != next_version()) {
    return Unexpected(DbErrorWriteNonRetriable::VersionConflict(next_version(), version));
  }
  if (const auto* locked = std::get_if<core::Locked>(&req.event)) {
    STELE_TRY(CanAppendLock(pending_state_, req.created_at, locked->executor_id, locked->run_id,
                            locked->lock_expires_at));
  }
  events_.push_back(core::ExecutionEvent{req.created_at, req.event, std::nullopt, version});
  ApplyTransition(events_.back());
  return {};
}

void ExecutionJournal::ApplyTransition(const core::ExecutionEvent& event) {
  std::visit(
      Overloaded{
          [&](const core::Created&) { STELE_CHECK(false, "Created is never appended"); },
          [&](const core::Locked& locked) {
            last_locked_ = locked;
            last_lock_version_ = event.version;
            pending_state_.value =
                core::PendingStateLocked{core::LockedBy{locked.executor_id, locked.run_id},
                                         locked.lock_expires_at, component_digest_};
          },
          [&](const core::Unlocked& unlocked) {
            // Unlocked never counts as a retry.
            pending_state_.value = PendingAt(unlocked.backoff_expires_at);
          },
          [&](const core::TemporarilyFailed& failed) {
            ++intermittent_event_count_;
            pending_state_.value = PendingAt(failed.backoff_expires_at);
          },
          [&](const core::TemporarilyTimedOut& timed_out) {
            ++intermittent_event_count_;
            pending_state_.value = PendingAt(timed_out.backoff_expires_at);
          },
          [&](const core::Finished& finished) {
            // The flags mean nothing once finished (core/pending_state.h).
            pending_state_.paused = false;
            pending_state_.cancelling = false;
            pending_state_.value = core::PendingStateFinished{
                event.version.value(), event.created_at,
                core::PendingStateFinishedResultKind::From(finished.result), component_digest_};
          },
          [&](const core::HistoryEventRequest& history) { ApplyHistoryEvent(history.event); },
          [&](const core::Paused&) {
            // A run holding the lock is fenced out by the version; the
            // execution waits, pending, for the resume (docs/model.md §9.6).
            if (std::holds_alternative<core::PendingStateLocked>(pending_state_.value)) {
              pending_state_.value = PendingAt(event.created_at);
            }
            pending_state_.paused = true;
          },
          [&](const core::Resumed&) { pending_state_.paused = false; },
      },
      event.event);
}

void ExecutionJournal::ApplyHistoryEvent(const core::HistoryEvent& event) {
  if (const auto* request = std::get_if<core::HistoryJoinSetRequest>(&event)) {
    if (const auto* delay = std::get_if<core::DelayRequest>(&request->request)) {
      delays_.insert_or_assign(delay->delay_id.ToString(),
                               LiveDelay{request->join_set_id, delay->delay_id, delay->expires_at});
      requests_.insert_or_assign(delay->delay_id.ToString(), request->join_set_id);
    } else {
      const auto& child = std::get<core::ChildExecutionRequest>(request->request);
      requests_.insert_or_assign(child.child_execution_id.ToString(), request->join_set_id);
    }
    return;
  }
  if (const auto* cancel = std::get_if<core::HistoryCancelRequest>(&event)) {
    // Whatever the run was doing or waiting for, a run must see the
    // request; a paused workflow is resumed so that it can end.
    (void)cancel;
    pending_state_.value = PendingAt(events_.back().created_at);
    pending_state_.paused = false;
    pending_state_.cancelling = true;
    return;
  }
  const auto* join_next = std::get_if<core::HistoryJoinNext>(&event);
  if (join_next == nullptr) return;  // every other history event only bumps the version
  // k counts the JoinNexts of this join set including the one just appended.
  size_t k = 0;
  for (const core::ExecutionEvent& e : events_) {
    const auto* history = std::get_if<core::HistoryEventRequest>(&e.event);
    if (history == nullptr) continue;
    const auto* other = std::get_if<core::HistoryJoinNext>(&history->event);
    if (other != nullptr && other->join_set_id == join_next->join_set_id) ++k;
  }
  if (std::optional<DateTime> response_at = KthResponseTime(join_next->join_set_id, k)) {
    // The warm run keeps its lease; after it anyone may continue.
    pending_state_.value = PendingAt(std::max(join_next->run_expires_at, *response_at));
  } else {
    pending_state_.value = core::PendingStateBlockedByJoinSet{
        join_next->join_set_id, join_next->run_expires_at, join_next->closing, component_digest_};
  }
}

std::optional<core::JoinSetId> ExecutionJournal::RequestJoinSet(const std::string& id) const {
  auto it = requests_.find(id);
  if (it == requests_.end()) return std::nullopt;
  return it->second;
}

std::optional<DateTime> ExecutionJournal::KthResponseTime(const core::JoinSetId& join_set_id,
                                                          size_t k) const {
  size_t seen = 0;
  for (const core::JoinSetResponseEventOuter& response : responses_) {
    if (ResponseJoinSet(response) == join_set_id && ++seen == k) return response.created_at;
  }
  return std::nullopt;
}

core::PendingStatePendingAt ExecutionJournal::PendingAt(DateTime scheduled_at) const {
  std::optional<core::LockedBy> last_lock;
  if (last_locked_) last_lock = core::LockedBy{last_locked_->executor_id, last_locked_->run_id};
  return core::PendingStatePendingAt{scheduled_at, std::move(last_lock), component_digest_};
}

void ExecutionJournal::AddResponse(DateTime created_at, const core::JoinSetResponseEvent& event) {
  responses_.push_back(core::JoinSetResponseEventOuter{created_at, event});
  if (const auto* delay = std::get_if<core::DelayFinished>(&event.event)) {
    delays_.erase(delay->delay_id.ToString());
  }
  // Only a parent blocked on this very join set is unblocked; any other
  // state is untouched (the response waits for its JoinNext).
  const auto* blocked = std::get_if<core::PendingStateBlockedByJoinSet>(&pending_state_.value);
  if (blocked != nullptr && blocked->join_set_id == event.join_set_id) {
    pending_state_.value = PendingAt(std::max(blocked->lock_expires_at, created_at));
  }
}

Result<void, DbErrorWrite> ExecutionJournal::UpgradeComponent(
    const core::InputContentDigest& old_digest, const core::InputContentDigest& new_digest) {
  if (pending_state_.IsFinished()) {
    return Unexpected(DbErrorWriteNonRetriable::IllegalState("already finished"));
  }
  if (component_digest_ != old_digest) return Unexpected(DbErrorWriteNonRetriable::Conflict());
  component_digest_ = new_digest;
  std::visit([&](auto& state) { state.component_id_input_digest = new_digest; },
             pending_state_.value);
  return {};
}

LockedExecution ExecutionJournal::ToLockedExecution() const {
  STELE_CHECK(std::holds_alternative<core::Locked>(events_.back().event),
              "ToLockedExecution requires the last event to be Locked");
  std::vector<std::pair<core::HistoryEvent, Version>> event_history;
  for (const core::ExecutionEvent& event : events_) {
    if (const auto* history = std::get_if<core::HistoryEventRequest>(&event.event)) {
      event_history.emplace_back(history->event, event.version);
    }
  }
  return LockedExecution{execution_id_,
                         next_version(),
                         created().metadata,
                         std::get<core::Locked>(events_.back().event),
                         created().ffqn,
                         created().params,
                         std::move(event_history),
                         responses_,
                         created().parent,
                         intermittent_event_count_,
                         created().policy};
}

std::optional<ExpiredLock> ExecutionJournal::ExpiredLockAt(DateTime at) const {
  const auto* locked = std::get_if<core::PendingStateLocked>(&pending_state_.value);
  if (locked == nullptr || locked->lock_expires_at > at) return std::nullopt;
  STELE_CHECK(last_locked_.has_value(), "Locked state without a Locked event");
  return ExpiredLock{execution_id_,
                     last_lock_version_,
                     next_version(),
                     intermittent_event_count_,
                     last_locked_->retry_config.max_retries,
                     last_locked_->retry_config.retry_exp_backoff,
                     locked->locked_by};
}

std::vector<ExpiredDelay> ExecutionJournal::ExpiredDelaysAt(DateTime at) const {
  std::vector<ExpiredDelay> expired;
  for (const auto& [key, delay] : delays_) {
    if (delay.expires_at <= at) {
      expired.push_back(
          ExpiredDelay{execution_id_, delay.join_set_id, delay.delay_id, delay.expires_at});
    }
  }
  return expired;
}

std::optional<ExpiredDeadline> ExecutionJournal::ExpiredDeadlineAt(DateTime at) const {
  const std::optional<DateTime>& deadline = created().policy.deadline;
  if (!deadline || *deadline > at || pending_state_.IsFinished()) return std::nullopt;
  for (const core::ExecutionEvent& event : events_) {
    const auto* history = std::get_if<core::HistoryEventRequest>(&event.event);
    if (history == nullptr) continue;
    const auto* cancel = std::get_if<core::HistoryCancelRequest>(&history->event);
    if (cancel != nullptr && cancel->terminate) return std::nullopt;
  }
  return ExpiredDeadline{execution_id_, *deadline};
}

ExecutionLog ExecutionJournal::ToLog() const {
  return ExecutionLog{execution_id_, events_, responses_, next_version(), pending_state_};
}

ExecutionWithState ExecutionJournal::ToExecutionWithState() const {
  return ExecutionWithState{execution_id_, created().ffqn,         pending_state_,
                            created_at(),  created().scheduled_at, component_digest_};
}

}  // namespace stele::storage::memory::internal
