// ExpiredTimersWatcher: the safety net of docs/model.md §5.5. Every
// `tick_sleep` it reads the expired timers and
//   - fires each delay due at `now`: AppendDelayResponse(now, ok) — which
//     unblocks a parent waiting on it; a delay already answered is skipped
//     (no leeway: nobody else fires a delay, so waiting only adds lateness).
//     The running loop also reads the delays due before its next tick and
//     fires each at its due time, so a sleep ends on time, not up to a tick
//     late (only a delay created and due within one tick waits for it);
//   - settles each lock expired at `at = now - leeway` (the leeway lets a
//     live run that is about to write win; ComputeExpiredLockOutcome): a workflow that
//     made progress is Unlocked(at, "made progress"); otherwise the run
//     is timed out — TemporarilyTimedOut(at + backoff) while retries remain,
//     else Finished(ExecutionError{timed_out}) together with the parent's
//     response for a child. Every write names ExpiredLock.next_version, so
//     a worker that wrote meanwhile wins and the watcher's write is dropped.
//     The timeout's reason (outcome.h, ExpiredLockReason) names the lease,
//     read from the run's Locked event, and the *_lock_expiry_setting of
//     its kind;
//   - ends each execution past its deadline (core::ExecutionPolicy) as
//     executor/deadline.h says: a workflow is terminated `timed_out` with
//     its subtree, an activity finished `timed_out` and its local run
//     stopped.
//
// Threading: Start/Stop from one controlling thread; TickForTest must not
// run concurrently with a Start()ed watcher. HandleExpiredTimers is
// thread-safe (it only uses the thread-safe connection) and may write from
// up to `parallel_writes` short-lived threads of its own during a pass; a
// started watcher keeps its helper threads instead.
// Ownership: owns its connection and thread, shares the Clock.
// Stop (or destroy) it before closing the pool.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "base/clock.h"
#include "base/result.h"
#include "executor/cancel_registry.h"
#include "storage/db_connection.h"

namespace stele::executor {

class HelperThreads;  // helper_threads.h

inline constexpr std::string_view kDefaultLockExpirySetting =
    "the lock_expiry of the executor that locked it";

struct ExpiredTimersWatcherOptions {
  // Pause between ticks (each is three indexed queries: due timers, locks
  // past the leeway, delays due before the next tick). Bounds how late a
  // lock is settled, and a delay that was created less than a tick before
  // it is due.
  std::chrono::milliseconds tick_sleep{10};
  // Subtracted from now for locks: an expired lock is settled only once it
  // is this late. Delays fire on time.
  std::chrono::milliseconds leeway{500};
  // Timers handled at once (threads of a busy tick): concurrent writes
  // share commits, so a burst of due timers costs a few fsyncs, not one each.
  uint32_t parallel_writes = 16;
  // Where an activity's / a workflow's lease is set, in the words of the
  // embedding program (named by the reason of the timeouts the watcher
  // records).
  std::string activity_lock_expiry_setting = std::string(kDefaultLockExpirySetting);
  std::string workflow_lock_expiry_setting = std::string(kDefaultLockExpirySetting);
  // Running activities of this process: one past its execution's deadline
  // is told to stop (executor/deadline.h). May be null.
  std::shared_ptr<CancelRegistry> cancel_registry;
};

struct WatcherTickProgress {
  uint32_t expired_locks = 0;      // expired locks this tick settled
  uint32_t expired_delays = 0;     // delays this tick fired
  uint32_t expired_deadlines = 0;  // executions this tick timed out (or asked to end)
  friend bool operator==(const WatcherTickProgress&, const WatcherTickProgress&) = default;
};

// One pass over the timers expired at `at`. Failures of single timers are
// logged and skipped (a lost race is normal); only reading the timers can
// fail the pass (Generic).
Result<WatcherTickProgress, storage::DbErrorGeneric> HandleExpiredTimers(storage::DbConnection& db,
                                                                         DateTime at);
// The watcher's pass: delays due at `now`, locks expired at `now - lock_leeway`,
// up to `parallel_writes` of them written concurrently.
Result<WatcherTickProgress, storage::DbErrorGeneric> HandleExpiredTimers(
    storage::DbConnection& db, DateTime now, std::chrono::milliseconds lock_leeway,
    uint32_t parallel_writes,
    std::string_view activity_lock_expiry_setting = kDefaultLockExpirySetting,
    std::string_view workflow_lock_expiry_setting = kDefaultLockExpirySetting,
    CancelRegistry* cancel_registry = nullptr);

class ExpiredTimersWatcher {
 public:
  // REQUIRES: db non-null.
  ExpiredTimersWatcher(std::unique_ptr<storage::DbConnection> db, SharedClock clock,
                       ExpiredTimersWatcherOptions options = {});
  // Stops.
  ~ExpiredTimersWatcher();
  ExpiredTimersWatcher(const ExpiredTimersWatcher&) = delete;
  ExpiredTimersWatcher& operator=(const ExpiredTimersWatcher&) = delete;

  // Starts ticking on its own thread. REQUIRES: not started.
  void Start();
  // Finishes the tick in progress and joins the thread. Idempotent.
  void Stop();

  // Exactly one tick of the loop, at `now` (timers expired at now - leeway).
  Result<WatcherTickProgress, storage::DbErrorGeneric> TickForTest(DateTime now);

  // Executions this watcher ended at their deadline since it was made
  // (WatcherTickProgress::expired_deadlines summed: each deadline is acted
  // on once, by one watcher). Thread-safe.
  uint64_t expired_deadlines() const { return expired_deadlines_.load(); }

 private:
  void LoopMain();

  const std::unique_ptr<storage::DbConnection> db_;
  const SharedClock clock_owner_;
  const Clock& clock_;  // *clock_owner_
  const ExpiredTimersWatcherOptions options_;

  // The threads that fire a burst of due timers with the loop's own
  // (helper_threads.h); Run is only called from the loop or TickForTest.
  const std::unique_ptr<HelperThreads> helpers_;
  std::atomic<uint64_t> expired_deadlines_{0};
  std::mutex mu_;
  std::condition_variable wakeup_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace stele::executor
