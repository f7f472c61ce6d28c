// ExecTask on the real backends, driven tick by tick with a ManualClock
// (docs/model.md §5: locking, retries, timeouts, shutdown, the watcher).
#include "executor/exec_task.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "executor/executor_test_util.h"
#include "executor/outcome.h"

namespace stele::executor {
namespace {

using core::ExecutionFailureKind;
using core::FinishedExecutionError;
using testing::ActivityFfqn;
using testing::BackendTest;
using testing::BlockUntilCancelled;
using testing::ChildFfqn;
using testing::CreateReq;
using ::testing::ElementsAre;
using testing::Gate;
using ::testing::IsEmpty;
using testing::kT0;
using testing::Must;
using testing::OkValue;
using testing::Retries;
using testing::ReturnDbUpdated;
using testing::ReturnErr;
using testing::ReturnFatal;
using testing::ReturnOk;
using testing::ScriptedWorker;
using namespace std::chrono_literals;  // NOLINT

class ExecTaskTest : public BackendTest {
 protected:
  static ExecutorOptions Options(core::ComponentRetryConfig retry) {
    ExecutorOptions options;
    options.lock_expiry = 1s;
    options.retry_config = retry;
    return options;
  }
  std::unique_ptr<ExecTask> NewTask(std::shared_ptr<ScriptedWorker> worker,
                                    ExecutorOptions options) {
    return std::make_unique<ExecTask>(std::move(worker), ExecConn(), clock_, std::move(options));
  }
  ExecutionId CreateActivity(DateTime at = kT0) {
    const ExecutionId id = ExecutionId::Generate();
    Must(db().Create(CreateReq(id, at)));
    return id;
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
};

TEST_P(ExecTaskTest, ExecuteSimpleLifecycleTickBased) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnOk(OkValue(42)));
  ExecutorOptions options = Options(Retries(3, 100ms));
  const core::ExecutorId executor_id = options.executor_id;
  auto task = NewTask(worker, options);

  EXPECT_THAT(Must(task->TickForTest(kT0)), ElementsAre(id));
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "Finished"));
  const core::ExecutionEvent finished = LastEvent(id);
  EXPECT_EQ(finished.created_at, kT0);
  EXPECT_EQ(finished.version, Version(2));
  EXPECT_EQ(std::get<core::Finished>(finished.event).result, OkValue(42));
  EXPECT_TRUE(Log(id).pending_state.IsFinished());

  // What the worker was given.
  ASSERT_EQ(worker->runs(), 1u);
  const WorkerContext ctx = worker->context(0);
  const core::Locked locked = std::get<core::Locked>(Log(id).events[1].event);
  EXPECT_EQ(ctx.execution_id, id);
  EXPECT_EQ(ctx.ffqn, ActivityFfqn());
  EXPECT_EQ(ctx.params, core::Json::array());
  EXPECT_EQ(ctx.version, Version(2));
  EXPECT_EQ(ctx.locked_event, locked);
  EXPECT_EQ(ctx.run_id, locked.run_id);
  EXPECT_EQ(ctx.executor_id, executor_id);
  EXPECT_EQ(ctx.execution_deadline, kT0 + 1s);
  EXPECT_EQ(locked.lock_expires_at, kT0 + 1s);
  EXPECT_EQ(locked.retry_config, Retries(3, 100ms));
  EXPECT_EQ(ctx.intermittent_event_count, 0u);
  EXPECT_TRUE(ctx.can_be_retried);
  EXPECT_FALSE(ctx.parent);
  EXPECT_FALSE(ctx.cancel.IsCancelled());

  EXPECT_THAT(Must(task->TickForTest(kT0)), IsEmpty()) << "nothing left to lock";
}

TEST_P(ExecTaskTest, EachTickUsesAFreshRunId) {
  const ExecutionId a = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnOk()).Then(ReturnOk());
  auto task = NewTask(worker, Options(Retries(3, 100ms)));
  Must(task->TickForTest(kT0));
  const ExecutionId b = CreateActivity();
  Must(task->TickForTest(kT0));
  EXPECT_NE(worker->context(0).run_id, worker->context(1).run_id);
  EXPECT_EQ(worker->context(0).execution_id, a);
  EXPECT_EQ(worker->context(1).execution_id, b);
}

