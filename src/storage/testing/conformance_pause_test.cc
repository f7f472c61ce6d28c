// Pause and resume (docs/model.md §9.6), identical on every backend: a
// paused execution is never locked, keeps receiving responses, and runs
// again after a resume; AppendPauseChange is idempotent.
#include "storage/operations.h"
#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using ::testing::IsEmpty;
using ::testing::SizeIs;

class PauseTest : public ConformanceTest {
 protected:
  core::PendingState Paused(core::PendingState state) {
    state.paused = true;
    return state;
  }

  const core::JoinSetId join_set_ = NamedJoinSet("js");
};
STELE_INSTANTIATE_CONFORMANCE_SUITE(PauseTest);

TEST_P(PauseTest, APausedExecutionIsNeverLockedUntilResumed) {
  ExecutionId id = NewId();
  Must(db().Create(CreateReq(id, kT0)));

  EXPECT_EQ(Must(AppendPauseChange(db(), id, true, "maintenance", kT0 + 1s)),
            PauseOutcome::kWritten);

  const core::PendingState paused = Must(db().GetPendingState(id));
  EXPECT_EQ(paused, Paused(PendingAtState(kT0, std::nullopt)));
  EXPECT_EQ(paused.DisplayStateName(), "Paused");
  EXPECT_THAT(Must(LockPendingA(db(), 10, kT0 + 2s, Runner::New(), kT0 + 12s)), IsEmpty());
  const Runner other = Runner::New();
  EXPECT_THAT(
      Must(db().LockPendingByComponentId(10, kT0 + 2s, ComponentA(), kT0 + 2s, other.executor_id,
                                         kT0 + 12s, other.run_id, RetryConfig())),
      IsEmpty());
  EXPECT_THAT(LockOneAt(db(), id, Version(2), kT0 + 2s, Runner::New(), kT0 + 12s),
              IsNonRetriable(kIllegalState));
  PendingCounts counts = Must(db().CountPendingByFfqns({FfqnA()}, kT0 + 2s));
  EXPECT_EQ(counts.due + counts.scheduled_later + counts.locked, 0u);
  EXPECT_EQ(Must(db().CountExecutionsByState()).paused, 1u);

  EXPECT_EQ(Must(AppendPauseChange(db(), id, false, "done", kT0 + 3s)), PauseOutcome::kWritten);

  EXPECT_EQ(Must(db().GetPendingState(id)), PendingAtState(kT0, std::nullopt));
  EXPECT_THAT(IdsOf(Must(LockPendingA(db(), 10, kT0 + 4s, Runner::New(), kT0 + 14s))),
              ::testing::ElementsAre(id));
  const ExecutionLog log = Must(db().Get(id));
  ASSERT_THAT(log.events, SizeIs(4));
  EXPECT_EQ(log.events[1].event, core::ExecutionRequest(core::Paused{"maintenance"}));
  EXPECT_EQ(log.events[2].event, core::ExecutionRequest(core::Resumed{"done"}));
}

// The run holding the lock is fenced out (its next write names a version
// the pause took) and the execution waits pending, paused.
TEST_P(PauseTest, APauseFencesOutTheRunHoldingTheLock) {
  ExecutionId id = NewId();
  const Runner runner = Runner::New();
  Version v = CreateLocked(db(), id, kT0, runner, kT0 + 10s);

  EXPECT_EQ(Must(AppendPauseChange(db(), id, true, "", kT0 + 1s)), PauseOutcome::kWritten);

  EXPECT_THAT(db().Append(id, v, JoinSetCreateReq(kT0 + 2s, join_set_)),
              IsNonRetriable(kVersionConflict));
  EXPECT_EQ(Must(db().GetPendingState(id)), Paused(PendingAtState(kT0 + 1s, runner.locked_by())));
  // Not even the last lock holder may extend: the lock rules refuse.
  EXPECT_THAT(db().Append(id, v.Increment(), LockedReq(kT0 + 2s, runner, kT0 + 20s)),
              IsNonRetriable(kIllegalState));
}

