// Responses: JoinNext against the k-th response of its join set, a response
// unblocking only a parent blocked on the same join set,
// AppendBatchRespondToParent (atomic child Finished + parent response) and
// the one-response-per-child / per-delay rule.
#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class ResponseTest : public ConformanceTest {
 protected:
  // A locked parent (lease until kT0 + 10s) that created `children` in join
  // set "js" at kT0; returns the parent's next version.
  Version ParentWithChildren(const ExecutionId& parent, const Runner& runner,
                             const std::vector<core::ExecutionIdDerived>& children) {
    Version v = CreateLocked(db(), parent, kT0, runner, kT0 + 10s);
    std::vector<AppendRequest> batch = {JoinSetCreateReq(kT0, join_set_)};
    std::vector<CreateRequest> creates;
    for (const core::ExecutionIdDerived& child : children) {
      batch.push_back(ChildRequestReq(kT0, child));
      creates.push_back(ChildCreateReq(child, kT0));
    }
    return Must(db().AppendBatchCreateNewExecution(kT0, batch, parent, v, creates));
  }

  // Finishes `child` (still at version 1, never locked, like a stub) with
  // `result` at `at`, responding to its parent.
  Result<Version, DbErrorWrite> FinishChild(const core::ExecutionIdDerived& child, DateTime at,
                                            core::SupportedFunctionReturnValue result) {
    return db().AppendBatchRespondToParent(
        AppendEventsToExecution{ExecutionId(child), Version(1), {FinishedReq(at, result)}},
        ChildResponse(child, at, Version(1), result), at);
  }

  const core::JoinSetId join_set_ = NamedJoinSet("js");
  // Expiry of requested delays that must not fire during a test.
  const DateTime kLater = kT0 + 1h;
};
STELE_INSTANTIATE_CONFORMANCE_SUITE(ResponseTest);

TEST_P(ResponseTest, AppendBatchRespondToParent) {
  ExecutionId parent = NewId();
  Runner runner = Runner::New();
  core::ExecutionIdDerived first = ChildId(parent, join_set_, 1);
  core::ExecutionIdDerived second = ChildId(parent, join_set_, 2);
  Version v = ParentWithChildren(parent, runner, {first, second});

  // JoinNext before the response: blocked until the response.
  v = Must(db().Append(parent, v, JoinNextReq(kT0 + 1s, join_set_, kT0 + 2s)));
  EXPECT_EQ(Must(db().GetPendingState(parent)), BlockedState(join_set_, kT0 + 2s));

  // The first child finishes: child Finished and parent response at once,
  // the parent pending at max(lease, response time).
  EXPECT_EQ(Must(FinishChild(first, kT0 + 3s, OkResult(core::Json(1)))), Version(2));
  EXPECT_TRUE(Must(db().GetPendingState(ExecutionId(first))).IsFinished());
  EXPECT_EQ(Must(db().GetPendingState(parent)), PendingAtState(kT0 + 3s, runner.locked_by()));
  EXPECT_THAT(Must(db().Get(parent)).responses,
              ElementsAre(core::JoinSetResponseEventOuter{
                  kT0 + 3s, core::JoinSetResponseEvent{
                                join_set_, core::ChildExecutionFinished{
                                               first, Version(1), OkResult(core::Json(1))}}}));

  // The parent runs again; the second child finishes meanwhile, which
  // leaves the Locked parent alone...
  Runner again = Runner::New();
  LockedExecution relocked = Must(LockOneAt(db(), parent, v, kT0 + 3s, again, kT0 + 13s));
  EXPECT_THAT(relocked.responses, SizeIs(1));
  v = relocked.next_version;
  Must(FinishChild(second, kT0 + 4s, OkResult(core::Json(2))));
  EXPECT_EQ(Must(db().GetPendingState(parent)), LockedState(again, kT0 + 13s));

  // ...and the next JoinNext finds its response: straight to
  // PendingAt(max(run_expires_at, response time)), keeping the last lock.
  Must(db().Append(parent, v, JoinNextReq(kT0 + 5s, join_set_, kT0 + 13s)));
  EXPECT_EQ(Must(db().GetPendingState(parent)), PendingAtState(kT0 + 13s, again.locked_by()));
}

