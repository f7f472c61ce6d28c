// Create and Append*: the append rules (reject Created, already finished,
// version fencing), the event-driven rows of the pending-state table and
// the all-or-nothing batches.
#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class AppendTest : public ConformanceTest {};
STELE_INSTANTIATE_CONFORMANCE_SUITE(AppendTest);

TEST_P(AppendTest, CreateStartsPendingAtScheduledAt) {
  ExecutionId id = NewId();
  CreateRequest req = CreateReq(id, kT0);
  req.scheduled_at = kT0 + 10s;
  req.metadata.entries = {{"tracing:traceparent", "00-abc-def-01"}};

  EXPECT_EQ(Must(db().Create(req)), Version(1));

  ExecutionLog log = Must(db().Get(id));
  ASSERT_THAT(log.events, SizeIs(1));
  EXPECT_EQ(log.events[0].version, Version(0));
  EXPECT_EQ(log.events[0].created_at, kT0);
  EXPECT_EQ(log.events[0].event, core::ExecutionRequest(req.ToCreatedEvent()));
  EXPECT_THAT(log.responses, IsEmpty());
  EXPECT_EQ(log.next_version, Version(1));
  EXPECT_EQ(log.pending_state, PendingAtState(kT0 + 10s, std::nullopt));
  EXPECT_EQ(Must(db().GetCreateRequest(id)), req);
}

TEST_P(AppendTest, CreatingExecutionTwiceFails) {
  ExecutionId id = NewId();
  CreateRequest first = CreateReq(id, kT0);
  first.params = core::Json::array({1});
  Must(db().Create(first));

  CreateRequest second = CreateReq(id, kT0 + 1s);
  second.params = core::Json::array({2});
  EXPECT_THAT(db().Create(second), IsNonRetriable(kIllegalState));
  EXPECT_EQ(Must(db().GetCreateRequest(id)), first);
}

TEST_P(AppendTest, CreateKeepsParentScheduledByAndMetadata) {
  ExecutionId parent = NewId();
  Must(db().Create(CreateReq(parent, kT0)));
  core::ExecutionIdDerived child = ChildId(parent, NamedJoinSet("js"), 1);
  CreateRequest req = ChildCreateReq(child, kT0 + 1s);
  req.ffqn = FfqnB();
  req.component_id = ComponentB();
  req.scheduled_by = parent;
  req.metadata.entries = {{"a", "1"}, {"b", "2"}};
  Must(db().AppendBatchCreateNewExecution(kT0 + 1s, {ChildRequestReq(kT0 + 1s, child)}, parent,
                                          Version(1), {req}));

  EXPECT_EQ(Must(db().GetCreateRequest(ExecutionId(child))), req);
  EXPECT_EQ(Must(db().GetPendingState(ExecutionId(child))),
            PendingAtState(kT0 + 1s, std::nullopt, ComponentB().input_digest));
}

TEST_P(AppendTest, AppendReturnsTheNextVersion) {
  ExecutionId id = NewId();
  Runner runner = Runner::New();
  Must(db().Create(CreateReq(id, kT0)));

  EXPECT_EQ(Must(db().Append(id, Version(1), LockedReq(kT0, runner, kT0 + 10s))), Version(2));
  EXPECT_EQ(Must(db().Append(id, Version(2), PersistReq(kT0 + 1s))), Version(3));
  core::ExecutionEvent last = Must(db().GetLastExecutionEvent(id));
  EXPECT_EQ(last.version, Version(2));
  EXPECT_EQ(last.created_at, kT0 + 1s);
  EXPECT_EQ(last.event, PersistReq(kT0 + 1s).event);
}

TEST_P(AppendTest, AppendRejectsCreated) {
  ExecutionId id = NewId();
  CreateRequest req = CreateReq(id, kT0);
  Must(db().Create(req));

  EXPECT_THAT(db().Append(id, Version(1), AppendRequest{kT0, req.ToCreatedEvent()}),
              IsNonRetriable(kValidationFailed));
  EXPECT_THAT(db().AppendBatch(kT0, {PersistReq(kT0), AppendRequest{kT0, req.ToCreatedEvent()}}, id,
                               Version(1)),
              IsNonRetriable(kValidationFailed));
  EXPECT_THAT(Must(db().Get(id)).events, SizeIs(1));
}

