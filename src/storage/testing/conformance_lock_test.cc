// Locking: LockPendingByFfqns / LockPendingByComponentId selection and
// order, LockOne, lock extension and the lock rules of the pending-state
// table (no lock during a backoff, expired locks are never stolen).
#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class LockTest : public ConformanceTest {};
STELE_INSTANTIATE_CONFORMANCE_SUITE(LockTest);

TEST_P(LockTest, LockPendingReturnsTheLockedExecution) {
  ExecutionId id = NewId();
  CreateRequest req = CreateReq(id, kT0);
  req.params = core::Json::array({1, "two"});
  req.metadata.entries = {{"k", "v"}};
  Must(db().Create(req));
  Runner runner = Runner::New();

  std::vector<LockedExecution> locked = Must(LockPendingA(db(), 10, kT0, runner, kT0 + 10s));

  ASSERT_THAT(locked, SizeIs(1));
  const LockedExecution& execution = locked[0];
  EXPECT_EQ(execution.execution_id, id);
  EXPECT_EQ(execution.next_version, Version(2));
  EXPECT_EQ(execution.metadata, req.metadata);
  EXPECT_EQ(execution.locked_event, (core::Locked{ComponentA(), runner.executor_id, runner.run_id,
                                                  kT0 + 10s, RetryConfig()}));
  EXPECT_EQ(execution.ffqn, FfqnA());
  EXPECT_EQ(execution.params, req.params);
  EXPECT_THAT(execution.event_history, IsEmpty());
  EXPECT_THAT(execution.responses, IsEmpty());
  EXPECT_EQ(execution.parent, std::nullopt);
  EXPECT_EQ(execution.intermittent_event_count, 0u);

  EXPECT_EQ(Must(db().GetPendingState(id)), LockedState(runner, kT0 + 10s));
  core::ExecutionEvent last = Must(db().GetLastExecutionEvent(id));
  EXPECT_EQ(last.version, Version(1));
  EXPECT_EQ(last.created_at, kT0);
  EXPECT_EQ(last.event, core::ExecutionRequest(execution.locked_event));
}

TEST_P(LockTest, LockedExecutionCarriesHistoryResponsesAndParent) {
  ExecutionId root = NewId();
  CreateRequest root_req = CreateReq(root, kT0);
  root_req.ffqn = FfqnB();  // only the child is for LockPendingA
  Must(db().Create(root_req));
  core::JoinSetId join_set = NamedJoinSet("js");
  core::ExecutionIdDerived id = ChildId(root, join_set, 1);
  CreateChildren(db(), root, Version(1), kT0, {id});
  Runner first = Runner::New();
  Version v = Must(LockOneAt(db(), id, Version(1), kT0, first, kT0 + 10s)).next_version;

  core::JoinSetId timers = NamedJoinSet("timers");
  core::DelayId delay(id, timers, 1);
  v = Must(db().AppendBatch(kT0,
                            {JoinSetCreateReq(kT0, timers), DelayRequestReq(kT0, delay, kT0 + 2s),
                             JoinNextReq(kT0, timers, kT0 + 1s)},
                            id, v));
  EXPECT_EQ(Must(db().AppendDelayResponse(kT0 + 2s, id, timers, delay, true)),
            AppendDelayResponseOutcome::kSuccess);

  Runner second = Runner::New();
  std::vector<LockedExecution> locked = Must(LockPendingA(db(), 10, kT0 + 2s, second, kT0 + 12s));
  ASSERT_THAT(locked, SizeIs(1));
  const LockedExecution& execution = locked[0];
  EXPECT_EQ(execution.next_version, v.Increment());
  EXPECT_EQ(execution.parent, id.SplitToParts());
  ASSERT_THAT(execution.event_history, SizeIs(3));
  EXPECT_EQ(
      execution.event_history[0],
      std::make_pair(std::get<core::HistoryEventRequest>(JoinSetCreateReq(kT0, timers).event).event,
                     Version(2)));
  EXPECT_EQ(execution.event_history[1].second, Version(3));
  EXPECT_EQ(execution.event_history[2].second, Version(4));
  EXPECT_TRUE(std::holds_alternative<core::HistoryJoinNext>(execution.event_history[2].first));
  EXPECT_THAT(execution.responses,
              ElementsAre(core::JoinSetResponseEventOuter{
                  kT0 + 2s, core::JoinSetResponseEvent{timers, core::DelayFinished{delay, true}}}));
}

