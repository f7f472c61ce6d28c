// Internal state of a WorkflowRun: the replay cursor, the indices derived
// from processed events, the cache of non-blocking events and the
// database-facing steps (flush, lock extension, waiting for responses).
// workflow_run.cc composes the public calls from these steps.
//
// Every index here is updated by Apply(), which sees each processed event
// exactly once (a replayed event when it matches, a new event when it is
// cached), so a run costs O(events) in total.
//
// Threading: none; owned by one WorkflowRun.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/workflow/workflow_prng.h"
#include "runtime/workflow/workflow_run.h"
#include "storage/requests.h"

namespace stele::runtime::workflow::internal {

// One submission of a join set whose response a JoinNext has not consumed.
struct Submission {
  std::variant<core::ExecutionIdDerived, core::DelayId> id;
  std::optional<core::FunctionFqn> ffqn;     // children only
  std::optional<DateTime> delay_expires_at;  // delays only
};

struct JoinSetState {
  explicit JoinSetState(core::JoinSetId join_set_id) : id(std::move(join_set_id)) {}
  core::JoinSetId id;
  uint64_t submissions = 0;  // processed JoinSetRequests
  uint64_t join_nexts = 0;   // processed JoinNexts (closing ones included)
  bool closed = false;
  // Unconsumed submissions by id text, in submission order (for closing).
  std::vector<std::string> order;
  std::unordered_map<std::string, Submission> unconsumed;
};

class RunState {
 public:
  RunState(executor::WorkerContext ctx, WorkflowRunDeps deps, WorkflowRunOptions options);
  // Records (or gives back to their executors) children's results taken
  // from the handoff and not yet written.
  ~RunState();
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  executor::WorkerContext ctx;
  const WorkflowRunDeps deps;
  const WorkflowRunOptions options;
  std::optional<Interruption> interruption;
  WorkflowPrng prng;

  bool replaying() const { return cursor_ < history_.size(); }
  core::Version version() const { return version_; }
  DateTime lock_expires_at() const { return lock_expires_at_; }
  // WorkflowRun::Now: the current step's time once read (reset when the
  // run may have waited, AwaitJoinNextResponse), and the latest time any
  // step had, which a new step's time never goes below.
  std::optional<DateTime> step_time;
  std::optional<DateTime> last_step_time;
  DateTime Now() const { return deps.clock->Now(); }

  // Records `i` (the run is poisoned from now on) and returns it.
  Unexpected<Interruption> Interrupt(Interruption i);
  Unexpected<Interruption> Interrupt(Interruption::Kind kind, std::string reason);
  Unexpected<Interruption> DbFailure(std::string_view what, storage::DbErrorWrite error);

  // At the start of every call: the poisoned state, cancellation, the
  // lease (extending it when due) and the per-run event limit.
  Result<void, Interruption> Begin();
  // WorkflowRun::EnsureLease.
  Result<DateTime, Interruption> EnsureLease(std::chrono::milliseconds needed);

  // Matches `key` against the event under the cursor. Returns the recorded
  // event when it matches (processed, nothing written), nullptr in new
  // territory (`key` is processed and cached, with `child` to create in the
  // same transaction), or kNondeterminism.
  Result<const core::HistoryEvent*, Interruption> Step(
      core::HistoryEvent key, std::optional<storage::CreateRequest> child = std::nullopt);
  // Writes the cached events (and children) in one transaction. With
  // `dispatch`, children due now that an executor of this process serves
  // are locked for it and handed over.
  Result<void, Interruption> Flush(bool dispatch = true);
  // Finish's write (see WorkflowRun::Finish). With anything still to write
  // (cached events, results taken in memory) writes it and this
  // execution's Finished — for a child, with its response to its parent —
  // in one transaction, and returns true. Returns false, having written
  // nothing more than Flush would, when nothing else was pending (the
  // executor writes Finished and may hand it to a warm parent), when the
  // result is over ctx.max_result_bytes (the executor records that error),
  // and in the one case no single call covers (a child workflow creating
  // children in its last step).
  Result<bool, Interruption> WriteFinished(const core::SupportedFunctionReturnValue& value);
  // Flush once the cache holds non_blocking_event_batching events.
  Result<void, Interruption> MaybeFlush();

  // --- Join sets ---
  JoinSetState* FindJoinSet(const core::JoinSetId& id);
  const JoinSetState* FindJoinSet(const core::JoinSetId& id) const;
  // An open named or generated join set, else kConstraintViolation.
  Result<JoinSetState*, Interruption> OpenJoinSet(const core::JoinSetId& id, std::string_view what);
  uint64_t JoinSetCount(core::JoinSetKind kind) const;
  // The join set of a channel (`m:<channel>`), made known to the run at the
  // first receive of the channel (no event: a channel's join set is never
  // created). REQUIRES: a kMessages join set id.
  JoinSetState& ChannelJoinSet(const core::JoinSetId& id);
  // Sends processed so far (the index of the next send's message id).
  uint64_t sends() const { return sends_; }
  bool NamedJoinSetExists(const std::string& name) const { return named_.contains(name); }
  // Named and generated join sets in creation order.
  const std::vector<core::JoinSetId>& created_join_sets() const { return created_order_; }

