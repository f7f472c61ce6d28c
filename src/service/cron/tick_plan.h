// Which ticks of a cron schedule to fire now: the catch-up and overlap
// policies as pure functions (docs/config.md, "[[cron]]"), and the
// deterministic execution id of a tick. The service's ticker
// (service/cron_ticker.h) reads a schedule, asks these what to do, creates
// the executions and records the last tick it accounted for.
//
// Threading: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "core/ids.h"
#include "service/cron/cron_expression.h"

namespace stele::service::cron {

// When a tick comes while the execution of the previous fired tick has not
// finished.
enum class OverlapPolicy {
  kSkip,       // the tick is skipped (the default)
  kAllow,      // it fires anyway
  kBufferOne,  // the latest such tick waits and fires once the running one
               // finishes; earlier ones are skipped
};

// What a pass does when it finds several ticks due (the process was down,
// or a pass ran late): every due tick but the latest was missed, and so is
// the latest when found more than kMissedAfter after its time.
enum class CatchUpPolicy {
  kSkip,  // missed ticks are skipped: only an on-time latest tick fires
  kLast,  // only the latest due tick fires, however late (the default)
  kAll,   // the latest `catch_up_limit` missed ticks fire too, in order;
          // older ones are skipped
};

// "skip" | "allow" | "buffer_one"; "skip" | "last" | "all".
std::string_view ToString(OverlapPolicy p);
std::string_view ToString(CatchUpPolicy p);
std::optional<OverlapPolicy> ParseOverlapPolicy(std::string_view text);
std::optional<CatchUpPolicy> ParseCatchUpPolicy(std::string_view text);

// A tick found later than this after its time is missed.
inline constexpr std::chrono::seconds kMissedAfter{60};
// Upper bound of catch_up_limit.
inline constexpr uint32_t kMaxCatchUpLimit = 1000;
// Skipped missed ticks are counted up to this many per pass (an every-second
// schedule after a week of downtime would otherwise be walked tick by tick);
// they are skipped all the same.
inline constexpr uint64_t kMaxCountedSkips = 10'000;

struct DueTicks {
  // Ascending: the due ticks the catch-up policy keeps (at most
  // catch_up_limit + 1), all after `last_tick` and at or before `now`.
  std::vector<DateTime> ticks;
  // Missed ticks the catch-up policy drops (counted up to kMaxCountedSkips)
  // and the latest of them; all lie before `ticks`.
  uint64_t dropped = 0;
  std::optional<DateTime> latest_dropped;
};

// The ticks of `expr` in (last_tick, now], with the catch-up policy
// applied. `catch_up_limit` matters for kAll only (1..kMaxCatchUpLimit).
DueTicks CollectDueTicks(const CronExpression& expr, DateTime last_tick, DateTime now,
                         CatchUpPolicy catch_up, uint32_t catch_up_limit);

struct TickPlan {
  std::vector<DateTime> fire;  // ascending
  uint64_t skipped = 0;        // dropped by catch-up or overlap
  // The schedule's new last tick: a watermark at or after every tick fired
  // or skipped. A buffered tick lies after it (due again in the next pass).
  std::optional<DateTime> advance_to;
};

// Applies the overlap policy to `due`. `previous_running`: the execution of
// the last fired tick exists and has not finished. Ticks fired in this plan
// count as running for the later ones.
TickPlan PlanTicks(const DueTicks& due, OverlapPolicy overlap, bool previous_running);

// The execution id of `tick` of the schedule named `name` created at
// `created_at`: E_<ULID> whose 48-bit time part is the tick's millisecond
// and whose 80 random bits come from a hash of the name and the creation
// instant. Every node computes the same id for the same tick, so a tick is
// created once (DbConnection::Create refuses a second) however many nodes
// and restarts see it; a schedule deleted and created again under the same
// name gets other ids. Part of the stored data's contract: never change it.
core::ExecutionId TickExecutionId(std::string_view name, DateTime created_at, DateTime tick);

}  // namespace stele::service::cron
