// Cron schedules through the execution service on a manual clock, on every
// backend (memory, a SQLite file, PostgreSQL under scripts/with_postgres.sh):
// exactly one execution per tick with its deterministic id, daylight-saving
// changes, missed ticks after a restart, two nodes on one database, the
// overlap policies, pause/resume, config declarations and hostile input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "service/cron/tick_plan.h"
#include "service/execution_service.h"
#include "storage/memory/memory_pool.h"
#include "storage/sqlite/sqlite_pool.h"
#ifdef STELE_SERVICE_TEST_HAVE_POSTGRES
#include "storage/postgres/test_database.h"
#endif

namespace stele::service {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

DateTime CronAt(const char* rfc3339) {
  auto t = ParseRfc3339(rfc3339);
  EXPECT_TRUE(t.has_value()) << rfc3339;
  return t.value_or(DateTime{});
}

const char* const kFfqn = "demo:cron/api.job";
const char* const kTypedFfqn = "demo:cron/api.typed";

// One database, opened as often as a test needs nodes.
class CronDatabase {
 public:
  virtual ~CronDatabase() = default;
  // A pool on the database: a new one per call where the backend allows
  // several (SQLite file, PostgreSQL), the one pool for memory.
  virtual std::shared_ptr<storage::DbPool> Open() = 0;
};

class MemoryCronDatabase final : public CronDatabase {
 public:
  std::shared_ptr<storage::DbPool> Open() override { return pool_; }

 private:
  std::shared_ptr<storage::DbPool> pool_ = storage::memory::MemoryPool::Create();
};

class SqliteCronDatabase final : public CronDatabase {
 public:
  SqliteCronDatabase() {
    dir_ = std::filesystem::temp_directory_path() /
           ("stele_cron_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~SqliteCronDatabase() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::shared_ptr<storage::DbPool> Open() override {
    storage::sqlite::SqliteOptions options;
    options.path = (dir_ / "stele.sqlite").string();
    options.synchronous = storage::sqlite::SqliteOptions::Synchronous::kNormal;
    auto pool = storage::sqlite::SqlitePool::Open(options);
    EXPECT_TRUE(pool.has_value());
    return pool ? std::shared_ptr<storage::DbPool>(std::move(*pool)) : nullptr;
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
};

#ifdef STELE_SERVICE_TEST_HAVE_POSTGRES
class PostgresCronDatabase final : public CronDatabase {
 public:
  explicit PostgresCronDatabase(std::string dbname) : dbname_(std::move(dbname)) {}
  ~PostgresCronDatabase() override { storage::postgres::testing::DropDatabase(dbname_); }
  std::shared_ptr<storage::DbPool> Open() override {
    auto conninfo = storage::postgres::testing::WithDatabase(
        *storage::postgres::testing::AdminConninfo(), dbname_);
    EXPECT_TRUE(conninfo.has_value());
    if (!conninfo) return nullptr;
    auto pool = storage::postgres::PostgresPool::Open(
        storage::postgres::PostgresOptions{.conninfo = *conninfo});
    EXPECT_TRUE(pool.has_value());
    return pool ? std::shared_ptr<storage::DbPool>(std::move(*pool)) : nullptr;
  }

 private:
  std::string dbname_;
};
#endif

class CronServiceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string& backend = GetParam();
    if (backend == "memory") {
      db_ = std::make_unique<MemoryCronDatabase>();
    } else if (backend == "sqlite") {
      db_ = std::make_unique<SqliteCronDatabase>();
    } else {
#ifdef STELE_SERVICE_TEST_HAVE_POSTGRES
      if (!storage::postgres::testing::AdminConninfo()) {
        if (storage::postgres::testing::PostgresTestsRequired()) {
          FAIL() << storage::postgres::testing::UnavailableReason();
        }
        GTEST_SKIP() << storage::postgres::testing::UnavailableReason();
      }
      auto dbname = storage::postgres::testing::CreateFreshDatabase();
      ASSERT_TRUE(dbname.has_value()) << dbname.error().ToString();
      db_ = std::make_unique<PostgresCronDatabase>(*dbname);
#endif
    }
  }

