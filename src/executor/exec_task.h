// ExecTask: the executor of one component — the lock → run → record loop of
// docs/model.md §1.2 steps 3–5 and §5.1.
//
// Each tick (fresh RunId): take up to `batch_size` permits from the shared
// ConcurrencyLimiter, lock that many pending executions (by the worker's
// ffqns or by the component digest), run `Worker::Run` for each on a pool
// thread, record each result through ComputeOutcome/ApplyOutcome
// (executor/outcome.h), release the permit. Between ticks the loop waits
// for new pending work (DbExecutor::WaitForPending*, at most `tick_sleep`),
// or for a free permit when it had none.
//
// Lock deadline: for activity components a deadline watchdog (one thread,
// reading the Clock) fires a run's CancellationToken once the Clock reaches
// its lock_expires_at; whatever that run then returns is recorded as
// TemporaryTimeout (retried or final per the retry policy). Its reason names
// the limit and `lock_expiry_setting`, as it does for a TemporaryTimeout a
// worker returns without a reason of its own (a command its supervisor
// killed at the deadline). Workflow
// components manage their lease themselves (lock extension; a workflow that
// finds its lock expired returns DbUpdatedByWorkerOrWatcher), so their runs
// are never timed out by the executor.
//
// Shutdown (Stop): no more locking; every run's token is cancelled; a run
// that then returns an error (typically FatalError::Cancelled) is recorded
// as Unlocked(now, "executor shutting down") instead, so the execution is
// pending again at once instead of waiting for its lock to expire; a run
// that still returns Ok is recorded as Finished. Runs that have not
// returned within `shutdown_grace` get that Unlocked written for them at
// their locked version, and their results are discarded when they come.
//
// Cancellation (docs/model.md §9.1): when ExecutorOptions::cancel_registry
// is set, each run is registered there under its execution id from the
// moment it is locked until its worker returns. An API-side cancel commits
// Finished(Cancelled) first and then notifies the registry
// (executor::CancelActivity in cancel_registry.h does both); the run's
// CancellationToken fires at once, on the notifying thread. The deadline
// watchdog then leaves the run alone (it is not a timeout). Whatever the
// worker returns afterwards — FatalError::Cancelled, Ok, an error — is
// mapped as usual and its append, fenced by the run's version, loses to the
// committed cancellation: that lost race is the expected end of a
// cancelled run, logged at info level, and the permit is released as for
// any other run. Nothing is ever recorded over the cancellation.
// A cancel that does not pass through this process's registry (another
// process on a shared database, a tool writing to it) is found by the
// cancel watcher: every `cancel_watch_interval` on the Clock, an activity
// executor reads the last event of each execution it is running and
// treats one that is Finished (by anyone) exactly like a registry
// notification. It runs on the watchdog thread, and in TickForTest.
// A pause (docs/model.md §9.6) stops a running attempt the same way: the
// service notifies the registry after committing Paused, the watcher finds
// a Paused last event; the attempt's outcome loses to the fence and the
// execution runs again after the resume, no retry counted.
//
// Recording: the outcome append is retried when it fails with a Generic
// database error (a transient blip: busy, connection reset, timeout) —
// `outcome_write_attempts` in all, with exponential backoff measured on the
// Clock (polled every `deadline_check_interval`; Stop cuts the waits short).
// An attempt after a Generic error that then loses the version race checks
// whether the previous attempt committed after all (a lost acknowledgement:
// the last event is exactly the planned one) and counts that as written.
// Other errors are not retried (VersionConflict and friends: someone else
// wrote; ValidationFailed/NotFound: retrying cannot help). When the
// attempts run out nothing is written, the permit is released and the
// expired-timers watcher settles the lock after it expires. This differs on
// purpose from a worker's own DB errors (WorkerDbError → write nothing):
// those happened inside the run, while this write records a finished run.
// A workflow run that ends with events still to write records its Finished
// itself, in the same transaction (runtime/workflow/workflow_run.h,
// Finish), and returns DbUpdatedByWorkerOrWatcher: nothing is left to
// record here. WorkerContext::max_result_bytes tells it the limit above.
//
// Threading: Start/Stop from one controlling thread. The *ForTest methods
// may not run concurrently with Start()ed operation or with each other.
// REQUIRES: workers eventually return after their token fires (Stop joins
// the worker threads).
// Ownership: owns its DbExecutor connection and threads; shares the worker
// and the limiter and the Clock. Stop (or destruction)
// before closing the pool the connection came from.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/cancellation.h"
#include "base/clock.h"
#include "base/result.h"
#include "core/component_id.h"
#include "core/ids.h"
#include "core/retry_config.h"
#include "executor/cancel_registry.h"
#include "executor/concurrency_limiter.h"
#include "executor/latency_histogram.h"
#include "executor/outcome.h"
#include "executor/response_handoff.h"
#include "executor/worker.h"
#include "executor/worker_pool.h"
#include "storage/db_executor.h"