TEST_P(ResponseTest, UnblockedParentWaitsForTheEndOfItsLease) {
  ExecutionId parent = NewId();
  Runner runner = Runner::New();
  core::ExecutionIdDerived child = ChildId(parent, join_set_, 1);
  Version v = ParentWithChildren(parent, runner, {child});
  Must(db().Append(parent, v, JoinNextReq(kT0 + 1s, join_set_, kT0 + 8s)));

  Must(FinishChild(child, kT0 + 2s, OkResult()));
  // A warm run still owns the execution until kT0 + 8s.
  EXPECT_EQ(Must(db().GetPendingState(parent)), PendingAtState(kT0 + 8s, runner.locked_by()));
  EXPECT_THAT(Must(LockPendingA(db(), 10, kT0 + 7s, Runner::New(), kT0 + 17s)), IsEmpty());
  EXPECT_THAT(IdsOf(Must(LockPendingA(db(), 10, kT0 + 8s, Runner::New(), kT0 + 18s))),
              ElementsAre(parent));
}

TEST_P(ResponseTest, ResponseUnblocksOnlyTheSameJoinSet) {
  ExecutionId parent = NewId();
  Runner runner = Runner::New();
  core::JoinSetId other = NamedJoinSet("other");
  Version v = CreateLocked(db(), parent, kT0, runner, kT0 + 10s);
  v = RequestDelays(db(), parent, v, kT0,
                    {core::DelayId(parent, other, 1), core::DelayId(parent, join_set_, 1)}, kLater);
  v = Must(db().Append(parent, v, JoinNextReq(kT0, join_set_, kT0 + 1s)));

  EXPECT_EQ(Must(db().AppendDelayResponse(kT0 + 2s, parent, other, core::DelayId(parent, other, 1),
                                          true)),
            AppendDelayResponseOutcome::kSuccess);
  EXPECT_EQ(Must(db().GetPendingState(parent)), BlockedState(join_set_, kT0 + 1s));

  Must(db().AppendDelayResponse(kT0 + 3s, parent, join_set_, core::DelayId(parent, join_set_, 1),
                                true));
  EXPECT_EQ(Must(db().GetPendingState(parent)), PendingAtState(kT0 + 3s, runner.locked_by()));
}

TEST_P(ResponseTest, JoinNextConsumesTheKthResponseOfItsJoinSet) {
  ExecutionId parent = NewId();
  Runner runner = Runner::New();
  core::JoinSetId other = NamedJoinSet("other");
  Version v = CreateLocked(db(), parent, kT0, runner, kT0 + 10s);
  v = RequestDelays(db(), parent, v, kT0,
                    {core::DelayId(parent, join_set_, 1), core::DelayId(parent, other, 1),
                     core::DelayId(parent, join_set_, 2)},
                    kLater);
  // Responses arrive while the parent runs: js, other, js.
  Must(db().AppendDelayResponse(kT0 + 1s, parent, join_set_, core::DelayId(parent, join_set_, 1),
                                true));
  Must(db().AppendDelayResponse(kT0 + 2s, parent, other, core::DelayId(parent, other, 1), true));
  Must(db().AppendDelayResponse(kT0 + 3s, parent, join_set_, core::DelayId(parent, join_set_, 2),
                                false));
  EXPECT_EQ(Must(db().GetPendingState(parent)), LockedState(runner, kT0 + 10s));

  // First JoinNext of js: its first response (kT0 + 1s).
  v = Must(db().Append(parent, v, JoinNextReq(kT0 + 4s, join_set_, kT0)));
  EXPECT_EQ(Must(db().GetPendingState(parent)), PendingAtState(kT0 + 1s, runner.locked_by()));
  // Second: the second response of js, not the one of `other`.
  v = Must(db().Append(parent, v, JoinNextReq(kT0 + 4s, join_set_, kT0)));
  EXPECT_EQ(Must(db().GetPendingState(parent)), PendingAtState(kT0 + 3s, runner.locked_by()));
  // Third: nothing left, blocked.
  v = Must(db().Append(parent, v, JoinNextReq(kT0 + 4s, join_set_, kT0 + 5s)));
  EXPECT_EQ(Must(db().GetPendingState(parent)), BlockedState(join_set_, kT0 + 5s));
  // The first JoinNext of `other` still finds the response of `other`.
  Must(db().Append(parent, v, JoinNextReq(kT0 + 4s, other, kT0 + 6s)));
  EXPECT_EQ(Must(db().GetPendingState(parent)), PendingAtState(kT0 + 6s, runner.locked_by()));
}

