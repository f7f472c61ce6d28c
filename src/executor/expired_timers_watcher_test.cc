// The expired-timers watcher on the real backends (docs/model.md §5.5),
// together with the executor where a scenario needs both.
#include "executor/expired_timers_watcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "executor/deadline.h"
#include "executor/exec_task.h"
#include "executor/executor_test_util.h"
#include "executor/outcome.h"

namespace stele::executor {
namespace {

using core::ExecutionFailureKind;
using core::FinishedExecutionError;
using testing::BackendTest;
using testing::ChildFfqn;
using testing::CreateReq;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::kT0;
using testing::Must;
using testing::OkValue;
using testing::Retries;
using testing::ReturnDbUpdated;
using testing::ReturnOk;
using testing::ScriptedWorker;
using testing::WorkflowFfqn;
using namespace std::chrono_literals;  // NOLINT

class WatcherTest : public BackendTest {
 protected:
  std::unique_ptr<ExpiredTimersWatcher> NewWatcher(std::chrono::milliseconds leeway = 500ms) {
    ExpiredTimersWatcherOptions options;
    options.leeway = leeway;
    options.activity_lock_expiry_setting = "lock_expiry of the component";
    options.workflow_lock_expiry_setting = "the workflow's lease setting";
    return std::make_unique<ExpiredTimersWatcher>(Conn(), clock_, options);
  }
  std::unique_ptr<ExecTask> NewTask(
      std::shared_ptr<ScriptedWorker> worker, core::ComponentRetryConfig retry,
      std::chrono::milliseconds lock_expiry = 1s,
      core::ComponentId component = core::ComponentId::DummyActivity()) {
    ExecutorOptions options;
    options.lock_expiry = lock_expiry;
    options.retry_config = retry;
    options.component_id = std::move(component);
    return std::make_unique<ExecTask>(std::move(worker), ExecConn(), clock_, options);
  }
  core::ExecutionEvent LastEvent(const ExecutionId& id) { return Log(id).events.back(); }
  template <class E>
  E LastEventAs(const ExecutionId& id) {
    const core::ExecutionEvent event = LastEvent(id);
    const E* typed = std::get_if<E>(&event.event);
    if (!typed) throw std::runtime_error(core::ExecutionRequestToString(event.event));
    return *typed;
  }
  DateTime ScheduledAt(const ExecutionId& id) {
    const core::PendingState state = Log(id).pending_state;
    const auto* pending = std::get_if<core::PendingStatePendingAt>(&state.value);
    if (!pending) throw std::runtime_error("not pending: " + state.ToString());
    return pending->scheduled_at;
  }
  static WatcherTickProgress Progress(uint32_t locks, uint32_t delays) { return {locks, delays}; }
  // The locked workflow `parent` (at version 1) submits `delay` (due at
  // kT0 + 10s) to `join_set` and awaits it, unloading at once.
  void BlockOnDelay(const ExecutionId& parent, const core::JoinSetId& join_set,
                    const core::DelayId& delay) {
    Must(db().AppendBatch(
        kT0,
        {{kT0, core::HistoryEventRequest{core::HistoryJoinSetCreate{join_set}}},
         {kT0, core::HistoryEventRequest{core::HistoryJoinSetRequest{
                   join_set, core::DelayRequest{delay, kT0 + 10s,
                                                core::HistoryEventScheduleAt::In(
                                                    core::Duration::FromSecs(10))}}}},
         {kT0,
          core::HistoryEventRequest{core::HistoryJoinNext{join_set, kT0, std::nullopt, false}}}},
        parent, Version(2)));
  }
  // `n` locked workflows, each blocked on its delay (BlockOnDelay).
  std::vector<ExecutionId> Sleepers(int n, const core::JoinSetId& join_set) {
    const core::ComponentId workflow = core::ComponentId::DummyWorkflow();
    std::vector<ExecutionId> sleepers;
    for (int i = 0; i < n; ++i) {
      const ExecutionId parent = ExecutionId::Generate();
      Must(db().Create(CreateReq(parent, kT0, WorkflowFfqn(), workflow)));
      Must(db().LockOne(kT0, workflow, parent, core::RunId::Generate(), Version(1),
                        core::ExecutorId::Generate(), kT0 + 1s, Retries(std::nullopt, 1s)));
      BlockOnDelay(parent, join_set, core::DelayId(parent, join_set, 1));
      sleepers.push_back(parent);
    }
    return sleepers;
  }
};

TEST_P(WatcherTest, HangingLockShouldBeCleanedAndExecutionRetried) {
  const ExecutionId id = ExecutionId::Generate();
  Must(db().Create(CreateReq(id, kT0)));
  // Both runs vanish without writing (a crashed or hung executor).
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnDbUpdated()).Then(ReturnDbUpdated());
  auto task = NewTask(worker, Retries(1, 300ms), 100ms);
  auto watcher = NewWatcher(0ms);