TEST_P(AppendTest, WritesToAnUnknownExecutionAreNotFound) {
  ExecutionId id = NewId();
  Runner runner = Runner::New();
  EXPECT_THAT(db().Append(id, Version(1), PersistReq(kT0)), IsNotFound());
  EXPECT_THAT(db().AppendBatch(kT0, {PersistReq(kT0)}, id, Version(1)), IsNotFound());
  EXPECT_THAT(db().AppendBatchCreateNewExecution(kT0, {PersistReq(kT0)}, id, Version(1), {}),
              IsNotFound());
  EXPECT_THAT(LockOneAt(db(), id, Version(1), kT0, runner, kT0 + 1s), IsNotFound());
  EXPECT_THAT(
      db().UpgradeExecutionComponent(id, ComponentA().input_digest, ComponentB().input_digest),
      IsNotFound());
}

TEST_P(AppendTest, ReadsOfAnUnknownExecutionAreNotFound) {
  ExecutionId id = NewId();
  EXPECT_THAT(db().Get(id), IsNotFound());
  EXPECT_THAT(db().GetPendingState(id), IsNotFound());
  EXPECT_THAT(db().GetExecutionEvent(id, Version(0)), IsNotFound());
  EXPECT_THAT(db().GetLastExecutionEvent(id), IsNotFound());
  EXPECT_THAT(db().GetCreateRequest(id), IsNotFound());
  EXPECT_THAT(db().ListExecutionEvents(id, Version(0), 10, false), IsNotFound());
}

TEST_P(AppendTest, AppendWithAStaleOrFutureVersionIsVersionConflict) {
  ExecutionId id = NewId();
  Runner runner = Runner::New();
  Must(db().Create(CreateReq(id, kT0)));

  EXPECT_THAT(db().Append(id, Version(0), PersistReq(kT0)), IsVersionConflict(1, 0));
  EXPECT_THAT(db().Append(id, Version(2), PersistReq(kT0)), IsVersionConflict(1, 2));
  EXPECT_THAT(db().AppendBatch(kT0, {PersistReq(kT0)}, id, Version(3)), IsVersionConflict(1, 3));
  Must(db().Append(id, Version(1), LockedReq(kT0, runner, kT0 + 10s)));
  // A stale writer (say, a worker whose lock was taken over) is fenced off.
  EXPECT_THAT(db().Append(id, Version(1), FinishedReq(kT0, OkResult())), IsVersionConflict(2, 1));
  EXPECT_THAT(LockOneAt(db(), id, Version(1), kT0, runner, kT0 + 20s), IsVersionConflict(2, 1));
  EXPECT_THAT(Must(db().Get(id)).events, SizeIs(2));
  EXPECT_EQ(Must(db().GetPendingState(id)), LockedState(runner, kT0 + 10s));
}

TEST_P(AppendTest, AppendAfterFinishedIsIllegalState) {
  ExecutionId id = NewId();
  Runner runner = Runner::New();
  Version v = CreateLocked(db(), id, kT0, runner, kT0 + 10s);
  v = Must(db().Append(id, v, FinishedReq(kT0 + 1s, OkResult())));
  ASSERT_EQ(v, Version(3));

  EXPECT_THAT(db().Append(id, v, PersistReq(kT0 + 2s)), IsNonRetriable(kIllegalState));
  EXPECT_THAT(db().Append(id, v, FinishedReq(kT0 + 2s, OkResult())), IsNonRetriable(kIllegalState));
  EXPECT_THAT(db().AppendBatch(kT0 + 2s, {PersistReq(kT0 + 2s)}, id, v),
              IsNonRetriable(kIllegalState));
  EXPECT_THAT(LockOneAt(db(), id, v, kT0 + 2s, runner, kT0 + 20s), IsNonRetriable(kIllegalState));

  ExecutionLog log = Must(db().Get(id));
  EXPECT_THAT(log.events, SizeIs(3));
  EXPECT_EQ(log.next_version, Version(3));
  EXPECT_TRUE(log.pending_state.IsFinished());
}

TEST_P(AppendTest, FinishedRecordsVersionTimeAndResultKind) {
  struct Case {
    core::SupportedFunctionReturnValue result;
    core::PendingStateFinishedResultKind kind;
  };
  std::vector<Case> cases = {
      {OkResult(core::Json(1)), core::PendingStateFinishedResultKind::Ok()},
      {ErrResult(core::Json("e")), core::PendingStateFinishedResultKind::FallibleError()},
      {FailureResult(core::ExecutionFailureKind::kTimedOut),
       core::PendingStateFinishedResultKind::Failure(core::ExecutionFailureKind::kTimedOut)},
  };
  for (const Case& c : cases) {
    ExecutionId id = NewId();
    Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
    Must(db().Append(id, v, FinishedReq(kT0 + 3s, c.result)));
    EXPECT_EQ(Must(db().GetPendingState(id)),
              (core::PendingState{
                  core::PendingStateFinished{2, kT0 + 3s, c.kind, ComponentA().input_digest}}));
    EXPECT_EQ(Must(db().GetLastExecutionEvent(id)).event, FinishedReq(kT0 + 3s, c.result).event);
  }
}