TEST_P(ResponseTest, ResponseLeavesOtherStatesUntouched) {
  // PendingAt.
  ExecutionId pending = NewId();
  CreateRequest req = CreateReq(pending, kT0);
  req.scheduled_at = kT0 + 5s;
  Must(db().Create(req));
  RequestDelays(db(), pending, Version(1), kT0, {core::DelayId(pending, join_set_, 1)}, kLater);
  Must(db().AppendDelayResponse(kT0 + 1s, pending, join_set_, core::DelayId(pending, join_set_, 1),
                                true));
  EXPECT_EQ(Must(db().GetPendingState(pending)), PendingAtState(kT0 + 5s, std::nullopt));
  // Finished: the response is still recorded.
  ExecutionId finished = NewId();
  Version v = CreateLocked(db(), finished, kT0, Runner::New(), kT0 + 10s);
  v = RequestDelays(db(), finished, v, kT0, {core::DelayId(finished, join_set_, 1)}, kLater);
  Must(db().Append(finished, v, FinishedReq(kT0, OkResult())));
  Must(db().AppendDelayResponse(kT0 + 1s, finished, join_set_,
                                core::DelayId(finished, join_set_, 1), true));
  ExecutionLog log = Must(db().Get(finished));
  EXPECT_TRUE(log.pending_state.IsFinished());
  EXPECT_THAT(log.responses, SizeIs(1));
  EXPECT_EQ(log.next_version, Version(4));
}

TEST_P(ResponseTest, AppendBatchRespondToParentIsAllOrNothing) {
  ExecutionId parent = NewId();
  Runner runner = Runner::New();
  core::ExecutionIdDerived child = ChildId(parent, join_set_, 1);
  Version v = ParentWithChildren(parent, runner, {child});
  Must(db().Append(parent, v, JoinNextReq(kT0, join_set_, kT0 + 1s)));

  // A stale child version: no event on the child, no response to the parent.
  EXPECT_THAT(db().AppendBatchRespondToParent(
                  AppendEventsToExecution{
                      ExecutionId(child), Version(2), {FinishedReq(kT0 + 2s, OkResult())}},
                  ChildResponse(child, kT0 + 2s, Version(2), OkResult()), kT0 + 2s),
              IsVersionConflict(1, 2));
  EXPECT_THAT(Must(db().Get(parent)).responses, IsEmpty());
  EXPECT_EQ(Must(db().GetPendingState(parent)), BlockedState(join_set_, kT0 + 1s));

  // An unknown child.
  core::ExecutionIdDerived unknown = ChildId(parent, join_set_, 9);
  EXPECT_THAT(FinishChild(unknown, kT0 + 2s, OkResult()), IsNotFound());
}

TEST_P(ResponseTest, AppendResponseWithTheSameChildIdTwiceFails) {
  ExecutionId parent = NewId();
  core::ExecutionIdDerived first = ChildId(parent, join_set_, 1);
  core::ExecutionIdDerived second = ChildId(parent, join_set_, 2);
  ParentWithChildren(parent, Runner::New(), {first, second});
  Must(FinishChild(first, kT0 + 1s, OkResult(core::Json(1))));
  auto response_of = [&](const core::ExecutionIdDerived& child) {
    return core::JoinSetResponseEvent{
        join_set_, core::ChildExecutionFinished{child, Version(1), OkResult(core::Json(1))}};
  };
  EXPECT_THAT(db().AppendResponse(kT0 + 3s, parent, response_of(first)), IsNonRetriable(kConflict));

  // `second`'s response recorded already: finishing it with its response
  // again fails the whole call, and nothing is written.
  Must(db().AppendResponse(kT0 + 3s, parent, response_of(second)));
  EXPECT_THAT(FinishChild(second, kT0 + 4s, OkResult(core::Json(1))), IsNonRetriable(kConflict));
  EXPECT_EQ(Must(db().GetPendingState(ExecutionId(second))), PendingAtState(kT0, std::nullopt));
  EXPECT_THAT(Must(db().Get(parent)).responses, SizeIs(2));
}