  Must(task->TickForTest(kT0));
  clock_->Set(kT0 + 100ms);
  EXPECT_THAT(Must(task->TickForTest(kT0 + 100ms)), IsEmpty()) << "expired locks are not stolen";
  EXPECT_EQ(Must(watcher->TickForTest(kT0 + 100ms)), Progress(1, 0));
  EXPECT_EQ(LastEvent(id).created_at, kT0 + 100ms);
  EXPECT_EQ(LastEventAs<core::TemporarilyTimedOut>(id).backoff_expires_at, kT0 + 400ms);
  EXPECT_EQ(ScheduledAt(id), kT0 + 400ms);
  // Which limit (read from the run's Locked event) and where it is set.
  const std::string reason =
      "the activity's lock of 100 ms expired with no result recorded: it ran past its time "
      "limit, or the server running it stopped (lock_expiry of the component)";
  EXPECT_EQ(LastEventAs<core::TemporarilyTimedOut>(id).reason, reason);

  clock_->Set(kT0 + 400ms);
  EXPECT_THAT(Must(task->TickForTest(kT0 + 400ms)), ElementsAre(id)) << "retried";
  EXPECT_EQ(worker->context(1).intermittent_event_count, 1u);
  clock_->Set(kT0 + 500ms);
  EXPECT_EQ(Must(watcher->TickForTest(kT0 + 500ms)), Progress(1, 0));
  EXPECT_EQ(LastEventAs<core::Finished>(id).result,
            core::SupportedFunctionReturnValue(
                FinishedExecutionError{ExecutionFailureKind::kTimedOut, reason, std::nullopt}));
  EXPECT_THAT(EventNames(id),
              ElementsAre("Created", "Locked", "TemporarilyTimedOut", "Locked", "Finished"));
}

TEST_P(WatcherTest, LeewayDelaysTheWatcher) {
  const ExecutionId id = ExecutionId::Generate();
  Must(db().Create(CreateReq(id, kT0)));
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnDbUpdated());
  auto task = NewTask(worker, Retries(1, 100ms));
  auto watcher = NewWatcher(500ms);
  Must(task->TickForTest(kT0));
  EXPECT_EQ(Must(watcher->TickForTest(kT0 + 1s)), Progress(0, 0)) << "at = now - leeway";
  EXPECT_EQ(Must(watcher->TickForTest(kT0 + 1500ms)), Progress(1, 0));
  EXPECT_EQ(LastEvent(id).created_at, kT0 + 1s) << "events are written at now - leeway";
  EXPECT_EQ(LastEventAs<core::TemporarilyTimedOut>(id).backoff_expires_at, kT0 + 1100ms);
}

TEST_P(WatcherTest, ChildTimedOutByTheWatcherShouldNotifyParent) {
  const ExecutionId parent = ExecutionId::Generate();
  const core::ExecutionIdDerived child = CreateParentAwaitingChild(parent);
  auto worker = std::make_shared<ScriptedWorker>(std::vector{ChildFfqn()});
  worker->Then(ReturnDbUpdated());
  auto task = NewTask(worker, core::ComponentRetryConfig::Zero());
  auto watcher = NewWatcher();
  Must(task->TickForTest(kT0));

  clock_->Set(kT0 + 1500ms);
  EXPECT_EQ(Must(watcher->TickForTest(kT0 + 1500ms)), Progress(1, 0));
  // The parent learns why its child timed out.
  const core::SupportedFunctionReturnValue timed_out = FinishedExecutionError{
      ExecutionFailureKind::kTimedOut,
      "the activity's lock of 1 s expired with no result recorded: it ran past its time limit, "
      "or the server running it stopped (lock_expiry of the component)",
      std::nullopt};
  const storage::ExecutionLog child_log = Log(child);
  EXPECT_TRUE(child_log.pending_state.IsFinished());
  EXPECT_EQ(LastEventAs<core::Finished>(child).result, timed_out);

  const storage::ExecutionLog parent_log = Log(parent);
  ASSERT_EQ(parent_log.responses.size(), 1u);
  EXPECT_EQ(parent_log.responses[0].created_at, kT0 + 1s);
  EXPECT_EQ(std::get<core::ChildExecutionFinished>(parent_log.responses[0].event.event),
            (core::ChildExecutionFinished{child, Version(2), timed_out}));
  EXPECT_EQ(ScheduledAt(parent), kT0 + 1s);
}