TEST_P(AppendTest, BackoffEventsMakeTheExecutionPendingAndKeepTheLastLock) {
  ExecutionId id = NewId();
  Runner first = Runner::New();
  Runner second = Runner::New();
  Runner third = Runner::New();
  Version v = CreateLocked(db(), id, kT0, first, kT0 + 10s);

  v = Must(db().Append(id, v, UnlockedReq(kT0 + 1s, kT0 + 5s)));
  EXPECT_EQ(Must(db().GetPendingState(id)), PendingAtState(kT0 + 5s, first.locked_by()));

  v = Must(LockOneAt(db(), id, v, kT0 + 5s, second, kT0 + 15s)).next_version;
  v = Must(db().Append(id, v, TemporarilyFailedReq(kT0 + 6s, kT0 + 7s)));
  EXPECT_EQ(Must(db().GetPendingState(id)), PendingAtState(kT0 + 7s, second.locked_by()));

  v = Must(LockOneAt(db(), id, v, kT0 + 7s, third, kT0 + 17s)).next_version;
  Must(db().Append(id, v, TimedOutReq(kT0 + 17s, kT0 + 18s)));
  EXPECT_EQ(Must(db().GetPendingState(id)), PendingAtState(kT0 + 18s, third.locked_by()));
}

TEST_P(AppendTest, HistoryEventsOnlyBumpTheVersion) {
  ExecutionId id = NewId();
  Runner runner = Runner::New();
  Version v = CreateLocked(db(), id, kT0, runner, kT0 + 10s);
  core::JoinSetId join_set = NamedJoinSet("js");
  core::ExecutionIdDerived child = ChildId(id, join_set, 1);
  std::vector<AppendRequest> events = {
      PersistReq(kT0),
      JoinSetCreateReq(kT0, join_set),
      ChildRequestReq(kT0, child),
      HistoryReq(kT0, core::HistoryJoinNextTooMany{join_set, FfqnA()}),
      HistoryReq(kT0, core::HistorySchedule{NewId(), core::HistoryEventScheduleAt::In(
                                                         core::Duration::FromSecs(5))}),
      HistoryReq(kT0, core::HistoryStub{child, OkResult(core::Json(1)), true}),
  };
  for (const AppendRequest& event : events) {
    Version next = Must(db().Append(id, v, event));
    EXPECT_EQ(next, v.Increment());
    v = next;
    EXPECT_EQ(Must(db().GetPendingState(id)), LockedState(runner, kT0 + 10s));
  }
}

TEST_P(AppendTest, JoinNextWithoutAResponseBlocks) {
  core::JoinSetId join_set = NamedJoinSet("js");
  for (bool closing : {false, true}) {
    ExecutionId id = NewId();
    Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
    v = Must(db().Append(id, v, JoinSetCreateReq(kT0, join_set)));
    Must(db().Append(id, v, JoinNextReq(kT0 + 1s, join_set, kT0 + 4s, closing)));
    EXPECT_EQ(Must(db().GetPendingState(id)), BlockedState(join_set, kT0 + 4s, closing));
  }
}

TEST_P(AppendTest, AppendBatchAppendsConsecutiveVersions) {
  ExecutionId id = NewId();
  Runner runner = Runner::New();
  Must(db().Create(CreateReq(id, kT0)));

  EXPECT_EQ(Must(db().AppendBatch(
                kT0, {LockedReq(kT0, runner, kT0 + 10s), PersistReq(kT0), PersistReq(kT0 + 1s)}, id,
                Version(1))),
            Version(4));
  ExecutionLog log = Must(db().Get(id));
  ASSERT_THAT(log.events, SizeIs(4));
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(log.events[i].version, Version(i));
  EXPECT_EQ(log.events[3].created_at, kT0 + 1s);
  EXPECT_EQ(log.pending_state, LockedState(runner, kT0 + 10s));
}

TEST_P(AppendTest, AppendBatchIsAllOrNothing) {
  ExecutionId id = NewId();
  Runner runner = Runner::New();
  Must(db().Create(CreateReq(id, kT0)));

  // The second Locked belongs to another run while the first holds the lock.
  EXPECT_THAT(db().AppendBatch(kT0,
                               {LockedReq(kT0, runner, kT0 + 10s), PersistReq(kT0),
                                LockedReq(kT0, Runner::New(), kT0 + 10s)},
                               id, Version(1)),
              IsNonRetriable(kIllegalState));
  // Finished in the middle: whatever follows is "already finished".
  EXPECT_THAT(
      db().AppendBatch(
          kT0, {LockedReq(kT0, runner, kT0 + 10s), FinishedReq(kT0, OkResult()), PersistReq(kT0)},
          id, Version(1)),
      IsNonRetriable(kIllegalState));

  ExecutionLog log = Must(db().Get(id));
  EXPECT_THAT(log.events, SizeIs(1));
  EXPECT_EQ(log.pending_state, PendingAtState(kT0, std::nullopt));
}

