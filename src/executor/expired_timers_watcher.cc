#include "executor/expired_timers_watcher.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/check.h"
#include "base/log.h"
#include "base/thread_name.h"
#include "executor/deadline.h"
#include "executor/helper_threads.h"
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

// What the expired run's Locked event says: its lease (its expiry minus
// the time it was written; an extension's lease for a workflow that renewed
// it), whether it is a workflow's, and its retry policy with the
// execution's own override (of its Created event). Falls back to the
// lock's columns for what cannot be read.
struct ExpiredRunFacts {
  ExpiredRun run;
  std::optional<std::chrono::milliseconds> lease;
};

ExpiredRunFacts FactsOf(storage::DbConnection& db, const storage::ExpiredLock& lock) {
  ExpiredRunFacts facts{ExpiredRun::FromLock(lock), std::nullopt};
  auto event = db.GetExecutionEvent(lock.execution_id, lock.locked_at_version);
  if (!event) return facts;
  const auto* locked = std::get_if<core::Locked>(&event->event);
  if (locked == nullptr) return facts;
  facts.run.workflow = core::IsWorkflowComponentType(locked->component_id.component_type);
  facts.run.retry_config = locked->retry_config;
  if (auto created = db.GetExecutionEvent(lock.execution_id, core::Version(0))) {
    if (const auto* c = std::get_if<core::Created>(&created->event)) {
      facts.run.retry_config = c->policy.retry.ApplyTo(facts.run.retry_config);
    }
  }
  if (locked->lock_expires_at >= event->created_at) {
    facts.lease = std::chrono::duration_cast<std::chrono::milliseconds>(locked->lock_expires_at -
                                                                        event->created_at);
  }
  return facts;
}

// Settles one expired lock; returns whether the watcher's write won.
bool SettleLock(storage::DbConnection& db, const storage::ExpiredLock& lock, DateTime at,
                std::string_view activity_setting, std::string_view workflow_setting) {
  const ExpiredRunFacts facts = FactsOf(db, lock);
  const bool workflow = facts.run.workflow;
  const PlannedWrite write = ComputeExpiredLockOutcome(
      lock, facts.run, at,
      ExpiredLockReason(workflow, facts.lease, workflow ? workflow_setting : activity_setting));
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

Result<WatcherTickProgress, storage::DbErrorGeneric> HandleExpiredTimersWith(
    HelperThreads& helpers, storage::DbConnection& db, DateTime now,
    std::chrono::milliseconds lock_leeway, std::string_view activity_lock_expiry_setting,
    std::string_view workflow_lock_expiry_setting, CancelRegistry* cancel_registry);

}  // namespace

Result<WatcherTickProgress, storage::DbErrorGeneric> HandleExpiredTimers(storage::DbConnection& db,
                                                                         DateTime at) {
  return HandleExpiredTimers(db, at, std::chrono::milliseconds(0), 1);
}

Result<WatcherTickProgress, storage::DbErrorGeneric> HandleExpiredTimers(
    storage::DbConnection& db, DateTime now, std::chrono::milliseconds lock_leeway,
    uint32_t parallel_writes, std::string_view activity_lock_expiry_setting,
    std::string_view workflow_lock_expiry_setting, CancelRegistry* cancel_registry) {
  HelperThreads helpers(parallel_writes, "stele-timers");
  return HandleExpiredTimersWith(helpers, db, now, lock_leeway, activity_lock_expiry_setting,
                                 workflow_lock_expiry_setting, cancel_registry);
}

namespace {

Result<WatcherTickProgress, storage::DbErrorGeneric> HandleExpiredTimersWith(
    HelperThreads& helpers, storage::DbConnection& db, DateTime now,
    std::chrono::milliseconds lock_leeway, std::string_view activity_lock_expiry_setting,
    std::string_view workflow_lock_expiry_setting, CancelRegistry* cancel_registry) {
  const DateTime locks_at = now - lock_leeway;
  STELE_ASSIGN_OR_RETURN(std::vector<storage::ExpiredTimer> timers, db.GetExpiredTimers(now));
  if (lock_leeway.count() > 0) {
    // Locks expired within the leeway are left to their live holders.
    std::erase_if(timers, [](const storage::ExpiredTimer& timer) {
      return std::holds_alternative<storage::ExpiredLock>(timer);
    });
    STELE_ASSIGN_OR_RETURN(std::vector<storage::ExpiredTimer> locks, db.GetExpiredTimers(locks_at));
    for (storage::ExpiredTimer& timer : locks) {
      if (std::holds_alternative<storage::ExpiredLock>(timer)) timers.push_back(std::move(timer));
    }
  }
  std::atomic<uint32_t> delays{0};
  std::atomic<uint32_t> deadlines{0};
  auto handle = [&](size_t i) {
    if (const auto* delay = std::get_if<storage::ExpiredDelay>(&timers[i])) {
      const bool fired = FireDelay(db, *delay, now);
      if (fired) ++delays;
      return fired;
    }
    if (const auto* deadline = std::get_if<storage::ExpiredDeadline>(&timers[i])) {
      auto outcome = ExpireDeadline(db, cancel_registry, *deadline, now);
      if (!outcome) {
        STELE_LOG(kWarn, deadline->execution_id.ToString()
                             << ": cannot end it at its deadline: " << outcome.error().ToString());
        return false;
      }
      const bool acted = *outcome != DeadlineOutcome::kAlreadyFinished;
      if (acted) ++deadlines;
      return acted;
    }
    return SettleLock(db, std::get<storage::ExpiredLock>(timers[i]), locks_at,
                      activity_lock_expiry_setting, workflow_lock_expiry_setting);
  };
  // Deadlines in waves, shallowest executions first (the other timers go
  // with the first wave). A workflow's terminate request is then committed
  // before the deadlines of its descendants end them: otherwise a child
  // timed out in the same pass could answer the workflow while it waits,
  // and the workflow finish as if nothing happened before its own request
  // lands (a subtree sharing one inherited deadline must end with it).
  std::map<size_t, std::vector<size_t>> waves;
  for (size_t i = 0; i < timers.size(); ++i) {
    const auto* deadline = std::get_if<storage::ExpiredDeadline>(&timers[i]);
    waves[deadline == nullptr ? 0 : deadline->execution_id.path().size()].push_back(i);
  }
  uint32_t handled = 0;
  for (const auto& wave : waves) {
    const std::vector<size_t>& indices = wave.second;
    handled += helpers.Run(indices.size(), [&](size_t k) { return handle(indices[k]); });
  }
  WatcherTickProgress progress;
  progress.expired_delays = delays;
  progress.expired_deadlines = deadlines;
  progress.expired_locks = handled - delays - deadlines;
  return progress;
}

}  // namespace