TEST_P(ExecTaskTest, ActivityTrapShouldTriggerAnExecutionRetry) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnErr(ActivityTrap{"error reason", "error detail", std::nullopt}))
      .Then(ReturnOk());
  auto task = NewTask(worker, Options(Retries(1, 100ms)));

  Must(task->TickForTest(kT0));
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "TemporarilyFailed"));
  const auto failed = LastEventAs<core::TemporarilyFailed>(id);
  EXPECT_EQ(failed.reason, "activity trap: error reason");
  EXPECT_EQ(failed.detail, "error detail");
  EXPECT_EQ(failed.backoff_expires_at, kT0 + 100ms);
  EXPECT_EQ(LastEvent(id).created_at, kT0);
  EXPECT_EQ(ScheduledAt(id), kT0 + 100ms);

  EXPECT_THAT(Must(task->TickForTest(kT0)), IsEmpty()) << "still in backoff";

  clock_->Advance(100ms);
  EXPECT_THAT(Must(task->TickForTest(kT0 + 100ms)), ElementsAre(id));
  EXPECT_THAT(EventNames(id),
              ElementsAre("Created", "Locked", "TemporarilyFailed", "Locked", "Finished"));
  EXPECT_EQ(LastEvent(id).created_at, kT0 + 100ms);
  const WorkerContext second = worker->context(1);
  EXPECT_EQ(second.version, Version(4));
  EXPECT_EQ(second.intermittent_event_count, 1u);
  EXPECT_FALSE(second.can_be_retried) << "n = 2 > max_retries = 1";
}

TEST_P(ExecTaskTest, ActivityTrapShouldNotBeRetriedIfNoRetriesAreSet) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnErr(ActivityTrap{"error reason", "error detail", std::nullopt}));
  auto task = NewTask(worker, Options(core::ComponentRetryConfig::Zero()));

  Must(task->TickForTest(kT0));
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "Finished"));
  EXPECT_EQ(
      LastEventAs<core::Finished>(id).result,
      core::SupportedFunctionReturnValue(FinishedExecutionError{
          ExecutionFailureKind::kUncategorized, "activity trap: error reason", "error detail"}));
  EXPECT_FALSE(worker->context(0).can_be_retried);
}

TEST_P(ExecTaskTest, ChildExecutionPermanentlyFailedShouldNotifyParent) {
  const ExecutionId parent = ExecutionId::Generate();
  const core::ExecutionIdDerived child = CreateParentAwaitingChild(parent);
  EXPECT_EQ(Log(parent).pending_state.StateName(), "BlockedByJoinSet");

  auto worker = std::make_shared<ScriptedWorker>(std::vector{ChildFfqn()});
  worker->Then(ReturnErr(ActivityTrap{"error reason", "detail", std::nullopt}));
  auto task = NewTask(worker, Options(core::ComponentRetryConfig::Zero()));
  clock_->Set(kT0 + 1s);
  EXPECT_THAT(Must(task->TickForTest(kT0 + 1s)), ElementsAre(ExecutionId(child)));

  const storage::ExecutionLog child_log = Log(child);
  EXPECT_TRUE(child_log.pending_state.IsFinished());
  EXPECT_EQ(child_log.events.back().version, Version(2)) << "Created 0, Locked 1, Finished 2";
  const core::SupportedFunctionReturnValue expected = FinishedExecutionError{
      ExecutionFailureKind::kUncategorized, "activity trap: error reason", "detail"};
  EXPECT_EQ(LastEventAs<core::Finished>(child).result, expected);
  ASSERT_TRUE(worker->context(0).parent);
  EXPECT_EQ(worker->context(0).parent->first, parent);

  const storage::ExecutionLog parent_log = Log(parent);
  ASSERT_EQ(parent_log.responses.size(), 1u);
  const core::JoinSetResponseEventOuter& response = parent_log.responses[0];
  EXPECT_EQ(response.created_at, kT0 + 1s);
  EXPECT_EQ(response.event.join_set_id.ToString(), "o:1-child");
  EXPECT_EQ(std::get<core::ChildExecutionFinished>(response.event.event),
            (core::ChildExecutionFinished{child, Version(2), expected}));
  EXPECT_EQ(ScheduledAt(parent), kT0 + 1s) << "the parent is pending again";
}

