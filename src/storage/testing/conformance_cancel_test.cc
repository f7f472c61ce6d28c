// The composed operations every backend must support identically:
// StubExecution, CancelActivity and CancelDelay — all idempotent — and
// AppendCancelRequest, a workflow's cancel request (docs/model.md §9.5).
#include "storage/operations.h"
#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class CancelTest : public ConformanceTest {
 protected:
  // A locked parent blocked on "js", whose child `child` was created at kT0
  // and has never run (a stub activity looks like that).
  void ParentBlockedOnChild(const ExecutionId& parent, const core::ExecutionIdDerived& child) {
    Version v = CreateLocked(db(), parent, kT0, Runner::New(), kT0 + 10s);
    v = Must(db().AppendBatchCreateNewExecution(
        kT0, {JoinSetCreateReq(kT0, join_set_), ChildRequestReq(kT0, child)}, parent, v,
        {ChildCreateReq(child, kT0)}));
    Must(db().Append(parent, v, JoinNextReq(kT0, join_set_, kT0)));
  }

  const core::JoinSetId join_set_ = NamedJoinSet("js");
};
STELE_INSTANTIATE_CONFORMANCE_SUITE(CancelTest);

const core::SupportedFunctionReturnValue kCancelled =
    FailureResult(core::ExecutionFailureKind::kCancelled);

TEST_P(CancelTest, StubExecutionWritesTheResultAndRespondsToTheParent) {
  ExecutionId parent = NewId();
  core::ExecutionIdDerived child = ChildId(parent, join_set_, 1);
  ParentBlockedOnChild(parent, child);

  EXPECT_THAT(StubExecution(db(), child, parent, join_set_, kT0 + 1s, OkResult(core::Json(42))),
              IsOk());

  core::ExecutionEvent finished = Must(db().GetExecutionEvent(ExecutionId(child), Version(1)));
  EXPECT_EQ(finished.event, FinishedReq(kT0 + 1s, OkResult(core::Json(42))).event);
  EXPECT_EQ(finished.created_at, kT0 + 1s);
  ExecutionLog log = Must(db().Get(parent));
  EXPECT_THAT(log.responses,
              ElementsAre(core::JoinSetResponseEventOuter{
                  kT0 + 1s, core::JoinSetResponseEvent{
                                join_set_, core::ChildExecutionFinished{
                                               child, Version(1), OkResult(core::Json(42))}}}));
  EXPECT_FALSE(std::holds_alternative<core::PendingStateBlockedByJoinSet>(log.pending_state.value));
}

TEST_P(CancelTest, StubExecutionIsIdempotentWithTheSameValue) {
  ExecutionId parent = NewId();
  core::ExecutionIdDerived child = ChildId(parent, join_set_, 1);
  ParentBlockedOnChild(parent, child);

  EXPECT_THAT(StubExecution(db(), child, parent, join_set_, kT0 + 1s, OkResult(core::Json(42))),
              IsOk());
  EXPECT_THAT(StubExecution(db(), child, parent, join_set_, kT0 + 2s, OkResult(core::Json(42))),
              IsOk());
  EXPECT_THAT(StubExecution(db(), child, parent, join_set_, kT0 + 3s, OkResult(core::Json(7))),
              IsNonRetriable(kConflict));

  EXPECT_THAT(Must(db().Get(parent)).responses, SizeIs(1));
  ExecutionLog child_log = Must(db().Get(ExecutionId(child)));
  EXPECT_THAT(child_log.events, SizeIs(2));
  EXPECT_EQ(child_log.events[1].event, FinishedReq(kT0 + 1s, OkResult(core::Json(42))).event);
}

TEST_P(CancelTest, StubExecutionOfAnExecutionThatRanIsIllegalState) {
  ExecutionId parent = NewId();
  core::ExecutionIdDerived child = ChildId(parent, join_set_, 1);
  ParentBlockedOnChild(parent, child);
  Must(LockOneAt(db(), ExecutionId(child), Version(1), kT0, Runner::New(), kT0 + 10s));

  // Version 1 holds Locked, not Finished.
  EXPECT_THAT(StubExecution(db(), child, parent, join_set_, kT0 + 1s, OkResult()),
              IsNonRetriable(kIllegalState));
  EXPECT_THAT(Must(db().Get(parent)).responses, IsEmpty());
}