TEST_P(AppendTest, AppendBatchCreateNewExecutionCreatesTheChildren) {
  ExecutionId parent = NewId();
  Runner runner = Runner::New();
  Version v = CreateLocked(db(), parent, kT0, runner, kT0 + 10s);
  core::JoinSetId join_set = NamedJoinSet("js");
  core::ExecutionIdDerived first = ChildId(parent, join_set, 1);
  core::ExecutionIdDerived second = ChildId(parent, join_set, 2);

  EXPECT_EQ(Must(db().AppendBatchCreateNewExecution(
                kT0 + 1s,
                {JoinSetCreateReq(kT0 + 1s, join_set), ChildRequestReq(kT0 + 1s, first),
                 ChildRequestReq(kT0 + 1s, second)},
                parent, v, {ChildCreateReq(first, kT0 + 1s), ChildCreateReq(second, kT0 + 1s)})),
            Version(5));

  EXPECT_EQ(Must(db().GetPendingState(parent)), LockedState(runner, kT0 + 10s));
  for (const core::ExecutionIdDerived& child : {first, second}) {
    EXPECT_EQ(Must(db().GetPendingState(ExecutionId(child))),
              PendingAtState(kT0 + 1s, std::nullopt));
    EXPECT_EQ(Must(db().GetCreateRequest(ExecutionId(child))), ChildCreateReq(child, kT0 + 1s));
  }
}

// A Created event must read back: params that are not an array are refused
// before anything is written.
TEST_P(AppendTest, CreateWithParamsThatAreNotAnArrayIsValidationFailed) {
  ExecutionId id = NewId();
  CreateRequest req = CreateReq(id, kT0);
  req.params = core::Json(5);
  EXPECT_THAT(db().Create(req), IsNonRetriable(kValidationFailed));
  EXPECT_THAT(db().GetPendingState(id), IsNotFound());

  ExecutionId parent = NewId();
  Version v = CreateLocked(db(), parent, kT0, Runner::New(), kT0 + 10s);
  core::JoinSetId join_set = NamedJoinSet("js");
  core::ExecutionIdDerived child = ChildId(parent, join_set, 1);
  CreateRequest child_req = ChildCreateReq(child, kT0 + 1s);
  child_req.params = core::Json{{"not", "an array"}};
  EXPECT_THAT(db().AppendBatchCreateNewExecution(kT0 + 1s, {ChildRequestReq(kT0 + 1s, child)},
                                                 parent, v, {child_req}),
              IsNonRetriable(kValidationFailed));
  EXPECT_THAT(db().GetPendingState(ExecutionId(child)), IsNotFound());
  EXPECT_THAT(Must(db().Get(parent)).events, SizeIs(2)) << "the parent's events are not written";
}

TEST_P(AppendTest, AppendBatchCreateNewExecutionIsAllOrNothing) {
  ExecutionId parent = NewId();
  Version v = CreateLocked(db(), parent, kT0, Runner::New(), kT0 + 10s);
  core::JoinSetId join_set = NamedJoinSet("js");
  core::ExecutionIdDerived existing = ChildId(parent, join_set, 1);
  core::ExecutionIdDerived fresh = ChildId(parent, join_set, 2);
  v = CreateChildren(db(), parent, v, kT0, {existing});

  // A child that exists already fails the whole call.
  EXPECT_THAT(db().AppendBatchCreateNewExecution(
                  kT0 + 1s, {ChildRequestReq(kT0 + 1s, fresh), ChildRequestReq(kT0 + 1s, existing)},
                  parent, v, {ChildCreateReq(fresh, kT0 + 1s), ChildCreateReq(existing, kT0 + 1s)}),
              IsNonRetriable(kIllegalState));
  EXPECT_THAT(db().GetPendingState(ExecutionId(fresh)), IsNotFound());
  EXPECT_EQ(Must(db().GetCreateRequest(ExecutionId(existing))), ChildCreateReq(existing, kT0));

  // So does a stale parent version: no child is created.
  EXPECT_THAT(
      db().AppendBatchCreateNewExecution(kT0 + 1s, {ChildRequestReq(kT0 + 1s, fresh)}, parent,
                                         Version(1), {ChildCreateReq(fresh, kT0 + 1s)}),
      IsVersionConflict(3, 1));
  EXPECT_THAT(db().GetPendingState(ExecutionId(fresh)), IsNotFound());
  EXPECT_THAT(Must(db().Get(parent)).events, SizeIs(3));
}

