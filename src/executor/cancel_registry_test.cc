// CancelRegistry on its own, and ExecTask runs cancelled through it
// (docs/model.md §9.1) on the real backends with a ManualClock.
#include "executor/cancel_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "executor/exec_task.h"
#include "executor/executor_test_util.h"

namespace stele::executor {
namespace {

using core::ExecutionFailureKind;
using core::FinishedExecutionError;
using testing::BackendTest;
using testing::BlockUntilCancelled;
using testing::CreateReq;
using ::testing::ElementsAre;
using testing::Gate;
using testing::kT0;
using testing::Must;
using testing::OkValue;
using testing::Retries;
using testing::ReturnFatal;
using testing::ReturnOk;
using testing::ScriptedWorker;
using namespace std::chrono_literals;  // NOLINT

// --- The registry itself ----------------------------------------------------------

TEST(CancelRegistryTest, NotifyRunsEveryCallbackOfTheIdOnce) {
  auto registry = CancelRegistry::Create();
  const ExecutionId a = ExecutionId::Generate();
  const ExecutionId b = ExecutionId::Generate();
  int a_calls = 0;
  int b_calls = 0;
  auto ra1 = registry->Register(a, [&] { ++a_calls; });
  auto ra2 = registry->Register(a, [&] { ++a_calls; });
  auto rb = registry->Register(b, [&] { ++b_calls; });
  EXPECT_EQ(registry->size(), 3u);

  EXPECT_EQ(registry->NotifyCancelled(a), 2u);
  EXPECT_EQ(a_calls, 2);
  EXPECT_EQ(b_calls, 0);
  EXPECT_EQ(registry->size(), 1u);
  EXPECT_EQ(registry->NotifyCancelled(a), 0u) << "spent: a second notify does nothing";
  EXPECT_EQ(a_calls, 2);
  ra1.Reset();  // unregistering a spent registration is harmless
  EXPECT_EQ(registry->NotifyCancelled(ExecutionId::Generate()), 0u);
}

TEST(CancelRegistryTest, ResetAndDestructionUnregister) {
  auto registry = CancelRegistry::Create();
  const ExecutionId id = ExecutionId::Generate();
  int calls = 0;
  {
    auto scoped = registry->Register(id, [&] { ++calls; });
    auto moved = std::move(scoped);
    CancelRegistry::Registration assigned;
    assigned = std::move(moved);
    EXPECT_EQ(registry->size(), 1u) << "moves keep exactly one registration";
  }
  EXPECT_EQ(registry->size(), 0u);
  auto reset = registry->Register(id, [&] { ++calls; });
  reset.Reset();
  EXPECT_EQ(registry->NotifyCancelled(id), 0u);
  EXPECT_EQ(calls, 0);
}

TEST(CancelRegistryTest, CallbackMayRegisterAgainAndRacesAreSafe) {
  auto registry = CancelRegistry::Create();
  const ExecutionId id = ExecutionId::Generate();
  // Callbacks run outside the registry's lock.
  CancelRegistry::Registration again;
  auto first = registry->Register(id, [&] { again = registry->Register(id, [] {}); });
  EXPECT_EQ(registry->NotifyCancelled(id), 1u);
  EXPECT_EQ(registry->size(), 1u);
  again.Reset();

  // Register / notify / reset from several threads (meant for TSan).
  std::atomic<int> fired{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        auto r = registry->Register(id, [&] { ++fired; });
        if (i % 3 == 0) registry->NotifyCancelled(id);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(registry->size(), 0u);
  EXPECT_GT(fired.load(), 0);
}

// --- ExecTask runs cancelled through the registry -------------------------------

class CancelRunTest : public BackendTest {
 protected:
  std::unique_ptr<ExecTask> NewTask(std::shared_ptr<ScriptedWorker> worker) {
    ExecutorOptions options;
    options.lock_expiry = 1s;
    options.retry_config = Retries(3, 100ms);
    options.concurrency_limiter = limiter_;
    options.cancel_registry = registry_;
    return std::make_unique<ExecTask>(std::move(worker), ExecConn(), clock_, options);
  }
  ExecutionId CreateActivity() {
    const ExecutionId id = ExecutionId::Generate();
    Must(db().Create(CreateReq(id, kT0)));
    return id;
  }
  FinishedExecutionError FinishedError(const ExecutionId& id) {
    const core::ExecutionEvent last = Log(id).events.back();
    return std::get<FinishedExecutionError>(std::get<core::Finished>(last.event).result);
  }

  std::shared_ptr<CancelRegistry> registry_ = CancelRegistry::Create();
  std::shared_ptr<ConcurrencyLimiter> limiter_ = ConcurrencyLimiter::Create(2);
};

TEST_P(CancelRunTest, CancelFiresTheRunningWorkersTokenAndIsRecordedOnce) {
  const ExecutionId id = CreateActivity();
  auto started = std::make_shared<Gate>();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(BlockUntilCancelled(started, ReturnFatal(FatalErrorKind::kCancelled, "stopped")));
  auto task = NewTask(worker);
  Must(task->SpawnForTest(kT0));
  ASSERT_TRUE(started->WaitFor());
  EXPECT_EQ(registry_->size(), 1u);
  EXPECT_EQ(limiter_->available(), 1u);

  // The clock stays before the deadline: only the cancel can stop the run.
  auto api = ExecConn();
  EXPECT_EQ(Must(CancelActivity(*api, registry_.get(), id, kT0 + 10ms)),
            storage::CancelOutcome::kCancelled);
  EXPECT_TRUE(worker->context(0).cancel.IsCancelled()) << "fired on the cancelling thread";
  Must(task->TickForTest(kT0 + 10ms));  // waits for nothing new; the run ends by itself
  task->Stop();

  EXPECT_EQ(task->InFlightCountForTest(), 0u);
  EXPECT_EQ(limiter_->available(), 2u) << "the permit came back";
  EXPECT_EQ(registry_->size(), 0u);
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "Finished"));
  EXPECT_EQ(FinishedError(id).kind, ExecutionFailureKind::kCancelled);
  EXPECT_EQ(Log(id).events.back().created_at, kT0 + 10ms) << "the API's write, not the run's";
}

TEST_P(CancelRunTest, ALateOkIsNotRecordedOverTheCancellation) {
  const ExecutionId id = CreateActivity();
  auto started = std::make_shared<Gate>();
  auto release = std::make_shared<Gate>();
  auto worker = std::make_shared<ScriptedWorker>();
  // The worker ignores the token until told, then still claims success.
  worker->Then([started, release](const WorkerContext& ctx) {
    started->Open();
    release->WaitFor();
    return WorkerResult::Ok(OkValue("too late"), ctx.version);
  });
  auto task = NewTask(worker);
  Must(task->SpawnForTest(kT0));
  ASSERT_TRUE(started->WaitFor());
  auto api = ExecConn();
  Must(CancelActivity(*api, registry_.get(), id, kT0 + 10ms));
  EXPECT_TRUE(worker->context(0).cancel.IsCancelled());

  // Past the deadline the cancelled run is not treated as a timeout (the
  // tick waits for it to be recorded).
  clock_->Set(kT0 + 5s);
  release->Open();
  Must(task->TickForTest(kT0 + 5s));
  EXPECT_EQ(task->InFlightCountForTest(), 0u);
  task->Stop();
  EXPECT_EQ(limiter_->available(), 2u);
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "Finished"));
  EXPECT_EQ(FinishedError(id).kind, ExecutionFailureKind::kCancelled);
}

