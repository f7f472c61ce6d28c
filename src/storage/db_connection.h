// DbConnection: the full read/write contract used by workers, the
// expired-timers watcher and services. Extends DbExecutor.
//
// Threading: safe for concurrent use. Notifications are hints; the
// database is the truth: every wait is bounded and re-checks state.
#pragma once

#include <vector>

#include "core/backtrace.h"
#include "storage/db_executor.h"
#include "storage/watch_registry.h"

namespace stele::storage {

class DbConnection : public DbExecutor {
 public:
  // Appends a delay's response (ok = expired, !ok = cancelled) to
  // `execution_id`, deletes the live timer and may unblock the execution.
  // Idempotent per delay id: a second response reports AlreadyFinished /
  // AlreadyCancelled (from the first response) and writes nothing.
  // Errors: NotFound, writing nothing, when there is no such execution or
  // it never requested `delay_id` in `join_set_id` (request_rules.h);
  // Generic.
  virtual Result<AppendDelayResponseOutcome, DbErrorWrite> AppendDelayResponse(
      DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
      const core::DelayId& delay_id, bool ok) = 0;

  // Delivers a message (docs/model.md §3.5): appends
  // MessageReceived{message_id, body} to the responses of `execution_id` in
  // the channel's join set `join_set_id` (`m:<channel>`), which unblocks an
  // execution blocked on that join set. In this order
  // (request_rules.h, "Messages"):
  //  1. ValidationFailed, writing nothing, for a join set that is not a
  //     channel's or an invalid message id;
  //  2. NotFound when there is no such execution;
  //  3. a message of that id delivered to it before (ids are unique per
  //     execution): kAlreadyDelivered, writing nothing, when its channel
  //     and body are the same — whatever state the execution is in now —
  //     otherwise Conflict;
  //  4. IllegalState("already finished") when it is finished;
  //  5. kDelivered: written, and waiters on its responses woken.
  // Errors otherwise: Generic.
  virtual Result<AppendMessageOutcome, DbErrorWrite> AppendMessage(
      DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
      const core::MessageReceived& message) = 0;

  // Convenience forms of WriteStep (db_executor.h), for callers with less
  // to write; each is exactly that StepWrite.
  //
  // The events of `batch` at `version`, `version+1`, ...; returns the next
  // version.
  Result<Version, DbErrorWrite> AppendBatch(DateTime current_time,
                                            const std::vector<AppendRequest>& batch,
                                            const ExecutionId& execution_id, Version version);
  // ... and the children they request created.
  Result<Version, DbErrorWrite> AppendBatchCreateNewExecution(
      DateTime current_time, const std::vector<AppendRequest>& batch,
      const ExecutionId& execution_id, Version version,
      const std::vector<CreateRequest>& child_requests);
  // ... and those named in `locks` locked as LockOne(current_time, ...,
  // child, Version(1), ...) would lock them.
  Result<CreatedAndLockedChildren, DbErrorWrite> AppendBatchCreateAndLockChildren(
      DateTime current_time, const std::vector<AppendRequest>& batch,
      const ExecutionId& execution_id, Version version,
      const std::vector<CreateRequest>& child_requests, const std::vector<ChildLock>& locks);
  // ... with `outcomes` written first.
  Result<CreatedAndLockedChildren, DbErrorWrite> AppendOutcomesAndBatch(
      DateTime current_time, const std::vector<ChildOutcome>& outcomes,
      const std::vector<AppendRequest>& batch, const ExecutionId& execution_id, Version version,
      const std::vector<CreateRequest>& child_requests, const std::vector<ChildLock>& locks);

  // Errors: NotFound (no execution or no such version), Generic.
  virtual Result<core::ExecutionEvent, DbErrorRead> GetExecutionEvent(
      const ExecutionId& execution_id, Version version) = 0;

  // The Created event as a request. Errors: NotFound, Generic (log does not
  // start with Created).
  virtual Result<CreateRequest, DbErrorRead> GetCreateRequest(const ExecutionId& execution_id);

  virtual Result<core::PendingState, DbErrorRead> GetPendingState(
      const ExecutionId& execution_id) = 0;

