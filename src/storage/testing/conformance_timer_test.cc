// GetExpiredTimers: what the expired-timers watcher sees — expired locks
// (with what it needs to decide: progress, retries) and due delays.
#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

class TimerTest : public ConformanceTest {};
STELE_INSTANTIATE_CONFORMANCE_SUITE(TimerTest);

ExpiredLock Expired(const ExecutionId& id, uint32_t locked_at_version, uint32_t next_version,
                    uint32_t intermittent_event_count, const Runner& runner) {
  return ExpiredLock{id,
                     Version(locked_at_version),
                     Version(next_version),
                     intermittent_event_count,
                     RetryConfig().max_retries,
                     RetryConfig().retry_exp_backoff,
                     runner.locked_by()};
}

TEST_P(TimerTest, ExpiredLockIsFound) {
  ExecutionId id = NewId();
  Runner runner = Runner::New();
  CreateLocked(db(), id, kT0, runner, kT0 + 10s);

  EXPECT_THAT(Must(db().GetExpiredTimers(kT0 + 9s)), IsEmpty());
  std::vector<ExpiredTimer> timers = Must(db().GetExpiredTimers(kT0 + 10s));
  EXPECT_THAT(ExpiredLocksOf(timers), ElementsAre(Expired(id, 1, 2, 0, runner)));
  EXPECT_THAT(ExpiredDelaysOf(timers), IsEmpty());
}

TEST_P(TimerTest, ExpiredLockShowsWhetherTheExecutionMadeProgress) {
  // No progress: nothing after the Locked event.
  ExecutionId idle = NewId();
  Runner idle_runner = Runner::New();
  CreateLocked(db(), idle, kT0, idle_runner, kT0 + 1s);
  // Progress: two history events after the lock.
  ExecutionId busy = NewId();
  Runner busy_runner = Runner::New();
  Version v = CreateLocked(db(), busy, kT0, busy_runner, kT0 + 1s);
  Must(db().AppendBatch(kT0, {PersistReq(kT0), PersistReq(kT0)}, busy, v));
  // Extended: the last Locked event counts.
  ExecutionId extended = NewId();
  Runner extended_runner = Runner::New();
  v = CreateLocked(db(), extended, kT0, extended_runner, kT0 + 1s);
  Must(LockOneAt(db(), extended, v, kT0, extended_runner, kT0 + 2s));
  // Retried once: the count of earlier temporary failures.
  ExecutionId retried = NewId();
  Runner retried_runner = Runner::New();
  v = CreateLocked(db(), retried, kT0, Runner::New(), kT0 + 1s);
  v = Must(db().Append(retried, v, TimedOutReq(kT0 + 1s, kT0 + 1s)));
  Must(LockOneAt(db(), retried, v, kT0 + 1s, retried_runner, kT0 + 2s));

  EXPECT_THAT(
      ExpiredLocksOf(Must(db().GetExpiredTimers(kT0 + 5s))),
      UnorderedElementsAre(Expired(idle, 1, 2, 0, idle_runner), Expired(busy, 1, 4, 0, busy_runner),
                           Expired(extended, 2, 3, 0, extended_runner),
                           Expired(retried, 3, 4, 1, retried_runner)));
}

TEST_P(TimerTest, OnlyLockedExecutionsHaveExpiredLocks) {
  Must(db().Create(CreateReq(NewId(), kT0)));  // pending since kT0
  ExecutionId blocked = NewId();
  Version v = CreateLocked(db(), blocked, kT0, Runner::New(), kT0 + 1s);
  Must(db().Append(blocked, v, JoinNextReq(kT0, NamedJoinSet("js"), kT0 + 1s)));
  ExecutionId finished = NewId();
  v = CreateLocked(db(), finished, kT0, Runner::New(), kT0 + 1s);
  Must(db().Append(finished, v, FinishedReq(kT0, OkResult())));
  ExecutionId unlocked = NewId();
  v = CreateLocked(db(), unlocked, kT0, Runner::New(), kT0 + 1s);
  Must(db().Append(unlocked, v, UnlockedReq(kT0, kT0 + 1s)));

  EXPECT_THAT(Must(db().GetExpiredTimers(kT0 + 10s)), IsEmpty());
}

TEST_P(TimerTest, ExpiredDelayIsFoundUntilItsResponseArrives) {
  ExecutionId id = NewId();
  Version v = CreateLocked(db(), id, kT0, Runner::New(), kT0 + 100s);
  core::JoinSetId join_set = NamedJoinSet("sleep");
  core::DelayId early(id, join_set, 1);
  core::DelayId late(id, join_set, 2);
  v = Must(db().AppendBatch(kT0,
                            {JoinSetCreateReq(kT0, join_set), DelayRequestReq(kT0, early, kT0 + 5s),
                             DelayRequestReq(kT0, late, kT0 + 8s)},
                            id, v));

  EXPECT_THAT(Must(db().GetExpiredTimers(kT0 + 4s)), IsEmpty());
  EXPECT_THAT(ExpiredDelaysOf(Must(db().GetExpiredTimers(kT0 + 5s))),
              ElementsAre(ExpiredDelay{id, join_set, early, kT0 + 5s}));
  EXPECT_THAT(ExpiredDelaysOf(Must(db().GetExpiredTimers(kT0 + 8s))),
              UnorderedElementsAre(ExpiredDelay{id, join_set, early, kT0 + 5s},
                                   ExpiredDelay{id, join_set, late, kT0 + 8s}));

  Must(db().AppendDelayResponse(kT0 + 8s, id, join_set, early, true));
  EXPECT_THAT(ExpiredDelaysOf(Must(db().GetExpiredTimers(kT0 + 8s))),
              ElementsAre(ExpiredDelay{id, join_set, late, kT0 + 8s}));
  Must(db().AppendDelayResponse(kT0 + 8s, id, join_set, late, false));
  EXPECT_THAT(Must(db().GetExpiredTimers(kT0 + 9s)), IsEmpty());
}

}  // namespace
}  // namespace stele::storage::conformance
