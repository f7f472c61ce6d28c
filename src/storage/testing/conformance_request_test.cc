// Ids a caller made up (storage/request_rules.h): a write that names a
// child or delay must find it requested by the execution it names, in the
// join set it names — otherwise NotFound (or ValidationFailed for a badly
// formed request) and nothing is written. Found by issue 16: cancelling a
// delay that was never requested appended a response for it, which later
// failed the blocked workflow with a nondeterminism error.
#include "storage/operations.h"
#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using ::testing::ElementsAre;

class RequestTest : public ConformanceTest {
 protected:
  // A locked parent that requested the stub-like child `child_` (in
  // `children_`) and the delay `delay_` (in `timers_`, expiring at kLater),
  // blocked on `children_`.
  void SetUp() override {
    ConformanceTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    Version v = CreateLocked(db(), parent_, kT0, Runner::New(), kT0 + 10s);
    v = Must(db().AppendBatchCreateNewExecution(
        kT0,
        {JoinSetCreateReq(kT0, children_), ChildRequestReq(kT0, child_),
         JoinSetCreateReq(kT0, timers_), DelayRequestReq(kT0, delay_, kLater)},
        parent_, v, {ChildCreateReq(child_, kT0)}));
    Must(db().Append(parent_, v, JoinNextReq(kT0, children_, kT0)));
    stranger_version_ = CreateLocked(db(), stranger_, kT0, Runner::New(), kT0 + 10s);
  }

  struct Snapshot {
    ExecutionLog parent, child, stranger;
    std::vector<ExpiredDelay> timers;
    friend bool operator==(const Snapshot&, const Snapshot&) = default;
  };
  Snapshot Take() {
    return Snapshot{Must(db().Get(parent_)), Must(db().Get(ExecutionId(child_))),
                    Must(db().Get(stranger_)),
                    ExpiredDelaysOf(Must(db().GetExpiredTimers(kLater)))};
  }
  // The events the child would append to finish, and their response.
  AppendEventsToExecution ChildFinish() const {
    return AppendEventsToExecution{
        ExecutionId(child_), Version(1), {FinishedReq(kT0 + 2s, OkResult())}};
  }

  const DateTime kLater = kT0 + 1h;
  const core::JoinSetId children_ = NamedJoinSet("children");
  const core::JoinSetId timers_ = NamedJoinSet("timers");
  const ExecutionId parent_ = NewId();
  const ExecutionId stranger_ = NewId();
  const core::ExecutionIdDerived child_ = ChildId(parent_, children_, 1);
  const core::DelayId delay_{parent_, timers_, 1};
  Version stranger_version_;
};
STELE_INSTANTIATE_CONFORMANCE_SUITE(RequestTest);

// Issue 16: `stele execution cancel` of a delay id next to a real one.
TEST_P(RequestTest, CancellingADelayThatWasNeverRequestedIsNotFoundAndWritesNothing) {
  const Snapshot before = Take();
  for (const core::DelayId& unrequested :
       {core::DelayId(parent_, timers_, 9), core::DelayId(parent_, children_, 1),
        core::DelayId(stranger_, timers_, 1)}) {
    SCOPED_TRACE(unrequested.ToString());
    EXPECT_THAT(CancelDelay(db(), unrequested, kT0 + 1s), IsNotFound());
    // The watcher's path (a delay that expired) takes the same rule.
    EXPECT_THAT(db().AppendDelayResponse(kT0 + 1s, unrequested.owner(), unrequested.join_set_id(),
                                         unrequested, true),
                IsNotFound());
  }
  EXPECT_EQ(Take(), before);
  EXPECT_EQ(before.parent.pending_state, BlockedState(children_, kT0));

  // The real delay is still live and cancels as before.
  EXPECT_EQ(Must(CancelDelay(db(), delay_, kT0 + 2s)), CancelOutcome::kCancelled);
  EXPECT_THAT(ExpiredDelaysOf(Must(db().GetExpiredTimers(kLater))), ::testing::IsEmpty());
}