// Responses still arrive while paused and make the execution pending; it
// runs after the resume.
TEST_P(PauseTest, AResponseToAPausedBlockedWorkflowWaitsForTheResume) {
  ExecutionId id = NewId();
  const Runner runner = Runner::New();
  Version v = CreateLocked(db(), id, kT0, runner, kT0 + 1s);
  v = RequestDelays(db(), id, v, kT0, {core::DelayId(id, join_set_, 1)}, kT0 + 5s);
  v = Must(db().Append(id, v, JoinNextReq(kT0, join_set_, kT0 + 1s)));
  EXPECT_EQ(Must(AppendPauseChange(db(), id, true, "", kT0 + 2s)), PauseOutcome::kWritten);
  EXPECT_EQ(Must(db().GetPendingState(id)), Paused(BlockedState(join_set_, kT0 + 1s)));

  Must(db().AppendDelayResponse(kT0 + 5s, id, join_set_, core::DelayId(id, join_set_, 1), true));

  EXPECT_EQ(Must(db().GetPendingState(id)), Paused(PendingAtState(kT0 + 5s, runner.locked_by())));
  EXPECT_THAT(Must(LockPendingA(db(), 10, kT0 + 6s, Runner::New(), kT0 + 16s)), IsEmpty());

  Must(AppendPauseChange(db(), id, false, "", kT0 + 7s));
  std::vector<LockedExecution> locked =
      Must(LockPendingA(db(), 10, kT0 + 7s, Runner::New(), kT0 + 17s));
  ASSERT_THAT(locked, SizeIs(1));
  EXPECT_THAT(locked[0].responses, SizeIs(1));
}

TEST_P(PauseTest, PauseAndResumeAreIdempotent) {
  ExecutionId id = NewId();
  Must(db().Create(CreateReq(id, kT0)));

  EXPECT_EQ(Must(AppendPauseChange(db(), id, false, "", kT0 + 1s)), PauseOutcome::kUnchanged);
  EXPECT_EQ(Must(AppendPauseChange(db(), id, true, "", kT0 + 1s)), PauseOutcome::kWritten);
  EXPECT_EQ(Must(AppendPauseChange(db(), id, true, "again", kT0 + 2s)), PauseOutcome::kUnchanged);
  EXPECT_THAT(Must(db().Get(id)).events, SizeIs(2));
}

TEST_P(PauseTest, AFinishedOrUnknownExecutionIsNotPaused) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  Must(db().Append(id, v, FinishedReq(kT0, OkResult())));

  EXPECT_EQ(Must(AppendPauseChange(db(), id, true, "", kT0 + 1s)), PauseOutcome::kAlreadyFinished);
  EXPECT_THAT(Must(db().Get(id)).events, SizeIs(3));
  EXPECT_FALSE(Must(db().GetPendingState(id)).paused);
  EXPECT_THAT(AppendPauseChange(db(), NewId(), true, "", kT0 + 1s), IsNotFound());
}

// A cancel request resumes a paused workflow, so that it can end, and
// marks it cancelling.
TEST_P(PauseTest, ACancelRequestResumesAPausedWorkflow) {
  ExecutionId id = NewId();
  const Runner runner = Runner::New();
  Version v = CreateLocked(db(), id, kT0, runner, kT0 + 10s);
  Must(db().Append(id, v, UnlockedReq(kT0, kT0)));
  Must(AppendPauseChange(db(), id, true, "", kT0 + 1s));

  core::HistoryCancelRequest request{kT0 + 60s, false, "stop"};
  EXPECT_EQ(Must(AppendCancelRequest(db(), id, request, kT0 + 2s)), CancelOutcome::kCancelled);

  core::PendingState state = Must(db().GetPendingState(id));
  EXPECT_FALSE(state.paused);
  EXPECT_TRUE(state.cancelling);
  EXPECT_EQ(state.DisplayStateName(), "Cancelling");
  EXPECT_THAT(IdsOf(Must(LockPendingA(db(), 10, kT0 + 2s, Runner::New(), kT0 + 12s))),
              ::testing::ElementsAre(id));
}

}  // namespace
}  // namespace stele::storage::conformance
