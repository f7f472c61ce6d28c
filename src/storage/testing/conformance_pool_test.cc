// The pool: every role sees the same database, and Close() ends it — later
// calls fail with DbErrorGeneric::Close and blocked waiters are released.
#include <chrono>
#include <thread>

#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using ::testing::ElementsAre;

class PoolTest : public ConformanceTest {};
STELE_INSTANTIATE_CONFORMANCE_SUITE(PoolTest);

TEST_P(PoolTest, AllRolesSeeTheSameDatabase) {
  auto connection = Must(pool().Connection());
  auto executor = Must(pool().DbExecConn());
  auto external = Must(pool().ExternalApiConn());
  ExecutionId id = NewId();
  Must(connection->Create(CreateReq(id, kT0)));

  Runner runner = Runner::New();
  EXPECT_THAT(IdsOf(Must(LockPendingA(*executor, 10, kT0, runner, kT0 + 10s))), ElementsAre(id));
  EXPECT_THAT(
      IdsOf(Must(external->ListExecutions(std::nullopt, false, core::ExecutionListPagination{}))),
      ElementsAre(id));
  EXPECT_EQ(Must(external->GetPendingState(id)), LockedState(runner, kT0 + 10s));
  EXPECT_EQ(Must(db().GetPendingState(id)), LockedState(runner, kT0 + 10s));
}

TEST_P(PoolTest, CallsAfterCloseFail) {
  ExecutionId id = NewId();
  Must(db().Create(CreateReq(id, kT0)));
  auto executor = Must(pool().DbExecConn());
  pool().Close();
  pool().Close();  // idempotent

  EXPECT_THAT(db().Create(CreateReq(NewId(), kT0)), IsClosed());
  EXPECT_THAT(db().Append(id, Version(1), PersistReq(kT0)), IsClosed());
  EXPECT_THAT(db().GetPendingState(id), IsClosed());
  EXPECT_THAT(db().Get(id), IsClosed());
  EXPECT_THAT(db().GetExpiredTimers(kT0), IsClosed());
  EXPECT_THAT(db().ListExecutions(std::nullopt, false, core::ExecutionListPagination{}),
              IsClosed());
  EXPECT_THAT(db().WaitForFinishedResult(id, WaitOptions::For(10ms)), IsClosed());
  EXPECT_THAT(LockPendingA(*executor, 10, kT0, Runner::New(), kT0 + 10s), IsClosed());
  EXPECT_THAT(pool().Connection(), IsClosed());
  EXPECT_THAT(pool().DbExecConn(), IsClosed());
  EXPECT_THAT(pool().ExternalApiConn(), IsClosed());
  EXPECT_THAT(pool().ConnectionTest(), IsClosed());
}

TEST_P(PoolTest, CloseReleasesBlockedWaiters) {
  ExecutionId id = NewId();
  CreateLocked(db(), id, kT0, Runner::New(), kT0 + 10s);
  std::thread closer([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pool().Close();
  });
  // No deadline: only Close can end this wait.
  auto result = db().WaitForFinishedResult(id, std::nullopt);
  closer.join();
  EXPECT_THAT(result, IsClosed());
}

}  // namespace
}  // namespace stele::storage::conformance