TEST_P(LockTest, LockPendingSortsByScheduledAt) {
  ExecutionId late = NewId(), early = NewId(), middle = NewId();
  std::vector<std::pair<ExecutionId, std::chrono::seconds>> schedule = {
      {late, 3s}, {early, 1s}, {middle, 2s}};
  for (const auto& [id, delay] : schedule) {
    CreateRequest req = CreateReq(id, kT0);
    req.scheduled_at = kT0 + delay;
    Must(db().Create(req));
  }

  EXPECT_THAT(IdsOf(Must(LockPendingA(db(), 1, kT0 + 5s, Runner::New(), kT0 + 15s))),
              ElementsAre(early));
  EXPECT_THAT(IdsOf(Must(LockPendingA(db(), 10, kT0 + 5s, Runner::New(), kT0 + 15s))),
              ElementsAre(middle, late));
}

TEST_P(LockTest, LockPendingBreaksTiesById) {
  for (uint64_t n : {3, 1, 2}) Must(db().Create(CreateReq(TopLevelId(n), kT0)));
  EXPECT_THAT(IdsOf(Must(LockPendingA(db(), 10, kT0, Runner::New(), kT0 + 10s))),
              ElementsAre(TopLevelId(1), TopLevelId(2), TopLevelId(3)));
}

TEST_P(LockTest, LockPendingRespectsTheBatchSize) {
  for (int i = 0; i < 3; ++i) {
    CreateRequest req = CreateReq(NewId(), kT0);
    req.scheduled_at = kT0 + std::chrono::seconds(i);
    Must(db().Create(req));
  }
  EXPECT_THAT(Must(LockPendingA(db(), 2, kT0 + 5s, Runner::New(), kT0 + 15s)), SizeIs(2));
  EXPECT_THAT(Must(LockPendingA(db(), 2, kT0 + 5s, Runner::New(), kT0 + 15s)), SizeIs(1));
  EXPECT_THAT(Must(LockPendingA(db(), 2, kT0 + 5s, Runner::New(), kT0 + 15s)), IsEmpty());
}

TEST_P(LockTest, LockPendingWhileNothingIsPendingIsANoop) {
  EXPECT_THAT(Must(LockPendingA(db(), 10, kT0, Runner::New(), kT0 + 10s)), IsEmpty());

  // Not pending yet, of another function, locked, blocked and finished.
  ExecutionId future = NewId();
  CreateRequest future_req = CreateReq(future, kT0);
  future_req.scheduled_at = kT0 + 1s;
  Must(db().Create(future_req));
  ExecutionId other_ffqn = NewId();
  CreateRequest other_req = CreateReq(other_ffqn, kT0);
  other_req.ffqn = FfqnB();
  Must(db().Create(other_req));
  ExecutionId locked = NewId();
  CreateLocked(db(), locked, kT0, Runner::New(), kT0 + 10s);
  ExecutionId blocked = NewId();
  Version v = CreateLocked(db(), blocked, kT0, Runner::New(), kT0 + 10s);
  Must(db().Append(blocked, v, JoinNextReq(kT0, NamedJoinSet("js"), kT0)));
  ExecutionId finished = NewId();
  v = CreateLocked(db(), finished, kT0, Runner::New(), kT0 + 10s);
  Must(db().Append(finished, v, FinishedReq(kT0, OkResult())));

  EXPECT_THAT(Must(LockPendingA(db(), 10, kT0, Runner::New(), kT0 + 10s)), IsEmpty());
  EXPECT_EQ(Must(db().Get(future)).next_version, Version(1));
  EXPECT_EQ(Must(db().Get(other_ffqn)).next_version, Version(1));
  EXPECT_EQ(Must(db().Get(locked)).next_version, Version(2));
  EXPECT_EQ(Must(db().Get(blocked)).next_version, Version(3));
  EXPECT_EQ(Must(db().Get(finished)).next_version, Version(3));
}

TEST_P(LockTest, LockPendingIncludesExecutionsDueExactlyAtTheBound) {
  ExecutionId id = NewId();
  CreateRequest req = CreateReq(id, kT0);
  req.scheduled_at = kT0 + 5s;
  Must(db().Create(req));

  EXPECT_THAT(Must(LockPendingA(db(), 10, kT0 + 4s, Runner::New(), kT0 + 14s)), IsEmpty());
  EXPECT_THAT(IdsOf(Must(LockPendingA(db(), 10, kT0 + 5s, Runner::New(), kT0 + 15s))),
              ElementsAre(id));
}

