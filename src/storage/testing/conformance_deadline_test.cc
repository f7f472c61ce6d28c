// Deadlines (core::ExecutionPolicy::deadline) in the storage contract: kept
// with the execution at its creation, returned by GetExpiredTimers as an
// ExpiredDeadline once due, until the execution finishes or a terminate
// request disarms it (docs/storage_contract.md, "Deadlines").
#include "storage/operations.h"
#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

class DeadlineTest : public ConformanceTest {
 protected:
  static CreateRequest WithDeadline(CreateRequest req, DateTime deadline) {
    req.policy.deadline = deadline;
    return req;
  }
  static std::vector<ExpiredDeadline> DeadlinesOf(const std::vector<ExpiredTimer>& timers) {
    std::vector<ExpiredDeadline> out;
    for (const ExpiredTimer& timer : timers) {
      if (const auto* deadline = std::get_if<ExpiredDeadline>(&timer)) out.push_back(*deadline);
    }
    return out;
  }
  static core::HistoryCancelRequest Request(DateTime at, bool terminate) {
    return core::HistoryCancelRequest{at, terminate, "requested by a test", terminate};
  }
};
STELE_INSTANTIATE_CONFORMANCE_SUITE(DeadlineTest);

// The deadline is stored with the execution: its Created event and the
// CreateRequest read back carry it, and the run that locks it sees it.
TEST_P(DeadlineTest, TheDeadlineIsKeptWithTheExecution) {
  ExecutionId id = NewId();
  CreateRequest req = WithDeadline(CreateReq(id, kT0), kT0 + 60s);
  req.policy.retry.max_retries = 0;
  Must(db().Create(req));

  EXPECT_EQ(Must(db().GetCreateRequest(id)).policy, req.policy);
  std::vector<LockedExecution> locked = Must(LockPendingA(db(), 10, kT0, Runner::New(), kT0 + 1s));
  ASSERT_EQ(locked.size(), 1u);
  EXPECT_EQ(locked[0].policy, req.policy);
}

TEST_P(DeadlineTest, ADeadlineExpiresAtItsInstantOnly) {
  ExecutionId id = NewId();
  Must(db().Create(WithDeadline(CreateReq(id, kT0), kT0 + 60s)));
  Must(db().Create(CreateReq(NewId(), kT0)));  // no deadline: never expires

  EXPECT_THAT(DeadlinesOf(Must(db().GetExpiredTimers(kT0 + 59s))), IsEmpty());
  EXPECT_THAT(DeadlinesOf(Must(db().GetExpiredTimers(kT0 + 60s))),
              ElementsAre(ExpiredDeadline{id, kT0 + 60s}));
  // Whatever the execution's state: locked, pending, blocked.
  CreateLocked(db(), NewId(), kT0, Runner::New(), kT0 + 120s);
  EXPECT_THAT(DeadlinesOf(Must(db().GetExpiredTimers(kT0 + 1000s))),
              ElementsAre(ExpiredDeadline{id, kT0 + 60s}));
}

// A child's own deadline is stored when its parent's step creates it.
TEST_P(DeadlineTest, AChildCreatedByItsParentKeepsItsDeadline) {
  ExecutionId parent = NewId();
  Version v = CreateLocked(db(), parent, kT0, Runner::New(), kT0 + 10s);
  const core::JoinSetId join_set = NamedJoinSet("js");
  const core::ExecutionIdDerived child = ChildId(parent, join_set, 1);
  Must(db().AppendBatchCreateNewExecution(
      kT0, {JoinSetCreateReq(kT0, join_set), ChildRequestReq(kT0, child)}, parent, v,
      {WithDeadline(ChildCreateReq(child, kT0), kT0 + 5s)}));

  EXPECT_THAT(DeadlinesOf(Must(db().GetExpiredTimers(kT0 + 5s))),
              ElementsAre(ExpiredDeadline{ExecutionId(child), kT0 + 5s}));
}

TEST_P(DeadlineTest, FinishingDisarmsTheDeadline) {
  ExecutionId id = NewId();
  Must(db().Create(WithDeadline(CreateReq(id, kT0), kT0 + 60s)));
  std::vector<LockedExecution> locked = Must(LockPendingA(db(), 10, kT0, Runner::New(), kT0 + 1s));
  ASSERT_EQ(locked.size(), 1u);
  Must(db().Append(id, locked[0].next_version, FinishedReq(kT0, OkResult())));

  EXPECT_THAT(DeadlinesOf(Must(db().GetExpiredTimers(kT0 + 100s))), IsEmpty());
}

// A terminate request (the watcher's own, or any other) disarms the
// deadline, so it is acted on once; a cancel with a grace period does not.
TEST_P(DeadlineTest, ATerminateRequestDisarmsTheDeadlineACancelDoesNot) {
  ExecutionId cancelled = NewId();
  ExecutionId terminated = NewId();
  Must(db().Create(WithDeadline(CreateReq(cancelled, kT0), kT0 + 60s)));
  Must(db().Create(WithDeadline(CreateReq(terminated, kT0), kT0 + 60s)));

  EXPECT_EQ(Must(AppendCancelRequest(db(), cancelled, Request(kT0 + 90s, false), kT0 + 1s)),
            CancelOutcome::kCancelled);
  EXPECT_EQ(Must(AppendCancelRequest(db(), terminated, Request(kT0 + 61s, true), kT0 + 61s)),
            CancelOutcome::kCancelled);

  EXPECT_THAT(DeadlinesOf(Must(db().GetExpiredTimers(kT0 + 100s))),
              UnorderedElementsAre(ExpiredDeadline{cancelled, kT0 + 60s}));
  // The timed_out mark is kept in the log.
  const ExecutionLog log = Must(db().Get(terminated));
  const auto& history = std::get<core::HistoryEventRequest>(log.events.back().event);
  EXPECT_TRUE(std::get<core::HistoryCancelRequest>(history.event).timed_out);
}

}  // namespace
}  // namespace stele::storage::conformance
