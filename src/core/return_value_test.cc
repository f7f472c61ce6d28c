#include "core/return_value.h"

#include <gtest/gtest.h>

#include "core/pending_state.h"

namespace stele::core {
namespace {

TEST(ReturnValueTest, FailureKindNames) {
  for (ExecutionFailureKind kind :
       {ExecutionFailureKind::kTimedOut, ExecutionFailureKind::kNondeterminismDetected,
        ExecutionFailureKind::kOutOfFuel, ExecutionFailureKind::kCancelled,
        ExecutionFailureKind::kUncategorized}) {
    EXPECT_EQ(ParseExecutionFailureKind(ExecutionFailureKindName(kind)), kind);
  }
  EXPECT_EQ(ExecutionFailureKindName(ExecutionFailureKind::kNondeterminismDetected),
            "nondeterminism_detected");
  EXPECT_EQ(ParseExecutionFailureKind("TimedOut"), std::nullopt);
}

TEST(ReturnValueTest, ResultKindFromReturnValue) {
  EXPECT_EQ(PendingStateFinishedResultKind::From(ReturnValueOk{}),
            PendingStateFinishedResultKind::Ok());
  EXPECT_EQ(PendingStateFinishedResultKind::From(ReturnValueErr{Json("boom")}),
            PendingStateFinishedResultKind::FallibleError());
  const auto failure = PendingStateFinishedResultKind::From(
      FinishedExecutionError{ExecutionFailureKind::kCancelled, "why", std::nullopt});
  EXPECT_EQ(failure, PendingStateFinishedResultKind::Failure(ExecutionFailureKind::kCancelled));
  EXPECT_NE(failure, PendingStateFinishedResultKind::Failure(ExecutionFailureKind::kTimedOut));
}

TEST(ReturnValueTest, ResultKindToStringFollowsSeedDisplay) {
  EXPECT_EQ(PendingStateFinishedResultKind::Ok().ToString(), "ok");
  EXPECT_EQ(PendingStateFinishedResultKind::FallibleError().ToString(),
            "execution completed with an error");
  EXPECT_EQ(PendingStateFinishedResultKind::Failure(ExecutionFailureKind::kTimedOut).ToString(),
            "execution terminated: timed_out");
}

}  // namespace
}  // namespace stele::core
