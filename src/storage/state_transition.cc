#include "storage/state_transition.h"

#include <algorithm>
#include <variant>

#include "storage/pending_state_rules.h"

namespace stele::storage {

namespace {

// PendingAt(scheduled_at); the last lock holder is kept so that it may
// extend its lock. `temporary` counts a retry.
void SetPendingAt(ExecutionState& s, DateTime scheduled_at, bool temporary) {
  s.pending_state.value = core::PendingStatePendingAt{scheduled_at, s.last_lock, s.digest};
  s.last_lock_version.reset();
  if (temporary) ++s.intermittent_event_count;
}

void ApplyHistory(ExecutionState& s, const AppendRequest& req, const core::HistoryEvent& event,
                  std::optional<DateTime> awaited, AppendEffects& effects) {
  if (const auto* request = std::get_if<core::HistoryJoinSetRequest>(&event)) {
    if (std::holds_alternative<core::DelayRequest>(request->request)) effects.timer = request;
    return;
  }
  if (std::holds_alternative<core::HistoryPublish>(event)) {
    effects.published = true;
    return;
  }
  if (const auto* cancel = std::get_if<core::HistoryCancelRequest>(&event)) {
    effects.disarm_deadline = cancel->terminate;
    // Whatever the run was doing or waiting for, a run must see the
    // request; a paused workflow is resumed so that it can end.
    SetPendingAt(s, req.created_at, false);
    s.pending_state.paused = false;
    s.pending_state.cancelling = true;
    effects.version_only = false;
    effects.pending_at = req.created_at;
    return;
  }
  const auto* join_next = std::get_if<core::HistoryJoinNext>(&event);
  if (join_next == nullptr) return;  // Persist, JoinSetCreate, Schedule, Stub, Step, ...
  effects.version_only = false;
  if (awaited) {
    // The warm run keeps its lease; after it anyone may continue.
    const DateTime scheduled_at = std::max(join_next->run_expires_at, *awaited);
    SetPendingAt(s, scheduled_at, false);
    effects.pending_at = scheduled_at;
  } else {
    s.pending_state.value = core::PendingStateBlockedByJoinSet{
        join_next->join_set_id, join_next->run_expires_at, join_next->closing, s.digest};
    s.last_lock_version.reset();
  }
}

}  // namespace

Result<void, DbErrorWrite> CheckAppend(const ExecutionState& state, Version version,
                                       const AppendRequest& req) {
  if (state.IsFinished()) {
    return Unexpected(DbErrorWriteNonRetriable::IllegalState("already finished"));
  }
  if (version != state.NextVersion()) {
    return Unexpected(DbErrorWriteNonRetriable::VersionConflict(state.NextVersion(), version));
  }
  if (const auto* locked = std::get_if<core::Locked>(&req.event)) {
    STELE_TRY(CanAppendLock(state.pending_state, req.created_at, locked->executor_id,
                            locked->run_id, locked->lock_expires_at));
  }
  return {};
}

Result<AppendEffects, DbErrorWrite> ApplyAppend(ExecutionState& s, Version version,
                                                const AppendRequest& req,
                                                const AwaitedResponse& awaited) {
  AppendEffects effects;
  if (const auto* locked = std::get_if<core::Locked>(&req.event)) {
    const core::LockedBy by{locked->executor_id, locked->run_id};
    s.pending_state.value = core::PendingStateLocked{by, locked->lock_expires_at, s.digest};
    s.last_lock = by;
    s.last_lock_version = version;
    s.max_retries = locked->retry_config.max_retries;
    s.retry_exp_backoff = locked->retry_config.retry_exp_backoff;
    effects.version_only = false;
  } else if (const auto* unlocked = std::get_if<core::Unlocked>(&req.event)) {
    SetPendingAt(s, unlocked->backoff_expires_at, false);  // never counts as a retry
    effects.version_only = false;
    effects.pending_at = unlocked->backoff_expires_at;
  } else if (const auto* failed = std::get_if<core::TemporarilyFailed>(&req.event)) {
    SetPendingAt(s, failed->backoff_expires_at, true);
    effects.version_only = false;
    effects.pending_at = failed->backoff_expires_at;
  } else if (const auto* timed_out = std::get_if<core::TemporarilyTimedOut>(&req.event)) {
    SetPendingAt(s, timed_out->backoff_expires_at, true);
    effects.version_only = false;
    effects.pending_at = timed_out->backoff_expires_at;
  } else if (const auto* finished = std::get_if<core::Finished>(&req.event)) {
    s.pending_state.value = core::PendingStateFinished{
        version.value(), req.created_at,
        core::PendingStateFinishedResultKind::From(finished->result), s.digest};
    s.last_lock.reset();
    s.last_lock_version.reset();
    effects.version_only = false;
    effects.finished = finished;
    effects.disarm_deadline = true;
  } else if (const auto* history = std::get_if<core::HistoryEventRequest>(&req.event)) {
    std::optional<DateTime> response_at;
    if (const auto* join_next = std::get_if<core::HistoryJoinNext>(&history->event)) {
      STELE_ASSIGN_OR_RETURN(response_at, awaited(join_next->join_set_id));
    }
    ApplyHistory(s, req, history->event, response_at, effects);
  } else if (std::holds_alternative<core::Paused>(req.event)) {
    // A run holding the lock is fenced out by the version; the execution
    // waits, pending, for the resume (docs/model.md §9.6).
    if (std::holds_alternative<core::PendingStateLocked>(s.pending_state.value)) {
      SetPendingAt(s, req.created_at, false);
    }
    s.pending_state.paused = true;
    effects.version_only = false;
  } else if (std::holds_alternative<core::Resumed>(req.event)) {
    s.pending_state.paused = false;
    effects.version_only = false;
    if (const auto* pending = std::get_if<core::PendingStatePendingAt>(&s.pending_state.value)) {
      effects.pending_at = pending->scheduled_at;
    }
  }
  s.corresponding_version = version;
  s.updated_at = req.created_at;
  return effects;
}

std::optional<DateTime> ApplyResponse(ExecutionState& s, const core::JoinSetId& join_set,
                                      DateTime created_at) {
  const auto* blocked = std::get_if<core::PendingStateBlockedByJoinSet>(&s.pending_state.value);
  if (blocked == nullptr || blocked->join_set_id != join_set) return std::nullopt;
  const DateTime scheduled_at = std::max(blocked->lock_expires_at, created_at);
  SetPendingAt(s, scheduled_at, false);
  s.updated_at = created_at;
  return scheduled_at;
}

}  // namespace stele::storage
