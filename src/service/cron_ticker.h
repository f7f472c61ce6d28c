// CronTicker: fires the ticks of every cron schedule in the database
// (docs/config.md, "[[cron]]"; docs/api.md, "Schedules"). Internal to the
// execution service, which owns one.
//
// A pass reads every schedule; for each one that is not paused and whose
// function this process serves, it collects the ticks after the stored
// watermark (last_tick) up to now, applies the catch-up and overlap
// policies (service/cron/tick_plan.h), submits each tick to fire with its
// deterministic id (cron::TickExecutionId) and scheduled at the tick, then
// records the tick; finally it records the watermark past the skipped
// ones. Exactly once, across nodes and crashes: the id makes a second
// creation of a tick the same execution (Submit is idempotent for the same
// id, ffqn and params), and the watermark is recorded only after the
// execution exists and never moves back (RecordScheduleTick), so a crash
// between the two re-submits the same id.
//
// The thread sleeps until the next tick of any schedule, at most
// cron_max_wait (schedules of other processes are seen within it), and is
// woken by Wake() when this process creates or resumes one.
//
// Threading: Pass may be called from one thread at a time (the ticker's
// own, or a test's with the thread not started); it ticks the schedules
// with due ticks on up to kMaxConcurrentSchedules threads of its own,
// joined before it returns. Start/Stop from the
// owner's controlling thread. Counts are atomic.
// Ownership: the owner keeps `db` and the submit function's target alive
// until Stop returns (or the ticker is destroyed).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "base/clock.h"
#include "service/cron/cron_expression.h"
#include "service/execution_service.h"
#include "storage/db_external_api.h"

namespace stele::service {

class CronTicker {
 public:
  using SubmitFn = std::function<Result<Submitted, ServiceError>(const SubmitRequest&)>;
  // Whether this process serves `ffqn` (a schedule of another node's
  // function is left to that node).
  using ServesFn = std::function<bool(const std::string& ffqn)>;

  CronTicker(storage::DbExternalApi& db, SharedClock clock, SubmitFn submit, ServesFn serves,
             std::chrono::milliseconds max_wait);
  ~CronTicker();
  CronTicker(const CronTicker&) = delete;
  CronTicker& operator=(const CronTicker&) = delete;

  void Start();
  // Idempotent; joins the thread.
  void Stop();
  // Wakes the thread for a pass now.
  void Wake();

  // One pass at `now`. Returns the instant of the next tick of any schedule
  // (nullopt: none known). Errors: kUnavailable when the schedules cannot
  // be read; one schedule's failure is logged and retried next pass.
  Result<std::optional<DateTime>, ServiceError> Pass(DateTime now);

  CronCounts counts() const { return {fired_.load(), skipped_.load()}; }

 private:
  // Schedules ticked at once in one pass (threads of the pass).
  static constexpr size_t kMaxConcurrentSchedules = 16;

  // Ticks one schedule; returns its next tick. Thread-safe (the schedules
  // of one pass are ticked concurrently).
  std::optional<DateTime> TickSchedule(const storage::Schedule& schedule,
                                       const cron::CronExpression& expression, DateTime now);
  // The parsed expression of a schedule, cached by its text.
  const cron::CronExpression* Expression(const storage::Schedule& schedule);
  void Loop();

  storage::DbExternalApi& db_;
  SharedClock clock_;
  SubmitFn submit_;
  ServesFn serves_;
  std::chrono::milliseconds max_wait_;
  std::atomic<uint64_t> fired_{0};
  std::atomic<uint64_t> skipped_{0};
  // Used by Pass only (one thread at a time): expression + "\n" + zone →
  // parsed (nullopt: invalid, logged once).
  std::map<std::string, std::optional<cron::CronExpression>> expressions_;

  std::mutex mu_;
  std::condition_variable wake_;
  bool woken_ = false;     // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace stele::service