TEST_P(ExecTaskTest, LimitReachedUnlocksWithoutCountingTheAttempt) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnErr(LimitReached{"pool exhausted"}))
      .Then(ReturnErr(ActivityTrap{"boom", std::nullopt, std::nullopt}));
  auto task = NewTask(worker, Options(Retries(1, 100ms)));

  Must(task->TickForTest(kT0));
  EXPECT_EQ(LastEventAs<core::Unlocked>(id),
            (core::Unlocked{kT0 + 100ms, "limit reached: pool exhausted"}));
  clock_->Set(kT0 + 100ms);
  Must(task->TickForTest(kT0 + 100ms));
  EXPECT_EQ(worker->context(1).intermittent_event_count, 0u) << "Unlocked is not counted";
  EXPECT_TRUE(worker->context(1).can_be_retried);
  EXPECT_EQ(LastEventAs<core::TemporarilyFailed>(id).backoff_expires_at, kT0 + 200ms)
      << "so the trap is still retried, with the first backoff";
}

TEST_P(ExecTaskTest, ActivityErrIsRetriedThenStoredAsTheResult) {
  const ExecutionId id = CreateActivity();
  const core::ReturnValueErr err{core::Json("not found")};
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnErr(ActivityReturnedError{err, std::nullopt, std::nullopt}))
      .Then(ReturnErr(ActivityReturnedError{err, std::nullopt, std::nullopt}));
  auto task = NewTask(worker, Options(Retries(1, 100ms)));

  Must(task->TickForTest(kT0));
  const auto failed = LastEventAs<core::TemporarilyFailed>(id);
  EXPECT_EQ(failed.reason, "activity returned error");
  EXPECT_EQ(failed.detail, R"("not found")");
  clock_->Set(kT0 + 100ms);
  Must(task->TickForTest(kT0 + 100ms));
  EXPECT_FALSE(worker->context(1).can_be_retried);
  EXPECT_EQ(LastEventAs<core::Finished>(id).result, core::SupportedFunctionReturnValue(err));
  const core::PendingStateFinished finished =
      std::get<core::PendingStateFinished>(Log(id).pending_state.value);
  EXPECT_EQ(finished.result_kind, core::PendingStateFinishedResultKind::FallibleError());
}

TEST_P(ExecTaskTest, LongRunningExecutionShouldTimeout) {
  const ExecutionId id = CreateActivity();
  auto first_started = std::make_shared<Gate>();
  auto second_started = std::make_shared<Gate>();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(BlockUntilCancelled(first_started, ReturnFatal(FatalErrorKind::kCancelled, "")))
      .Then(BlockUntilCancelled(second_started, ReturnOk()));
  ExecutorOptions options = Options(Retries(1, 100ms));
  options.lock_expiry_setting = "lock_expiry of the component";
  auto task = NewTask(worker, options);
  const std::string reason =
      "the activity ran past its time limit of 1 s (lock_expiry of the component)";

  EXPECT_THAT(Must(task->SpawnForTest(kT0)), ElementsAre(id));
  ASSERT_TRUE(first_started->WaitFor());
  // Half way: nothing happens.
  clock_->Set(kT0 + 500ms);
  EXPECT_THAT(Must(task->TickForTest(kT0 + 500ms)), IsEmpty());
  EXPECT_EQ(task->InFlightCountForTest(), 1u);
  EXPECT_FALSE(worker->context(0).cancel.IsCancelled());
  // At the deadline the run is cancelled and recorded as a timeout.
  clock_->Set(kT0 + 1s);
  EXPECT_THAT(Must(task->TickForTest(kT0 + 1s)), IsEmpty());
  EXPECT_TRUE(worker->context(0).cancel.IsCancelled());
  EXPECT_EQ(task->InFlightCountForTest(), 0u);
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "TemporarilyTimedOut"));
  EXPECT_EQ(LastEventAs<core::TemporarilyTimedOut>(id).backoff_expires_at, kT0 + 1s + 100ms);
  // Which limit, and where it is set.
  EXPECT_EQ(LastEventAs<core::TemporarilyTimedOut>(id).reason, reason);

  // The retry times out too; even its late Ok counts as a timeout, and
  // with no retries left it is final.
  clock_->Set(kT0 + 1100ms);
  EXPECT_THAT(Must(task->SpawnForTest(kT0 + 1100ms)), ElementsAre(id));
  ASSERT_TRUE(second_started->WaitFor());
  clock_->Set(kT0 + 2100ms);
  Must(task->TickForTest(kT0 + 2100ms));
  EXPECT_EQ(LastEventAs<core::Finished>(id).result,
            core::SupportedFunctionReturnValue(
                FinishedExecutionError{ExecutionFailureKind::kTimedOut, reason, std::nullopt}));
}