TEST_P(RequestTest, ADelayResponseAddressedElsewhereIsNotFound) {
  const Snapshot before = Take();
  // The requested delay, answered in another join set or to another execution.
  EXPECT_THAT(db().AppendDelayResponse(kT0 + 1s, parent_, children_, delay_, true), IsNotFound());
  EXPECT_THAT(db().AppendDelayResponse(kT0 + 1s, stranger_, timers_, delay_, true), IsNotFound());
  EXPECT_THAT(
      db().AppendResponse(kT0 + 1s, parent_,
                          core::JoinSetResponseEvent{children_, core::DelayFinished{delay_, true}}),
      IsNotFound());
  EXPECT_THAT(
      db().AppendResponse(kT0 + 1s, stranger_,
                          core::JoinSetResponseEvent{timers_, core::DelayFinished{delay_, true}}),
      IsNotFound());
  EXPECT_THAT(db().AppendResponse(
                  kT0 + 1s, parent_,
                  core::JoinSetResponseEvent{
                      timers_, core::DelayFinished{core::DelayId(parent_, timers_, 2), true}}),
              IsNotFound());
  EXPECT_EQ(Take(), before);
  EXPECT_EQ(Must(db().AppendDelayResponse(kT0 + 1s, parent_, timers_, delay_, true)),
            AppendDelayResponseOutcome::kSuccess);
}

TEST_P(RequestTest, AChildResponseForNothingRequestedIsNotFound) {
  const Snapshot before = Take();
  auto child_response = [&](const core::ExecutionIdDerived& child, const core::JoinSetId& js) {
    return core::JoinSetResponseEvent{js,
                                      core::ChildExecutionFinished{child, Version(1), OkResult()}};
  };
  // The child's result in another join set than its request's, or to
  // another execution: the child is not finished either.
  AppendResponseToExecution elsewhere = ChildResponse(child_, kT0 + 2s, Version(1), OkResult());
  elsewhere.join_set_id = timers_;
  EXPECT_THAT(db().AppendBatchRespondToParent(ChildFinish(), elsewhere, kT0 + 2s), IsNotFound());
  AppendResponseToExecution stranger = ChildResponse(child_, kT0 + 2s, Version(1), OkResult());
  stranger.parent_execution_id = stranger_;
  EXPECT_THAT(db().AppendBatchRespondToParent(ChildFinish(), stranger, kT0 + 2s), IsNotFound());
  EXPECT_THAT(db().AppendResponse(kT0 + 2s, parent_, child_response(child_, timers_)),
              IsNotFound());
  EXPECT_THAT(db().AppendResponse(kT0 + 2s, stranger_, child_response(child_, children_)),
              IsNotFound());
  // A child that was never requested (and so does not exist).
  const core::ExecutionIdDerived unrequested = ChildId(parent_, children_, 2);
  EXPECT_THAT(db().AppendResponse(kT0 + 2s, parent_, child_response(unrequested, children_)),
              IsNotFound());
  EXPECT_THAT(db().AppendBatchRespondToParent(
                  AppendEventsToExecution{
                      ExecutionId(unrequested), Version(1), {FinishedReq(kT0 + 2s, OkResult())}},
                  ChildResponse(unrequested, kT0 + 2s, Version(1), OkResult()), kT0 + 2s),
              IsNotFound());
  EXPECT_EQ(Take(), before);
}

TEST_P(RequestTest, StubbingAChildItsParentDidNotRequestIsNotFound) {
  const Snapshot before = Take();
  EXPECT_THAT(
      StubExecution(db(), ChildId(parent_, children_, 2), parent_, children_, kT0 + 1s, OkResult()),
      IsNotFound());
  EXPECT_THAT(StubExecution(db(), child_, parent_, timers_, kT0 + 1s, OkResult()), IsNotFound());
  EXPECT_THAT(StubExecution(db(), child_, stranger_, children_, kT0 + 1s, OkResult()),
              IsNotFound());
  EXPECT_EQ(Take(), before);
  EXPECT_THAT(StubExecution(db(), child_, parent_, children_, kT0 + 1s, OkResult()), IsOk());
}

