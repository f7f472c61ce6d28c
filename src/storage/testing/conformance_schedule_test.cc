// Cron schedules (docs/storage_contract.md, "Schedules"): create, upsert,
// read, pause/resume, delete and the never-backwards tick watermark, the
// same on every backend.
#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using namespace std::chrono_literals;

class ScheduleTest : public ConformanceTest {};
STELE_INSTANTIATE_CONFORMANCE_SUITE(ScheduleTest);

ScheduleDefinition Definition(std::string name) {
  ScheduleDefinition d;
  d.name = std::move(name);
  d.expression = "0 */5 * * * *";
  d.time_zone = "Europe/Berlin";
  d.ffqn = FfqnA().ToString();
  d.params = R"(["x", 1, {"k": "\u00e9\"'"}])";
  d.overlap = "skip";
  d.catch_up = "last";
  d.catch_up_limit = 10;
  d.from_config = false;
  return d;
}

std::vector<std::string> NamesOf(const std::vector<Schedule>& schedules) {
  std::vector<std::string> out;
  for (const Schedule& s : schedules) out.push_back(s.definition.name);
  return out;
}

TEST_P(ScheduleTest, CreateGetListDelete) {
  const Schedule created = Must(db().CreateSchedule(Definition("nightly"), kT0));
  EXPECT_EQ(created.definition, Definition("nightly"));
  EXPECT_FALSE(created.paused);
  EXPECT_EQ(created.created_at, kT0);
  EXPECT_EQ(created.updated_at, kT0);
  EXPECT_EQ(created.last_tick, kT0);
  EXPECT_FALSE(created.last_execution_id.has_value());
  EXPECT_EQ(Must(db().GetSchedule("nightly")), created);

  // A second create of the name changes nothing.
  ScheduleDefinition other = Definition("nightly");
  other.expression = "* * * * * *";
  EXPECT_THAT(db().CreateSchedule(other, kT0 + 1s), IsNonRetriable(kIllegalState));
  EXPECT_EQ(Must(db().GetSchedule("nightly")), created);

  // Byte order of names.
  Must(db().CreateSchedule(Definition("b"), kT0));
  Must(db().CreateSchedule(Definition("B"), kT0));
  Must(db().CreateSchedule(Definition("a-1"), kT0));
  EXPECT_EQ(NamesOf(Must(db().ListSchedules())),
            (std::vector<std::string>{"B", "a-1", "b", "nightly"}));

  Must(db().DeleteSchedule("nightly"));
  EXPECT_THAT(db().GetSchedule("nightly"), IsNotFound());
  EXPECT_THAT(db().DeleteSchedule("nightly"), IsNotFound());
  EXPECT_EQ(NamesOf(Must(db().ListSchedules())), (std::vector<std::string>{"B", "a-1", "b"}));
  // The name is free again: a new schedule with a new creation instant.
  EXPECT_EQ(Must(db().CreateSchedule(Definition("nightly"), kT0 + 5s)).created_at, kT0 + 5s);
}

TEST_P(ScheduleTest, UpsertReplacesTheDefinitionAndKeepsTheState) {
  ScheduleDefinition def = Definition("from-config");
  def.from_config = true;
  const Schedule first = Must(db().UpsertSchedule(def, kT0));
  EXPECT_EQ(first.definition, def);
  EXPECT_EQ(first.last_tick, kT0);
  const ExecutionId fired = NewId();
  Must(db().RecordScheduleTick("from-config", kT0 + 60s, fired));
  Must(db().SetSchedulePaused("from-config", true, kT0 + 61s));

  def.expression = "0 0 * * * *";
  def.params = "[]";
  def.overlap = "buffer_one";
  def.catch_up = "all";
  def.catch_up_limit = 3;
  const Schedule second = Must(db().UpsertSchedule(def, kT0 + 70s));
  EXPECT_EQ(second.definition, def);
  EXPECT_TRUE(second.paused);
  EXPECT_EQ(second.created_at, kT0);
  EXPECT_EQ(second.updated_at, kT0 + 70s);
  EXPECT_EQ(second.last_tick, kT0 + 60s);
  EXPECT_EQ(second.last_execution_id, fired);
  EXPECT_EQ(Must(db().GetSchedule("from-config")), second);
}

