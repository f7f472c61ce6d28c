// Cron schedules through libstele's Engine: a schedule on a manual clock
// fires its ticks once each (the same service use cases as the API), the
// real ticker runs after Start, and bad input gets the service's errors.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "base/time.h"
#include "engine/sdk_test_util.h"
#include "stele/stele.h"

namespace stele {
namespace {

using testing::EngineTest;
using testing::OkOrDie;

constexpr const char* kCronEcho = "test:engine/cron.echo";

ActivityResult CronEcho(ActivityContext&, const Json& params) { return params; }

std::chrono::system_clock::time_point CronInstant(const char* text) {
  auto t = ParseRfc3339(text);
  EXPECT_TRUE(t.has_value());
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          t.value_or(DateTime{}).time_since_epoch()));
}

class EngineScheduleTest : public EngineTest {};

TEST_F(EngineScheduleTest, TicksOnAManualClockFireOnce) {
  auto clock = std::make_shared<ManualClock>(*ParseRfc3339("2024-03-30T00:00:00Z"));
  EngineOptions options = Options();
  options.clock = clock;
  options.start_cron = false;
  options.start_watcher = false;
  Engine& engine = Open(options);
  ASSERT_TRUE(engine.RegisterActivity(kCronEcho, CronEcho));
  auto created = engine.CreateSchedule("berlin", "0 30 2 * * *", kCronEcho, Json::array({"x"}),
                                       {.time_zone = "Europe/Berlin", .overlap = "allow"});
  ASSERT_TRUE(created) << created.error().ToString();
  EXPECT_EQ(created->next_tick, CronInstant("2024-03-30T01:30:00Z"));
  for (const char* at : {"2024-03-30T01:30:01Z", "2024-03-30T01:30:02Z", "2024-03-31T01:00:05Z"}) {
    clock->Set(*ParseRfc3339(at));
    ASSERT_TRUE(engine.RunCronPassForTest(CronInstant(at)));
  }
  auto page = OkOrDie(engine.List({.ffqn = kCronEcho}), "list");
  EXPECT_EQ(page.executions.size(), 2u);
  auto status = OkOrDie(engine.GetSchedule("berlin"), "get");
  EXPECT_EQ(status.last_tick, CronInstant("2024-03-31T01:00:00Z"));  // 03:00 CEST: the gap's end
  ASSERT_TRUE(status.last_execution_id.has_value());
  EXPECT_EQ(status.options.time_zone, "Europe/Berlin");
  EXPECT_EQ(status.params, Json::array({"x"}));

  EXPECT_TRUE(OkOrDie(engine.PauseSchedule("berlin"), "pause").paused);
  EXPECT_FALSE(OkOrDie(engine.ResumeSchedule("berlin"), "resume").paused);
  EXPECT_EQ(OkOrDie(engine.ListSchedules(), "list").size(), 1u);
  EXPECT_TRUE(OkOrDie(engine.TriggerSchedule("berlin"), "trigger").starts_with("E_"));
  EXPECT_TRUE(engine.DeleteSchedule("berlin"));
  EXPECT_EQ(engine.GetSchedule("berlin").error().kind, Error::Kind::kNotFound);
}

TEST_F(EngineScheduleTest, TheTickerRunsAfterStart) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterActivity(kCronEcho, CronEcho));
  ASSERT_TRUE(engine.CreateSchedule("every-second", "* * * * * *", kCronEcho, Json::array({1})));
  ASSERT_TRUE(engine.Start());
  EXPECT_TRUE(testing::WaitUntil([&] {
    auto page = engine.List({.ffqn = kCronEcho});
    return page && !page->executions.empty();
  }));
}

TEST_F(EngineScheduleTest, BadInputGetsTheServiceErrors) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterActivity(kCronEcho, CronEcho));
  auto error = [](const auto& result) {
    return result ? Error::Kind::kStorage : result.error().kind;
  };
  EXPECT_EQ(error(engine.CreateSchedule("s", "61 * * * * *", kCronEcho, Json::array())),
            Error::Kind::kInvalidArgument);
  EXPECT_EQ(error(engine.CreateSchedule("s", "* * * * * *", kCronEcho, Json::array(),
                                        {.time_zone = "Mars/Base"})),
            Error::Kind::kInvalidArgument);
  EXPECT_EQ(error(engine.CreateSchedule("../s", "* * * * * *", kCronEcho, Json::array())),
            Error::Kind::kInvalidArgument);
  EXPECT_EQ(error(engine.CreateSchedule("s", "* * * * * *", kCronEcho, Json::object())),
            Error::Kind::kInvalidArgument);
  EXPECT_EQ(
      error(engine.CreateSchedule("s", "* * * * * *", "test:engine/cron.nope", Json::array())),
      Error::Kind::kNotFound);
  EXPECT_EQ(error(engine.CreateSchedule("s", "* * * * * *", kCronEcho, Json::array(),
                                        {.overlap = "never"})),
            Error::Kind::kInvalidArgument);
  EXPECT_TRUE(OkOrDie(engine.ListSchedules(), "list").empty());
  ASSERT_TRUE(engine.CreateSchedule("s", "0 0 0 1 1 *", kCronEcho, Json::array()));
  EXPECT_EQ(error(engine.CreateSchedule("s", "0 0 0 1 1 *", kCronEcho, Json::array())),
            Error::Kind::kConflict);
  EXPECT_EQ(error(engine.PauseSchedule("")), Error::Kind::kInvalidArgument);
}

}  // namespace
}  // namespace stele
