#include "service/cron_ticker.h"

#include <algorithm>
#include <vector>

#include "base/log.h"
#include "base/thread_name.h"
#include "core/json_codec.h"
#include "service/cron/tick_plan.h"

namespace stele::service {

CronTicker::CronTicker(storage::DbExternalApi& db, SharedClock clock, SubmitFn submit,
                       ServesFn serves, std::chrono::milliseconds max_wait)
    : db_(db),
      clock_(CheckedClock(std::move(clock), "CronTicker needs a clock")),
      submit_(std::move(submit)),
      serves_(std::move(serves)),
      max_wait_(max_wait) {}

CronTicker::~CronTicker() { Stop(); }

void CronTicker::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] {
    NameThisThread("stele-cron");
    Loop();
  });
}

void CronTicker::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CronTicker::Wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  wake_.notify_all();
}

void CronTicker::Loop() {
  while (true) {
    const DateTime now = clock_->Now();
    std::chrono::microseconds wait = max_wait_;
    auto next = Pass(now);
    if (!next) {
      STELE_LOG(kWarn, "cron: " << next.error().message);
    } else if (*next) {
      wait = std::clamp<std::chrono::microseconds>(**next - now, std::chrono::microseconds(0),
                                                   max_wait_);
    }
    std::unique_lock lock(mu_);
    wake_.wait_for(lock, wait, [this] { return stopping_ || woken_; });
    if (stopping_) return;
    woken_ = false;
  }
}

const cron::CronExpression* CronTicker::Expression(const storage::Schedule& schedule) {
  const std::string key = schedule.definition.expression + "\n" + schedule.definition.time_zone;
  auto it = expressions_.find(key);
  if (it == expressions_.end()) {
    auto parsed =
        cron::CronExpression::Parse(schedule.definition.expression, schedule.definition.time_zone);
    if (!parsed) {
      // Only a database edited by hand gets here: the service validates
      // every definition before storing it.
      STELE_LOG(kWarn, "cron: schedule `" << schedule.definition.name
                                          << "` is not ticked: " << parsed.error());
      it = expressions_.emplace(key, std::nullopt).first;
    } else {
      it = expressions_.emplace(key, std::move(*parsed)).first;
    }
  }
  return it->second ? &*it->second : nullptr;
}

Result<std::optional<DateTime>, ServiceError> CronTicker::Pass(DateTime now) {
  auto schedules = db_.ListSchedules();
  if (!schedules) return Unexpected(FromGeneric(schedules.error(), "list schedules"));
  std::optional<DateTime> next;
  auto consider = [&](std::optional<DateTime> t) {
    if (t && (!next || *t < *next)) next = t;
  };
  // Schedules with a due tick are ticked concurrently (each one's ticks in
  // order): their writes then share commits (SQLite's group commit, a
  // pooled connection each on PostgreSQL) instead of queueing one fsync
  // after another.
  struct Due {
    const storage::Schedule* schedule;
    const cron::CronExpression* expr;
  };
  std::vector<Due> due;
  for (const storage::Schedule& schedule : *schedules) {
    if (schedule.paused || !serves_(schedule.definition.ffqn)) continue;
    const cron::CronExpression* expr = Expression(schedule);
    if (expr == nullptr) continue;
    std::optional<DateTime> first = expr->NextAfter(schedule.last_tick);
    if (!first || *first > now) {
      consider(first);
      continue;
    }
    due.push_back({&schedule, expr});
  }
  std::vector<std::optional<DateTime>> nexts(due.size());
  std::atomic<size_t> cursor{0};
  auto work = [&] {
    for (size_t i = cursor.fetch_add(1); i < due.size(); i = cursor.fetch_add(1)) {
      nexts[i] = TickSchedule(*due[i].schedule, *due[i].expr, now);
    }
  };
  std::vector<std::thread> helpers;
  for (size_t i = 1; i < std::min(due.size(), kMaxConcurrentSchedules); ++i) {
    helpers.emplace_back(work);
  }
  work();
  for (std::thread& helper : helpers) helper.join();
  for (const std::optional<DateTime>& t : nexts) consider(t);
  return next;
}