TEST_P(ScheduleTest, ResumeSkipsThePausedTime) {
  Must(db().CreateSchedule(Definition("s"), kT0));
  const Schedule paused = Must(db().SetSchedulePaused("s", true, kT0 + 10s));
  EXPECT_TRUE(paused.paused);
  EXPECT_EQ(paused.last_tick, kT0);
  EXPECT_EQ(paused.updated_at, kT0 + 10s);
  // Pausing again is a no-op for the watermark.
  EXPECT_EQ(Must(db().SetSchedulePaused("s", true, kT0 + 20s)).last_tick, kT0);
  const Schedule resumed = Must(db().SetSchedulePaused("s", false, kT0 + 100s));
  EXPECT_FALSE(resumed.paused);
  EXPECT_EQ(resumed.last_tick, kT0 + 100s);
  // Resuming a running schedule leaves its watermark alone.
  EXPECT_EQ(Must(db().SetSchedulePaused("s", false, kT0 + 200s)).last_tick, kT0 + 100s);
  // A resume instant before the watermark never moves it back.
  Must(db().RecordScheduleTick("s", kT0 + 300s, std::nullopt));
  Must(db().SetSchedulePaused("s", true, kT0 + 301s));
  EXPECT_EQ(Must(db().SetSchedulePaused("s", false, kT0 + 250s)).last_tick, kT0 + 300s);
  EXPECT_THAT(db().SetSchedulePaused("nope", true, kT0), IsNotFound());
}

TEST_P(ScheduleTest, TickWatermarkNeverMovesBack) {
  Must(db().CreateSchedule(Definition("s"), kT0));
  const ExecutionId one = NewId();
  const ExecutionId two = NewId();
  const ExecutionId three = NewId();
  Must(db().RecordScheduleTick("s", kT0 + 120s, two));
  // Another node records an older tick late: nothing moves back.
  Must(db().RecordScheduleTick("s", kT0 + 60s, one));
  Schedule s = Must(db().GetSchedule("s"));
  EXPECT_EQ(s.last_tick, kT0 + 120s);
  EXPECT_EQ(s.last_execution_id, two);
  // The same tick recorded again (a skip first, then the fired one from
  // another node): the execution is kept.
  Must(db().RecordScheduleTick("s", kT0 + 180s, std::nullopt));
  Must(db().RecordScheduleTick("s", kT0 + 180s, three));
  s = Must(db().GetSchedule("s"));
  EXPECT_EQ(s.last_tick, kT0 + 180s);
  EXPECT_EQ(s.last_execution_id, three);
  // A skip advances without forgetting the last execution.
  Must(db().RecordScheduleTick("s", kT0 + 240s, std::nullopt));
  s = Must(db().GetSchedule("s"));
  EXPECT_EQ(s.last_tick, kT0 + 240s);
  EXPECT_EQ(s.last_execution_id, three);
  EXPECT_THAT(db().RecordScheduleTick("nope", kT0, std::nullopt), IsNotFound());
}

TEST_P(ScheduleTest, EveryRoleSeesSchedulesAndCloseEndsThem) {
  auto external = Must(pool().ExternalApiConn());
  Must(external->CreateSchedule(Definition("s"), kT0));
  EXPECT_EQ(NamesOf(Must(db().ListSchedules())), (std::vector<std::string>{"s"}));
  pool().Close();
  EXPECT_THAT(db().ListSchedules(), IsClosed());
  EXPECT_THAT(db().GetSchedule("s"), IsClosed());
  EXPECT_THAT(db().CreateSchedule(Definition("t"), kT0), IsClosed());
  EXPECT_THAT(db().RecordScheduleTick("s", kT0, std::nullopt), IsClosed());
}

}  // namespace
}  // namespace stele::storage::conformance