TEST_P(CancelRunTest, CancelOfAnExecutionNotRunningHereOnlyWritesTheLog) {
  const ExecutionId running = CreateActivity();
  auto started = std::make_shared<Gate>();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(BlockUntilCancelled(started, ReturnOk()));
  auto task = NewTask(worker);
  Must(task->SpawnForTest(kT0));
  ASSERT_TRUE(started->WaitFor());

  const ExecutionId idle = CreateActivity();  // pending, not locked
  auto api = ExecConn();
  EXPECT_EQ(Must(CancelActivity(*api, registry_.get(), idle, kT0)),
            storage::CancelOutcome::kCancelled);
  EXPECT_FALSE(worker->context(0).cancel.IsCancelled());
  EXPECT_EQ(FinishedError(idle).kind, ExecutionFailureKind::kCancelled);
  // Cancelling it again is idempotent and still harmless.
  EXPECT_EQ(Must(CancelActivity(*api, registry_.get(), idle, kT0)),
            storage::CancelOutcome::kCancelled);

  task->Stop();  // the blocked run returns Ok during shutdown: recorded
  EXPECT_THAT(EventNames(running), ElementsAre("Created", "Locked", "Finished"));
  EXPECT_EQ(std::get<core::Finished>(Log(running).events.back().event).result, OkValue());
}

