#include "storage/pending_state_rules.h"

#include <gtest/gtest.h>

namespace stele::storage {
namespace {

using core::ExecutorId;
using core::LockedBy;
using core::PendingState;
using core::RunId;
using std::chrono::seconds;

const DateTime kT0 = DateTimeFromMicros(1'700'000'000'000'000);

class CanAppendLockTest : public ::testing::Test {
 protected:
  ExecutorId executor_ = ExecutorId::Generate();
  RunId run_ = RunId::Generate();
};

TEST_F(CanAppendLockTest, ExpiryMustBeAfterCreation) {
  PendingState state{core::PendingStatePendingAt{kT0, std::nullopt, {}}};
  auto res = CanAppendLock(state, kT0, executor_, run_, kT0);
  ASSERT_FALSE(res);
  EXPECT_EQ(res.error(), DbErrorWriteNonRetriable::ValidationFailed("invalid expiry date"));
}

TEST_F(CanAppendLockTest, PendingNowCreatesNewLock) {
  PendingState state{core::PendingStatePendingAt{kT0, std::nullopt, {}}};
  auto res = CanAppendLock(state, kT0, executor_, run_, kT0 + seconds(1));
  ASSERT_TRUE(res);
  EXPECT_EQ(*res, LockKind::kCreatingNewLock);
}

TEST_F(CanAppendLockTest, FuturePendingOnlyExtendableByLastLockHolder) {
  PendingState state{core::PendingStatePendingAt{kT0 + seconds(10), LockedBy{executor_, run_}, {}}};
  auto same = CanAppendLock(state, kT0, executor_, run_, kT0 + seconds(1));
  ASSERT_TRUE(same);
  EXPECT_EQ(*same, LockKind::kExtending);

  auto other = CanAppendLock(state, kT0, executor_, RunId::Generate(), kT0 + seconds(1));
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().kind(), DbErrorWriteNonRetriable::Kind::kValidationFailed);
  EXPECT_EQ(other.error().reason(), "cannot lock, not yet pending");
}

TEST_F(CanAppendLockTest, LockedOnlyExtendableBySameExecutorAndRun) {
  PendingState state{core::PendingStateLocked{LockedBy{executor_, run_}, kT0 + seconds(1), {}}};
  auto same = CanAppendLock(state, kT0, executor_, run_, kT0 + seconds(2));
  ASSERT_TRUE(same);
  EXPECT_EQ(*same, LockKind::kExtending);

  auto other = CanAppendLock(state, kT0, ExecutorId::Generate(), run_, kT0 + seconds(2));
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error(), DbErrorWriteNonRetriable::IllegalState("cannot lock, already locked"));
}

TEST_F(CanAppendLockTest, BlockedAndFinishedCannotBeLocked) {
  auto js = core::JoinSetId::Create(core::JoinSetKind::kNamed, "a").value();
  PendingState blocked{core::PendingStateBlockedByJoinSet{js, kT0, false, {}}};
  auto res = CanAppendLock(blocked, kT0, executor_, run_, kT0 + seconds(1));
  ASSERT_FALSE(res);
  EXPECT_EQ(res.error().kind(), DbErrorWriteNonRetriable::Kind::kIllegalState);

  PendingState finished{core::PendingStateFinished{3, kT0, {}, {}}};
  res = CanAppendLock(finished, kT0, executor_, run_, kT0 + seconds(1));
  ASSERT_FALSE(res);
  EXPECT_EQ(res.error(), DbErrorWriteNonRetriable::IllegalState("already finished"));
}

TEST(DbErrorsTest, ReadErrorsBecomeWriteErrorsExplicitly) {
  EXPECT_TRUE(DbErrorWrite(DbErrorRead::NotFound()).IsNotFound());
  DbErrorWrite generic(DbErrorRead(DbErrorGeneric::Uncategorized("boom")));
  EXPECT_EQ(generic.kind(), DbErrorWrite::Kind::kGeneric);
  EXPECT_EQ(generic.ToString(), "database error: boom");
  DbErrorWrite conflict(
      DbErrorWriteNonRetriable::VersionConflict(core::Version(3), core::Version(2)));
  EXPECT_TRUE(conflict.IsVersionConflict());
  EXPECT_EQ(conflict.ToString(), "non-retriable error: version conflict: expected: 3, got: 2");
}

}  // namespace
}  // namespace stele::storage