TEST_P(WatcherTest, WorkflowThatMadeProgressIsUnlocked) {
  const core::ComponentId workflow = core::ComponentId::DummyWorkflow();
  const ExecutionId progressed = ExecutionId::Generate();
  const ExecutionId idle = ExecutionId::Generate();
  Must(db().Create(CreateReq(progressed, kT0, WorkflowFfqn(), workflow)));
  Must(db().Create(CreateReq(idle, kT0 + 1us, WorkflowFfqn(), workflow)));
  std::shared_ptr<storage::DbConnection> other = Conn();
  auto worker = std::make_shared<ScriptedWorker>(std::vector{WorkflowFfqn()});
  auto step = [other, progressed](const WorkerContext& ctx) {
    // One workflow persists a value, then its run dies; the other just dies.
    if (ctx.execution_id == progressed) {
      const core::HistoryPersist persist{{1, 2}, core::PersistKindRandomU64{0, 9}};
      Must(other->Append(ctx.execution_id, ctx.version,
                         storage::AppendRequest{kT0, core::HistoryEventRequest{persist}}));
    }
    return WorkerResult::DbUpdated();
  };
  worker->Then(step).Then(step);
  auto task = NewTask(worker, Retries(std::nullopt, 1s), 1s, workflow);
  auto watcher = NewWatcher(0ms);
  EXPECT_EQ(Must(task->TickForTest(kT0 + 1us)).size(), 2u);

  clock_->Set(kT0 + 2s);
  EXPECT_EQ(Must(watcher->TickForTest(kT0 + 2s)), Progress(2, 0));
  EXPECT_THAT(EventNames(progressed), ElementsAre("Created", "Locked", "HistoryEvent", "Unlocked"));
  EXPECT_EQ(LastEventAs<core::Unlocked>(progressed), (core::Unlocked{kT0 + 2s, "made progress"}));
  EXPECT_EQ(ScheduledAt(progressed), kT0 + 2s) << "pending at once, no penalty";
  EXPECT_EQ(LastEventAs<core::TemporarilyTimedOut>(idle).backoff_expires_at, kT0 + 3s);
}

TEST_P(WatcherTest, DueDelayIsFiredAndUnblocksTheParent) {
  const ExecutionId parent = ExecutionId::Generate();
  const core::ComponentId workflow = core::ComponentId::DummyWorkflow();
  Must(db().Create(CreateReq(parent, kT0, WorkflowFfqn(), workflow)));
  Must(db().LockOne(kT0, workflow, parent, core::RunId::Generate(), Version(1),
                    core::ExecutorId::Generate(), kT0 + 1s, Retries(std::nullopt, 1s)));
  const core::JoinSetId join_set =
      core::JoinSetId::Create(core::JoinSetKind::kOneOff, "1-sleep").value();
  const core::DelayId delay(parent, join_set, 1);
  BlockOnDelay(parent, join_set, delay);
  EXPECT_EQ(Log(parent).pending_state.StateName(), "BlockedByJoinSet");
  auto watcher = NewWatcher(500ms);

  EXPECT_EQ(Must(watcher->TickForTest(kT0 + 9999ms)), Progress(0, 0)) << "not due yet";
  // The lock leeway does not apply to delays: they fire when due.
  EXPECT_EQ(Must(watcher->TickForTest(kT0 + 10s)), Progress(0, 1));
  const storage::ExecutionLog log = Log(parent);
  ASSERT_EQ(log.responses.size(), 1u);
  EXPECT_EQ(log.responses[0].created_at, kT0 + 10s);
  EXPECT_EQ(log.responses[0].event,
            (core::JoinSetResponseEvent{join_set, core::DelayFinished{delay, true}}));
  EXPECT_EQ(ScheduledAt(parent), kT0 + 10s);
  EXPECT_EQ(Must(watcher->TickForTest(kT0 + 20s)), Progress(0, 0)) << "fired once";
}

