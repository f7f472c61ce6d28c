// ExecTask and the expired-timers watcher on real backends behind a
// FaultyDbPool (storage/testing/faulty_db_pool.h): transient outcome-write
// errors are retried with Clock-based backoff, a lost acknowledgement is
// recognised, exhausted retries leave the lock to the watcher, and under
// random faults every execution still finishes exactly once with a
// gap-free log. Time is a ManualClock; no test waits on real time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <random>
#include <thread>

#include "executor/exec_task.h"
#include "executor/executor_test_util.h"
#include "executor/expired_timers_watcher.h"
#include "storage/testing/faulty_db_pool.h"

namespace stele::executor {
namespace {

using storage::testing::FaultKind;
using storage::testing::FaultyDbPool;
using storage::testing::FaultyMethod;
using storage::testing::FaultyOptions;
using testing::BackendTest;
using testing::CreateReq;
using ::testing::ElementsAre;
using testing::kT0;
using testing::Must;
using testing::OkValue;
using testing::Retries;
using testing::ReturnOk;
using testing::ScriptedWorker;
using namespace std::chrono_literals;  // NOLINT

// Waits (bounded, so a broken test fails instead of hanging) until `done`.
// A condition, not a duration: nothing here depends on how long it takes.
bool Eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 20'000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return done();
}

// A worker that runs a function (thread-safe as long as the function is).
class FnWorker : public Worker {
 public:
  explicit FnWorker(std::function<WorkerResult(const WorkerContext&)> fn) : fn_(std::move(fn)) {}
  WorkerResult Run(WorkerContext ctx) override { return fn_(ctx); }
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

 private:
  std::function<WorkerResult(const WorkerContext&)> fn_;
  const std::vector<core::FunctionFqn> ffqns_{testing::ActivityFfqn()};
};

class ExecFaultTest : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped()) return;
    std::filesystem::create_directories(dir() / "faulty");
    faulty_ = std::make_unique<FaultyDbPool>(testing::OpenBackendPool(GetParam(), dir() / "faulty"),
                                             options_);
    inspect_ = Must(faulty_->inner().ConnectionTest());
  }
  void TearDown() override {
    inspect_.reset();
    if (faulty_) faulty_->Close();
    faulty_.reset();
    BackendTest::TearDown();
  }
  ExecutorOptions Options() {
    ExecutorOptions options;
    options.lock_expiry = 1s;
    options.retry_config = Retries(3, 100ms);
    options.outcome_write_backoff = 0ms;
    options.deadline_check_interval = 1ms;
    options.concurrency_limiter = limiter_;
    return options;
  }
  std::unique_ptr<ExecTask> NewTask(std::shared_ptr<Worker> worker, ExecutorOptions options) {
    return std::make_unique<ExecTask>(std::move(worker), Must(faulty_->DbExecConn()), clock_,
                                      std::move(options));
  }
  ExecutionId CreateActivity() {
    const ExecutionId id = ExecutionId::Generate();
    Must(inspect_->Create(CreateReq(id, kT0)));
    return id;
  }
  std::vector<std::string> Names(const ExecutionId& id) {
    std::vector<std::string> names;
    for (const auto& e : Must(inspect_->Get(id)).events) {
      names.emplace_back(core::ExecutionRequestVariantName(e.event));
    }
    return names;
  }

  FaultyOptions options_;
  std::shared_ptr<ConcurrencyLimiter> limiter_ = ConcurrencyLimiter::Create(8);
  std::unique_ptr<FaultyDbPool> faulty_;
  std::unique_ptr<storage::DbConnectionTest> inspect_;
};

TEST_P(ExecFaultTest, TransientOutcomeWriteErrorsAreRetried) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnOk(OkValue(1)));
  auto task = NewTask(worker, Options());
  faulty_->FailNext(FaultyMethod::kAppend, FaultKind::kGeneric, 2);
  EXPECT_THAT(Must(task->TickForTest(kT0)), ElementsAre(id));
  EXPECT_THAT(Names(id), ElementsAre("Created", "Locked", "Finished"));
  EXPECT_EQ(faulty_->counters(FaultyMethod::kAppend).calls, 3u) << "two failures, one success";
  EXPECT_EQ(limiter_->available(), 8u);
}