TEST_P(ResponseTest, AChildRespondsOnlyForItself) {
  ExecutionId parent = NewId();
  core::ExecutionIdDerived first = ChildId(parent, join_set_, 1);
  core::ExecutionIdDerived second = ChildId(parent, join_set_, 2);
  ParentWithChildren(parent, Runner::New(), {first, second});
  const ExecutionLog before = Must(db().Get(parent));

  // `second`'s events with a response naming `first`: refused, nothing written.
  EXPECT_THAT(db().AppendBatchRespondToParent(
                  AppendEventsToExecution{
                      ExecutionId(second), Version(1), {FinishedReq(kT0 + 2s, OkResult())}},
                  ChildResponse(first, kT0 + 2s, Version(1), OkResult()), kT0 + 2s),
              IsNonRetriable(kValidationFailed));
  EXPECT_EQ(Must(db().GetPendingState(ExecutionId(second))), PendingAtState(kT0, std::nullopt));
  EXPECT_EQ(Must(db().GetPendingState(ExecutionId(first))), PendingAtState(kT0, std::nullopt));
  EXPECT_EQ(Must(db().Get(parent)), before);
}

TEST_P(ResponseTest, AppendResponseWithTheSameDelayIdTwiceFails) {
  ExecutionId parent = NewId();
  Version v = CreateLocked(db(), parent, kT0, Runner::New(), kT0 + 10s);
  core::DelayId delay(parent, join_set_, 1);
  RequestDelays(db(), parent, v, kT0, {delay}, kLater);
  core::JoinSetResponseEvent response{join_set_, core::DelayFinished{delay, true}};

  EXPECT_THAT(db().AppendResponse(kT0 + 1s, parent, response), IsOk());
  EXPECT_THAT(db().AppendResponse(kT0 + 2s, parent, response), IsNonRetriable(kConflict));
  EXPECT_EQ(Must(db().AppendDelayResponse(kT0 + 3s, parent, join_set_, delay, false)),
            AppendDelayResponseOutcome::kAlreadyFinished);
  EXPECT_THAT(Must(db().Get(parent)).responses, SizeIs(1));
}

TEST_P(ResponseTest, AppendSameDelayIdTwiceReportsTheFirstOutcome) {
  ExecutionId parent = NewId();
  Version v = CreateLocked(db(), parent, kT0, Runner::New(), kT0 + 10s);
  core::DelayId fired(parent, join_set_, 1);
  core::DelayId cancelled(parent, join_set_, 2);
  RequestDelays(db(), parent, v, kT0, {fired, cancelled}, kLater);

  EXPECT_EQ(Must(db().AppendDelayResponse(kT0 + 1s, parent, join_set_, fired, true)),
            AppendDelayResponseOutcome::kSuccess);
  EXPECT_EQ(Must(db().AppendDelayResponse(kT0 + 2s, parent, join_set_, fired, true)),
            AppendDelayResponseOutcome::kAlreadyFinished);
  EXPECT_EQ(Must(db().AppendDelayResponse(kT0 + 2s, parent, join_set_, fired, false)),
            AppendDelayResponseOutcome::kAlreadyFinished);

  EXPECT_EQ(Must(db().AppendDelayResponse(kT0 + 3s, parent, join_set_, cancelled, false)),
            AppendDelayResponseOutcome::kSuccess);
  EXPECT_EQ(Must(db().AppendDelayResponse(kT0 + 4s, parent, join_set_, cancelled, false)),
            AppendDelayResponseOutcome::kAlreadyCancelled);
  EXPECT_EQ(Must(db().AppendDelayResponse(kT0 + 4s, parent, join_set_, cancelled, true)),
            AppendDelayResponseOutcome::kAlreadyCancelled);

  EXPECT_THAT(
      Must(db().Get(parent)).responses,
      ElementsAre(
          core::JoinSetResponseEventOuter{
              kT0 + 1s, core::JoinSetResponseEvent{join_set_, core::DelayFinished{fired, true}}},
          core::JoinSetResponseEventOuter{
              kT0 + 3s,
              core::JoinSetResponseEvent{join_set_, core::DelayFinished{cancelled, false}}}));
}

TEST_P(ResponseTest, ResponsesToAnUnknownExecutionAreNotFound) {
  ExecutionId unknown = NewId();
  core::DelayId delay(unknown, join_set_, 1);
  EXPECT_THAT(db().AppendDelayResponse(kT0, unknown, join_set_, delay, true), IsNotFound());
  EXPECT_THAT(
      db().AppendResponse(kT0, unknown,
                          core::JoinSetResponseEvent{join_set_, core::DelayFinished{delay, true}}),
      IsNotFound());
}

}  // namespace
}  // namespace stele::storage::conformance