TEST_P(AppendTest, AppendBatchCreateAndLockChildrenLocksTheNamedChildren) {
  ExecutionId parent = NewId();
  Runner runner = Runner::New();
  Version v = CreateLocked(db(), parent, kT0, runner, kT0 + 10s);
  core::JoinSetId join_set = NamedJoinSet("js");
  core::ExecutionIdDerived locked_child = ChildId(parent, join_set, 1);
  core::ExecutionIdDerived pending_child = ChildId(parent, join_set, 2);
  CreateRequest locked_req = ChildCreateReq(locked_child, kT0 + 1s);
  locked_req.params = core::Json::array({7});
  Runner child_runner = Runner::New();
  const core::Locked lock{ComponentA(), child_runner.executor_id, child_runner.run_id, kT0 + 5s,
                          RetryConfig()};

  CreatedAndLockedChildren result = Must(db().AppendBatchCreateAndLockChildren(
      kT0 + 1s,
      {JoinSetCreateReq(kT0 + 1s, join_set), ChildRequestReq(kT0 + 1s, locked_child),
       ChildRequestReq(kT0 + 1s, pending_child)},
      parent, v, {locked_req, ChildCreateReq(pending_child, kT0 + 1s)},
      {ChildLock{ExecutionId(locked_child), lock}}));

  EXPECT_EQ(result.next_version, Version(5));
  ASSERT_THAT(result.locked, SizeIs(1));
  const LockedExecution& got = result.locked[0];
  EXPECT_EQ(got.execution_id, ExecutionId(locked_child));
  EXPECT_EQ(got.next_version, Version(2));
  EXPECT_EQ(got.locked_event, lock);
  EXPECT_EQ(got.ffqn, locked_req.ffqn);
  EXPECT_EQ(got.params, locked_req.params);
  EXPECT_EQ(got.parent, locked_req.parent);
  EXPECT_THAT(got.event_history, IsEmpty());
  EXPECT_THAT(got.responses, IsEmpty());
  EXPECT_EQ(got.intermittent_event_count, 0u);

  EXPECT_EQ(Must(db().GetPendingState(ExecutionId(locked_child))),
            LockedState(child_runner, kT0 + 5s));
  core::ExecutionEvent last = Must(db().GetLastExecutionEvent(ExecutionId(locked_child)));
  EXPECT_EQ(last.version, Version(1));
  EXPECT_EQ(last.event, core::ExecutionRequest(lock));
  EXPECT_EQ(Must(db().GetPendingState(ExecutionId(pending_child))),
            PendingAtState(kT0 + 1s, std::nullopt));
  EXPECT_EQ(Must(db().GetPendingState(parent)), LockedState(runner, kT0 + 10s));
  // Nobody else can lock the child it locked.
  EXPECT_THAT(IdsOf(Must(LockPendingA(db(), 10, kT0 + 2s, Runner::New(), kT0 + 20s))),
              ElementsAre(ExecutionId(pending_child)));
}

TEST_P(AppendTest, AppendBatchCreateAndLockChildrenLeavesARefusedLockPending) {
  ExecutionId parent = NewId();
  Version v = CreateLocked(db(), parent, kT0, Runner::New(), kT0 + 10s);
  core::JoinSetId join_set = NamedJoinSet("js");
  core::ExecutionIdDerived later = ChildId(parent, join_set, 1);
  CreateRequest later_req = ChildCreateReq(later, kT0 + 1s);
  later_req.scheduled_at = kT0 + 1h;  // not due: the lock rules refuse it
  Runner child_runner = Runner::New();

  CreatedAndLockedChildren result = Must(db().AppendBatchCreateAndLockChildren(
      kT0 + 1s, {JoinSetCreateReq(kT0 + 1s, join_set), ChildRequestReq(kT0 + 1s, later)}, parent, v,
      {later_req},
      {ChildLock{ExecutionId(later), core::Locked{ComponentA(), child_runner.executor_id,
                                                  child_runner.run_id, kT0 + 5s, RetryConfig()}}}));

  EXPECT_EQ(result.next_version, Version(4));
  EXPECT_THAT(result.locked, IsEmpty());
  EXPECT_EQ(Must(db().GetPendingState(ExecutionId(later))), PendingAtState(kT0 + 1h, std::nullopt));
  EXPECT_THAT(Must(db().Get(ExecutionId(later))).events, SizeIs(1));
}