// Past its deadline an activity is finished timed_out (its local run told
// to stop) and a workflow gets a terminate request marked timed_out; both
// disarm the deadline, so the next tick does nothing.
TEST_P(WatcherTest, ExecutionsPastTheirDeadlineAreEndedOnce) {
  const ExecutionId activity = ExecutionId::Generate();
  storage::CreateRequest activity_req = CreateReq(activity, kT0);
  activity_req.policy.deadline = kT0 + 10s;
  Must(db().Create(activity_req));
  const ExecutionId workflow = ExecutionId::Generate();
  storage::CreateRequest workflow_req =
      CreateReq(workflow, kT0, WorkflowFfqn(), core::ComponentId::DummyWorkflow());
  workflow_req.policy.deadline = kT0 + 10s;
  Must(db().Create(workflow_req));
  auto registry = CancelRegistry::Create();
  auto stopped = std::make_shared<std::atomic<bool>>(false);
  CancelRegistry::Registration registration =
      registry->Register(activity, [stopped] { *stopped = true; });
  ExpiredTimersWatcherOptions options;
  options.cancel_registry = registry;
  ExpiredTimersWatcher watcher(Conn(), clock_, options);

  EXPECT_EQ(Must(watcher.TickForTest(kT0 + 9s)).expired_deadlines, 0u);
  EXPECT_EQ(Must(watcher.TickForTest(kT0 + 10s)).expired_deadlines, 2u);
  const auto finished = LastEventAs<core::Finished>(activity);
  const auto* failure = std::get_if<FinishedExecutionError>(&finished.result);
  ASSERT_NE(failure, nullptr);
  EXPECT_EQ(failure->kind, ExecutionFailureKind::kTimedOut);
  EXPECT_EQ(failure->reason, DeadlinePassedReason(kT0 + 10s));
  EXPECT_TRUE(stopped->load()) << "the local run is stopped";
  const auto request = LastEventAs<core::HistoryEventRequest>(workflow);
  const auto& cancel = std::get<core::HistoryCancelRequest>(request.event);
  EXPECT_TRUE(cancel.terminate);
  EXPECT_TRUE(cancel.timed_out);
  EXPECT_EQ(Log(workflow).pending_state.StateName(), "PendingAt");

  EXPECT_EQ(Must(watcher.TickForTest(kT0 + 20s)).expired_deadlines, 0u) << "acted on once";
}

// Two watchers (two servers on one database) that both read a workflow's
// expired deadline before either wrote: the second writes no second
// terminate request, and counts nothing.
TEST_P(WatcherTest, ADeadlineTwoWatchersReadIsRequestedOnce) {
  const ExecutionId workflow = ExecutionId::Generate();
  storage::CreateRequest req =
      CreateReq(workflow, kT0, WorkflowFfqn(), core::ComponentId::DummyWorkflow());
  req.policy.deadline = kT0 + 10s;
  Must(db().Create(req));
  const storage::ExpiredDeadline expired{workflow, kT0 + 10s};
  EXPECT_EQ(Must(ExpireDeadline(db(), nullptr, expired, kT0 + 10s)),
            DeadlineOutcome::kTerminateRequested);
  EXPECT_EQ(Must(ExpireDeadline(db(), nullptr, expired, kT0 + 11s)),
            DeadlineOutcome::kAlreadyFinished);
  size_t requests = 0;
  for (const auto& e : Log(workflow).events) {
    if (const auto* h = std::get_if<core::HistoryEventRequest>(&e.event)) {
      requests += std::holds_alternative<core::HistoryCancelRequest>(h->event) ? 1 : 0;
    }
  }
  EXPECT_EQ(requests, 1u);
}

// A burst of due timers is handled by concurrent writes (they share
// commits); each is still answered exactly once.
TEST_P(WatcherTest, BurstOfDueDelaysAndExpiredLocksIsHandledOnceEach) {
  const core::JoinSetId join_set =
      core::JoinSetId::Create(core::JoinSetKind::kOneOff, "1-sleep").value();
  constexpr int kSleepers = 40;
  constexpr int kHangers = 10;
  const std::vector<ExecutionId> sleepers = Sleepers(kSleepers, join_set);
  std::vector<ExecutionId> hangers;
  for (int i = 0; i < kHangers; ++i) {
    const ExecutionId id = ExecutionId::Generate();
    Must(db().Create(CreateReq(id, kT0)));
    Must(db().LockOne(kT0, core::ComponentId::DummyActivity(), id, core::RunId::Generate(),
                      Version(1), core::ExecutorId::Generate(), kT0 + 1s, Retries(3u, 1s)));
    hangers.push_back(id);
  }

  const auto at = kT0 + 10s;
  EXPECT_EQ(Must(HandleExpiredTimers(db(), at, 500ms, 8)), Progress(kHangers, kSleepers));
  for (const ExecutionId& parent : sleepers) {
    EXPECT_EQ(Log(parent).responses.size(), 1u) << parent.ToString();
    EXPECT_EQ(ScheduledAt(parent), at);
  }
  for (const ExecutionId& id : hangers) {
    EXPECT_EQ(LastEventAs<core::TemporarilyTimedOut>(id).backoff_expires_at, at - 500ms + 1s);
  }
  EXPECT_EQ(Must(HandleExpiredTimers(db(), at + 10s, 500ms, 8)), Progress(0, 0))
      << "each answered once";
}