namespace stele::executor {

enum class LockingStrategy {
  kByFfqn,         // LockPendingByFfqns(worker->ExportedFunctions())
  kByComponentId,  // LockPendingByComponentId(component_id)
};

struct ExecutorOptions {
  // Most executions locked per tick (fewer when permits are short).
  uint32_t batch_size = 5;
  // Lease of each lock; for activities the longest a run may take.
  std::chrono::milliseconds lock_expiry{1000};
  // Where lock_expiry is set, in the words of the embedding program; named
  // by the reason of every timeout this executor records (outcome.h,
  // DeadlineReason), so a user learns which setting to change.
  std::string lock_expiry_setting = "ExecutorOptions::lock_expiry";
  // Longest wait for new pending work between ticks.
  std::chrono::milliseconds tick_sleep{200};
  LockingStrategy locking_strategy = LockingStrategy::kByFfqn;
  // Written into every Locked event; its type decides whether runs are
  // timed out by the executor (activities) or not (workflows).
  core::ComponentId component_id = core::ComponentId::DummyActivity();
  // Copied into every Locked event (docs/model.md §5.3): activities default
  // to 5 retries with 100 ms exponential backoff.
  core::ComponentRetryConfig retry_config{5u, core::Duration::FromMillis(100)};
  core::ExecutorId executor_id = core::ExecutorId::Generate();
  // Shared by executors to bound runs in flight process-wide; nullptr gives
  // this executor a private limiter of `batch_size` permits.
  std::shared_ptr<ConcurrencyLimiter> concurrency_limiter = nullptr;
  // How often the deadline watchdog re-reads the Clock at most (it also
  // wakes at the earliest deadline).
  std::chrono::milliseconds deadline_check_interval{50};
  // How long Stop waits for cancelled runs before unlocking their
  // executions itself.
  std::chrono::milliseconds shutdown_grace{1000};
  // Process-wide registry that API-side cancels notify (see
  // "Cancellation" above); nullptr: runs are not registered, and a
  // cancelled run stops only at its deadline.
  std::shared_ptr<CancelRegistry> cancel_registry = nullptr;
  // Activity executors: how often the cancel watcher (see "Cancellation")
  // reads the state of the executions they are running, on the Clock.
  // 0 disables it. Workflow executors never watch (their runs are not
  // cancellable; a run that lost its execution fails on its next write).
  std::chrono::milliseconds cancel_watch_interval{1000};
  // Outcome writes that fail with a Generic (transient) error are tried up
  // to this many times in all, waiting outcome_write_backoff * 2^(k-1) on
  // the Clock before attempt k+1 (see "Recording" above). 1: no retry.
  uint32_t outcome_write_attempts = 4;
  std::chrono::milliseconds outcome_write_backoff{50};
  // A run whose result (ok or err value, as JSON) is larger finishes with
  // ExecutionError "result too large" instead: it would come out as large
  // on every retry, and a parent would have to load it. 0: no limit.
  uint64_t max_result_bytes = 16u << 20;
  // A finished child's result is offered to its parent's warm run, which
  // records it with its own next step (executor/response_handoff.h); the
  // run waits up to `handoff_take_timeout` for the parent to take it, then
  // records it itself. nullptr: every result is recorded here.
  std::shared_ptr<ResponseHandoff> response_handoff = nullptr;
  std::chrono::milliseconds handoff_take_timeout{100};
};

class ExecTask {
 public:
  // REQUIRES: worker, db, clock non-null; options.batch_size > 0. The task
  // shares the clock: its threads read it until Stop has joined them.
  ExecTask(std::shared_ptr<Worker> worker, std::unique_ptr<storage::DbExecutor> db,
           SharedClock clock, ExecutorOptions options);
  // Stops (see Stop).
  ~ExecTask();
  ExecTask(const ExecTask&) = delete;
  ExecTask& operator=(const ExecTask&) = delete;

  // Starts the lock loop on its own thread. REQUIRES: not started, not stopped.
  void Start();
  // Graceful shutdown (see above); returns when every run has been recorded
  // and every thread joined. Idempotent; the task cannot be restarted.
  void Stop();

