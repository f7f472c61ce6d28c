// Start()ed executors and watchers on real threads: the lock loop woken by
// new work, Stop with runs in flight, a shared concurrency limit. Time is
// still a ManualClock; waits only poll the database (bounded, to keep a
// broken test from hanging) and nothing asserts on elapsed time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "executor/exec_task.h"
#include "executor/executor_test_util.h"
#include "executor/expired_timers_watcher.h"

namespace stele::executor {
namespace {

using testing::BackendTest;
using testing::BlockUntilCancelled;
using testing::CreateReq;
using ::testing::ElementsAre;
using testing::Gate;
using testing::kT0;
using testing::Must;
using testing::OkValue;
using testing::Retries;
using testing::ReturnDbUpdated;
using testing::ReturnFatal;
using testing::ReturnOk;
using testing::ScriptedWorker;
using namespace std::chrono_literals;  // NOLINT

// Polls `condition` every millisecond for up to 20 s.
template <class F>
bool Eventually(F condition) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return condition();
}

class ExecTaskConcurrencyTest : public BackendTest {
 protected:
  ExecutorOptions Options() {
    ExecutorOptions options;
    options.retry_config = Retries(3, 100ms);
    options.tick_sleep = 50ms;
    return options;
  }
  ExecutionId CreateActivity() {
    const ExecutionId id = ExecutionId::Generate();
    Must(db().Create(CreateReq(id, kT0)));
    return id;
  }
  bool IsFinished(const ExecutionId& id) { return Log(id).pending_state.IsFinished(); }
  std::string LastEventName(const ExecutionId& id) {
    return std::string(core::ExecutionRequestVariantName(Log(id).events.back().event));
  }
};

// Only the commit's notification can wake the waiting loop: it would
// otherwise sleep an hour between ticks.
TEST_P(ExecTaskConcurrencyTest, StartedExecutorPicksUpNewWork) {
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnOk(OkValue(1))).Then(ReturnOk(OkValue(2)));
  ExecutorOptions options = Options();
  options.tick_sleep = 1h;
  ExecTask task(worker, ExecConn(), clock_, options);
  task.Start();
  const ExecutionId first = CreateActivity();
  ASSERT_TRUE(Eventually([&] { return IsFinished(first); }));
  const ExecutionId second = CreateActivity();
  ASSERT_TRUE(Eventually([&] { return IsFinished(second); }));
  task.Stop();
  EXPECT_THAT(EventNames(second), ElementsAre("Created", "Locked", "Finished"));
}

TEST_P(ExecTaskConcurrencyTest, StopWithInFlightWorkUnlocksIt) {
  const ExecutionId id = CreateActivity();
  auto started = std::make_shared<Gate>();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(BlockUntilCancelled(started, ReturnFatal(FatalErrorKind::kCancelled, "")));
  ExecTask task(worker, ExecConn(), clock_, Options());
  task.Start();
  ASSERT_TRUE(started->WaitFor());
  task.Stop();
  EXPECT_TRUE(worker->context(0).cancel.IsCancelled());
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "Unlocked"));
  EXPECT_EQ(std::get<core::Unlocked>(Log(id).events.back().event).reason, "executor shutting down");
  EXPECT_EQ(Log(id).pending_state.StateName(), "PendingAt");
  task.Stop();  // idempotent
}

TEST_P(ExecTaskConcurrencyTest, StopUnlocksRunsThatIgnoreCancellation) {
  const ExecutionId id = CreateActivity();
  auto started = std::make_shared<Gate>();
  auto release = std::make_shared<Gate>();
  auto worker = std::make_shared<ScriptedWorker>();
  // A run that keeps going after its token fires, then succeeds.
  worker->Then([started, release](const WorkerContext& ctx) {
    started->Open();
    testing::WaitForCancel(ctx.cancel);
    EXPECT_TRUE(release->WaitFor(20s));
    return WorkerResult::Ok(OkValue("too late"), ctx.version);
  });
  ExecutorOptions options = Options();
  options.shutdown_grace = 0ms;
  auto task = std::make_unique<ExecTask>(worker, ExecConn(), clock_, options);
  ASSERT_TRUE(Must(task->SpawnForTest(kT0)).size() == 1);
  ASSERT_TRUE(started->WaitFor());

  std::thread stopper([&] { task->Stop(); });
  // Stop unlocks the execution itself, then waits for the run to return.
  ASSERT_TRUE(Eventually([&] { return LastEventName(id) == "Unlocked"; }));
  release->Open();
  stopper.join();
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "Unlocked"))
      << "the late result is discarded";
}

// One hung run — its worker ignores its token even once the deadline fired
// it — holds only its own permit: the executor goes on locking and
// finishing other executions meanwhile.
TEST_P(ExecTaskConcurrencyTest, AHungRunDoesNotBlockTheOthers) {
  const ExecutionId hung = CreateActivity();
  auto started = std::make_shared<Gate>();
  auto release = std::make_shared<Gate>();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then([started, release](const WorkerContext& ctx) {
    started->Open();
    EXPECT_TRUE(release->WaitFor(60s));  // deaf to ctx.cancel
    return WorkerResult::Ok(OkValue("too late"), ctx.version);
  });
  worker->Then(ReturnOk(OkValue("second")));
  ExecutorOptions options = Options();
  options.tick_sleep = 1h;  // new work wakes the loop, not the clock
  ExecTask task(worker, ExecConn(), clock_, options);
  task.Start();
  ASSERT_TRUE(started->WaitFor());
  clock_->Set(kT0 + 2s);  // past the hung run's deadline: its token fires, in vain
  ASSERT_TRUE(Eventually([&] { return worker->context(0).cancel.IsCancelled(); }));

  const ExecutionId second = CreateActivity();
  ASSERT_TRUE(Eventually([&] { return IsFinished(second); })) << "blocked behind the hung run";
  EXPECT_THAT(EventNames(second), ElementsAre("Created", "Locked", "Finished"));
  EXPECT_EQ(std::get<core::Finished>(Log(second).events.back().event).result, OkValue("second"));
  EXPECT_THAT(EventNames(hung), ElementsAre("Created", "Locked")) << "still running";

  release->Open();
  task.Stop();
  // Its late result is recorded as the timeout it was.
  EXPECT_THAT(EventNames(hung), ElementsAre("Created", "Locked", "TemporarilyTimedOut"));
}