// A started watcher: delays it sees coming within a tick are fired at
// their due time by its loop, each exactly once, although the
// next tick's pass may find them due too.
TEST_P(WatcherTest, AStartedWatcherFiresABurstOfUpcomingDelaysOnceEachWhenDue) {
  const core::JoinSetId join_set =
      core::JoinSetId::Create(core::JoinSetKind::kOneOff, "1-sleep").value();
  constexpr int kSleepers = 60;
  const std::vector<ExecutionId> sleepers = Sleepers(kSleepers, join_set);
  // Due at kT0 + 10s: within the look-ahead of a tick at kT0 + 9995ms.
  clock_->Set(kT0 + 9995ms);
  auto watcher = NewWatcher(500ms);
  watcher->Start();
  std::this_thread::sleep_for(50ms);  // a few ticks that find nothing due yet
  for (const ExecutionId& parent : sleepers) {
    EXPECT_TRUE(Log(parent).responses.empty()) << "fired early: " << parent.ToString();
  }
  clock_->Set(kT0 + 10s);
  auto all_fired = [&] {
    for (const ExecutionId& parent : sleepers) {
      if (Log(parent).responses.empty()) return false;
    }
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!all_fired() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  std::this_thread::sleep_for(50ms);  // time for a second answer, if any
  watcher->Stop();
  for (const ExecutionId& parent : sleepers) {
    const storage::ExecutionLog log = Log(parent);
    ASSERT_EQ(log.responses.size(), 1u) << parent.ToString();
    EXPECT_EQ(log.responses[0].created_at, kT0 + 10s);
    EXPECT_EQ(ScheduledAt(parent), kT0 + 10s);
  }
}

TEST_P(WatcherTest, WatcherLosesCleanlyToAWorkerThatWroteMeanwhile) {
  const ExecutionId id = ExecutionId::Generate();
  Must(db().Create(CreateReq(id, kT0)));
  Must(db().LockOne(kT0, core::ComponentId::DummyActivity(), id, core::RunId::Generate(),
                    Version(1), core::ExecutorId::Generate(), kT0 + 1s, Retries(0, 0ms)));
  // The watcher reads the expired lock...
  std::vector<storage::ExpiredTimer> timers = Must(db().GetExpiredTimers(kT0 + 1s));
  ASSERT_EQ(timers.size(), 1u);
  const auto lock = std::get<storage::ExpiredLock>(timers[0]);
  EXPECT_EQ(lock.locked_at_version, Version(1));
  EXPECT_EQ(lock.next_version, Version(2));
  // ...the late worker finishes first...
  Must(db().Append(id, Version(2),
                   storage::AppendRequest{kT0 + 1s, core::Finished{OkValue(1), std::nullopt}}));
  // ...and the watcher's write is dropped.
  EXPECT_EQ(Must(ApplyOutcome(*ExecConn(), ComputeExpiredLockOutcome(lock, kT0 + 1s, "expired"))),
            ApplyStatus::kLostToAnotherWriter);
  EXPECT_EQ(LastEventAs<core::Finished>(id).result, OkValue(1));
  EXPECT_EQ(Must(NewWatcher(0ms)->TickForTest(kT0 + 5s)), Progress(0, 0));
}

TEST_P(WatcherTest, TimedOutRunsAreRetriedByTheExecutorAfterTheWatcher) {
  // A run that times out on the executor and one whose executor vanished
  // end up the same: TemporarilyTimedOut, then retried.
  const ExecutionId id = ExecutionId::Generate();
  Must(db().Create(CreateReq(id, kT0)));
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnDbUpdated()).Then(ReturnOk(OkValue("second time lucky")));
  auto task = NewTask(worker, Retries(2, 100ms));
  auto watcher = NewWatcher(0ms);
  Must(task->TickForTest(kT0));
  clock_->Set(kT0 + 1s);
  Must(watcher->TickForTest(kT0 + 1s));
  clock_->Set(kT0 + 1100ms);
  EXPECT_THAT(Must(task->TickForTest(kT0 + 1100ms)), ElementsAre(id));
  EXPECT_EQ(LastEventAs<core::Finished>(id).result, OkValue("second time lucky"));
}

INSTANTIATE_TEST_SUITE_P(Backends, WatcherTest, ::testing::ValuesIn(testing::AllBackends()),
                         testing::BackendName);

}  // namespace
}  // namespace stele::executor
