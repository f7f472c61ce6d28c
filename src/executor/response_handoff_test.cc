// The hand-off protocol of executor/response_handoff.h: an offer reaches
// only an open slot, is recorded by exactly one side, and comes back to the
// executor whenever the parent does not take or cannot record it.
#include "executor/response_handoff.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "executor/executor_test_util.h"

namespace stele::executor {
namespace {

using namespace std::chrono_literals;  // NOLINT

// A child's Finished with its parent's response.
PlannedWrite ChildResult(const core::ExecutionIdDerived& child) {
  auto [parent, join_set] = child.SplitToParts();
  return PlannedWrite{
      ExecutionId(child), Version(2),
      storage::AppendRequest{testing::kT0, core::Finished{testing::OkValue(7), std::nullopt}},
      storage::AppendResponseToExecution{parent, testing::kT0, join_set, child, Version(2),
                                         testing::OkValue(7)},
      false};
}

class ResponseHandoffTest : public ::testing::Test {
 protected:
  const core::ExecutionIdDerived child_ = ExecutionId::Generate().NextLevel(
      core::JoinSetId::Create(core::JoinSetKind::kOneOff, "1-step").value(), 1);
  const PlannedWrite write_ = ChildResult(child_);
  std::shared_ptr<ResponseHandoff> handoff_ = ResponseHandoff::Create();
};

TEST_F(ResponseHandoffTest, WithoutAnOpenSlotTheExecutorRecordsItself) {
  EXPECT_EQ(handoff_->Offer(write_), nullptr);
  PlannedWrite no_parent = write_;
  no_parent.parent_response.reset();
  auto slot = handoff_->Open(child_, [] {});
  EXPECT_EQ(handoff_->Offer(no_parent), nullptr) << "only a result with a response is offered";
}

TEST_F(ResponseHandoffTest, TakenAndRecordedByTheParent) {
  std::atomic<int> woken{0};
  auto slot = handoff_->Open(child_, [&] { ++woken; });
  std::shared_ptr<ResponseHandoff::Ticket> offered = handoff_->Offer(write_);
  ASSERT_NE(offered, nullptr);
  EXPECT_EQ(woken.load(), 1);
  EXPECT_EQ(handoff_->Offer(write_), nullptr) << "one offer per slot";

  std::thread parent([&] {
    std::shared_ptr<ResponseHandoff::Ticket> ticket = slot->TakeTicket();
    ASSERT_NE(ticket, nullptr);
    std::optional<PlannedWrite> taken = ticket->Take();
    ASSERT_TRUE(taken.has_value());
    EXPECT_EQ(taken->execution_id, write_.execution_id);
    EXPECT_EQ(taken->request, write_.request);
    ticket->Resolve(true);
  });
  EXPECT_TRUE(offered->AwaitResolution(10s)) << "the parent recorded it";
  parent.join();
}

TEST_F(ResponseHandoffTest, TakenButNotRecordedComesBack) {
  auto slot = handoff_->Open(child_, [] {});
  auto offered = handoff_->Offer(write_);
  ASSERT_NE(offered, nullptr);
  auto ticket = slot->TakeTicket();
  ASSERT_TRUE(ticket->Take().has_value());
  ticket->Resolve(false);
  EXPECT_FALSE(offered->AwaitResolution(10s)) << "the executor records it itself";
}

TEST_F(ResponseHandoffTest, UntakenOfferIsReclaimedAndCannotBeTakenAfterwards) {
  auto slot = handoff_->Open(child_, [] {});
  auto offered = handoff_->Offer(write_);
  ASSERT_NE(offered, nullptr);
  EXPECT_FALSE(offered->AwaitResolution(0ms)) << "not taken in time: reclaimed";
  auto ticket = slot->TakeTicket();
  ASSERT_NE(ticket, nullptr);
  EXPECT_FALSE(ticket->Take().has_value()) << "the executor has it now";
}

TEST_F(ResponseHandoffTest, ClosingTheSlotReclaimsAParkedOffer) {
  auto slot = handoff_->Open(child_, [] {});
  auto offered = handoff_->Offer(write_);
  ASSERT_NE(offered, nullptr);
  slot.reset();
  EXPECT_FALSE(offered->AwaitResolution(10s));
  EXPECT_EQ(handoff_->Offer(write_), nullptr) << "the slot is gone";
}

}  // namespace
}  // namespace stele::executor
