// ExecutionJournal: the event log of one execution, its responses and its
// materialised PendingState, in memory. The pending state is updated event by
// event exactly as the transition table of docs/model.md §4.3 says,
// the way the SQL backends update `t_state`, so that the memory backend can
// serve as the oracle in differential tests.
//
// Threading: not synchronised; MemoryConnection guards every journal with
// the pool's single mutex.
// Every mutating method validates first and mutates only on success, so a
// failed call leaves the journal untouched.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "core/execution_event.h"
#include "core/pending_state.h"
#include "storage/db_errors.h"
#include "storage/requests.h"

namespace stele::storage::memory::internal {

class ExecutionJournal {
 public:
  // State PendingAt(req.scheduled_at), Created at version 0.
  explicit ExecutionJournal(const CreateRequest& req);

  const ExecutionId& execution_id() const { return execution_id_; }
  // The Created event's payload (version 0).
  const core::Created& created() const;
  DateTime created_at() const { return events_.front().created_at; }
  const std::vector<core::ExecutionEvent>& events() const { return events_; }
  const std::vector<core::JoinSetResponseEventOuter>& responses() const { return responses_; }
  const core::PendingState& pending_state() const { return pending_state_; }
  const core::InputContentDigest& component_digest() const { return component_digest_; }
  // Version the next appended event must carry.
  Version next_version() const;
  // TemporarilyFailed + TemporarilyTimedOut events so far.
  uint32_t intermittent_event_count() const { return intermittent_event_count_; }
  // The join set a child or delay (by its id's text) was requested in by
  // this execution's log (its last request); nullopt when never requested.
  std::optional<core::JoinSetId> RequestJoinSet(const std::string& id) const;

  // Appends `req` at `version`: ValidationFailed for what
  // ValidateAppendRequest refuses (Created, a request naming another
  // execution's id), IllegalState "already finished", VersionConflict, and
  // for Locked the lock rules of CanAppendLock. Applies the transition table
  // on success.
  Result<void, DbErrorWrite> Append(Version version, const AppendRequest& req);

  // Records a response. Whether it answers a request (RequestJoinSet) and
  // its uniqueness are the caller's business (a child lives in another
  // journal; uniqueness is global, not per execution). Unblocks a BlockedByJoinSet on the same
  // join set; a delay response also deletes the live timer.
  void AddResponse(DateTime created_at, const core::JoinSetResponseEvent& event);

  // IllegalState when finished, Conflict when the digest is not `old_digest`.
  Result<void, DbErrorWrite> UpgradeComponent(const core::InputContentDigest& old_digest,
                                              const core::InputContentDigest& new_digest);

  // REQUIRES: the last event is Locked.
  LockedExecution ToLockedExecution() const;
  // Set when Locked with lock_expires_at <= at.
  std::optional<ExpiredLock> ExpiredLockAt(DateTime at) const;
  // Live timers (DelayRequests without a response) with expires_at <= at.
  std::vector<ExpiredDelay> ExpiredDelaysAt(DateTime at) const;
  // The deadline of the Created event when it is <= at, the execution is
  // not finished and no terminate request has disarmed it.
  std::optional<ExpiredDeadline> ExpiredDeadlineAt(DateTime at) const;
  ExecutionLog ToLog() const;
  ExecutionWithState ToExecutionWithState() const;

 private:
  struct LiveDelay {
    core::JoinSetId join_set_id;
    core::DelayId delay_id;
    DateTime expires_at;
  };

  // Moves the pending state as the table says for the just-appended event.
  void ApplyTransition(const core::ExecutionEvent& event);
  void ApplyHistoryEvent(const core::HistoryEvent& event);
  // PendingAt(scheduled_at) keeping the last lock (needed for extension).
  core::PendingStatePendingAt PendingAt(DateTime scheduled_at) const;
  // Created_at of the k-th (1-based) response of `join_set_id`, if any.
  std::optional<DateTime> KthResponseTime(const core::JoinSetId& join_set_id, size_t k) const;

  ExecutionId execution_id_;
  std::vector<core::ExecutionEvent> events_;
  std::vector<core::JoinSetResponseEventOuter> responses_;
  core::PendingState pending_state_;
  core::InputContentDigest component_digest_;
  uint32_t intermittent_event_count_ = 0;
  // The last Locked event and its version; kept until the journal ends so
  // that PendingAt can offer `last_lock` and an expired lock its details.
  std::optional<core::Locked> last_locked_;
  Version last_lock_version_;
  // Live timers keyed by the delay id's text.
  std::map<std::string, LiveDelay> delays_;
  // Every child and delay requested, by id text → join set of the request.
  std::map<std::string, core::JoinSetId> requests_;
};

}  // namespace stele::storage::memory::internal
