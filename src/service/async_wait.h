// Waits that hold no thread (ExecutionService::WaitForResultAsync,
// GetValueAsync): a storage watch (docs/storage_contract.md "Watches")
// wakes the wait, one DeadlineTimer thread ends it at its deadline, and a
// CancellationToken ends it early. The database work of every step (the
// re-read after a wake-up) runs on the caller's PostFn, never on a storage,
// timer or cancelling thread.
//
// Threading: thread-safe. Ownership: a wait in flight keeps itself alive
// (its watch, timer and token registrations hold it) until it completes or
// is abandoned; the caller's AsyncWait handle only lets it abandon the
// wait. AsyncWaits (owned by the service) abandons every wait still in
// flight when it is destroyed, before the connection they use goes away.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "base/cancellation.h"
#include "base/result.h"
#include "service/service_error.h"
#include "storage/db_connection.h"

namespace stele::service {

// Runs a task on a thread that may block on the database (a worker pool);
// false, dropping the task, once it cannot (stopping).
using PostFn = std::function<bool(std::function<void()>)>;

// One thread and a min-heap of deadlines. Callbacks run on that thread and
// must be cheap (they hand off).
class DeadlineTimer {
 public:
  using Clock = std::chrono::steady_clock;
  DeadlineTimer() = default;
  ~DeadlineTimer();  // joins the thread; pending callbacks are dropped
  DeadlineTimer(const DeadlineTimer&) = delete;
  DeadlineTimer& operator=(const DeadlineTimer&) = delete;
  // Runs `fn` at `at` (started on first use). Returns the id for Cancel.
  uint64_t Schedule(Clock::time_point at, std::function<void()> fn);
  // After it returns `fn` does not start (it may be running).
  void Cancel(uint64_t id);

 private:
  void Run();
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                                                              // guarded by mu_
  uint64_t next_ = 1;                                                              // guarded by mu_
  std::multimap<Clock::time_point, uint64_t> by_time_;                             // guarded by mu_
  std::map<uint64_t, std::pair<Clock::time_point, std::function<void()>>> by_id_;  // mu_
  std::thread thread_;  // started under mu_
};

// A wait in flight, as its starter sees it.
class AsyncWait {
 public:
  virtual ~AsyncWait() = default;
  // Ends the wait without calling its callback (its client went away);
  // releases its watch, timer and token registrations. Idempotent; a no-op
  // once the wait completed.
  virtual void Abandon() = 0;
};

class AsyncWaits;

namespace internal {

// The engine of one wait: `attempt` (on a PostFn thread) re-reads and
// answers, or yields nullopt and the wait watches with `watch` and tries
// again when it fires; the deadline and the token answer with their own
// errors. Completes exactly once.
template <class T>
struct AsyncWaitSpec {
  using Outcome = Result<T, ServiceError>;
  std::function<std::optional<Outcome>()> attempt;
  std::function<Result<storage::WatchToken, storage::DbErrorRead>(storage::WatchCallback)> watch;
  std::optional<DeadlineTimer::Clock::time_point> deadline;
  std::function<ServiceError()> timeout_error;
  std::function<ServiceError()> cancelled_error;
  std::function<ServiceError(const storage::DbErrorRead&)> watch_error;
  CancellationToken cancel;
  PostFn post;
  std::function<void(Outcome)> done;
};

// Type-erased part shared by every wait (AsyncWaits tracks these).
class AsyncWaitBase : public AsyncWait {
 public:
  virtual void AbandonForShutdown() = 0;
};

}  // namespace internal

// The waits in flight of one service, and what they share: the storage
// connection and the timer.
class AsyncWaits {
 public:
  explicit AsyncWaits(storage::DbConnection& db) : db_(db) {}
  ~AsyncWaits();  // abandons every wait in flight
  AsyncWaits(const AsyncWaits&) = delete;
  AsyncWaits& operator=(const AsyncWaits&) = delete;

  // Starts a wait (see internal::AsyncWaitSpec); its first attempt is
  // posted. `done` runs once: on a `spec.post` thread after an attempt,
  // on the timer thread at the deadline, or on the thread that cancels the
  // token; it must be cheap (send the answer, no database work).
  template <class T>
  std::shared_ptr<AsyncWait> Start(internal::AsyncWaitSpec<T> spec);

  // Waits in flight (a gauge; tests).
  size_t size() const;

  storage::DbConnection& db() { return db_; }
  DeadlineTimer& timer() { return timer_; }
  void Track(const std::shared_ptr<internal::AsyncWaitBase>& wait);
  void Untrack(internal::AsyncWaitBase* wait);

 private:
  storage::DbConnection& db_;
  DeadlineTimer timer_;
  mutable std::mutex mu_;
  // Holds every wait in flight alive; a wait untracks itself as it ends.
  std::map<internal::AsyncWaitBase*, std::shared_ptr<internal::AsyncWaitBase>> live_;  // mu_
};

}  // namespace stele::service

#include "service/async_wait_impl.h"
