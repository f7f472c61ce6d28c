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
  const DateTime cutoff = std::max(last_tick, now - kMissedAfter);
  size_t keep = 0;
  switch (catch_up) {
    case CatchUpPolicy::kSkip:
      keep = 0;
      break;
    case CatchUpPolicy::kLast:
      keep = 1;
      break;
    case CatchUpPolicy::kAll:
      keep = std::clamp<uint32_t>(catch_up_limit, 1, kMaxCatchUpLimit);
      break;
  }
  // Missed ticks: (last_tick, cutoff]. The kept tail is found from a
  // window before the cutoff that doubles until it holds `keep` ticks or
  // reaches last_tick, so a long downtime is not walked tick by tick.
  std::deque<DateTime> tail;
  DateTime window_start = cutoff;
  if (keep > 0 && cutoff > last_tick) {
    std::chrono::microseconds width = std::chrono::seconds(1);
    while (true) {
      window_start = cutoff - width > last_tick ? cutoff - width : last_tick;
      tail.clear();
      for (std::optional<DateTime> t = expr.NextAfter(window_start); t && *t <= cutoff;
           t = expr.NextAfter(*t)) {
        tail.push_back(*t);
        if (tail.size() > keep) tail.pop_front();
      }
      if (tail.size() >= keep || window_start == last_tick) break;
      width *= 2;
    }
  }
  // Count the dropped ones: (last_tick, cutoff] before the kept tail. The
  // watermark is the instant just before the tail (or the cutoff), which
  // accounts for them all without walking each one.
  const DateTime dropped_end = tail.empty() ? cutoff : tail.front() - std::chrono::microseconds(1);
  for (std::optional<DateTime> t = expr.NextAfter(last_tick); t && *t <= dropped_end;
       t = expr.NextAfter(*t)) {
    if (++out.dropped >= kMaxCountedSkips) break;
  }
  if (out.dropped > 0) out.latest_dropped = dropped_end;
  out.ticks.assign(tail.begin(), tail.end());
  for (std::optional<DateTime> t = expr.NextAfter(cutoff);
       t && *t <= now && out.ticks.size() < keep + kMaxCurrentTicks; t = expr.NextAfter(*t)) {
    out.ticks.push_back(*t);
  }
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