  // A node: a service on a new pool of the database, serving kFfqn (an
  // activity without a worker: its executions stay pending until
  // cancelled) and kTypedFfqn(u32).
  std::unique_ptr<ExecutionService> Node() {
    ServiceOptions options;
    options.pool = db_->Open();
    options.clock = clock_;
    options.start_watcher = false;
    options.start_cron = false;
    auto service = ExecutionService::Create(options);
    EXPECT_TRUE(service.has_value());
    ComponentSpec spec;
    spec.component_id = core::ComponentId::DummyActivity();
    spec.functions = {*core::FunctionFqn::Parse(kFfqn), *core::FunctionFqn::Parse(kTypedFfqn)};
    core::FunctionSignature typed{*core::FunctionFqn::Parse(kTypedFfqn),
                                  {{"n", *core::TypeDesc::Parse("u32")}},
                                  std::nullopt};
    spec.signatures = {typed};
    EXPECT_TRUE((*service)->AddComponent(spec).has_value());
    return std::move(*service);
  }

  ExecutionService& node() {
    if (!node_) node_ = Node();
    return *node_;
  }

  ScheduleSpec Spec(std::string name, std::string expression, std::string zone = "UTC") {
    ScheduleSpec spec;
    spec.name = std::move(name);
    spec.expression = std::move(expression);
    spec.time_zone = std::move(zone);
    spec.ffqn = kFfqn;
    spec.params = core::Json::array({"tick"});
    return spec;
  }

  ScheduleInfo Create(const ScheduleSpec& spec) {
    auto created = node().CreateSchedule(spec);
    EXPECT_TRUE(created.has_value()) << created.error().ToString();
    return created ? *created : ScheduleInfo{};
  }

  void PassAt(ExecutionService& service, DateTime at) {
    clock_->Set(at);
    auto pass = service.RunCronPassForTest(at);
    ASSERT_TRUE(pass.has_value()) << pass.error().ToString();
  }
  void PassAt(const char* at) { PassAt(node(), CronAt(at)); }

  // Every execution of kFfqn, oldest first, as (id, first_scheduled_at).
  std::vector<std::pair<std::string, std::string>> Executions() {
    std::vector<std::pair<std::string, std::string>> out;
    ListQuery query;
    query.ffqn = kFfqn;
    query.limit = 1000;
    auto page = node().List(query);
    EXPECT_TRUE(page.has_value());
    if (!page) return out;
    for (const auto& row : page->executions) {
      out.emplace_back(row.execution_id.ToString(), FormatRfc3339(row.first_scheduled_at));
    }
    std::reverse(out.begin(), out.end());
    return out;
  }
  std::vector<std::string> TickTimes() {
    std::vector<std::string> out;
    for (const auto& [id, at] : Executions()) out.push_back(at);
    return out;
  }