// A cancel that never passes through this process's registry (another
// process on the same database: here a second pool on the SQLite file, or
// another connection) reaches the run through the executor's cancel
// watcher, on its interval of the Clock.
TEST_P(CancelRunTest, CancelWatcherStopsARunFinishedByAnotherWriter) {
  const ExecutionId id = CreateActivity();
  auto started = std::make_shared<Gate>();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(BlockUntilCancelled(started, ReturnFatal(FatalErrorKind::kCancelled, "stopped")));
  ExecutorOptions options;
  options.lock_expiry = 1h;  // only a cancel can stop the run
  options.retry_config = Retries(3, 100ms);
  options.concurrency_limiter = limiter_;
  options.cancel_registry = registry_;
  options.cancel_watch_interval = 1s;
  auto task = std::make_unique<ExecTask>(worker, ExecConn(), clock_, options);
  Must(task->SpawnForTest(kT0));
  ASSERT_TRUE(started->WaitFor());

  Must(task->TickForTest(kT0 + 1s));  // a watch round: nothing is finished
  EXPECT_FALSE(worker->context(0).cancel.IsCancelled());

  std::unique_ptr<storage::DbPool> second = OpenSecondPool();
  std::unique_ptr<storage::DbExecutor> other = second ? Must(second->DbExecConn()) : ExecConn();
  EXPECT_EQ(Must(other->CancelActivityWithRetries(id, kT0 + 1500ms)),
            storage::CancelOutcome::kCancelled);
  Must(task->TickForTest(kT0 + 1500ms));  // the next round is due at kT0 + 2s
  EXPECT_FALSE(worker->context(0).cancel.IsCancelled()) << "no registry was told";

  Must(task->TickForTest(kT0 + 2s));  // fires the token, waits until the run is recorded
  EXPECT_TRUE(worker->context(0).cancel.IsCancelled());
  EXPECT_EQ(task->InFlightCountForTest(), 0u);
  EXPECT_EQ(limiter_->available(), 2u) << "the permit came back";
  task->Stop();
  other.reset();
  if (second) second->Close();
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "Finished"));
  EXPECT_EQ(FinishedError(id).kind, ExecutionFailureKind::kCancelled);
  EXPECT_EQ(Log(id).events.back().created_at, kT0 + 1500ms) << "the other writer's Finished";
}

TEST_P(CancelRunTest, CancelAfterFinishIsAlreadyFinishedAndNotifiesNobody) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnOk());
  auto task = NewTask(worker);
  Must(task->TickForTest(kT0));
  auto api = ExecConn();
  EXPECT_EQ(Must(CancelActivity(*api, registry_.get(), id, kT0)),
            storage::CancelOutcome::kAlreadyFinished);
  EXPECT_EQ(registry_->size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, CancelRunTest, ::testing::ValuesIn(testing::AllBackends()),
                         testing::BackendName);

}  // namespace
}  // namespace stele::executor