TEST_P(ExecTaskConcurrencyTest, SharedLimiterBoundsRunsAcrossExecutors) {
  constexpr int kExecutions = 8;
  std::vector<ExecutionId> ids;
  for (int i = 0; i < kExecutions; ++i) ids.push_back(CreateActivity());
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  auto step = [&](const WorkerContext& ctx) {
    const int now_running = ++running;
    int seen = max_running.load();
    while (seen < now_running && !max_running.compare_exchange_weak(seen, now_running)) {
    }
    std::this_thread::sleep_for(2ms);  // let the runs overlap
    --running;
    return WorkerResult::Ok(OkValue(), ctx.version);
  };
  auto worker = std::make_shared<ScriptedWorker>();
  for (int i = 0; i < kExecutions; ++i) worker->Then(step);
  auto limiter = ConcurrencyLimiter::Create(2);
  ExecutorOptions options = Options();
  options.concurrency_limiter = limiter;
  ExecTask a(worker, ExecConn(), clock_, options);
  options.executor_id = core::ExecutorId::Generate();
  ExecTask b(worker, ExecConn(), clock_, options);
  a.Start();
  b.Start();
  ASSERT_TRUE(Eventually([&] {
    for (const auto& id : ids) {
      if (!IsFinished(id)) return false;
    }
    return true;
  }));
  a.Stop();
  b.Stop();
  EXPECT_LE(max_running.load(), 2);
  EXPECT_EQ(worker->runs(), static_cast<size_t>(kExecutions)) << "each execution ran once";
  EXPECT_EQ(limiter->available(), 2u);
}

TEST_P(ExecTaskConcurrencyTest, StartedWatcherSettlesExpiredLocks) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnDbUpdated());
  ExecTask task(worker, ExecConn(), clock_, Options());
  Must(task.TickForTest(kT0));
  ExpiredTimersWatcherOptions watcher_options;
  watcher_options.tick_sleep = 10ms;
  ExpiredTimersWatcher watcher(Conn(), clock_, watcher_options);
  watcher.Start();
  clock_->Set(kT0 + 2s);  // past lock expiry + leeway
  ASSERT_TRUE(Eventually([&] { return LastEventName(id) == "TemporarilyTimedOut"; }));
  watcher.Stop();
  watcher.Stop();  // idempotent
}

// Eager dispatch from many threads while the task runs its own loop, and
// Stop racing the hand-overs: every execution ends finished or unlocked
// (pending again), never stuck locked, and no permit is lost.
TEST_P(ExecTaskConcurrencyTest, HandOversFromManyThreadsRaceStop) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10;
  auto worker = std::make_shared<ScriptedWorker>();
  for (int i = 0; i < kThreads * kPerThread; ++i) worker->Then(ReturnOk(OkValue(i)));
  ExecutorOptions options = Options();
  options.lock_expiry = 1h;  // a stuck lock would show, not expire
  auto limiter = ConcurrencyLimiter::Create(8);
  options.concurrency_limiter = limiter;
  ExecTask task(worker, ExecConn(), clock_, options);
  task.Start();
  std::vector<std::vector<ExecutionId>> ids(kThreads);
  for (auto& mine : ids) {
    for (int i = 0; i < kPerThread; ++i) mine.push_back(CreateActivity());
  }
  std::atomic<int> handed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (const ExecutionId& id : ids[t]) {
        auto reservation = task.TryReserve(kT0);
        if (!reservation) continue;  // no permit, or stopping: the loop or nobody locks it
        const core::Locked& l = reservation->locked;
        auto locked = db().LockOne(kT0, l.component_id, id, l.run_id, Version(1), l.executor_id,
                                   l.lock_expires_at, l.retry_config);
        if (!locked) continue;  // the task's own loop was first
        task.RunLocked(*std::move(locked), *std::move(reservation));
        ++handed;
      }
    });
  }
  std::this_thread::sleep_for(2ms);  // let some hand-overs overlap Stop
  task.Stop();
  for (auto& thread : threads) thread.join();
  for (const auto& mine : ids) {
    for (const ExecutionId& id : mine) {
      const std::string state(Log(id).pending_state.StateName());
      EXPECT_TRUE(state == "Finished" || state == "PendingAt") << id.ToString() << ": " << state;
    }
  }
  EXPECT_EQ(limiter->available(), 8u) << "every permit returned";
}

INSTANTIATE_TEST_SUITE_P(Backends, ExecTaskConcurrencyTest,
                         ::testing::ValuesIn(testing::AllBackends()), testing::BackendName);

}  // namespace
}  // namespace stele::executor
