#include "core/execution_event.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "core/pending_state.h"

namespace stele::core {
namespace {

using std::chrono::days;
using std::chrono::floor;
using std::chrono::year_month_day;

const DateTime kEpoch = DateTimeFromMicros(0);

int YearOf(DateTime t) { return static_cast<int>(year_month_day(floor<days>(t)).year()); }

DateTime T(std::string_view rfc3339) { return *ParseRfc3339(rfc3339); }

ExecutionId TestExecutionId() { return *ExecutionId::Parse("E_01KBNHM5FQW81KP5Y3XMNX31K4"); }
JoinSetId Js(std::string_view text) { return *JoinSetId::Parse(text); }

// Obelisk's test as_date_time_should_work_with_duration_u32_max_secs.
TEST(HistoryEventScheduleAtTest, AsDateTimeShouldWorkWithDurationU32MaxSecs) {
  const auto schedule_at = HistoryEventScheduleAt::In(Duration::FromSecs(UINT32_MAX));
  auto resolved = schedule_at.AsDateTime(kEpoch);
  ASSERT_TRUE(resolved.has_value());
  EXPECT_EQ(YearOf(*resolved), 2106);
  EXPECT_EQ(ToMicros(*resolved), int64_t{UINT32_MAX} * 1'000'000);
}

// Obelisk's test as_date_time_should_fail_on_duration_secs_greater_than_i64_max
// (chrono's TimeDelta tops out at i64::MAX milliseconds).
TEST(HistoryEventScheduleAtTest, AsDateTimeShouldFailOnDurationSecsGreaterThanI64MaxMillis) {
  constexpr uint64_t kTimeDeltaMaxSecs = INT64_MAX / 1000;
  const auto schedule_at = HistoryEventScheduleAt::In(Duration::FromSecs(kTimeDeltaMaxSecs + 1));
  EXPECT_FALSE(schedule_at.AsDateTime(kEpoch).has_value());
  EXPECT_FALSE(HistoryEventScheduleAt::In(Duration::Max()).AsDateTime(kEpoch).has_value());
}

TEST(HistoryEventScheduleAtTest, AsDateTimeStaysWithinRfc3339Years) {
  const DateTime last = T("9999-12-31T23:59:59.999999Z");
  const Duration to_last = Duration::FromMicros(static_cast<uint64_t>(ToMicros(last)));
  auto at_last = HistoryEventScheduleAt::In(to_last).AsDateTime(kEpoch);
  ASSERT_TRUE(at_last.has_value());
  EXPECT_EQ(*at_last, last);
  EXPECT_FALSE(
      HistoryEventScheduleAt::In(Duration::FromMicros(static_cast<uint64_t>(ToMicros(last)) + 1))
          .AsDateTime(kEpoch)
          .has_value());
  // Overflow of the sum itself.
  EXPECT_FALSE(HistoryEventScheduleAt::In(Duration::FromSecs(1))
                   .AsDateTime(DateTimeFromMicros(INT64_MAX - 5))
                   .has_value());
}

TEST(HistoryEventScheduleAtTest, NowAndAtResolve) {
  const DateTime now = T("2024-01-02T03:04:05Z");
  EXPECT_EQ(*HistoryEventScheduleAt::Now().AsDateTime(now), now);
  EXPECT_EQ(*HistoryEventScheduleAt::At(kEpoch).AsDateTime(now), kEpoch);
  EXPECT_EQ(*HistoryEventScheduleAt::In(Duration::FromMillis(1500)).AsDateTime(now),
            T("2024-01-02T03:04:06.5Z"));
  // Sub-microsecond parts are truncated.
  EXPECT_EQ(*HistoryEventScheduleAt::In(Duration{0, 999}).AsDateTime(now), now);
}

TEST(HistoryEventScheduleAtTest, ToString) {
  EXPECT_EQ(HistoryEventScheduleAt::Now().ToString(), "Now");
  EXPECT_EQ(HistoryEventScheduleAt::At(kEpoch).ToString(), "At(`1970-01-01T00:00:00Z`)");
  EXPECT_EQ(HistoryEventScheduleAt::In(Duration::FromMillis(100)).ToString(), "In(100ms)");
}

TEST(ExecutionRequestTest, NamesTagsAndPredicates) {
  const ExecutionRequest created = Created{*FunctionFqn::Parse("a:b/c.d"),
                                           Json::array(),
                                           std::nullopt,
                                           kEpoch,
                                           ComponentId::DummyActivity(),
                                           {},
                                           std::nullopt};
  const ExecutionRequest failed = TemporarilyFailed{kEpoch, "trap", std::nullopt, std::nullopt};
  const ExecutionRequest timed_out = TemporarilyTimedOut{kEpoch, std::nullopt};
  const ExecutionRequest history =
      HistoryEventRequest{HistoryJoinNext{Js("n:x"), kEpoch, std::nullopt, false}};
  EXPECT_EQ(ExecutionRequestVariantName(created), "Created");
  EXPECT_EQ(ExecutionRequestVariantTag(created), "created");
  EXPECT_EQ(ExecutionRequestVariantName(timed_out), "TemporarilyTimedOut");
  EXPECT_EQ(ExecutionRequestVariantTag(timed_out), "temporarily_timed_out");
  EXPECT_EQ(ExecutionRequestVariantName(history), "HistoryEvent");
  EXPECT_EQ(ExecutionRequestVariantTag(history), "history_event");
  EXPECT_TRUE(IsTemporaryEvent(failed));
  EXPECT_TRUE(IsTemporaryEvent(timed_out));
  EXPECT_FALSE(IsTemporaryEvent(created));
  EXPECT_FALSE(IsTemporaryEvent(Unlocked{kEpoch, "limit"}));

  EXPECT_EQ(HistoryEventTypeTag(HistoryJoinNextTooMany{Js("n:x"), std::nullopt}),
            "join_next_too_many");
  EXPECT_EQ(HistoryEventTypeTag(HistoryPersist{{1}, PersistKindRandomU64{0, 1}}), "persist");
}

TEST(ExecutionRequestTest, JoinSetIdOfEvents) {
  Created created{*FunctionFqn::Parse("a:b/c.d"),
                  Json::array(),
                  std::nullopt,
                  kEpoch,
                  ComponentId::DummyActivity(),
                  {},
                  std::nullopt};
  EXPECT_EQ(ExecutionRequestJoinSetId(created), std::nullopt);
  created.parent = std::pair(TestExecutionId(), Js("o:1-fibo"));
  EXPECT_EQ(ExecutionRequestJoinSetId(created), Js("o:1-fibo"));
  EXPECT_EQ(ExecutionRequestJoinSetId(HistoryEventRequest{HistoryJoinSetCreate{Js("g:1")}}),
            Js("g:1"));
  EXPECT_EQ(ExecutionRequestJoinSetId(
                HistoryEventRequest{HistoryJoinNext{Js("n:a"), kEpoch, std::nullopt, false}}),
            Js("n:a"));
  EXPECT_EQ(ExecutionRequestJoinSetId(
                HistoryEventRequest{HistoryJoinNextTooMany{Js("n:a"), std::nullopt}}),
            std::nullopt);
  EXPECT_EQ(ExecutionRequestJoinSetId(Finished{ReturnValueOk{}, std::nullopt}), std::nullopt);
}

TEST(ExecutionRequestTest, ToStringFollowsSeedDisplay) {
  const ExecutionId id = TestExecutionId();
  EXPECT_EQ(ExecutionRequestToString(Created{*FunctionFqn::Parse("a:b/c.d"),
                                             Json::array(),
                                             std::nullopt,
                                             kEpoch,
                                             ComponentId::DummyActivity(),
                                             {},
                                             std::nullopt}),
            "Created(a:b/c.d, `1970-01-01T00:00:00Z`)");
  EXPECT_EQ(
      ExecutionRequestToString(Locked{ComponentId::DummyWorkflow(), ExecutorId::Generate(),
                                      RunId::Generate(), kEpoch, ComponentRetryConfig::Zero()}),
      "Locked(`1970-01-01T00:00:00Z`, workflow:dummy_workflow)");
  EXPECT_EQ(ExecutionRequestToString(Unlocked{kEpoch, "r"}), "Unlocked(`1970-01-01T00:00:00Z`)");
  EXPECT_EQ(ExecutionRequestToString(Finished{ReturnValueOk{}, std::nullopt}), "Finished");
  EXPECT_EQ(ExecutionRequestToString(HistoryEventRequest{HistoryJoinSetCreate{Js("n:a")}}),
            "HistoryEvent(JoinSetCreate(n:a))");
  const DelayId delay(id, Js("o:1-sleep"), 1);
  EXPECT_EQ(ExecutionRequestToString(HistoryEventRequest{HistoryJoinSetRequest{
                Js("o:1-sleep"),
                DelayRequest{delay, kEpoch, HistoryEventScheduleAt::In(Duration::FromSecs(1))}}}),
            "HistoryEvent(JoinSetRequest(DelayRequest(" + delay.ToString() +
                ", expires_at: `1970-01-01T00:00:00Z`, schedule_at: `In(1s)`)))");
  EXPECT_EQ(
      ExecutionRequestToString(HistoryEventRequest{HistoryJoinSetRequest{
          Js("n:a"), ChildExecutionRequest{id.NextLevel(Js("n:a"), 1),
                                           *FunctionFqn::Parse("a:b/c.d"), Json::array({1})}}}),
      "HistoryEvent(JoinSetRequest(ChildExecutionRequest(" + id.ToString() +
          ".n:a_1, a:b/c.d, params: [1])))");
}

TEST(PendingStateTest, NamesDigestAndToString) {
  const InputContentDigest digest =
      *InputContentDigest::Parse("sha256:" + std::string(63, '0') + "1");
  const LockedBy locked_by{ExecutorId::Generate(), RunId::Generate()};
  const PendingState pending{PendingStatePendingAt{kEpoch, std::nullopt, digest}};
  const PendingState locked{PendingStateLocked{locked_by, kEpoch, digest}};
  const PendingState blocked{PendingStateBlockedByJoinSet{Js("n:a"), kEpoch, true, digest}};
  const PendingState finished{PendingStateFinished{
      3, kEpoch, PendingStateFinishedResultKind::Failure(ExecutionFailureKind::kTimedOut), digest}};
  EXPECT_EQ(pending.StateName(), "PendingAt");
  EXPECT_EQ(locked.StateName(), "Locked");
  EXPECT_EQ(blocked.StateName(), "BlockedByJoinSet");
  EXPECT_EQ(finished.StateName(), "Finished");
  for (const PendingState* state : {&pending, &locked, &blocked, &finished}) {
    EXPECT_EQ(state->ComponentIdInputDigest(), digest);
  }
  EXPECT_TRUE(finished.IsFinished());
  EXPECT_FALSE(blocked.IsFinished());
  EXPECT_EQ(pending.ToString(), "PendingAt(`1970-01-01T00:00:00Z`)");
  EXPECT_EQ(locked.ToString(), "Locked(`1970-01-01T00:00:00Z`, " +
                                   locked_by.executor_id.ToString() + ", " +
                                   locked_by.run_id.ToString() + ")");
  EXPECT_EQ(blocked.ToString(), "BlockedByJoinSet(n:a,`1970-01-01T00:00:00Z`)");
  EXPECT_EQ(finished.ToString(), "Finished(execution terminated: timed_out)");
}

}  // namespace
}  // namespace stele::core
