#include "service/cron/tick_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stele::service::cron {
namespace {

DateTime TickAt(const char* rfc3339) {
  auto t = ParseRfc3339(rfc3339);
  EXPECT_TRUE(t.has_value()) << rfc3339;
  return t.value_or(DateTime{});
}

std::vector<std::string> Text(const std::vector<DateTime>& ticks) {
  std::vector<std::string> out;
  for (DateTime t : ticks) out.push_back(FormatRfc3339(t));
  return out;
}

CronExpression EveryMinute() { return *CronExpression::Parse("0 * * * * *", "UTC"); }

TEST(TickPlanTest, PolicyNamesRoundTrip) {
  for (auto p : {OverlapPolicy::kSkip, OverlapPolicy::kAllow, OverlapPolicy::kBufferOne}) {
    EXPECT_EQ(ParseOverlapPolicy(ToString(p)), p);
  }
  for (auto p : {CatchUpPolicy::kSkip, CatchUpPolicy::kLast, CatchUpPolicy::kAll}) {
    EXPECT_EQ(ParseCatchUpPolicy(ToString(p)), p);
  }
  EXPECT_FALSE(ParseOverlapPolicy("Skip").has_value());
  EXPECT_FALSE(ParseCatchUpPolicy("").has_value());
}

TEST(TickPlanTest, NothingDueBeforeTheNextTick) {
  const DueTicks due = CollectDueTicks(EveryMinute(), TickAt("2024-01-01T10:00:00Z"),
                                       TickAt("2024-01-01T10:00:59Z"), CatchUpPolicy::kLast, 1);
  EXPECT_TRUE(due.ticks.empty());
  EXPECT_EQ(due.dropped, 0u);
  EXPECT_FALSE(due.latest_dropped.has_value());
}

TEST(TickPlanTest, OnTimeTickIsDueUnderEveryCatchUpPolicy) {
  for (auto p : {CatchUpPolicy::kSkip, CatchUpPolicy::kLast, CatchUpPolicy::kAll}) {
    const DueTicks due = CollectDueTicks(EveryMinute(), TickAt("2024-01-01T10:00:00Z"),
                                         TickAt("2024-01-01T10:01:00.2Z"), p, 5);
    EXPECT_EQ(Text(due.ticks), (std::vector<std::string>{"2024-01-01T10:01:00Z"}));
    EXPECT_EQ(due.dropped, 0u);
  }
}

// Down from 10:00 to 12:00:30: 10:01..11:59 were missed, 12:00 is on time.
TEST(TickPlanTest, CatchUpAfterDowntime) {
  const DateTime last = TickAt("2024-01-01T10:00:00Z");
  const DateTime now = TickAt("2024-01-01T12:00:30Z");
  DueTicks skip = CollectDueTicks(EveryMinute(), last, now, CatchUpPolicy::kSkip, 1);
  EXPECT_EQ(Text(skip.ticks), (std::vector<std::string>{"2024-01-01T12:00:00Z"}));
  EXPECT_EQ(skip.dropped, 119u);
  EXPECT_LT(*skip.latest_dropped, TickAt("2024-01-01T12:00:00Z"));
  EXPECT_GE(*skip.latest_dropped, TickAt("2024-01-01T11:59:00Z"));

  DueTicks last_one = CollectDueTicks(EveryMinute(), last, now, CatchUpPolicy::kLast, 1);
  EXPECT_EQ(Text(last_one.ticks), (std::vector<std::string>{"2024-01-01T12:00:00Z"}));
  EXPECT_EQ(last_one.dropped, 119u);

  DueTicks all = CollectDueTicks(EveryMinute(), last, now, CatchUpPolicy::kAll, 5);
  EXPECT_EQ(Text(all.ticks),
            (std::vector<std::string>{"2024-01-01T11:55:00Z", "2024-01-01T11:56:00Z",
                                      "2024-01-01T11:57:00Z", "2024-01-01T11:58:00Z",
                                      "2024-01-01T11:59:00Z", "2024-01-01T12:00:00Z"}));
  EXPECT_EQ(all.dropped, 114u);

  // A limit above the missed ticks keeps them all.
  DueTicks few =
      CollectDueTicks(EveryMinute(), TickAt("2024-01-01T11:57:30Z"), now, CatchUpPolicy::kAll, 100);
  EXPECT_EQ(Text(few.ticks),
            (std::vector<std::string>{"2024-01-01T11:58:00Z", "2024-01-01T11:59:00Z",
                                      "2024-01-01T12:00:00Z"}));
  EXPECT_EQ(few.dropped, 0u);
}

// An hourly schedule found 20 minutes after its tick: the latest due tick
// is late, so skip drops it and last still runs it.
TEST(TickPlanTest, ALateLatestTickIsMissedToo) {
  const CronExpression hourly = *CronExpression::Parse("0 0 * * * *", "UTC");
  const DateTime last = TickAt("2024-01-01T09:30:00Z");
  const DateTime now = TickAt("2024-01-01T10:20:00Z");
  DueTicks skip = CollectDueTicks(hourly, last, now, CatchUpPolicy::kSkip, 1);
  EXPECT_TRUE(skip.ticks.empty());
  EXPECT_EQ(skip.dropped, 1u);
  EXPECT_EQ(skip.latest_dropped, TickAt("2024-01-01T10:00:00Z"));
  DueTicks last_one = CollectDueTicks(hourly, last, now, CatchUpPolicy::kLast, 1);
  EXPECT_EQ(Text(last_one.ticks), (std::vector<std::string>{"2024-01-01T10:00:00Z"}));
  DueTicks all =
      CollectDueTicks(hourly, TickAt("2024-01-01T07:30:00Z"), now, CatchUpPolicy::kAll, 2);
  EXPECT_EQ(Text(all.ticks),
            (std::vector<std::string>{"2024-01-01T09:00:00Z", "2024-01-01T10:00:00Z"}));
  EXPECT_EQ(all.dropped, 1u);
}

// An every-second schedule after a week down: bounded work, the skip
// count capped, the watermark past every dropped tick.
TEST(TickPlanTest, LongDowntimeIsBounded) {
  const CronExpression every_second = *CronExpression::Parse("* * * * * *", "UTC");
  const DateTime now = TickAt("2024-01-08T00:00:00Z");
  const DueTicks due = CollectDueTicks(every_second, TickAt("2024-01-01T00:00:00Z"), now,
                                       CatchUpPolicy::kAll, kMaxCatchUpLimit);
  EXPECT_EQ(due.ticks.size(), kMaxCatchUpLimit + 1);
  EXPECT_EQ(due.ticks.back(), now);
  EXPECT_EQ(due.dropped, kMaxCountedSkips);
  EXPECT_LT(*due.latest_dropped, due.ticks.front());
  EXPECT_GE(*due.latest_dropped, due.ticks.front() - std::chrono::seconds(1));
}

DueTicks Due(std::vector<const char*> ticks) {
  DueTicks due;
  for (const char* t : ticks) due.ticks.push_back(TickAt(t));
  return due;
}

TEST(TickPlanTest, OverlapSkip) {
  const DueTicks due = Due({"2024-01-01T10:01:00Z", "2024-01-01T10:02:00Z"});
  TickPlan idle = PlanTicks(due, OverlapPolicy::kSkip, false);
  EXPECT_EQ(Text(idle.fire), (std::vector<std::string>{"2024-01-01T10:01:00Z"}));
  EXPECT_EQ(idle.skipped, 1u);
  EXPECT_EQ(idle.advance_to, TickAt("2024-01-01T10:02:00Z"));
  TickPlan busy = PlanTicks(due, OverlapPolicy::kSkip, true);
  EXPECT_TRUE(busy.fire.empty());
  EXPECT_EQ(busy.skipped, 2u);
  EXPECT_EQ(busy.advance_to, TickAt("2024-01-01T10:02:00Z"));
}

TEST(TickPlanTest, OverlapAllow) {
  const DueTicks due = Due({"2024-01-01T10:01:00Z", "2024-01-01T10:02:00Z"});
  TickPlan busy = PlanTicks(due, OverlapPolicy::kAllow, true);
  EXPECT_EQ(busy.fire.size(), 2u);
  EXPECT_EQ(busy.skipped, 0u);
  EXPECT_EQ(busy.advance_to, TickAt("2024-01-01T10:02:00Z"));
}

TEST(TickPlanTest, OverlapBufferOneKeepsTheLatestWaiting) {
  const DueTicks due =
      Due({"2024-01-01T10:01:00Z", "2024-01-01T10:02:00Z", "2024-01-01T10:03:00Z"});
  TickPlan busy = PlanTicks(due, OverlapPolicy::kBufferOne, true);
  EXPECT_TRUE(busy.fire.empty());
  EXPECT_EQ(busy.skipped, 2u);
  // 10:03 waits: the watermark stays before it.
  EXPECT_EQ(busy.advance_to, TickAt("2024-01-01T10:02:00Z"));
  TickPlan idle = PlanTicks(due, OverlapPolicy::kBufferOne, false);
  EXPECT_EQ(Text(idle.fire), (std::vector<std::string>{"2024-01-01T10:01:00Z"}));
  EXPECT_EQ(idle.skipped, 1u);
  EXPECT_EQ(idle.advance_to, TickAt("2024-01-01T10:02:00Z"));
  // One tick while busy: buffered, nothing advances.
  TickPlan one = PlanTicks(Due({"2024-01-01T10:01:00Z"}), OverlapPolicy::kBufferOne, true);
  EXPECT_TRUE(one.fire.empty());
  EXPECT_EQ(one.skipped, 0u);
  EXPECT_FALSE(one.advance_to.has_value());
}

TEST(TickPlanTest, DroppedTicksCountAsSkippedAndAdvance) {
  DueTicks due = Due({"2024-01-01T12:00:00Z"});
  due.dropped = 7;
  due.latest_dropped = TickAt("2024-01-01T11:59:30Z");
  TickPlan plan = PlanTicks(due, OverlapPolicy::kBufferOne, true);
  EXPECT_EQ(plan.skipped, 7u);
  EXPECT_EQ(plan.advance_to, TickAt("2024-01-01T11:59:30Z"));
}

TEST(TickPlanTest, TickIdsAreDeterministic) {
  const DateTime created = TickAt("2024-01-01T00:00:00.123456Z");
  const DateTime tick = TickAt("2024-03-31T01:00:00Z");
  const core::ExecutionId id = TickExecutionId("nightly", created, tick);
  EXPECT_TRUE(id.IsTopLevel());
  EXPECT_EQ(id, TickExecutionId("nightly", created, tick));
  EXPECT_EQ(id.root().TimestampMs(), static_cast<uint64_t>(ToMicros(tick) / 1000));
  EXPECT_NE(id, TickExecutionId("nightly2", created, tick));
  EXPECT_NE(id, TickExecutionId("nightly", created + std::chrono::microseconds(1), tick));
  EXPECT_NE(id, TickExecutionId("nightly", created, tick + std::chrono::seconds(1)));
  // The same random part for every tick of one schedule.
  const core::ExecutionId later = TickExecutionId("nightly", created, tick + std::chrono::hours(1));
  EXPECT_EQ(id.root().lo(), later.root().lo());
  auto parsed = core::ExecutionId::Parse(id.ToString());
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed, id);
  // Pinned: stored ids depend on it (tick_plan.h).
  EXPECT_EQ(TickExecutionId("nightly", TickAt("2024-01-01T00:00:00Z"), tick).ToString(),
            "E_01HT90AEM01609N2V3W05P42RW");
}

}  // namespace
}  // namespace stele::service::cron