  // --- Eager dispatch (executor/local_dispatch.h) ---
  // A slot on this task for an execution that another component of this
  // process locks for it in the transaction that creates it: a permit and
  // the Locked event to write (this task's component, executor id and retry
  // config, a fresh RunId, the lease from `now`). Dropping it unused
  // releases the permit.
  struct Reservation {
    ConcurrencyLimiter::Permit permit;
    core::Locked locked;
  };
  // nullopt once Stop has begun or when no permit is free. Thread-safe.
  std::optional<Reservation> TryReserve(DateTime now);
  // Runs `locked` (locked with `reservation.locked`) exactly as if this
  // task had locked it in a tick. A task that began stopping meanwhile
  // writes Unlocked for it at once instead (the shutdown unlock), so it is
  // pending again without waiting for the lease. Thread-safe.
  void RunLocked(storage::LockedExecution locked, Reservation reservation);

  const ExecutorOptions& options() const { return options_; }
  // Latencies of the storage calls, for monitoring (thread-safe).
  const ExecTaskStats& stats() const { return stats_; }

  // --- Test hooks: deterministic ticks driven by a ManualClock. ---

  // One locking round at `now` with a fresh RunId, synchronously: first
  // times out the activity runs whose deadline is <= now and, when the
  // cancel watch is due at `now`, stops the runs whose executions are
  // finished, and waits until those, and every run whose worker has
  // already returned, are recorded; then locks and waits until every run
  // it spawned has been recorded. Returns the ids it locked.
  Result<std::vector<ExecutionId>, storage::DbErrorGeneric> TickForTest(DateTime now);
  // Only the locking round at `now`; the spawned runs keep going (their
  // deadlines are watched against the Clock, or by a later TickForTest).
  Result<std::vector<ExecutionId>, storage::DbErrorGeneric> SpawnForTest(DateTime now);
  // Runs spawned and not yet recorded.
  size_t InFlightCountForTest() const;

 private:
  struct InFlight;
  struct TickOutcome {
    std::vector<ExecutionId> locked;
    std::vector<uint64_t> run_seqs;
    bool no_permits = false;
  };

  Result<TickOutcome, storage::DbErrorGeneric> Tick(DateTime now, const core::RunId& run_id);
  // Starts a run of `locked` holding `permit`. With `only_if_running`
  // (eager dispatch, from any thread) it does nothing and returns false once
  // Stop has begun; the loop thread's own spawns always start.
  bool Spawn(storage::LockedExecution locked, ConcurrencyLimiter::Permit permit,
             TickOutcome& outcome, bool only_if_running = false);
  // Runs the worker, records the outcome, releases `permit`.
  void RunOne(const std::shared_ptr<InFlight>& run, const storage::LockedExecution& locked,
              ConcurrencyLimiter::Permit& permit, CancelRegistry::Registration& registration);
  // Sleeps `d` unless Stop is called meanwhile.
  void SleepUnlessStopped(std::chrono::milliseconds d);
  // Times out activity runs whose deadline <= now; returns their seqs.
  std::vector<uint64_t> ExpireDeadlines(DateTime now);
  // The cancel watcher, when due at `now`: fires the tokens of runs whose
  // executions are Finished in the database; returns their seqs.
  std::vector<uint64_t> WatchCancels(DateTime now);
  bool WatchesCancels() const;
  void WaitForRuns(const std::vector<uint64_t>& seqs);
  // ApplyOutcome with the retries of "Recording" above.
  Result<ApplyStatus, storage::DbErrorWrite> RecordOutcome(const PlannedWrite& write);
  // Waits until the Clock reaches `t` or Stop begins stopping the runs.
  void WaitForClock(DateTime t);
  void LoopMain();
  void WatchdogMain();

  const std::shared_ptr<Worker> worker_;
  const std::unique_ptr<storage::DbExecutor> db_;
  const SharedClock clock_owner_;
  const Clock& clock_;  // *clock_owner_
  const ExecutorOptions options_;
  const std::shared_ptr<ConcurrencyLimiter> limiter_;
  const bool enforce_deadlines_;
  internal::WorkerThreadPool pool_;
  ExecTaskStats stats_;

  mutable std::mutex mu_;
  std::condition_variable runs_changed_;                     // a run finished or the set changed
  std::condition_variable watchdog_wakeup_;                  // new deadline or stopping
  std::map<uint64_t, std::shared_ptr<InFlight>> in_flight_;  // guarded by mu_
  uint64_t next_seq_ = 1;                                    // guarded by mu_
  bool watchdog_stop_ = false;                               // guarded by mu_
  bool loop_stop_ = false;                                   // guarded by mu_
  bool runs_stopping_ = false;                               // guarded by mu_
  DateTime next_cancel_watch_;                               // guarded by mu_
  std::condition_variable retry_wakeup_;                     // runs_stopping_ set
  std::condition_variable loop_wakeup_;                      // loop_stop_ set
  bool started_ = false;
  bool stopped_ = false;

  CancellationToken stop_loop_;
  std::thread loop_thread_;
  std::thread watchdog_thread_;
};

}  // namespace stele::executor