TEST_P(ExecFaultTest, RetryBackoffIsMeasuredOnTheClock) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnOk());
  ExecutorOptions options = Options();
  options.outcome_write_backoff = 100ms;
  auto task = NewTask(worker, options);
  faulty_->FailNext(FaultyMethod::kAppend, FaultKind::kGeneric, 2);
  Must(task->SpawnForTest(kT0));
  ASSERT_TRUE(Eventually([&] { return faulty_->counters(FaultyMethod::kAppend).calls == 1; }));
  // The retry waits for the Clock (100 ms, then 200 ms): while it stands
  // still nothing is retried. The backoff starts when the failed attempt
  // returns, which the test cannot observe exactly (the SQLite writer is
  // asynchronous), so it moves the clock in steps until the retry happens
  // instead of by the exact backoff.
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(faulty_->counters(FaultyMethod::kAppend).calls, 1u) << "retried without the Clock";
  auto advance_until = [&](const std::function<bool()>& done) {
    for (int i = 0; i < 400; ++i) {
      if (done()) return true;
      clock_->Advance(10ms);
      std::this_thread::sleep_for(5ms);  // let the executor's thread see the new time
    }
    return done();
  };
  ASSERT_TRUE(advance_until([&] { return faulty_->counters(FaultyMethod::kAppend).calls == 2; }));
  ASSERT_TRUE(advance_until([&] { return task->InFlightCountForTest() == 0; }));
  EXPECT_THAT(Names(id), ElementsAre("Created", "Locked", "Finished"));
  EXPECT_EQ(Must(inspect_->Get(id)).events.back().created_at, kT0) << "the run's own time";
}

TEST_P(ExecFaultTest, ALostAcknowledgementIsRecognisedAsWritten) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnOk(OkValue("once")));
  auto task = NewTask(worker, Options());
  faulty_->FailNext(FaultyMethod::kAppend, FaultKind::kGeneric, 1, /*after_commit=*/true);
  Must(task->TickForTest(kT0));
  EXPECT_THAT(Names(id), ElementsAre("Created", "Locked", "Finished"));
  EXPECT_EQ(faulty_->counters(FaultyMethod::kAppend).after_commit, 1u);
  EXPECT_EQ(faulty_->counters(FaultyMethod::kAppend).calls, 2u);
}

TEST_P(ExecFaultTest, WhenAttemptsRunOutTheWatcherSettlesTheLock) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnOk());
  ExecutorOptions options = Options();
  options.outcome_write_attempts = 3;
  auto task = NewTask(worker, options);
  faulty_->FailNext(FaultyMethod::kAppend, FaultKind::kGeneric, 3);
  Must(task->TickForTest(kT0));
  EXPECT_THAT(Names(id), ElementsAre("Created", "Locked"));
  EXPECT_EQ(faulty_->counters(FaultyMethod::kAppend).calls, 3u);
  EXPECT_EQ(limiter_->available(), 8u) << "the permit is released anyway";

  ExpiredTimersWatcher watcher(Must(faulty_->Connection()), clock_);
  EXPECT_EQ(Must(watcher.TickForTest(kT0 + 1500ms)).expired_locks, 1u);
  EXPECT_THAT(Names(id), ElementsAre("Created", "Locked", "TemporarilyTimedOut"));
}

TEST_P(ExecFaultTest, NonTransientErrorsAreNotRetried) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnOk());
  auto task = NewTask(worker, Options());
  faulty_->FailNext(FaultyMethod::kAppend, FaultKind::kVersionConflict, 1);
  Must(task->TickForTest(kT0));
  EXPECT_EQ(faulty_->counters(FaultyMethod::kAppend).calls, 1u);
  EXPECT_THAT(Names(id), ElementsAre("Created", "Locked")) << "a lost race writes nothing more";
}

uint64_t TestSeed() {
  if (const char* env = std::getenv("STELE_TEST_SEED")) return std::strtoull(env, nullptr, 10);
  return std::random_device{}();
}