// A worker that stops at the deadline on its own (an exec command killed by
// its supervisor) returns a TemporaryTimeout naming no limit before the
// executor's watchdog fires: it is recorded with the deadline's reason.
TEST_P(ExecTaskTest, AWorkersOwnTimeoutGetsTheDeadlineReason) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnErr(TemporaryTimeout{}));
  auto task = NewTask(worker, Options(Retries(1, 100ms)));
  Must(task->TickForTest(kT0));
  EXPECT_EQ(LastEventAs<core::TemporarilyTimedOut>(id).reason,
            "the activity ran past its time limit of 1 s (ExecutorOptions::lock_expiry)");
}

TEST_P(ExecTaskTest, ExecutionDeadlineBeforeNowShouldTimeout) {
  const ExecutionId id = CreateActivity();
  auto started = std::make_shared<Gate>();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(BlockUntilCancelled(started, ReturnFatal(FatalErrorKind::kCancelled, "")));
  auto task = NewTask(worker, Options(Retries(1, 100ms)));
  // Locked at kT0 but the clock is already past the deadline.
  clock_->Set(kT0 + 5s);
  Must(task->TickForTest(kT0));
  EXPECT_TRUE(worker->context(0).cancel.IsCancelled());
  EXPECT_EQ(LastEvent(id).created_at, kT0 + 5s);
  EXPECT_EQ(LastEventAs<core::TemporarilyTimedOut>(id).backoff_expires_at, kT0 + 5s + 100ms);
}

TEST_P(ExecTaskTest, WorkflowRunsAreNotTimedOutByTheExecutor) {
  const ExecutionId id = ExecutionId::Generate();
  Must(
      db().Create(CreateReq(id, kT0, testing::WorkflowFfqn(), core::ComponentId::DummyWorkflow())));
  auto started = std::make_shared<Gate>();
  auto worker = std::make_shared<ScriptedWorker>(std::vector{testing::WorkflowFfqn()});
  worker->Then(BlockUntilCancelled(started, ReturnFatal(FatalErrorKind::kCancelled, "")));
  ExecutorOptions options = Options(Retries(std::nullopt, 1s));
  options.component_id = core::ComponentId::DummyWorkflow();
  auto task = NewTask(worker, options);

  Must(task->SpawnForTest(kT0));
  ASSERT_TRUE(started->WaitFor());
  clock_->Set(kT0 + 10s);
  Must(task->TickForTest(kT0 + 10s));
  EXPECT_FALSE(worker->context(0).cancel.IsCancelled()) << "workflows manage their own lease";
  EXPECT_EQ(task->InFlightCountForTest(), 1u);
  task->Stop();
  EXPECT_EQ(LastEventAs<core::Unlocked>(id).reason, "executor shutting down");
}

