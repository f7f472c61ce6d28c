#include "executor/expired_timers_watcher.h"

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "base/check.h"
#include "base/log.h"
#include "executor/outcome.h"

namespace stele::executor {
namespace {

// Fires one due delay; returns whether this call answered it.
bool FireDelay(storage::DbConnection& db, const storage::ExpiredDelay& delay, DateTime at) {
  auto outcome =
      db.AppendDelayResponse(at, delay.execution_id, delay.join_set_id, delay.delay_id, true);
  if (!outcome) {
    STELE_LOG(kWarn, delay.delay_id.ToString()
                         << ": cannot fire the delay: " << outcome.error().ToString());
    return false;
  }
  if (*outcome != storage::AppendDelayResponseOutcome::kSuccess) {
    STELE_LOG(kDebug, delay.delay_id.ToString() << ": delay already answered");
    return false;
  }
  STELE_LOG(kDebug, delay.delay_id.ToString() << ": delay fired");
  return true;
}

// Settles one expired lock; returns whether the watcher's write won.
bool SettleLock(storage::DbConnection& db, const storage::ExpiredLock& lock, DateTime at) {
  const PlannedWrite write = ComputeExpiredLockOutcome(lock, at);
  STELE_LOG(kInfo, lock.execution_id.ToString()
                       << ": lock of run " << lock.locked_by.run_id.ToString() << " expired; "
                       << core::ExecutionRequestToString(write.request.event));
  auto applied = ApplyOutcome(db, write);
  if (!applied) {
    STELE_LOG(kWarn, lock.execution_id.ToString()
                         << ": cannot settle the expired lock: " << applied.error().ToString());
    return false;
  }
  return *applied == ApplyStatus::kWritten;
}

}  // namespace

Result<WatcherTickProgress, storage::DbErrorGeneric> HandleExpiredTimers(storage::DbConnection& db,
                                                                         DateTime at) {
  STELE_ASSIGN_OR_RETURN(std::vector<storage::ExpiredTimer> timers, db.GetExpiredTimers(at));
  WatcherTickProgress progress;
  for (const storage::ExpiredTimer& timer : timers) {
    if (const auto* delay = std::get_if<storage::ExpiredDelay>(&timer)) {
      if (FireDelay(db, *delay, at)) ++progress.expired_delays;
    } else if (SettleLock(db, std::get<storage::ExpiredLock>(timer), at)) {
      ++progress.expired_locks;
    }
  }
  return progress;
}

ExpiredTimersWatcher::ExpiredTimersWatcher(std::unique_ptr<storage::DbConnection> db,
                                           const Clock& clock, ExpiredTimersWatcherOptions options)
    : db_(std::move(db)), clock_(clock), options_(options) {
  STELE_CHECK(db_ != nullptr, "ExpiredTimersWatcher needs a connection");
}

ExpiredTimersWatcher::~ExpiredTimersWatcher() { Stop(); }

void ExpiredTimersWatcher::Start() {
  STELE_CHECK(!thread_.joinable(), "ExpiredTimersWatcher::Start: already started");
  thread_ = std::thread([this] { LoopMain(); });
}

void ExpiredTimersWatcher::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wakeup_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<WatcherTickProgress, storage::DbErrorGeneric> ExpiredTimersWatcher::TickForTest(
    DateTime now) {
  return HandleExpiredTimers(*db_, now - options_.leeway);
}

void ExpiredTimersWatcher::LoopMain() {
  std::optional<std::string> last_error;
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    auto progress = HandleExpiredTimers(*db_, clock_.Now() - options_.leeway);
    if (!progress) {
      // Log a failure once, not every tick.
      std::string message = progress.error().ToString();
      if (message != last_error)
        STELE_LOG(kWarn, "expired timers watcher tick failed: " << message);
      last_error = std::move(message);
    } else {
      last_error.reset();
    }
    lock.lock();
    wakeup_.wait_for(lock, options_.tick_sleep, [this] { return stop_; });
  }
}

}  // namespace stele::executor