  // The JoinNext key for `join_set` with the lease the current strategy
  // gives it (the lock expiry, or now when the run will unload).
  core::HistoryJoinNext JoinNextKey(const core::JoinSetId& join_set,
                                    std::optional<core::FunctionFqn> requested_ffqn, bool closing);
  // After a JoinNext on `join_set` was processed (it was the k-th): writes
  // the cache when the JoinNext is new, then returns the k-th response of
  // the join set (consuming it), waiting for it per the blocking strategy.
  // Unless `closing`: nullopt when a cancel request directly after the
  // JoinNext interrupted it (the slot's response is discarded), and
  // kTerminated when the response is the join set's grace delay.
  Result<std::optional<JoinSetResponseValue>, Interruption> AwaitJoinNextResponse(
      const core::JoinSetId& join_set, bool closing = false);

  // --- Cancellation (workflow_run.h, "Cancellation") ---
  // Passes the cancel requests under the cursor. kTerminated when a
  // terminate request is known, or — in new territory — when the grace
  // period of a request is over (a terminate request is recorded first).
  Result<void, Interruption> PassCancelRequests();
  // True once per request: the blocking call about to run returns
  // "cancelled" instead.
  bool TakeCancellation();
  bool cancel_requested() const { return cancel_request_.has_value(); }
  // The first terminate request was the execution's deadline
  // (HistoryCancelRequest::timed_out): it ends `timed_out`, not `cancelled`.
  bool terminated_by_deadline() const { return terminated_by_deadline_; }
  // After the workflow saw the cancellation: a delay expiring with the
  // grace period in `join_set`, once per join set, before it is awaited.
  Result<void, Interruption> AddGraceDelay(JoinSetState& join_set);
  // Submissions of `join_set` the workflow made itself (its grace delay
  // excluded).
  uint64_t GuestSubmissions(const JoinSetState& join_set) const;
  // The end of a cancelled workflow begins: no later request or grace
  // delay changes anything.
  void BeginEndCancelled() { ending_cancelled_ = true; }
  // Writes the cache, then cancels every open activity and delay and sends
  // every open child workflow a terminate request (idempotent).
  Result<void, Interruption> CancelOpenSubtree();
  // kTerminated with the request's reason.
  Interruption TerminatedInterruption() const;
  // Every join set (one-off ones included) in creation order.
  const std::vector<core::JoinSetId>& all_join_sets() const { return all_join_sets_; }

  // The recorded event the next Step meets (cancel requests passed), or
  // nullptr in new territory.
  const core::HistoryEvent* Recorded();
  // Takes the responses that arrived since the run last looked, without
  // waiting (JoinNextTry in new territory).
  Result<void, Interruption> PollResponses();
  // Whether the k-th response of `join_set` (arrival order) is known.
  bool ResponseKnown(const core::JoinSetId& join_set, uint64_t k) const;
  // A non-blocking JoinNext's first half: when no response is there for
  // `join_set`'s next JoinNext (as recorded, or as polled now in new
  // territory), steps HistoryJoinNextTry and returns true; else false, and
  // the caller steps the JoinNext.
  Result<bool, Interruption> StepJoinNextTryIfNothing(const JoinSetState& join_set);

  // Child results consumed by processed JoinNexts.
  std::optional<std::pair<core::FunctionFqn, const core::SupportedFunctionReturnValue*>>
  ProcessedChildResult(const core::ExecutionIdDerived& child) const;

  std::optional<core::FunctionFqn> ChildFfqn(const std::string& child_id) const;

  // Cancels one unawaited submission (docs/model.md §8.4, §9): a delay gets
  // its cancelled response, an activity Finished(cancelled) with its
  // response to this run, and its local run, if any, a fired token (through
  // deps.cancel_registry). A child workflow is left running. Idempotent.
  // REQUIRES: the submission is written (not in the cache).
  Result<void, storage::DbErrorWrite> CancelSubmission(const Submission& submission, DateTime now);

  // The workflow failed permanently (a fatal interruption other than
  // kCancelled, or a trap): writes the cached events (no eager dispatch),
  // then cancels every unawaited activity and delay of every join set, as
  // a close would but without closing JoinNexts and without running guest
  // code. Best effort: failures are logged, never returned; what could not
  // be written is not cancelled. Runs once per run.
  void CancelUnawaitedOnFailure();