TEST_P(ExecTaskTest, VersionConflictByAStaleWorkerWritesNothing) {
  const ExecutionId id = CreateActivity();
  std::shared_ptr<storage::DbConnection> other = Conn();
  auto worker = std::make_shared<ScriptedWorker>();
  // While the run is busy, someone else (a watcher that judged the lock
  // expired) writes at the run's version.
  worker->Then([other](const WorkerContext& ctx) {
    Must(other->Append(ctx.execution_id, ctx.version,
                       storage::AppendRequest{kT0, core::TemporarilyTimedOut{kT0, std::nullopt}}));
    return WorkerResult::Ok(OkValue(1), ctx.version);
  });
  auto task = NewTask(worker, Options(Retries(3, 100ms)));
  Must(task->TickForTest(kT0));
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "TemporarilyTimedOut"));
  EXPECT_EQ(Log(id).pending_state.StateName(), "PendingAt");

  // The same through ApplyOutcome directly.
  auto write = ComputeOutcome(WorkerResult::Ok(OkValue(1), Version(2)),
                              RunInfo{id, 0, Retries(3, 100ms)}, kT0);
  EXPECT_EQ(Must(ApplyOutcome(*ExecConn(), *write)), ApplyStatus::kLostToAnotherWriter);
  EXPECT_EQ(Log(id).events.size(), 3u);
}

TEST_P(ExecTaskTest, CancelledActivityIsFinishedOnceAsCancelled) {
  const ExecutionId cancelled_by_api = CreateActivity();
  const ExecutionId cancelled_by_worker = CreateActivity();
  std::shared_ptr<storage::DbConnection> other = Conn();
  auto worker = std::make_shared<ScriptedWorker>();
  auto step = [other, cancelled_by_api](const WorkerContext& ctx) {
    // The cancel API writes first, then fires the token.
    if (ctx.execution_id == cancelled_by_api) {
      EXPECT_EQ(Must(other->CancelActivity(ctx.execution_id, kT0)),
                storage::CancelOutcome::kCancelled);
    }
    return WorkerResult::Fatal(ctx.version, FatalErrorKind::kCancelled, "cancelled");
  };
  worker->Then(step).Then(step);
  auto task = NewTask(worker, Options(Retries(3, 100ms)));
  Must(task->TickForTest(kT0));
  for (const ExecutionId& id : {cancelled_by_api, cancelled_by_worker}) {
    EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "Finished"));
    EXPECT_EQ(std::get<FinishedExecutionError>(LastEventAs<core::Finished>(id).result).kind,
              ExecutionFailureKind::kCancelled);
  }
}

TEST_P(ExecTaskTest, WorkerDbErrorWritesNothing) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnErr(WorkerDbError{storage::DbErrorGeneric::Uncategorized("disk on fire")}));
  auto task = NewTask(worker, Options(Retries(3, 100ms)));
  Must(task->TickForTest(kT0));
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked"));
  EXPECT_EQ(Log(id).pending_state.StateName(), "Locked") << "left to the watcher";
}