TEST_P(AppendTest, AppendBatchCreateAndLockChildrenIsAllOrNothingForTheCreation) {
  ExecutionId parent = NewId();
  CreateLocked(db(), parent, kT0, Runner::New(), kT0 + 10s);
  core::JoinSetId join_set = NamedJoinSet("js");
  core::ExecutionIdDerived fresh = ChildId(parent, join_set, 1);
  Runner child_runner = Runner::New();
  const std::vector<ChildLock> locks{
      ChildLock{ExecutionId(fresh), core::Locked{ComponentA(), child_runner.executor_id,
                                                 child_runner.run_id, kT0 + 5s, RetryConfig()}}};

  // A stale parent version: nothing is created, nothing locked.
  EXPECT_THAT(
      db().AppendBatchCreateAndLockChildren(kT0 + 1s, {ChildRequestReq(kT0 + 1s, fresh)}, parent,
                                            Version(1), {ChildCreateReq(fresh, kT0 + 1s)}, locks),
      IsVersionConflict(2, 1));
  EXPECT_THAT(db().GetPendingState(ExecutionId(fresh)), IsNotFound());
  EXPECT_THAT(Must(db().Get(parent)).events, SizeIs(2));
}

// A warm parent records its child's outcome with its own next step.
// `parent` locked, blocked on a named join set awaiting `child`, which is
// created and locked; returns the parent's next version.
Version SetupBlockedParent(DbConnection& db, const ExecutionId& parent,
                           const core::ExecutionIdDerived& child, const core::JoinSetId& join_set) {
  Version v = CreateLocked(db, parent, kT0, Runner::New(), kT0 + 10s);
  v = Must(db.AppendBatchCreateNewExecution(
      kT0,
      {JoinSetCreateReq(kT0, join_set), ChildRequestReq(kT0, child),
       JoinNextReq(kT0, join_set, kT0 + 10s)},
      parent, v, {ChildCreateReq(child, kT0)}));
  Must(LockOneAt(db, ExecutionId(child), Version(1), kT0, Runner::New(), kT0 + 5s));
  return v;
}
ChildOutcome OutcomeOf(const core::ExecutionIdDerived& child, uint32_t index) {
  return ChildOutcome{
      AppendEventsToExecution{
          ExecutionId(child), Version(2), {FinishedReq(kT0 + 1s, OkResult(core::Json(7)))}},
      ChildResponse(child, kT0 + 1s, Version(2), OkResult(core::Json(7))), index};
}

TEST_P(AppendTest, OutcomeAndTheParentsNextStepCommitTogether) {
  ExecutionId parent = NewId();
  core::JoinSetId join_set = NamedJoinSet("js");
  core::ExecutionIdDerived child = ChildId(parent, join_set, 1);
  Version v = SetupBlockedParent(db(), parent, child, join_set);

  CreatedAndLockedChildren written = Must(db().AppendOutcomesAndBatch(
      kT0 + 1s, {OutcomeOf(child, 0)}, {PersistReq(kT0 + 1s)}, parent, v, {}, {}));
  EXPECT_EQ(written.next_version, Version(v.value() + 1));
  EXPECT_TRUE(Must(db().GetPendingState(ExecutionId(child))).IsFinished());
  ExecutionLog log = Must(db().Get(parent));
  ASSERT_THAT(log.responses, SizeIs(1));
  EXPECT_EQ(log.events.back().version, v);
}

TEST_P(AppendTest, OutcomeAtTheWrongResponseIndexWritesNothing) {
  ExecutionId parent = NewId();
  core::JoinSetId join_set = NamedJoinSet("js");
  core::ExecutionIdDerived child = ChildId(parent, join_set, 1);
  Version v = SetupBlockedParent(db(), parent, child, join_set);

  EXPECT_THAT(db().AppendOutcomesAndBatch(kT0 + 1s, {OutcomeOf(child, 1)}, {PersistReq(kT0 + 1s)},
                                          parent, v, {}, {}),
              IsNonRetriable(kConflict));
  EXPECT_FALSE(Must(db().GetPendingState(ExecutionId(child))).IsFinished());
  ExecutionLog log = Must(db().Get(parent));
  EXPECT_THAT(log.responses, IsEmpty());
  EXPECT_EQ(log.next_version, v);

  // With an empty batch only the outcome is written.
  EXPECT_EQ(
      Must(db().AppendOutcomesAndBatch(kT0 + 1s, {OutcomeOf(child, 0)}, {}, parent, v, {}, {}))
          .next_version,
      v);
  EXPECT_TRUE(Must(db().GetPendingState(ExecutionId(child))).IsFinished());
  EXPECT_THAT(Must(db().Get(parent)).responses, SizeIs(1));
}

