#include "service/cron/tick_plan.h"

#include <algorithm>
#include <deque>

namespace stele::service::cron {

std::string_view ToString(OverlapPolicy p) {
  switch (p) {
    case OverlapPolicy::kSkip:
      return "skip";
    case OverlapPolicy::kAllow:
      return "allow";
    case OverlapPolicy::kBufferOne:
      return "buffer_one";
  }
  return "skip";
}

std::string_view ToString(CatchUpPolicy p) {
  switch (p) {
    case CatchUpPolicy::kSkip:
      return "skip";
    case CatchUpPolicy::kLast:
      return "last";
    case CatchUpPolicy::kAll:
      return "all";
  }
  return "last";
}

std::optional<OverlapPolicy> ParseOverlapPolicy(std::string_view text) {
  if (text == "skip") return OverlapPolicy::kSkip;
  if (text == "allow") return OverlapPolicy::kAllow;
  if (text == "buffer_one") return OverlapPolicy::kBufferOne;
  return std::nullopt;
}

std::optional<CatchUpPolicy> ParseCatchUpPolicy(std::string_view text) {
  if (text == "skip") return CatchUpPolicy::kSkip;
  if (text == "last") return CatchUpPolicy::kLast;
  if (text == "all") return CatchUpPolicy::kAll;
  return std::nullopt;
}

DueTicks CollectDueTicks(const CronExpression& expr, DateTime last_tick, DateTime now,
                         CatchUpPolicy catch_up, uint32_t catch_up_limit) {
  DueTicks out;
  if (now <= last_tick) return out;
  const size_t limit = catch_up == CatchUpPolicy::kAll
                           ? std::clamp<uint32_t>(catch_up_limit, 1, kMaxCatchUpLimit)
                           : 0;
  // The latest limit + 1 due ticks, (last_tick, now]: found from a window
  // before `now` that doubles until it holds them or reaches last_tick, so
  // a long downtime is not walked tick by tick.
  std::deque<DateTime> tail;
  std::chrono::microseconds width = std::chrono::seconds(1);
  while (true) {
    const DateTime window_start = now - width > last_tick ? now - width : last_tick;
    tail.clear();
    for (std::optional<DateTime> t = expr.NextAfter(window_start); t && *t <= now;
         t = expr.NextAfter(*t)) {
      tail.push_back(*t);
      if (tail.size() > limit + 1) tail.pop_front();
    }
    if (tail.size() > limit || window_start == last_tick) break;
    width *= 2;
  }
  if (tail.empty()) return out;
  // Every due tick but the latest was missed; so was the latest when it is
  // found more than kMissedAfter late.
  const bool latest_on_time = now - tail.back() <= kMissedAfter;
  std::vector<DateTime> kept;
  switch (catch_up) {
    case CatchUpPolicy::kSkip:
      if (latest_on_time) kept.push_back(tail.back());
      break;
    case CatchUpPolicy::kLast:
      kept.push_back(tail.back());
      break;
    case CatchUpPolicy::kAll: {
      // `limit` missed ticks, plus the latest when it is on time.
      const size_t n = std::min(tail.size(), latest_on_time ? limit + 1 : limit);
      kept.assign(tail.end() - static_cast<std::ptrdiff_t>(n), tail.end());
      break;
    }
  }
  // The dropped ones: every due tick before the first kept one (all of
  // them when none is kept). The watermark accounts for them all without
  // walking each one; the count stops at kMaxCountedSkips.
  const DateTime dropped_end =
      kept.empty() ? tail.back() : kept.front() - std::chrono::microseconds(1);
  for (std::optional<DateTime> t = expr.NextAfter(last_tick); t && *t <= dropped_end;
       t = expr.NextAfter(*t)) {
    if (++out.dropped >= kMaxCountedSkips) break;
  }
  if (out.dropped > 0) out.latest_dropped = dropped_end;
  out.ticks = std::move(kept);
  return out;
}

TickPlan PlanTicks(const DueTicks& due, OverlapPolicy overlap, bool previous_running) {
  TickPlan plan;
  plan.skipped = due.dropped;
  plan.advance_to = due.latest_dropped;
  bool running = previous_running;
  for (size_t i = 0; i < due.ticks.size(); ++i) {
    const DateTime tick = due.ticks[i];
    if (!running || overlap == OverlapPolicy::kAllow) {
      plan.fire.push_back(tick);
      running = true;
    } else if (overlap == OverlapPolicy::kBufferOne && i + 1 == due.ticks.size()) {
      break;  // buffered: waits for the running execution, not advanced past
    } else {
      ++plan.skipped;
    }
    plan.advance_to = tick;
  }
  return plan;
}

namespace {

// FNV-1a, 64 bits, from `basis`. Part of TickExecutionId's contract.
uint64_t Fnv1a(std::string_view bytes, uint64_t basis) {
  uint64_t h = basis;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

core::ExecutionId TickExecutionId(std::string_view name, DateTime created_at, DateTime tick) {
  std::string key(name);
  key.push_back('\0');
  key += std::to_string(ToMicros(created_at));
  const uint64_t a = Fnv1a(key, 0xcbf29ce484222325ULL);
  const uint64_t b = Fnv1a(key, a ^ 0x9e3779b97f4a7c15ULL);
  const auto ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(tick.time_since_epoch()).count());
  // 48 bits of milliseconds, then 16 + 64 bits of hash.
  const uint64_t hi = (ms << 16) | (a >> 48);
  return core::ExecutionId(Ulid(hi, b));
}

}  // namespace stele::service::cron