TEST_P(ExecTaskTest, GracefulShutdownUnlocksHeldExecutions) {
  const ExecutionId a = CreateActivity();
  const ExecutionId b = CreateActivity();
  auto a_started = std::make_shared<Gate>();
  auto b_started = std::make_shared<Gate>();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(BlockUntilCancelled(a_started, ReturnFatal(FatalErrorKind::kCancelled, "")))
      .Then(BlockUntilCancelled(b_started, ReturnOk(OkValue("done anyway"))));
  auto task = NewTask(worker, Options(Retries(3, 100ms)));
  EXPECT_EQ(Must(task->SpawnForTest(kT0)).size(), 2u);
  ASSERT_TRUE(a_started->WaitFor());
  ASSERT_TRUE(b_started->WaitFor());

  clock_->Set(kT0 + 10ms);
  task->Stop();
  EXPECT_EQ(task->InFlightCountForTest(), 0u);
  // The run that gave up is unlocked, pending again at once and not counted;
  // the run that still completed is recorded as finished.
  const bool a_first = worker->context(0).execution_id == a;
  const ExecutionId unlocked = a_first ? a : b;
  const ExecutionId finished = a_first ? b : a;
  EXPECT_THAT(EventNames(unlocked), ElementsAre("Created", "Locked", "Unlocked"));
  EXPECT_EQ(LastEventAs<core::Unlocked>(unlocked),
            (core::Unlocked{kT0 + 10ms, "executor shutting down"}));
  EXPECT_EQ(ScheduledAt(unlocked), kT0 + 10ms);
  EXPECT_EQ(LastEventAs<core::Finished>(finished).result, OkValue("done anyway"));

  // Another executor takes the unlocked execution over without waiting.
  auto next_worker = std::make_shared<ScriptedWorker>();
  next_worker->Then(ReturnOk());
  auto next = NewTask(next_worker, Options(Retries(3, 100ms)));
  EXPECT_THAT(Must(next->TickForTest(kT0 + 10ms)), ElementsAre(unlocked));
  EXPECT_EQ(next_worker->context(0).intermittent_event_count, 0u);
}

TEST_P(ExecTaskTest, PermitsBoundHowManyExecutionsAreLocked) {
  for (int i = 0; i < 3; ++i) CreateActivity();
  auto limiter = ConcurrencyLimiter::Create(1);
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnOk()).Then(ReturnOk()).Then(ReturnOk());
  ExecutorOptions options = Options(Retries(3, 100ms));
  options.concurrency_limiter = limiter;
  auto task = NewTask(worker, options);
  {
    auto held = limiter->TryAcquireUpTo(1);
    EXPECT_THAT(Must(task->TickForTest(kT0)), IsEmpty()) << "no permit, no lock";
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Must(task->TickForTest(kT0)).size(), 1u);
  EXPECT_THAT(Must(task->TickForTest(kT0)), IsEmpty());
  EXPECT_EQ(limiter->available(), 1u) << "every permit returned";
}

TEST_P(ExecTaskTest, BatchSizeBoundsOneTick) {
  for (int i = 0; i < 3; ++i) CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnOk()).Then(ReturnOk()).Then(ReturnOk());
  ExecutorOptions options = Options(Retries(3, 100ms));
  options.batch_size = 2;
  auto task = NewTask(worker, options);
  EXPECT_EQ(Must(task->TickForTest(kT0)).size(), 2u);
  EXPECT_EQ(Must(task->TickForTest(kT0)).size(), 1u);
}

TEST_P(ExecTaskTest, LockingByComponentIdSelectsByDigest) {
  const ExecutionId mine = CreateActivity();
  core::ComponentId other_component = core::ComponentId::DummyActivity();
  other_component.input_digest = core::InputContentDigest(core::InputContentDigest::Bytes{1});
  const ExecutionId theirs = ExecutionId::Generate();
  Must(db().Create(CreateReq(theirs, kT0, ActivityFfqn(), other_component)));

  auto worker = std::make_shared<ScriptedWorker>(std::vector<core::FunctionFqn>{});
  worker->Then(ReturnOk());
  ExecutorOptions options = Options(Retries(3, 100ms));
  options.locking_strategy = LockingStrategy::kByComponentId;
  auto task = NewTask(worker, options);
  EXPECT_THAT(Must(task->TickForTest(kT0)), ElementsAre(mine));
  EXPECT_EQ(Log(theirs).pending_state.StateName(), "PendingAt");
}

TEST_P(ExecTaskTest, OversizedResultFinishesWithAnErrorInsteadOfBeingRecorded) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnOk(OkValue(std::string(200, 'x'))));
  ExecutorOptions options = Options(Retries(3, 100ms));
  options.max_result_bytes = 100;
  auto task = NewTask(worker, options);
  EXPECT_THAT(Must(task->TickForTest(kT0)), ElementsAre(id));
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "Finished")) << "not retried";
  const core::Finished finished = LastEventAs<core::Finished>(id);
  const auto* error = std::get_if<FinishedExecutionError>(&finished.result);
  ASSERT_NE(error, nullptr);
  EXPECT_THAT(error->reason.value_or(""), ::testing::HasSubstr("result too large"));
  EXPECT_THAT(error->reason.value_or(""), ::testing::HasSubstr("over the limit of 100"));
}