// Many activities through ExecTask + ExpiredTimersWatcher while storage
// fails at random (before and after commit). Whatever happens, every
// execution ends with exactly one Finished, versions are 0..n-1 without
// gaps, and a worker's result is never recorded twice.
TEST_P(ExecFaultTest, UnderRandomFaultsEveryExecutionFinishesExactlyOnce) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("STELE_TEST_SEED=" + std::to_string(seed));
  // A pool of its own, with the random plan.
  std::filesystem::create_directories(dir() / "random");
  FaultyOptions plan{
      .seed = seed,
      .rate = 0.2,
      .methods = {FaultyMethod::kLockPending, FaultyMethod::kAppend,
                  FaultyMethod::kAppendBatchRespondToParent, FaultyMethod::kGetExpiredTimers,
                  FaultyMethod::kGetLastExecutionEvent, FaultyMethod::kWaitForPending},
      .kinds = {FaultKind::kGeneric, FaultKind::kVersionConflict, FaultKind::kTimeout},
      .after_commit_share = 0.3};
  FaultyDbPool pool(testing::OpenBackendPool(GetParam(), dir() / "random"), plan);
  auto inspect = Must(pool.inner().ConnectionTest());

  constexpr int kExecutions = 100;
  std::vector<ExecutionId> ids;
  for (int i = 0; i < kExecutions; ++i) {
    ids.push_back(ExecutionId::Generate());
    Must(inspect->Create(CreateReq(ids.back(), kT0)));
  }
  // Results differ per run, so a double record would show as two values.
  std::mutex mu;
  std::mt19937_64 rng(seed);
  uint64_t run_counter = 0;
  auto worker = std::make_shared<FnWorker>([&](const WorkerContext& ctx) {
    std::lock_guard lock(mu);
    const uint64_t run = ++run_counter;
    if (rng() % 5 == 0) {
      return WorkerResult::Err(ctx.version, ActivityTrap{"flaky", std::nullopt, std::nullopt});
    }
    return WorkerResult::Ok(OkValue(static_cast<int64_t>(run)), ctx.version);
  });
  ExecutorOptions options = Options();
  options.retry_config = Retries(50, 10ms);
  options.batch_size = 8;
  ExecTask task(worker, Must(pool.DbExecConn()), clock_, options);
  ExpiredTimersWatcher watcher(Must(pool.Connection()), clock_);

  auto all_finished = [&] {
    for (const auto& id : ids) {
      if (!Must(inspect->Get(id)).pending_state.IsFinished()) return false;
    }
    return true;
  };
  int ticks = 0;
  for (; ticks < 2000 && !all_finished(); ++ticks) {
    const DateTime now = clock_->Now();
    (void)task.TickForTest(now);     // may fail: injected faults
    (void)watcher.TickForTest(now);  // idem
    clock_->Advance(100ms);
  }
  task.Stop();
  // Stop faulting and let the watcher settle anything left (none expected).
  pool.SetEnabled(false);
  ASSERT_TRUE(all_finished()) << "after " << ticks << " ticks";

  const storage::testing::FaultyCounters total = pool.total();
  EXPECT_GT(total.injected, 0u);
  for (const auto& id : ids) {
    const storage::ExecutionLog log = Must(inspect->Get(id));
    int finished = 0;
    for (size_t v = 0; v < log.events.size(); ++v) {
      EXPECT_EQ(log.events[v].version, Version(static_cast<Version::Type>(v))) << id.ToString();
      if (std::holds_alternative<core::Finished>(log.events[v].event)) ++finished;
    }
    EXPECT_EQ(finished, 1) << id.ToString();
    EXPECT_TRUE(std::holds_alternative<core::Finished>(log.events.back().event));
  }
  EXPECT_EQ(limiter_->available(), 8u);
  std::cout << "[ faults  ] seed " << seed << ": " << ticks << " ticks, " << total.calls
            << " storage calls, " << total.injected << " injected (" << total.after_commit
            << " after commit)\n";
  pool.Close();
}

INSTANTIATE_TEST_SUITE_P(Backends, ExecFaultTest, ::testing::ValuesIn(testing::AllBackends()),
                         testing::BackendName);

}  // namespace
}  // namespace stele::executor