TEST_P(CancelTest, CancelActivityFinishesItAsCancelled) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);

  EXPECT_EQ(Must(db().CancelActivity(id, kT0 + 1s)), CancelOutcome::kCancelled);
  core::ExecutionEvent last = Must(db().GetLastExecutionEvent(id));
  EXPECT_EQ(last.version, v);
  EXPECT_EQ(last.created_at, kT0 + 1s);
  EXPECT_EQ(last.event, FinishedReq(kT0 + 1s, kCancelled).event);
  EXPECT_EQ(
      Must(db().GetPendingState(id)),
      (core::PendingState{core::PendingStateFinished{
          v.value(), kT0 + 1s,
          core::PendingStateFinishedResultKind::Failure(core::ExecutionFailureKind::kCancelled),
          ComponentA().input_digest}}));

  // Twice: still Cancelled, nothing new written.
  EXPECT_EQ(Must(db().CancelActivity(id, kT0 + 2s)), CancelOutcome::kCancelled);
  EXPECT_EQ(Must(db().CancelActivityWithRetries(id, kT0 + 3s)), CancelOutcome::kCancelled);
  EXPECT_EQ(Must(db().Get(id)).next_version, v.Increment());
}

TEST_P(CancelTest, CancelActivityOfAPendingExecution) {
  ExecutionId id = NewId();
  Must(db().Create(CreateReq(id, kT0)));
  EXPECT_EQ(Must(db().CancelActivityWithRetries(id, kT0 + 1s)), CancelOutcome::kCancelled);
  EXPECT_EQ(Must(db().GetExecutionEvent(id, Version(1))).event,
            FinishedReq(kT0 + 1s, kCancelled).event);
}

TEST_P(CancelTest, CancelActivityRespondsToTheParent) {
  ExecutionId parent = NewId();
  core::ExecutionIdDerived child = ChildId(parent, join_set_, 1);
  ParentBlockedOnChild(parent, child);

  EXPECT_EQ(Must(db().CancelActivity(ExecutionId(child), kT0 + 2s)), CancelOutcome::kCancelled);

  EXPECT_TRUE(Must(db().GetPendingState(ExecutionId(child))).IsFinished());
  ExecutionLog log = Must(db().Get(parent));
  EXPECT_THAT(
      log.responses,
      ElementsAre(core::JoinSetResponseEventOuter{
          kT0 + 2s, core::JoinSetResponseEvent{
                        join_set_, core::ChildExecutionFinished{child, Version(1), kCancelled}}}));
  EXPECT_TRUE(std::holds_alternative<core::PendingStatePendingAt>(log.pending_state.value));
}

TEST_P(CancelTest, CancelActivityOfAFinishedExecutionIsAlreadyFinished) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  Must(db().Append(id, v, FinishedReq(kT0 + 1s, OkResult())));

  EXPECT_EQ(Must(db().CancelActivity(id, kT0 + 2s)), CancelOutcome::kAlreadyFinished);
  EXPECT_EQ(Must(db().GetLastExecutionEvent(id)).event, FinishedReq(kT0 + 1s, OkResult()).event);
}

TEST_P(CancelTest, CancelActivityOfAnUnknownExecutionIsNotFound) {
  EXPECT_THAT(db().CancelActivity(NewId(), kT0), IsNotFound());
}

TEST_P(CancelTest, DelayCancellationIsIdempotent) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  core::DelayId delay(id, join_set_, 1);
  Must(db().AppendBatch(
      kT0, {JoinSetCreateReq(kT0, join_set_), DelayRequestReq(kT0, delay, kT0 + 5s)}, id, v));

  EXPECT_EQ(Must(CancelDelay(db(), delay, kT0 + 1s)), CancelOutcome::kCancelled);
  EXPECT_EQ(Must(CancelDelay(db(), delay, kT0 + 2s)), CancelOutcome::kCancelled);

  EXPECT_THAT(
      Must(db().Get(id)).responses,
      ElementsAre(core::JoinSetResponseEventOuter{
          kT0 + 1s, core::JoinSetResponseEvent{join_set_, core::DelayFinished{delay, false}}}));
  // A cancelled delay never fires.
  EXPECT_THAT(ExpiredDelaysOf(Must(db().GetExpiredTimers(kT0 + 6s))), IsEmpty());
}