// Eager dispatch: another component locks an execution for the task with
// a reservation's Locked event (in the transaction that creates it) and
// hands it over; the task runs and records it as if it had locked it.
TEST_P(ExecTaskTest, ExecutionLockedWithAReservationRunsOnTheTask) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  worker->Then(ReturnOk(OkValue(7)));
  ExecutorOptions options = Options(Retries(3, 100ms));
  auto limiter = ConcurrencyLimiter::Create(1);
  options.concurrency_limiter = limiter;
  auto task = NewTask(worker, options);

  std::optional<ExecTask::Reservation> reservation = task->TryReserve(kT0);
  ASSERT_TRUE(reservation.has_value());
  EXPECT_EQ(reservation->locked.executor_id, options.executor_id);
  EXPECT_EQ(reservation->locked.component_id, options.component_id);
  EXPECT_EQ(reservation->locked.lock_expires_at, kT0 + 1s);
  EXPECT_EQ(reservation->locked.retry_config, options.retry_config);
  EXPECT_EQ(limiter->available(), 0u) << "the reservation holds the permit";
  const core::Locked& l = reservation->locked;
  storage::LockedExecution locked =
      Must(db().LockOne(kT0, l.component_id, id, l.run_id, Version(1), l.executor_id,
                        l.lock_expires_at, l.retry_config));
  task->RunLocked(std::move(locked), *std::move(reservation));
  task->Stop();  // waits for the run; an Ok result is still recorded

  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "Finished"));
  EXPECT_EQ(LastEventAs<core::Finished>(id).result, OkValue(7));
  EXPECT_EQ(worker->context(0).run_id, l.run_id);
  EXPECT_EQ(limiter->available(), 1u) << "the permit came back with the run";
}

TEST_P(ExecTaskTest, ReservationsTakePermitsAndAnUnusedOneReturnsIt) {
  auto limiter = ConcurrencyLimiter::Create(1);
  ExecutorOptions options = Options(Retries(3, 100ms));
  options.concurrency_limiter = limiter;
  auto task = NewTask(std::make_shared<ScriptedWorker>(), options);
  std::optional<ExecTask::Reservation> first = task->TryReserve(kT0);
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(task->TryReserve(kT0).has_value()) << "no permit left";
  std::optional<ExecTask::Reservation> second;
  first.reset();
  second = task->TryReserve(kT0);
  ASSERT_TRUE(second.has_value()) << "the dropped reservation gave its permit back";
}

TEST_P(ExecTaskTest, StoppedTaskReservesNothingAndUnlocksWhatIsHandedToIt) {
  const ExecutionId id = CreateActivity();
  auto worker = std::make_shared<ScriptedWorker>();
  auto task = NewTask(worker, Options(Retries(3, 100ms)));
  std::optional<ExecTask::Reservation> reservation = task->TryReserve(kT0);
  ASSERT_TRUE(reservation.has_value());
  const core::Locked& l = reservation->locked;
  storage::LockedExecution locked =
      Must(db().LockOne(kT0, l.component_id, id, l.run_id, Version(1), l.executor_id,
                        l.lock_expires_at, l.retry_config));
  task->Stop();
  EXPECT_FALSE(task->TryReserve(kT0).has_value());

  clock_->Set(kT0 + 10ms);
  task->RunLocked(std::move(locked), *std::move(reservation));
  EXPECT_EQ(worker->runs(), 0u) << "nothing runs on a stopped task";
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "Unlocked"));
  EXPECT_EQ(ScheduledAt(id), kT0 + 10ms) << "pending again at once, not after the lease";
}

INSTANTIATE_TEST_SUITE_P(Backends, ExecTaskTest, ::testing::ValuesIn(testing::AllBackends()),
                         testing::BackendName);

}  // namespace
}  // namespace stele::executor
