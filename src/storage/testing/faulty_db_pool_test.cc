// FaultyDbPool on every backend: transparent without faults; scripted and
// random faults of each kind; failures after a committed write; seeded
// reproducibility.
#include "storage/testing/faulty_db_pool.h"

#include <filesystem>
#include <vector>

#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using testing::FaultKind;
using testing::FaultyDbPool;
using testing::FaultyMethod;
using testing::FaultyOptions;

class FaultyDbPoolTest : public ConformanceTest {
 protected:
  // A fresh database of the parameter's backend behind a FaultyDbPool.
  std::unique_ptr<FaultyDbPool> OpenFaulty(FaultyOptions options = {}) {
    const std::string dir = scratch_dir() + "/faulty" + std::to_string(next_dir_++);
    std::filesystem::create_directories(dir);
    std::unique_ptr<DbPool> inner = GetParam().open(dir);
    if (!inner) return nullptr;
    return std::make_unique<FaultyDbPool>(std::move(inner), std::move(options));
  }
  int next_dir_ = 0;
};
STELE_INSTANTIATE_CONFORMANCE_SUITE(FaultyDbPoolTest);

TEST_P(FaultyDbPoolTest, WithoutFaultsEveryCallIsForwarded) {
  auto pool = OpenFaulty();
  if (!pool) GTEST_SKIP() << "backend unavailable";
  auto db = Must(pool->ConnectionTest());
  auto exec = Must(pool->DbExecConn());
  const ExecutionId id = NewId();
  EXPECT_EQ(Must(db->Create(CreateReq(id, kT0))), Version(1));
  const Runner runner = Runner::New();
  EXPECT_THAT(IdsOf(Must(LockPendingA(*exec, 10, kT0, runner, kT0 + 1s))),
              ::testing::ElementsAre(id));
  EXPECT_EQ(Must(exec->Append(id, Version(2), FinishedReq(kT0, OkResult()))), Version(3));
  EXPECT_TRUE(Must(db->Get(id)).pending_state.IsFinished());
  EXPECT_EQ(pool->counters(FaultyMethod::kCreate).calls, 1u);
  EXPECT_EQ(pool->counters(FaultyMethod::kAppend).calls, 1u);
  EXPECT_EQ(pool->total().injected, 0u);
  pool->Close();
}

TEST_P(FaultyDbPoolTest, ScriptedFaultsFailTheNextCallsAndWriteNothing) {
  auto pool = OpenFaulty();
  if (!pool) GTEST_SKIP() << "backend unavailable";
  auto db = Must(pool->ConnectionTest());
  const ExecutionId id = NewId();
  Must(db->Create(CreateReq(id, kT0)));

  pool->FailNext(FaultyMethod::kAppend, FaultKind::kGeneric);
  pool->FailNext(FaultyMethod::kAppend, FaultKind::kVersionConflict);
  auto generic = db->Append(id, Version(1), UnlockedReq(kT0, kT0));
  ASSERT_FALSE(generic.has_value());
  EXPECT_EQ(generic.error().kind(), DbErrorWrite::Kind::kGeneric);
  auto conflict = db->Append(id, Version(1), UnlockedReq(kT0, kT0));
  ASSERT_FALSE(conflict.has_value());
  EXPECT_EQ(conflict.error(),
            DbErrorWrite(DbErrorWriteNonRetriable::VersionConflict(Version(2), Version(1))));
  EXPECT_EQ(Must(db->Get(id)).events.size(), 1u) << "failed before the call: nothing written";
  EXPECT_EQ(Must(db->Append(id, Version(1), UnlockedReq(kT0, kT0))), Version(2))
      << "the script is used up";

  // Writes without a version conflict as Conflict; generic-only calls and
  // reads turn every kind into Generic; waiting reads time out.
  pool->FailNext(FaultyMethod::kCreate, FaultKind::kVersionConflict);
  EXPECT_EQ(db->Create(CreateReq(NewId(), kT0)).error(),
            DbErrorWrite(DbErrorWriteNonRetriable::Conflict()));
  pool->FailNext(FaultyMethod::kGetExpiredTimers, FaultKind::kTimeout);
  EXPECT_EQ(db->GetExpiredTimers(kT0).error().kind(), DbErrorGeneric::Kind::kUncategorized);
  pool->FailNext(FaultyMethod::kGetPendingState, FaultKind::kVersionConflict);
  EXPECT_EQ(db->GetPendingState(id).error().kind(), DbErrorRead::Kind::kGeneric);
  pool->FailNext(FaultyMethod::kSubscribeToNextResponses, FaultKind::kTimeout);
  auto sub = db->SubscribeToNextResponses(id, 0, WaitOptions::For(10s));
  ASSERT_FALSE(sub.has_value());
  ASSERT_TRUE(sub.error().IsTimeout());
  EXPECT_EQ(sub.error().timeout(), TimeoutOutcome::kTimeout);
  EXPECT_EQ(pool->total().injected, 6u);
  pool->Close();
}