// Two children's outcomes and the parent's second JoinNext in one
// transaction: the JoinNext consumes the second response, written by that
// same transaction, so the parent does not block on it.
TEST_P(AppendTest, AJoinNextSeesAnOutcomeOfTheSameTransaction) {
  ExecutionId parent = NewId();
  core::JoinSetId join_set = NamedJoinSet("js");
  core::ExecutionIdDerived first = ChildId(parent, join_set, 1);
  core::ExecutionIdDerived second = ChildId(parent, join_set, 2);
  Version v = CreateLocked(db(), parent, kT0, Runner::New(), kT0 + 10s);
  v = Must(db().AppendBatchCreateNewExecution(
      kT0,
      {JoinSetCreateReq(kT0, join_set), ChildRequestReq(kT0, first), ChildRequestReq(kT0, second),
       JoinNextReq(kT0, join_set, kT0 + 10s)},
      parent, v, {ChildCreateReq(first, kT0), ChildCreateReq(second, kT0)}));
  Must(LockOneAt(db(), ExecutionId(first), Version(1), kT0, Runner::New(), kT0 + 5s));
  Must(LockOneAt(db(), ExecutionId(second), Version(1), kT0, Runner::New(), kT0 + 5s));

  CreatedAndLockedChildren written = Must(
      db().AppendOutcomesAndBatch(kT0 + 1s, {OutcomeOf(first, 0), OutcomeOf(second, 1)},
                                  {JoinNextReq(kT0 + 1s, join_set, kT0 + 10s)}, parent, v, {}, {}));
  EXPECT_EQ(written.next_version, Version(v.value() + 1));
  EXPECT_FALSE(std::holds_alternative<core::PendingStateBlockedByJoinSet>(
      Must(db().GetPendingState(parent)).value));
  ExecutionLog log = Must(db().Get(parent));
  EXPECT_THAT(log.responses, SizeIs(2));

  // A third JoinNext has nothing left to consume: it blocks.
  Must(db().AppendBatch(kT0 + 2s, {JoinNextReq(kT0 + 2s, join_set, kT0 + 10s)}, parent,
                        written.next_version));
  EXPECT_TRUE(std::holds_alternative<core::PendingStateBlockedByJoinSet>(
      Must(db().GetPendingState(parent)).value));
}

// A child workflow that took its own child's result in memory finishes in
// one transaction: the grandchild's outcome (at its response index), then
// the workflow's last events and Finished with its response to its parent
// (no response index: wherever it lands). All or nothing.
TEST_P(AppendTest, AFinishingChildWorkflowRecordsItsChildsOutcomeAndItsOwnEndTogether) {
  ExecutionId grandparent = NewId();
  core::JoinSetId outer = NamedJoinSet("outer");
  core::ExecutionIdDerived parent = ChildId(grandparent, outer, 1);
  SetupBlockedParent(db(), grandparent, parent, outer);  // parent locked, next version 2
  core::JoinSetId inner = NamedJoinSet("inner");
  core::ExecutionIdDerived child = ChildId(ExecutionId(parent), inner, 1);
  Version v = Must(db().AppendBatchCreateNewExecution(
      kT0,
      {JoinSetCreateReq(kT0, inner), ChildRequestReq(kT0, child),
       JoinNextReq(kT0, inner, kT0 + 5s)},
      ExecutionId(parent), Version(2), {ChildCreateReq(child, kT0)}));
  Must(LockOneAt(db(), ExecutionId(child), Version(1), kT0, Runner::New(), kT0 + 5s));
  const Version finished_at(v.value() + 1);
  ChildOutcome own_end{AppendEventsToExecution{
                           ExecutionId(parent),
                           v,
                           {PersistReq(kT0 + 1s), FinishedReq(kT0 + 1s, OkResult(core::Json(8)))}},
                       ChildResponse(parent, kT0 + 1s, finished_at, OkResult(core::Json(8))),
                       std::nullopt};

  // The grandchild's outcome at a stale index: nothing at all is written.
  EXPECT_THAT(db().AppendOutcomesAndBatch(kT0 + 1s, {OutcomeOf(child, 1), own_end}, {},
                                          ExecutionId(parent), v, {}, {}),
              IsNonRetriable(kConflict));
  EXPECT_FALSE(Must(db().GetPendingState(ExecutionId(child))).IsFinished());
  EXPECT_FALSE(Must(db().GetPendingState(ExecutionId(parent))).IsFinished());
  EXPECT_THAT(Must(db().Get(grandparent)).responses, IsEmpty());

  Must(db().AppendOutcomesAndBatch(kT0 + 1s, {OutcomeOf(child, 0), own_end}, {},
                                   ExecutionId(parent), v, {}, {}));
  EXPECT_TRUE(Must(db().GetPendingState(ExecutionId(child))).IsFinished());
  ExecutionLog log = Must(db().Get(ExecutionId(parent)));
  EXPECT_TRUE(log.pending_state.IsFinished());
  ASSERT_THAT(log.responses, SizeIs(1));
  EXPECT_EQ(log.events.back().version, finished_at);
  EXPECT_EQ(log.events.back().event, FinishedReq(kT0 + 1s, OkResult(core::Json(8))).event);
  ExecutionLog above = Must(db().Get(grandparent));
  ASSERT_THAT(above.responses, SizeIs(1));
  EXPECT_FALSE(
      std::holds_alternative<core::PendingStateBlockedByJoinSet>(above.pending_state.value));
}