  // Locks with lock_expires_at <= at and delays with expires_at <= at.
  virtual Result<std::vector<ExpiredTimer>, DbErrorGeneric> GetExpiredTimers(DateTime at) = 0;

  // Creates an execution: Created at version 0, state PendingAt(scheduled_at).
  // Returns Version(1). Errors: IllegalState when the id exists (the caller
  // decides idempotency by comparing params), ValidationFailed (also for a
  // child: children are created with their parent's request,
  // ValidateStandaloneCreate), Generic.
  virtual Result<Version, DbErrorWrite> Create(const CreateRequest& req) = 0;

  // Responses of `execution_id` from index `start_idx` (0-based, arrival
  // order). Returns at once when there are any; otherwise waits for the
  // next one. REQUIRES: start_idx <= number of responses.
  // Errors: Timeout(kTimeout | kCancel), NotFound, Generic.
  virtual Result<std::vector<core::JoinSetResponseEventOuter>, DbErrorReadWithTimeout>
  SubscribeToNextResponses(const ExecutionId& execution_id, uint32_t start_idx,
                           const WaitOptions& wait) = 0;

  // The result once the execution is Finished; waits (bounded by `wait`,
  // unbounded when nullopt) until then.
  virtual Result<core::SupportedFunctionReturnValue, DbErrorReadWithTimeout> WaitForFinishedResult(
      const ExecutionId& execution_id, const std::optional<WaitOptions>& wait) = 0;

  // Returns once the log of `execution_id` holds a Publish event
  // (HistoryPublish, docs/model.md §8.6) at version >= `since`, or the
  // execution is finished (no value can come after that); at once when
  // either holds already. Woken after the commit that writes a Publish or
  // a Finished event; bounded by `wait` like every wait. The caller reads
  // the log to learn what was published.
  // Errors: Timeout(kTimeout | kCancel), NotFound, Generic.
  virtual Result<void, DbErrorReadWithTimeout> WaitForPublish(const ExecutionId& execution_id,
                                                              Version since,
                                                              const WaitOptions& wait) = 0;

  // Watches (docs/storage_contract.md "Watches"): the callback form of
  // WaitForFinishedResult, for waits that hold no thread. Calls `on_change`
  // once: after the commit that finishes `execution_id`, or on this thread
  // before returning when it is finished already. It may also fire early,
  // as a hint (the pool closes; a lost notification connection came back):
  // the caller re-reads and watches again when not finished. `on_change`
  // runs on a backend thread, possibly under a backend lock: it must be
  // cheap and must not call into storage (it hands off). Returns the token
  // for Unwatch (0 when it has fired already).
  // Errors: NotFound, Generic (nothing stays registered; the callback may
  // have run as a hint).
  virtual Result<WatchToken, DbErrorRead> WatchFinished(const ExecutionId& execution_id,
                                                        WatchCallback on_change) = 0;
  // As WatchFinished, for the condition of WaitForPublish: a Publish at
  // version >= `since`, or the execution finished. Later Publish events of
  // any version fire it (a hint).
  virtual Result<WatchToken, DbErrorRead> WatchPublish(const ExecutionId& execution_id,
                                                       Version since, WatchCallback on_change) = 0;
  // Cancels a watch: its callback does not start after Unwatch returns
  // (it may be running already). Unknown and fired tokens are ignored.
  virtual void Unwatch(WatchToken token) = 0;

  virtual Result<void, DbErrorWrite> AppendBacktrace(const core::BacktraceInfo& info) = 0;
  virtual Result<void, DbErrorWrite> AppendBacktraceBatch(
      const std::vector<core::BacktraceInfo>& batch) = 0;
  // A run's backtraces, stored without making the run wait where the
  // backend can: they are visible no later than the outcome of any write
  // made through the same pool after this returns (the run's result, which
  // a client may follow with a backtrace request at once). Failures are
  // logged: backtraces are diagnostics. This default stores them with
  // AppendBacktraceBatch before it returns; SQLite queues them on its
  // writer, whose queue is committed in order.
  virtual void StoreBacktraces(std::vector<core::BacktraceInfo> batch);
};

}  // namespace stele::storage