TEST_P(CancelTest, CancellingAFiredDelayIsAlreadyFinished) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  core::DelayId delay(id, join_set_, 1);
  RequestDelays(db(), id, v, kT0, {delay}, kT0 + 1s);
  Must(db().AppendDelayResponse(kT0 + 1s, id, join_set_, delay, true));

  EXPECT_EQ(Must(CancelDelay(db(), delay, kT0 + 2s)), CancelOutcome::kAlreadyFinished);
  EXPECT_THAT(Must(db().Get(id)).responses, SizeIs(1));
}

core::HistoryCancelRequest CancelRequest(DateTime grace_expires_at, bool terminate = false) {
  return core::HistoryCancelRequest{grace_expires_at, terminate, "requested by a test"};
}

// Blocked on a join set, a workflow is made pending at once by a cancel
// request, and the run that locks it next finds the request last in its
// history.
TEST_P(CancelTest, ACancelRequestMakesABlockedWorkflowPendingAtOnce) {
  ExecutionId id = NewId();
  const Runner runner = Runner::New();
  Version v = CreateLocked(db(), id, kT0, runner, kT0 + 10s);
  v = Must(db().AppendBatch(
      kT0, {JoinSetCreateReq(kT0, join_set_), JoinNextReq(kT0, join_set_, kT0)}, id, v));
  ASSERT_EQ(Must(db().GetPendingState(id)), BlockedState(join_set_, kT0));

  EXPECT_EQ(Must(AppendCancelRequest(db(), id, CancelRequest(kT0 + 60s), kT0 + 1s)),
            CancelOutcome::kCancelled);

  core::PendingState cancelling = PendingAtState(kT0 + 1s, runner.locked_by());
  cancelling.cancelling = true;
  EXPECT_EQ(Must(db().GetPendingState(id)), cancelling);
  std::vector<LockedExecution> locked =
      Must(LockPendingA(db(), 10, kT0 + 1s, Runner::New(), kT0 + 20s));
  ASSERT_THAT(locked, SizeIs(1));
  ASSERT_FALSE(locked[0].event_history.empty());
  EXPECT_EQ(locked[0].event_history.back().first, core::HistoryEvent(CancelRequest(kT0 + 60s)));
  EXPECT_EQ(locked[0].event_history.back().second, v);
}

// The run holding the lock is fenced out: its next write names a version
// the request took.
TEST_P(CancelTest, ACancelRequestFencesOutTheRunHoldingTheLock) {
  ExecutionId id = NewId();
  const Runner runner = Runner::New();
  Version v = CreateLocked(db(), id, kT0, runner, kT0 + 10s);

  EXPECT_EQ(Must(AppendCancelRequest(db(), id, CancelRequest(kT0 + 60s, true), kT0 + 1s)),
            CancelOutcome::kCancelled);

  EXPECT_THAT(db().Append(id, v, JoinSetCreateReq(kT0 + 2s, join_set_)),
              IsNonRetriable(kVersionConflict));
  core::PendingState cancelling = PendingAtState(kT0 + 1s, runner.locked_by());
  cancelling.cancelling = true;
  EXPECT_EQ(Must(db().GetPendingState(id)), cancelling);
}

TEST_P(CancelTest, ACancelRequestToAFinishedExecutionWritesNothing) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  Must(db().Append(id, v, FinishedReq(kT0, OkResult())));
  const size_t events = Must(db().Get(id)).events.size();

  EXPECT_EQ(Must(AppendCancelRequest(db(), id, CancelRequest(kT0 + 60s), kT0 + 1s)),
            CancelOutcome::kAlreadyFinished);
  EXPECT_THAT(Must(db().Get(id)).events, SizeIs(events));
  EXPECT_THAT(AppendCancelRequest(db(), NewId(), CancelRequest(kT0 + 60s), kT0 + 1s), IsNotFound());
}

}  // namespace
}  // namespace stele::storage::conformance