// A step write with nothing to write, or children without the events that
// request them, is refused before anything is read.
TEST_P(AppendTest, AnEmptyStepWriteIsRefused) {
  ExecutionId id = NewId();
  Must(db().Create(CreateReq(id, kT0)));
  const ExecutionLog before = Must(db().Get(id));
  EXPECT_THAT(db().WriteStep(StepWrite{kT0, id, Version(1), {}, {}, {}, {}}),
              IsNonRetriable(kValidationFailed));
  EXPECT_THAT(db().WriteStep(StepWrite{kT0, id, Version(1), {}, {CreateReq(NewId(), kT0)}, {}, {}}),
              IsNonRetriable(kValidationFailed));
  EXPECT_EQ(Must(db().Get(id)), before);
}

TEST_P(AppendTest, GetExecutionEventReturnsEachVersion) {
  ExecutionId id = NewId();
  Runner runner = Runner::New();
  Version v = CreateLocked(db(), id, kT0, runner, kT0 + 10s);
  Must(db().Append(id, v, PersistReq(kT0 + 1s)));

  EXPECT_EQ(Must(db().GetExecutionEvent(id, Version(0))).event,
            core::ExecutionRequest(CreateReq(id, kT0).ToCreatedEvent()));
  EXPECT_EQ(Must(db().GetExecutionEvent(id, Version(1))).event,
            LockedReq(kT0, runner, kT0 + 10s).event);
  core::ExecutionEvent persist = Must(db().GetExecutionEvent(id, Version(2)));
  EXPECT_EQ(persist.version, Version(2));
  EXPECT_EQ(persist.created_at, kT0 + 1s);
  EXPECT_EQ(persist.event, PersistReq(kT0 + 1s).event);
  EXPECT_THAT(db().GetExecutionEvent(id, Version(3)), IsNotFound());
}

TEST_P(AppendTest, UpgradeExecutionComponentMovesTheExecution) {
  ExecutionId id = NewId();
  Must(db().Create(CreateReq(id, kT0)));
  const core::InputContentDigest a = ComponentA().input_digest;
  const core::InputContentDigest b = ComponentB().input_digest;

  EXPECT_THAT(db().UpgradeExecutionComponent(id, b, a), IsNonRetriable(kConflict));
  EXPECT_THAT(db().UpgradeExecutionComponent(id, a, b), IsOk());
  EXPECT_EQ(Must(db().GetPendingState(id)), PendingAtState(kT0, std::nullopt, b));

  Runner runner = Runner::New();
  EXPECT_THAT(Must(db().LockPendingByComponentId(10, kT0, ComponentA(), kT0, runner.executor_id,
                                                 kT0 + 10s, runner.run_id, RetryConfig())),
              IsEmpty());
  std::vector<LockedExecution> locked = Must(db().LockPendingByComponentId(
      10, kT0, ComponentB(), kT0, runner.executor_id, kT0 + 10s, runner.run_id, RetryConfig()));
  EXPECT_THAT(IdsOf(locked), ElementsAre(id));
  EXPECT_EQ(Must(db().GetPendingState(id)), LockedState(runner, kT0 + 10s, b));
}

TEST_P(AppendTest, UpgradeOfAFinishedExecutionIsIllegalState) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  Must(db().Append(id, v, FinishedReq(kT0, OkResult())));
  EXPECT_THAT(
      db().UpgradeExecutionComponent(id, ComponentA().input_digest, ComponentB().input_digest),
      IsNonRetriable(kIllegalState));
  EXPECT_EQ(Must(db().GetPendingState(id)).ComponentIdInputDigest(), ComponentA().input_digest);
}

}  // namespace
}  // namespace stele::storage::conformance