TEST_P(FaultyDbPoolTest, AFailureAfterCommitLeavesTheWriteDurable) {
  auto pool = OpenFaulty();
  if (!pool) GTEST_SKIP() << "backend unavailable";
  auto db = Must(pool->ConnectionTest());
  auto exec = Must(pool->DbExecConn());
  const ExecutionId id = NewId();
  Must(db->Create(CreateReq(id, kT0)));
  const Runner runner = Runner::New();
  Must(LockPendingA(*exec, 1, kT0, runner, kT0 + 1s));

  pool->FailNext(FaultyMethod::kAppend, FaultKind::kGeneric, 1, /*after_commit=*/true);
  auto lost_ack = exec->Append(id, Version(2), FinishedReq(kT0, OkResult(7)));
  ASSERT_FALSE(lost_ack.has_value());
  EXPECT_EQ(lost_ack.error().kind(), DbErrorWrite::Kind::kGeneric);
  const ExecutionLog log = Must(db->Get(id));
  EXPECT_TRUE(log.pending_state.IsFinished()) << "the write committed despite the error";
  EXPECT_EQ(log.events.size(), 3u);
  // Retrying the same write now loses to itself.
  auto retry = exec->Append(id, Version(2), FinishedReq(kT0, OkResult(7)));
  ASSERT_FALSE(retry.has_value());
  EXPECT_EQ(retry.error().kind(), DbErrorWrite::Kind::kNonRetriable);
  EXPECT_EQ(pool->counters(FaultyMethod::kAppend).after_commit, 1u);

  // Reads never fail "after the fact".
  pool->FailNext(FaultyMethod::kGet, FaultKind::kGeneric, 1, /*after_commit=*/true);
  EXPECT_FALSE(db->Get(id).has_value());
  EXPECT_EQ(pool->counters(FaultyMethod::kGet).after_commit, 0u);
  pool->Close();
}

// The decisions of a random plan, as a string of '.' (passed) and 'x'
// (failed), for `n` Create calls.
std::string Pattern(FaultyDbPool& pool, int n) {
  auto db = Must(pool.Connection());
  std::string pattern;
  for (int i = 0; i < n; ++i) pattern += db->Create(CreateReq(NewId(), kT0)) ? '.' : 'x';
  return pattern;
}

TEST_P(FaultyDbPoolTest, RandomFaultsFollowTheSeedAndTheRate) {
  FaultyOptions options{.seed = 42,
                        .rate = 0.3,
                        .methods = {FaultyMethod::kCreate},
                        .kinds = {FaultKind::kGeneric, FaultKind::kVersionConflict}};
  auto a = OpenFaulty(options);
  if (!a) GTEST_SKIP() << "backend unavailable";
  auto b = OpenFaulty(options);
  options.seed = 43;
  auto c = OpenFaulty(options);
  const std::string pa = Pattern(*a, 200);
  EXPECT_EQ(pa, Pattern(*b, 200)) << "same seed, same decisions";
  EXPECT_NE(pa, Pattern(*c, 200));
  const auto failed = static_cast<int>(std::count(pa.begin(), pa.end(), 'x'));
  EXPECT_GT(failed, 30);
  EXPECT_LT(failed, 100);
  EXPECT_EQ(a->counters(FaultyMethod::kCreate).injected, static_cast<uint64_t>(failed));

  // Methods outside the plan never fail; a disabled plan fails nothing.
  auto db = Must(a->ConnectionTest());
  for (int i = 0; i < 50; ++i) EXPECT_TRUE(db->GetExpiredTimers(kT0).has_value());
  a->SetEnabled(false);
  EXPECT_EQ(Pattern(*a, 50), std::string(50, '.'));
  for (auto* pool : {a.get(), b.get(), c.get()}) pool->Close();
}

TEST_P(FaultyDbPoolTest, CloseClosesTheInnerPool) {
  auto pool = OpenFaulty();
  if (!pool) GTEST_SKIP() << "backend unavailable";
  auto db = Must(pool->Connection());
  pool->Close();
  EXPECT_THAT(db->Create(CreateReq(NewId(), kT0)), IsClosed());
  EXPECT_FALSE(pool->DbExecConn().has_value());
}

}  // namespace
}  // namespace stele::storage::conformance