TEST_P(RequestTest, AnOutcomeForNothingRequestedIsNotFound) {
  const Snapshot before = Take();
  AppendResponseToExecution elsewhere = ChildResponse(child_, kT0 + 2s, Version(1), OkResult());
  elsewhere.join_set_id = timers_;
  EXPECT_THAT(db().AppendOutcomesAndBatch(kT0 + 2s, {ChildOutcome{ChildFinish(), elsewhere, 0}},
                                          {PersistReq(kT0 + 2s)}, parent_,
                                          before.parent.next_version, {}, {}),
              IsNotFound());
  EXPECT_EQ(Take(), before);
}

TEST_P(RequestTest, UpgradingAnUnknownExecutionIsNotFound) {
  EXPECT_THAT(
      db().UpgradeExecutionComponent(NewId(), ComponentA().input_digest, ComponentB().input_digest),
      IsNotFound());
}

TEST_P(RequestTest, ChildrenAreCreatedOnlyWithTheirParentsRequest) {
  const Snapshot before = Take();
  const core::ExecutionIdDerived fresh = ChildId(stranger_, children_, 1);
  const Version v = stranger_version_;
  // On its own: the parent's log would not know it.
  EXPECT_THAT(db().Create(ChildCreateReq(fresh, kT0)), IsNonRetriable(kValidationFailed));
  // Not requested in the same write, or requested by another execution.
  EXPECT_THAT(db().AppendBatchCreateNewExecution(kT0, {PersistReq(kT0)}, stranger_, v,
                                                 {ChildCreateReq(fresh, kT0)}),
              IsNonRetriable(kValidationFailed));
  const core::ExecutionIdDerived foreign = ChildId(parent_, children_, 5);
  EXPECT_THAT(db().AppendBatchCreateNewExecution(kT0, {ChildRequestReq(kT0, fresh)}, stranger_, v,
                                                 {ChildCreateReq(foreign, kT0)}),
              IsNonRetriable(kValidationFailed));
  // A Created event whose parent is not the one its id names, and a
  // top-level one with a parent.
  CreateRequest misparented = ChildCreateReq(fresh, kT0);
  misparented.parent->second = timers_;
  EXPECT_THAT(db().AppendBatchCreateNewExecution(kT0, {ChildRequestReq(kT0, fresh)}, stranger_, v,
                                                 {misparented}),
              IsNonRetriable(kValidationFailed));
  const ExecutionId top = NewId();
  CreateRequest adopted = CreateReq(top, kT0);
  adopted.parent = std::make_pair(stranger_, children_);
  EXPECT_THAT(db().Create(adopted), IsNonRetriable(kValidationFailed));
  EXPECT_THAT(db().GetPendingState(ExecutionId(fresh)), IsNotFound());
  EXPECT_THAT(db().GetPendingState(ExecutionId(foreign)), IsNotFound());
  EXPECT_THAT(db().GetPendingState(top), IsNotFound());
  EXPECT_EQ(Take(), before);
}

TEST_P(RequestTest, ARequestNamesAChildOrDelayOfItsOwnExecutionAndJoinSet) {
  const Snapshot before = Take();
  const Version v = stranger_version_;
  // A delay id of another execution, or of another join set.
  EXPECT_THAT(
      db().Append(stranger_, v, DelayRequestReq(kT0, core::DelayId(parent_, timers_, 2), kLater)),
      IsNonRetriable(kValidationFailed));
  AppendRequest moved = DelayRequestReq(kT0, core::DelayId(stranger_, timers_, 1), kLater);
  std::get<core::HistoryJoinSetRequest>(std::get<core::HistoryEventRequest>(moved.event).event)
      .join_set_id = children_;
  EXPECT_THAT(db().AppendBatch(kT0, {PersistReq(kT0), moved}, stranger_, v),
              IsNonRetriable(kValidationFailed));
  // A child id of another execution.
  const core::ExecutionIdDerived foreign = ChildId(parent_, children_, 5);
  EXPECT_THAT(db().Append(stranger_, v, ChildRequestReq(kT0, foreign)),
              IsNonRetriable(kValidationFailed));
  EXPECT_EQ(Take(), before);
  EXPECT_THAT(ExpiredDelaysOf(Must(db().GetExpiredTimers(kLater))),
              ElementsAre(ExpiredDelay{parent_, timers_, delay_, kLater}));
}

}  // namespace
}  // namespace stele::storage::conformance