TEST_P(LockTest, LockPendingByComponentIdSelectsByDigest) {
  ExecutionId of_a = NewId(), of_b = NewId();
  Must(db().Create(CreateReq(of_a, kT0)));
  CreateRequest req_b = CreateReq(of_b, kT0);
  req_b.component_id = ComponentB();
  Must(db().Create(req_b));
  Runner runner = Runner::New();

  std::vector<LockedExecution> locked = Must(db().LockPendingByComponentId(
      10, kT0, ComponentB(), kT0, runner.executor_id, kT0 + 10s, runner.run_id, RetryConfig()));
  ASSERT_THAT(IdsOf(locked), ElementsAre(of_b));
  EXPECT_EQ(locked[0].locked_event.component_id, ComponentB());
  EXPECT_EQ(Must(db().GetPendingState(of_a)), PendingAtState(kT0, std::nullopt));
}

TEST_P(LockTest, LockPendingDoesNotStealExpiredLocks) {
  ExecutionId id = NewId();
  Runner owner = Runner::New();
  CreateLocked(db(), id, kT0, owner, kT0 + 1s);

  EXPECT_THAT(Must(LockPendingA(db(), 10, kT0 + 10s, Runner::New(), kT0 + 20s)), IsEmpty());
  EXPECT_THAT(LockOneAt(db(), id, Version(2), kT0 + 10s, Runner::New(), kT0 + 20s),
              IsNonRetriable(kIllegalState));
  EXPECT_EQ(Must(db().GetPendingState(id)), LockedState(owner, kT0 + 1s));
}

TEST_P(LockTest, LockingInUnlockBackoffIsNotPossible) {
  ExecutionId id = NewId();
  Runner owner = Runner::New();
  Version v = CreateLocked(db(), id, kT0, owner, kT0 + 10s);
  v = Must(db().Append(id, v, UnlockedReq(kT0 + 1s, kT0 + 10s)));

  Runner other = Runner::New();
  EXPECT_THAT(Must(LockPendingA(db(), 10, kT0 + 5s, other, kT0 + 15s)), IsEmpty());
  EXPECT_THAT(LockOneAt(db(), id, v, kT0 + 5s, other, kT0 + 15s),
              IsNonRetriable(kValidationFailed));
  std::vector<LockedExecution> locked = Must(LockPendingA(db(), 10, kT0 + 10s, other, kT0 + 20s));
  ASSERT_THAT(IdsOf(locked), ElementsAre(id));
  EXPECT_EQ(locked[0].intermittent_event_count, 0u);  // Unlocked is not a retry
}

TEST_P(LockTest, LockingInTimeoutBackoffIsNotPossible) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 1s);
  v = Must(db().Append(id, v, TimedOutReq(kT0 + 1s, kT0 + 10s)));

  Runner other = Runner::New();
  EXPECT_THAT(Must(LockPendingA(db(), 10, kT0 + 9s, other, kT0 + 19s)), IsEmpty());
  EXPECT_THAT(LockOneAt(db(), id, v, kT0 + 9s, other, kT0 + 19s),
              IsNonRetriable(kValidationFailed));
  std::vector<LockedExecution> locked = Must(LockPendingA(db(), 10, kT0 + 10s, other, kT0 + 20s));
  ASSERT_THAT(IdsOf(locked), ElementsAre(id));
  EXPECT_EQ(locked[0].intermittent_event_count, 1u);
}

TEST_P(LockTest, IntermittentEventCountCountsOnlyTemporaryFailuresAndTimeouts) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  DateTime at = kT0;
  std::vector<AppendRequest> outcomes = {TemporarilyFailedReq(at, at), UnlockedReq(at, at),
                                         TimedOutReq(at, at), UnlockedReq(at, at)};
  std::optional<LockedExecution> locked;
  for (const AppendRequest& outcome : outcomes) {
    v = Must(db().Append(id, v, outcome));
    locked = Must(LockOneAt(db(), id, v, at, Runner::New(), at + 10s));
    v = locked->next_version;
  }
  EXPECT_EQ(locked->intermittent_event_count, 2u);
}

TEST_P(LockTest, LockOneLocksAPendingExecution) {
  ExecutionId id = NewId();
  Must(db().Create(CreateReq(id, kT0)));
  Runner runner = Runner::New();

  LockedExecution locked = Must(LockOneAt(db(), id, Version(1), kT0 + 1s, runner, kT0 + 11s));
  EXPECT_EQ(locked.execution_id, id);
  EXPECT_EQ(locked.next_version, Version(2));
  EXPECT_EQ(locked.locked_event.lock_expires_at, kT0 + 11s);
  EXPECT_EQ(Must(db().GetPendingState(id)), LockedState(runner, kT0 + 11s));
}