  std::shared_ptr<ManualClock> clock_ =
      std::make_shared<ManualClock>(CronAt("2024-01-01T10:00:30Z"));
  std::unique_ptr<CronDatabase> db_;
  std::unique_ptr<ExecutionService> node_;
};

std::vector<std::string> CronBackends() {
  std::vector<std::string> out = {"memory", "sqlite"};
#ifdef STELE_SERVICE_TEST_HAVE_POSTGRES
  out.push_back("postgres");
#endif
  return out;
}

INSTANTIATE_TEST_SUITE_P(Backends, CronServiceTest, ::testing::ValuesIn(CronBackends()),
                         [](const auto& param_info) { return param_info.param; });

TEST_P(CronServiceTest, EachTickCreatesOneExecutionWithItsDeterministicId) {
  const ScheduleInfo info = Create(Spec("every-minute", "0 * * * * *"));
  EXPECT_EQ(info.next_tick, CronAt("2024-01-01T10:01:00Z"));
  PassAt("2024-01-01T10:00:59Z");
  EXPECT_TRUE(Executions().empty());
  PassAt("2024-01-01T10:01:00.5Z");
  PassAt("2024-01-01T10:01:00.7Z");
  const auto executions = Executions();
  ASSERT_EQ(executions.size(), 1u);
  EXPECT_EQ(executions[0].first, cron::TickExecutionId("every-minute", info.schedule.created_at,
                                                       CronAt("2024-01-01T10:01:00Z"))
                                     .ToString());
  EXPECT_EQ(executions[0].second, "2024-01-01T10:01:00Z");
  EXPECT_EQ(node().cron_counts().fired, 1u);
  const ScheduleInfo after = *node().GetSchedule("every-minute");
  EXPECT_EQ(after.schedule.last_tick, CronAt("2024-01-01T10:01:00Z"));
  EXPECT_EQ(after.schedule.last_execution_id->ToString(), executions[0].first);
  EXPECT_EQ(after.next_tick, CronAt("2024-01-01T10:02:00Z"));
}

// A crash after the tick's execution was created and before the tick was
// recorded: the next pass finds the execution and records it, creating
// nothing twice.
TEST_P(CronServiceTest, CrashBetweenCreateAndRecordCreatesNothingTwice) {
  const ScheduleInfo info = Create(Spec("s", "0 * * * * *"));
  const core::ExecutionId id =
      cron::TickExecutionId("s", info.schedule.created_at, CronAt("2024-01-01T10:01:00Z"));
  clock_->Set(CronAt("2024-01-01T10:01:00.2Z"));
  ASSERT_TRUE(node()
                  .Submit(SubmitRequest{kFfqn, core::Json::array({"tick"}), id.ToString(),
                                        CronAt("2024-01-01T10:01:00Z")})
                  .has_value());
  node_.reset();  // the crashed node
  PassAt("2024-01-01T10:01:01Z");
  const auto executions = Executions();
  ASSERT_EQ(executions.size(), 1u);
  EXPECT_EQ(executions[0].first, id.ToString());
  EXPECT_EQ(node().GetSchedule("s")->schedule.last_tick, CronAt("2024-01-01T10:01:00Z"));
}

TEST_P(CronServiceTest, MissedTicksAfterRestartFollowTheCatchUpPolicy) {
  ScheduleSpec last = Spec("last", "0 * * * * *");
  last.overlap = "allow";
  ScheduleSpec skip = last;
  skip.name = "skip";
  skip.catch_up = "skip";
  ScheduleSpec all = last;
  all.name = "all";
  all.catch_up = "all";
  all.catch_up_limit = 3;
  Create(last);
  Create(skip);
  Create(all);
  PassAt("2024-01-01T10:01:00Z");
  EXPECT_EQ(node().cron_counts().fired, 3u);
  node_.reset();  // down from 10:01 to 12:00:30
  PassAt("2024-01-01T12:00:30Z");
  std::map<std::string, std::vector<std::string>> by_schedule;
  for (const char* name : {"last", "skip", "all"}) {
    const ScheduleInfo s = *node().GetSchedule(name);
    for (const auto& [id, at] : Executions()) {
      for (const char* tick :
           {"2024-01-01T10:01:00Z", "2024-01-01T11:57:00Z", "2024-01-01T11:58:00Z",
            "2024-01-01T11:59:00Z", "2024-01-01T12:00:00Z", "2024-01-01T11:30:00Z"}) {
        if (id == cron::TickExecutionId(name, s.schedule.created_at, CronAt(tick)).ToString()) {
          by_schedule[name].push_back(at);
        }
      }
    }
    EXPECT_EQ(s.schedule.last_tick, CronAt("2024-01-01T12:00:00Z")) << name;
  }
  EXPECT_EQ(by_schedule["last"],
            (std::vector<std::string>{"2024-01-01T10:01:00Z", "2024-01-01T12:00:00Z"}));
  EXPECT_EQ(by_schedule["skip"],
            (std::vector<std::string>{"2024-01-01T10:01:00Z", "2024-01-01T12:00:00Z"}));
  EXPECT_EQ(by_schedule["all"],
            (std::vector<std::string>{"2024-01-01T10:01:00Z", "2024-01-01T11:57:00Z",
                                      "2024-01-01T11:58:00Z", "2024-01-01T11:59:00Z",
                                      "2024-01-01T12:00:00Z"}));
  EXPECT_EQ(Executions().size(), 9u);
  // 118 missed ticks each (10:02..11:59), 12:00 on time: last and skip
  // keep none of them, all keeps 3.
  EXPECT_EQ(node().cron_counts().skipped, 118u + 118u + 115u);
}

// Berlin, daily at 02:30, a pass every 10 minutes across both changes of
// 2024: one execution per day, in the gap at 03:00 CEST, in the repeat at
// the first 02:30.
TEST_P(CronServiceTest, DaylightSavingChangesInBerlin) {
  clock_->Set(CronAt("2024-03-30T00:00:00Z"));
  ScheduleSpec berlin = Spec("berlin", "0 30 2 * * *", "Europe/Berlin");
  berlin.overlap = "allow";  // no worker finishes the executions
  Create(berlin);
  for (DateTime t = CronAt("2024-03-30T00:00:00Z"); t <= CronAt("2024-04-01T06:00:00Z");
       t += 10min) {
    PassAt(node(), t);
  }
  ASSERT_TRUE(node().PauseSchedule("berlin").has_value());
  clock_->Set(CronAt("2024-10-26T00:00:00Z"));
  ASSERT_TRUE(node().ResumeSchedule("berlin").has_value());
  for (DateTime t = CronAt("2024-10-26T00:00:00Z"); t <= CronAt("2024-10-28T06:00:00Z");
       t += 10min) {
    PassAt(node(), t);
  }
  EXPECT_EQ(TickTimes(),
            (std::vector<std::string>{"2024-03-30T01:30:00Z", "2024-03-31T01:00:00Z",
                                      "2024-04-01T00:30:00Z", "2024-10-26T00:30:00Z",
                                      "2024-10-27T00:30:00Z", "2024-10-28T01:30:00Z"}));
}

// New York, every 30 minutes from 00:00 to 03:59 local, across both
// changes: the missing hour is one tick at 03:00 EDT, the repeated hour
// fires once.
TEST_P(CronServiceTest, DaylightSavingChangesInNewYork) {
  clock_->Set(CronAt("2024-03-10T04:00:00Z"));  // 23:00 EST
  ScheduleSpec ny = Spec("ny", "0 0,30 0-3 * * *", "America/New_York");
  ny.overlap = "allow";
  Create(ny);
  for (DateTime t = CronAt("2024-03-10T04:00:00Z"); t <= CronAt("2024-03-10T09:00:00Z");
       t += 5min) {
    PassAt(node(), t);
  }
  // 00:00, 00:30, 01:00, 01:30 EST; 02:00 and 02:30 do not exist: 03:00
  // EDT once; 03:30 EDT.
  EXPECT_EQ(TickTimes(),
            (std::vector<std::string>{"2024-03-10T05:00:00Z", "2024-03-10T05:30:00Z",
                                      "2024-03-10T06:00:00Z", "2024-03-10T06:30:00Z",
                                      "2024-03-10T07:00:00Z", "2024-03-10T07:30:00Z"}));
}

TEST_P(CronServiceTest, TwoNodesNeverStartATickTwice) {
  ScheduleSpec spec = Spec("shared", "* * * * * *");
  spec.overlap = "allow";
  Create(spec);
  std::unique_ptr<ExecutionService> a = Node();
  std::unique_ptr<ExecutionService> b = Node();
  // Both nodes pass at every second, concurrently, for 60 seconds.
  for (int i = 1; i <= 60; ++i) {
    const DateTime at = CronAt("2024-01-01T10:00:30Z") + std::chrono::seconds(i);
    clock_->Set(at);
    std::thread other([&] { ASSERT_TRUE(b->RunCronPassForTest(at).has_value()); });
    ASSERT_TRUE(a->RunCronPassForTest(at).has_value());
    other.join();
  }
  const auto executions = Executions();
  ASSERT_EQ(executions.size(), 60u);
  std::set<std::string> ids;
  for (const auto& [id, at] : executions) ids.insert(id);
  EXPECT_EQ(ids.size(), 60u);
  EXPECT_EQ(executions.front().second, "2024-01-01T10:00:31Z");
  EXPECT_EQ(executions.back().second, "2024-01-01T10:01:30Z");
  // Some passes found their tick created by the other node: each tick is
  // counted where it fired, possibly on both.
  EXPECT_GE(a->cron_counts().fired + b->cron_counts().fired, 60u);
  EXPECT_EQ(node().GetSchedule("shared")->schedule.last_tick, CronAt("2024-01-01T10:01:30Z"));
}

TEST_P(CronServiceTest, OverlapSkipSkipsWhileTheLastTickRuns) {
  Create(Spec("s", "0 * * * * *"));
  PassAt("2024-01-01T10:01:00Z");
  PassAt("2024-01-01T10:02:00Z");  // 10:01 still pending: skipped
  ASSERT_EQ(Executions().size(), 1u);
  EXPECT_EQ(node().cron_counts().skipped, 1u);
  ASSERT_TRUE(node().Cancel(Executions()[0].first).has_value());
  PassAt("2024-01-01T10:03:00Z");
  EXPECT_EQ(TickTimes(),
            (std::vector<std::string>{"2024-01-01T10:01:00Z", "2024-01-01T10:03:00Z"}));
}

TEST_P(CronServiceTest, OverlapBufferOneRunsTheLatestTickAfterTheRunningOne) {
  ScheduleSpec spec = Spec("s", "0 * * * * *");
  spec.overlap = "buffer_one";
  Create(spec);
  PassAt("2024-01-01T10:01:00Z");
  PassAt("2024-01-01T10:02:00Z");  // buffered
  PassAt("2024-01-01T10:03:00Z");  // 10:02 dropped, 10:03 buffered
  ASSERT_EQ(Executions().size(), 1u);
  // 10:02 is behind the watermark (skipped), 10:03 after it (waiting).
  EXPECT_GE(node().GetSchedule("s")->schedule.last_tick, CronAt("2024-01-01T10:02:00Z"));
  EXPECT_LT(node().GetSchedule("s")->schedule.last_tick, CronAt("2024-01-01T10:03:00Z"));
  ASSERT_TRUE(node().Cancel(Executions()[0].first).has_value());
  PassAt("2024-01-01T10:03:20Z");
  EXPECT_EQ(TickTimes(),
            (std::vector<std::string>{"2024-01-01T10:01:00Z", "2024-01-01T10:03:00Z"}));
  EXPECT_EQ(node().cron_counts().skipped, 1u);
}

TEST_P(CronServiceTest, OverlapAllowFiresEveryTick) {
  ScheduleSpec spec = Spec("s", "0 * * * * *");
  spec.overlap = "allow";
  Create(spec);
  PassAt("2024-01-01T10:01:00Z");
  PassAt("2024-01-01T10:02:00Z");
  EXPECT_EQ(Executions().size(), 2u);
}

TEST_P(CronServiceTest, TicksInAPauseNeverFire) {
  ScheduleSpec spec = Spec("s", "0 * * * * *");
  spec.overlap = "allow";
  Create(spec);
  ASSERT_TRUE(node().PauseSchedule("s").has_value());
  EXPECT_FALSE(node().GetSchedule("s")->next_tick.has_value());
  PassAt("2024-01-01T10:05:00Z");
  EXPECT_TRUE(Executions().empty());
  clock_->Set(CronAt("2024-01-01T10:05:30Z"));
  ASSERT_TRUE(node().ResumeSchedule("s").has_value());
  PassAt("2024-01-01T10:06:00Z");
  EXPECT_EQ(TickTimes(), (std::vector<std::string>{"2024-01-01T10:06:00Z"}));
  ASSERT_TRUE(node().DeleteSchedule("s").has_value());
  PassAt("2024-01-01T10:07:00Z");
  EXPECT_EQ(Executions().size(), 1u);
  EXPECT_EQ(node().GetSchedule("s").error().kind, ServiceError::Kind::kNotFound);
}

TEST_P(CronServiceTest, TriggerSubmitsNowOutsideTheTicks) {
  Create(Spec("s", "0 0 0 1 1 *"));
  auto submitted = node().TriggerSchedule("s");
  ASSERT_TRUE(submitted.has_value()) << submitted.error().ToString();
  EXPECT_TRUE(submitted->created);
  EXPECT_EQ(TickTimes(), (std::vector<std::string>{"2024-01-01T10:00:30Z"}));
  EXPECT_EQ(node().GetSchedule("s")->schedule.last_tick, CronAt("2024-01-01T10:00:30Z"));
  EXPECT_EQ(node().TriggerSchedule("nope").error().kind, ServiceError::Kind::kNotFound);
}

TEST_P(CronServiceTest, ConfigDeclarationsUpsertAndRemoveOnlyTheirOwn) {
  Create(Spec("api-made", "0 * * * * *"));
  ASSERT_TRUE(node()
                  .DeclareSchedules({Spec("cfg-a", "0 * * * * *"), Spec("cfg-b", "0 * * * * *")})
                  .has_value());
  ASSERT_TRUE(node().PauseSchedule("cfg-a").has_value());
  // The next start: cfg-a changed, cfg-b gone.
  ScheduleSpec changed = Spec("cfg-a", "30 * * * * *");
  changed.params = core::Json::array({"changed"});
  ASSERT_TRUE(node().DeclareSchedules({changed}).has_value());
  auto listed = *node().ListSchedules();
  std::vector<std::string> names;
  for (const auto& s : listed) names.push_back(s.schedule.definition.name);
  EXPECT_EQ(names, (std::vector<std::string>{"api-made", "cfg-a"}));
  const ScheduleInfo a = *node().GetSchedule("cfg-a");
  EXPECT_TRUE(a.schedule.paused);
  EXPECT_EQ(a.schedule.definition.expression, "30 * * * * *");
  EXPECT_EQ(a.schedule.definition.params, R"(["changed"])");
  EXPECT_TRUE(a.schedule.definition.from_config);
  // An invalid declaration writes nothing.
  ScheduleSpec bad = Spec("cfg-c", "61 * * * * *");
  auto refused = node().DeclareSchedules({Spec("cfg-d", "0 * * * * *"), bad});
  ASSERT_FALSE(refused.has_value());
  EXPECT_THAT(refused.error().message, HasSubstr("schedule `cfg-c`: cron expression"));
  EXPECT_EQ(node().ListSchedules()->size(), 2u);
  auto twice = node().DeclareSchedules({Spec("x", "* * * * * *"), Spec("x", "* * * * * *")});
  ASSERT_FALSE(twice.has_value());
  EXPECT_THAT(twice.error().message, HasSubstr("declared twice"));
}

TEST_P(CronServiceTest, MalformedAndHostileDefinitionsAreRefusedAndWriteNothing) {
  struct Case {
    ScheduleSpec spec;
    ServiceError::Kind kind;
    std::string message;
  };
  std::vector<Case> cases;
  auto with = [&](auto edit, ServiceError::Kind kind, std::string message) {
    ScheduleSpec spec = Spec("ok", "0 * * * * *");
    edit(spec);
    cases.push_back({spec, kind, std::move(message)});
  };
  const auto kInvalid = ServiceError::Kind::kInvalidArgument;
  with([](ScheduleSpec& s) { s.name = ""; }, kInvalid, "schedule name is empty");
  with([](ScheduleSpec& s) { s.name = "../etc"; }, kInvalid, "invalid schedule name");
  with([](ScheduleSpec& s) { s.name = "a b"; }, kInvalid, "invalid schedule name");
  with([](ScheduleSpec& s) { s.name = "caf\xc3\xa9"; }, kInvalid, "invalid schedule name");
  with([](ScheduleSpec& s) { s.name = std::string(129, 'a'); }, kInvalid, "longer than 128");
  with([](ScheduleSpec& s) { s.expression = "61 * * * * *"; }, kInvalid,
       "second: 61 is out of range 0-59");
  with([](ScheduleSpec& s) { s.expression = ""; }, kInvalid, "expected 6 fields");
  with([](ScheduleSpec& s) { s.time_zone = "Mars/Base"; }, kInvalid,
       "unknown time zone \"Mars/Base\"");
  with([](ScheduleSpec& s) { s.ffqn = "demo:cron/api.nope"; }, ServiceError::Kind::kNotFound,
       "unknown ffqn");
  with([](ScheduleSpec& s) { s.ffqn = "not an ffqn"; }, kInvalid, "");
  with([](ScheduleSpec& s) { s.params = core::Json::object(); }, kInvalid,
       "params must be a JSON array");
  with(
      [](ScheduleSpec& s) {
        s.ffqn = kTypedFfqn;
        s.params = core::Json::array({"x"});
      },
      kInvalid, "params of `demo:cron/api.typed`");
  with([](ScheduleSpec& s) { s.overlap = "never"; }, kInvalid, "overlap must be");
  with([](ScheduleSpec& s) { s.catch_up = "some"; }, kInvalid, "catch_up must be");
  with([](ScheduleSpec& s) { s.catch_up_limit = 0; }, kInvalid, "catch_up_limit must be");
  with([](ScheduleSpec& s) { s.catch_up_limit = 1001; }, kInvalid, "catch_up_limit must be");
  for (const Case& c : cases) {
    auto created = node().CreateSchedule(c.spec);
    ASSERT_FALSE(created.has_value()) << c.message;
    EXPECT_EQ(created.error().kind, c.kind) << created.error().ToString();
    EXPECT_THAT(created.error().message, HasSubstr(c.message));
  }
  EXPECT_TRUE(node().ListSchedules()->empty());
  Create(Spec("ok", "0 * * * * *"));
  EXPECT_EQ(node().CreateSchedule(Spec("ok", "1 * * * * *")).error().kind,
            ServiceError::Kind::kConflict);
  EXPECT_EQ(node().GetSchedule("ok")->schedule.definition.expression, "0 * * * * *");
  EXPECT_EQ(node().GetSchedule("../x").error().kind, kInvalid);
  EXPECT_EQ(node().PauseSchedule("").error().kind, kInvalid);
  EXPECT_EQ(node().DeleteSchedule("nope").error().kind, ServiceError::Kind::kNotFound);
  EXPECT_EQ(node().ResumeSchedule("nope").error().kind, ServiceError::Kind::kNotFound);
}

}  // namespace
}  // namespace stele::service