ExpiredTimersWatcher::ExpiredTimersWatcher(std::unique_ptr<storage::DbConnection> db,
                                           SharedClock clock, ExpiredTimersWatcherOptions options)
    : db_(std::move(db)),
      clock_owner_(CheckedClock(std::move(clock), "ExpiredTimersWatcher needs a clock")),
      clock_(*clock_owner_),
      options_(options),
      helpers_(std::make_unique<HelperThreads>(options_.parallel_writes, "stele-timers")) {
  STELE_CHECK(db_ != nullptr, "ExpiredTimersWatcher needs a connection");
}

ExpiredTimersWatcher::~ExpiredTimersWatcher() { Stop(); }

void ExpiredTimersWatcher::Start() {
  STELE_CHECK(!thread_.joinable(), "ExpiredTimersWatcher::Start: already started");
  thread_ = std::thread([this] {
    NameThisThread("stele-timers");
    LoopMain();
  });
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
  auto progress = HandleExpiredTimersWith(
      *helpers_, *db_, now, options_.leeway, options_.activity_lock_expiry_setting,
      options_.workflow_lock_expiry_setting, options_.cancel_registry.get());
  if (progress) expired_deadlines_ += progress->expired_deadlines;
  return progress;
}

void ExpiredTimersWatcher::LoopMain() {
  using Micros = std::chrono::microseconds;
  std::optional<std::string> last_error;
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    const DateTime now = clock_.Now();
    const DateTime tick_end = now + std::chrono::duration_cast<Micros>(options_.tick_sleep);
    auto progress = HandleExpiredTimersWith(
        *helpers_, *db_, now, options_.leeway, options_.activity_lock_expiry_setting,
        options_.workflow_lock_expiry_setting, options_.cancel_registry.get());
    if (progress) expired_deadlines_ += progress->expired_deadlines;
    // Delays due before the next tick are fired when they are due rather
    // than up to a tick late: one look-ahead query per tick.
    std::vector<storage::ExpiredDelay> upcoming;
    if (progress) {
      auto soon = db_->GetExpiredTimers(tick_end);
      if (soon) {
        for (storage::ExpiredTimer& timer : *soon) {
          auto* delay = std::get_if<storage::ExpiredDelay>(&timer);
          if (delay != nullptr && delay->expires_at > now) upcoming.push_back(std::move(*delay));
        }
      } else {
        progress = Unexpected(std::move(soon).error());
      }
    }
    if (!progress) {
      // Log a failure once, not every tick.
      std::string message = progress.error().ToString();
      if (message != last_error)
        STELE_LOG(kWarn, "expired timers watcher tick failed: " << message);
      last_error = std::move(message);
    } else {
      last_error.reset();
    }
    std::sort(upcoming.begin(), upcoming.end(),
              [](const storage::ExpiredDelay& a, const storage::ExpiredDelay& b) {
                return a.expires_at < b.expires_at;
              });
    lock.lock();
    for (size_t i = 0; i < upcoming.size() && !stop_;) {
      const Micros remaining = upcoming[i].expires_at - clock_.Now();
      if (remaining > Micros::zero()) {
        wakeup_.wait_for(lock, remaining, [this] { return stop_; });
        continue;  // re-read the clock (a manual clock moves on its own)
      }
      const DateTime due = clock_.Now();
      size_t end = i;
      while (end < upcoming.size() && upcoming[end].expires_at <= due) ++end;
      lock.unlock();
      // A delay cancelled or fired meanwhile is answered already: FireDelay
      // then writes nothing.
      helpers_->Run(end - i, [&](size_t k) { return FireDelay(*db_, upcoming[i + k], due); });
      lock.lock();
      i = end;
    }
    const Micros rest = tick_end - clock_.Now();
    if (rest > Micros::zero()) wakeup_.wait_for(lock, rest, [this] { return stop_; });
  }
}

}  // namespace stele::executor