std::optional<DateTime> CronTicker::TickSchedule(const storage::Schedule& schedule,
                                                 const cron::CronExpression& expression,
                                                 DateTime now) {
  const storage::ScheduleDefinition& def = schedule.definition;
  const cron::CronExpression* expr = &expression;
  const cron::OverlapPolicy overlap =
      cron::ParseOverlapPolicy(def.overlap).value_or(cron::OverlapPolicy::kSkip);
  const cron::CatchUpPolicy catch_up =
      cron::ParseCatchUpPolicy(def.catch_up).value_or(cron::CatchUpPolicy::kLast);
  const cron::DueTicks due =
      cron::CollectDueTicks(*expr, schedule.last_tick, now, catch_up, def.catch_up_limit);
  if (due.ticks.empty() && !due.latest_dropped) return expr->NextAfter(schedule.last_tick);

  bool previous_running = false;
  if (schedule.last_execution_id && overlap != cron::OverlapPolicy::kAllow) {
    auto state = db_.GetPendingState(*schedule.last_execution_id);
    if (state) {
      previous_running = !state->IsFinished();
    } else if (state.error().kind() != storage::DbErrorRead::Kind::kNotFound) {
      STELE_LOG(kWarn, "cron: schedule `" << def.name << "`: cannot read its last execution: "
                                          << state.error().ToString());
      return now + max_wait_;  // retried next pass
    }
  }
  const cron::TickPlan plan = cron::PlanTicks(due, overlap, previous_running);
  auto params = core::ParseJson(def.params);
  if (!params) {
    STELE_LOG(kWarn, "cron: schedule `" << def.name << "` has params that are not JSON");
    return std::nullopt;
  }
  for (DateTime tick : plan.fire) {
    const core::ExecutionId id = cron::TickExecutionId(def.name, schedule.created_at, tick);
    SubmitRequest request{def.ffqn, *params, id.ToString(), tick};
    auto submitted = submit_(request);
    if (!submitted && submitted.error().kind == ServiceError::Kind::kConflict) {
      // The id holds the tick's execution, submitted before the definition
      // changed (say, a crash before recording, then a new config): the
      // tick has fired.
      submitted = Submitted{id, false};
    }
    if (!submitted) {
      if (submitted.error().kind == ServiceError::Kind::kUnavailable) {
        STELE_LOG(kWarn, "cron: schedule `" << def.name << "`: tick " << FormatRfc3339(tick)
                                            << " not created yet: " << submitted.error().message);
        return now + max_wait_;  // nothing recorded: the tick is due again next pass
      }
      // The tick cannot ever be created as it stands (params the function
      // no longer accepts): it counts as skipped and the schedule goes on.
      STELE_LOG(kWarn, "cron: schedule `" << def.name << "`: tick " << FormatRfc3339(tick)
                                          << " skipped: " << submitted.error().message);
      skipped_.fetch_add(1);
      if (auto r = db_.RecordScheduleTick(def.name, tick, std::nullopt); !r) {
        return now + max_wait_;
      }
      continue;
    }
    fired_.fetch_add(1);
    if (auto r = db_.RecordScheduleTick(def.name, tick, id); !r) {
      // Deleted meanwhile (NotFound), or the database failed: the tick
      // exists; a next pass records it (or the schedule is gone).
      return now + max_wait_;
    }
  }
  skipped_.fetch_add(plan.skipped);
  DateTime watermark = schedule.last_tick;
  if (!plan.fire.empty()) watermark = std::max(watermark, plan.fire.back());
  if (plan.advance_to && *plan.advance_to > watermark) {
    if (auto r = db_.RecordScheduleTick(def.name, *plan.advance_to, std::nullopt); !r) {
      return now + max_wait_;
    }
    watermark = *plan.advance_to;
  }
  // A buffered tick (after the watermark, due already) waits for the
  // running execution: look again within max_wait.
  std::optional<DateTime> next_tick = expr->NextAfter(watermark);
  if (next_tick && *next_tick <= now) return now + max_wait_;
  return next_tick;
}

}  // namespace stele::service
