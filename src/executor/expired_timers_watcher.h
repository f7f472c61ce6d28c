// ExpiredTimersWatcher: the safety net of reference/obelisk.md §2.10. Every
// `tick_sleep` it reads the timers expired at `at = now - leeway` (the
// leeway lets a live run that is about to write win) and
//   - fires each due delay: AppendDelayResponse(at, ok) — which unblocks
//     a parent waiting on it; a delay already answered is skipped;
//   - settles each expired lock (ComputeExpiredLockOutcome): a workflow that
//     made progress is Unlocked(at, "made progress"); otherwise the run
//     is timed out — TemporarilyTimedOut(at + backoff) while retries remain,
//     else Finished(ExecutionError{timed_out}) together with the parent's
//     response for a child. Every write names ExpiredLock.next_version, so
//     a worker that wrote meanwhile wins and the watcher's write is dropped.
//
// Threading: Start/Stop from one controlling thread; TickForTest must not
// run concurrently with a Start()ed watcher. HandleExpiredTimers is
// thread-safe (it only uses the thread-safe connection).
// Ownership: owns its connection and thread; the Clock must outlive it.
// Stop (or destroy) it before closing the pool.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "base/result.h"
#include "storage/db_connection.h"

namespace stele::executor {

struct ExpiredTimersWatcherOptions {
  // Pause between ticks.
  std::chrono::milliseconds tick_sleep{100};
  // Subtracted from now: a timer is handled only once it is this late.
  std::chrono::milliseconds leeway{500};
};

struct WatcherTickProgress {
  uint32_t expired_locks = 0;   // expired locks this tick settled
  uint32_t expired_delays = 0;  // delays this tick fired
  friend bool operator==(const WatcherTickProgress&, const WatcherTickProgress&) = default;
};

// One pass over the timers expired at `at`. Failures of single timers are
// logged and skipped (a lost race is normal); only reading the timers can
// fail the pass (Generic).
Result<WatcherTickProgress, storage::DbErrorGeneric> HandleExpiredTimers(storage::DbConnection& db,
                                                                         DateTime at);

class ExpiredTimersWatcher {
 public:
  // REQUIRES: db non-null.
  ExpiredTimersWatcher(std::unique_ptr<storage::DbConnection> db, const Clock& clock,
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

 private:
  void LoopMain();

  const std::unique_ptr<storage::DbConnection> db_;
  const Clock& clock_;
  const ExpiredTimersWatcherOptions options_;

  std::mutex mu_;
  std::condition_variable wakeup_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace stele::executor