  uint64_t events_written() const { return events_written_; }
  // "version N: <event>" of the first unprocessed history event.
  std::string DescribeUnprocessed() const;

 private:
  // Writes `batch` (the cache, possibly followed by Finished) with the
  // cached children (locked for a local executor with `dispatch`) and the
  // taken outcomes in one transaction; clears the cache.
  Result<void, Interruption> WriteStep(const std::vector<storage::AppendRequest>& batch,
                                       bool dispatch);
  // Updates the indices for a processed event.
  void Apply(const core::HistoryEvent& event);
  // Moves the cursor past the cancel requests under it, remembering them.
  void SkipCancelRequests();
  void AddResponses(std::vector<core::JoinSetResponseEventOuter> responses);
  // Extends the lock by appending Locked (same executor and run).
  Result<void, Interruption> ExtendLock(DateTime now);
  // ExtendLock, unless the extension would exceed max_events_per_execution
  // (kConstraintViolation).
  Result<void, Interruption> ExtendLockWithinLimits(DateTime now);
  // Waits (kAwait) until the join set has `k` responses or the lease /
  // warm-wait bound ends (kBlocked). With `slot`, a result handed over
  // there (its offer cancels `wake`) counts as a response.
  Result<void, Interruption> WaitForResponses(const core::JoinSetId& join_set, uint64_t k,
                                              executor::ResponseHandoff::Slot* slot = nullptr,
                                              const CancellationToken* wake = nullptr);
  // A handoff slot for the one child `state` still awaits, when this run
  // may take its result in memory; nullptr otherwise.
  std::unique_ptr<executor::ResponseHandoff::Slot> OpenHandoffSlot(const JoinSetState& state,
                                                                   const CancellationToken& wake);
  // Makes a handed-over result part of the run (a response at the next
  // cursor) and keeps it to be written with the next Flush.
  void AcceptHandedOver(executor::PlannedWrite write,
                        std::shared_ptr<executor::ResponseHandoff::Ticket> ticket);
  // Resolves every taken result's ticket and forgets them.
  void ResolveTaken(bool recorded);
  // Whether everything `state` awaits is a delay expiring after the lease:
  // a warm wait could not end before the lease does (short of a cancel),
  // so even a kAwait run unloads at once and frees its executor slot.
  bool OnlyDelaysBeyondLease(const JoinSetState* state) const;
  JoinSetResponseValue Consume(JoinSetState& state, size_t response_idx);

  std::vector<std::pair<core::HistoryEvent, core::Version>> history_;
  size_t cursor_ = 0;
  core::Version version_;
  DateTime lock_expires_at_;

  // Children's results taken from the handoff: written by the next Flush,
  // before anything else of this run that depends on them.
  struct TakenOutcome {
    storage::ChildOutcome outcome;
    std::shared_ptr<executor::ResponseHandoff::Ticket> ticket;
  };
  std::vector<TakenOutcome> taken_;

  // Cache of non-blocking events.
  std::vector<storage::AppendRequest> cache_;
  std::vector<storage::CreateRequest> cache_children_;
  uint64_t events_written_ = 0;

  // Responses in arrival order and per join set.
  std::vector<core::JoinSetResponseEventOuter> responses_;
  std::map<core::JoinSetId, std::vector<size_t>> responses_by_join_set_;

  std::map<core::JoinSetId, JoinSetState> join_sets_;
  // Sum of every join set's `unconsumed`: submissions whose response this
  // run has not consumed yet.
  size_t unconsumed_total_ = 0;
  std::vector<core::JoinSetId> created_order_;
  std::set<std::string> named_;
  uint64_t one_off_count_ = 0;
  uint64_t generated_count_ = 0;
  std::unordered_map<std::string, core::FunctionFqn> child_ffqn_;
  std::unordered_map<std::string, size_t> processed_child_responses_;
  bool failure_cancels_done_ = false;
  uint64_t sends_ = 0;

  // Every join set (one-off ones included) in creation order.
  std::vector<core::JoinSetId> all_join_sets_;
  std::optional<core::HistoryCancelRequest> cancel_request_;
  bool terminate_requested_ = false;
  bool terminated_by_deadline_ = false;
  std::string terminate_reason_;
  bool cancellation_taken_ = false;
  bool ending_cancelled_ = false;
  // Grace delays by join set, and their ids.
  std::map<core::JoinSetId, std::string> grace_delays_;
  std::set<std::string> grace_delay_ids_;
};

// "<kind>: <payload>" of a history event for nondeterminism messages.
std::string DescribeHistoryEvent(const core::HistoryEvent& event);

}  // namespace stele::runtime::workflow::internal