TEST_P(LockTest, LockOneValidatesTheRequest) {
  ExecutionId id = NewId();
  Must(db().Create(CreateReq(id, kT0)));
  Runner runner = Runner::New();

  EXPECT_THAT(LockOneAt(db(), NewId(), Version(1), kT0, runner, kT0 + 1s), IsNotFound());
  EXPECT_THAT(LockOneAt(db(), id, Version(5), kT0, runner, kT0 + 1s), IsVersionConflict(1, 5));
  // The lease must end after the lock is taken.
  EXPECT_THAT(LockOneAt(db(), id, Version(1), kT0, runner, kT0), IsNonRetriable(kValidationFailed));
  EXPECT_THAT(LockOneAt(db(), id, Version(1), kT0, runner, kT0 - 1s),
              IsNonRetriable(kValidationFailed));
  EXPECT_EQ(Must(db().Get(id)).next_version, Version(1));
}

TEST_P(LockTest, LockingABlockedOrFinishedExecutionIsIllegalState) {
  Runner runner = Runner::New();
  ExecutionId blocked = NewId();
  Version v = CreateLocked(db(), blocked, kT0, runner, kT0 + 10s);
  v = Must(db().Append(blocked, v, JoinNextReq(kT0, NamedJoinSet("js"), kT0 + 10s)));
  EXPECT_THAT(LockOneAt(db(), blocked, v, kT0 + 1s, runner, kT0 + 20s),
              IsNonRetriable(kIllegalState));

  ExecutionId finished = NewId();
  v = CreateLocked(db(), finished, kT0, runner, kT0 + 10s);
  v = Must(db().Append(finished, v, FinishedReq(kT0, OkResult())));
  EXPECT_THAT(LockOneAt(db(), finished, v, kT0 + 1s, runner, kT0 + 20s),
              IsNonRetriable(kIllegalState));
}

TEST_P(LockTest, LockExtendedWithTheSameExecutorAndRunWorks) {
  ExecutionId id = NewId();
  Runner runner = Runner::New();
  Version v = CreateLocked(db(), id, kT0, runner, kT0 + 10s);

  // From Locked.
  LockedExecution extended = Must(LockOneAt(db(), id, v, kT0 + 5s, runner, kT0 + 20s));
  EXPECT_EQ(extended.next_version, v.Increment());
  EXPECT_EQ(Must(db().GetPendingState(id)), LockedState(runner, kT0 + 20s));
  // Through Append as well.
  v = Must(db().Append(id, extended.next_version, LockedReq(kT0 + 6s, runner, kT0 + 21s)));
  EXPECT_EQ(Must(db().GetPendingState(id)), LockedState(runner, kT0 + 21s));

  // From PendingAt(future) whose last lock is this run: a warm workflow whose
  // JoinNext found its response keeps its lease and may extend it.
  core::JoinSetId join_set = NamedJoinSet("js");
  core::DelayId delay(id, join_set, 1);
  v = RequestDelays(db(), id, v, kT0 + 6s, {delay}, kT0 + 6s);
  Must(db().AppendDelayResponse(kT0 + 6s, id, join_set, delay, true));
  v = Must(db().Append(id, v, JoinNextReq(kT0 + 7s, join_set, kT0 + 30s)));
  ASSERT_EQ(Must(db().GetPendingState(id)), PendingAtState(kT0 + 30s, runner.locked_by()));
  Must(LockOneAt(db(), id, v, kT0 + 8s, runner, kT0 + 40s));
  EXPECT_EQ(Must(db().GetPendingState(id)), LockedState(runner, kT0 + 40s));
}

TEST_P(LockTest, LockExtendedWithAnotherExecutorFails) {
  ExecutionId id = NewId();
  Runner owner = Runner::New();
  Version v = CreateLocked(db(), id, kT0, owner, kT0 + 10s);

  // From Locked: another executor, or the same executor in another run.
  EXPECT_THAT(LockOneAt(db(), id, v, kT0 + 5s, Runner::New(), kT0 + 20s),
              IsNonRetriable(kIllegalState));
  Runner same_executor{owner.executor_id, core::RunId::Generate()};
  EXPECT_THAT(LockOneAt(db(), id, v, kT0 + 5s, same_executor, kT0 + 20s),
              IsNonRetriable(kIllegalState));
  EXPECT_THAT(db().Append(id, v, LockedReq(kT0 + 5s, Runner::New(), kT0 + 20s)),
              IsNonRetriable(kIllegalState));

  // From PendingAt(future) with the owner's last lock.
  v = Must(db().Append(id, v, UnlockedReq(kT0 + 5s, kT0 + 30s)));
  EXPECT_THAT(LockOneAt(db(), id, v, kT0 + 6s, Runner::New(), kT0 + 20s),
              IsNonRetriable(kValidationFailed));
  EXPECT_EQ(Must(db().GetPendingState(id)), PendingAtState(kT0 + 30s, owner.locked_by()));
  EXPECT_EQ(Must(db().Get(id)).next_version, v);
}

}  // namespace
}  // namespace stele::storage::conformance
