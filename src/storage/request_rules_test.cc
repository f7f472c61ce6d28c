#include "storage/request_rules.h"

#include <gtest/gtest.h>

namespace stele::storage::request_rules_test {
namespace {

const DateTime kT0 = DateTimeFromMicros(1'700'000'000'000'000);

core::JoinSetId Js(const std::string& name) {
  return core::JoinSetId::Create(core::JoinSetKind::kNamed, name).value();
}

AppendRequest Request(const core::JoinSetId& js, core::JoinSetRequest request) {
  return AppendRequest{kT0, core::HistoryEventRequest{core::HistoryJoinSetRequest{js, request}}};
}

AppendRequest DelayRequest(const core::JoinSetId& js, const core::DelayId& delay) {
  return Request(js, core::DelayRequest{delay, kT0, core::HistoryEventScheduleAt::At(kT0)});
}

const core::FunctionFqn& Fn() {
  static const core::FunctionFqn fn = *core::FunctionFqn::Parse("test:rules/ifc.fn");
  return fn;
}

AppendRequest ChildRequest(const core::JoinSetId& js, const core::ExecutionIdDerived& child) {
  return Request(js, core::ChildExecutionRequest{child, Fn(), core::Json::array()});
}

CreateRequest Create(const ExecutionId& id) {
  std::optional<std::pair<ExecutionId, core::JoinSetId>> parent;
  if (auto derived = id.AsDerived()) parent = derived->SplitToParts();
  return CreateRequest{kT0, id, Fn(), core::Json::array(), parent, kT0, {}, {}, std::nullopt};
}

bool IsValidationFailed(const Result<void, DbErrorWriteNonRetriable>& result) {
  return !result && result.error().kind() == DbErrorWriteNonRetriable::Kind::kValidationFailed;
}

class RequestRulesTest : public ::testing::Test {
 protected:
  const ExecutionId parent_ = ExecutionId::Generate();
  const ExecutionId other_ = ExecutionId::Generate();
  const core::JoinSetId a_ = Js("a");
  const core::JoinSetId b_ = Js("b");
  const core::ExecutionIdDerived child_ = parent_.NextLevel(a_, 1);
};

TEST_F(RequestRulesTest, AppendedRequestsNameTheirOwnExecutionAndJoinSet) {
  EXPECT_TRUE(ValidateAppendRequest(parent_, DelayRequest(a_, core::DelayId(parent_, a_, 1))));
  EXPECT_TRUE(ValidateAppendRequest(parent_, ChildRequest(a_, child_)));
  EXPECT_TRUE(IsValidationFailed(
      ValidateAppendRequest(parent_, DelayRequest(b_, core::DelayId(parent_, a_, 1)))));
  EXPECT_TRUE(IsValidationFailed(
      ValidateAppendRequest(other_, DelayRequest(a_, core::DelayId(parent_, a_, 1)))));
  EXPECT_TRUE(IsValidationFailed(ValidateAppendRequest(parent_, ChildRequest(b_, child_))));
  EXPECT_TRUE(IsValidationFailed(ValidateAppendRequest(other_, ChildRequest(a_, child_))));
  EXPECT_TRUE(IsValidationFailed(
      ValidateAppendRequest(parent_, AppendRequest{kT0, Create(parent_).ToCreatedEvent()})));
}

TEST_F(RequestRulesTest, ACreatedEventNamesTheParentItsIdNames) {
  EXPECT_TRUE(ValidateCreateRequest(Create(parent_)));
  EXPECT_TRUE(ValidateCreateRequest(Create(ExecutionId(child_))));
  CreateRequest orphan = Create(ExecutionId(child_));
  orphan.parent.reset();
  EXPECT_TRUE(IsValidationFailed(ValidateCreateRequest(orphan)));
  CreateRequest moved = Create(ExecutionId(child_));
  moved.parent->second = b_;
  EXPECT_TRUE(IsValidationFailed(ValidateCreateRequest(moved)));
  CreateRequest adopted = Create(parent_);
  adopted.parent = std::make_pair(other_, a_);
  EXPECT_TRUE(IsValidationFailed(ValidateCreateRequest(adopted)));
  // A child never on its own.
  EXPECT_TRUE(ValidateStandaloneCreate(Create(parent_)));
  EXPECT_TRUE(IsValidationFailed(ValidateStandaloneCreate(Create(ExecutionId(child_)))));
}

TEST_F(RequestRulesTest, ChildrenAreCreatedWithTheirRequest) {
  const ExecutionId scheduled = ExecutionId::Generate();
  EXPECT_TRUE(ValidateChildCreation(parent_, {ChildRequest(a_, child_)},
                                    {Create(ExecutionId(child_)), Create(scheduled)}));
  EXPECT_TRUE(
      IsValidationFailed(ValidateChildCreation(parent_, {}, {Create(ExecutionId(child_))})));
  // Requested, but by another execution's write.
  EXPECT_TRUE(IsValidationFailed(
      ValidateChildCreation(other_, {ChildRequest(a_, child_)}, {Create(ExecutionId(child_))})));
  const core::ExecutionIdDerived sibling = parent_.NextLevel(a_, 2);
  EXPECT_TRUE(IsValidationFailed(
      ValidateChildCreation(parent_, {ChildRequest(a_, child_)}, {Create(ExecutionId(sibling))})));
}

TEST_F(RequestRulesTest, AResponseIsAddressedToTheRequestingExecutionAndJoinSet) {
  auto delay = [&](const core::JoinSetId& js, const core::DelayId& id) {
    return core::JoinSetResponseEvent{js, core::DelayFinished{id, true}};
  };
  auto child = [&](const core::JoinSetId& js) {
    return core::JoinSetResponseEvent{js,
                                      core::ChildExecutionFinished{child_, core::Version(1), {}}};
  };
  EXPECT_TRUE(CheckResponseAddressee(parent_, delay(a_, core::DelayId(parent_, a_, 1))));
  EXPECT_TRUE(CheckResponseAddressee(parent_, child(a_)));
  EXPECT_TRUE(CheckResponseAddressee(parent_, delay(b_, core::DelayId(parent_, a_, 1)))
                  .error()
                  .IsNotFound());
  EXPECT_TRUE(CheckResponseAddressee(other_, delay(a_, core::DelayId(parent_, a_, 1)))
                  .error()
                  .IsNotFound());
  EXPECT_TRUE(CheckResponseAddressee(parent_, child(b_)).error().IsNotFound());
  EXPECT_TRUE(CheckResponseAddressee(other_, child(a_)).error().IsNotFound());
}

TEST_F(RequestRulesTest, AChildRespondsForItself) {
  AppendEventsToExecution events{ExecutionId(child_), core::Version(1), {}};
  AppendResponseToExecution response{parent_, kT0, a_, child_, core::Version(1), {}};
  EXPECT_TRUE(CheckChildResponse(events, response));
  AppendEventsToExecution sibling{ExecutionId(parent_.NextLevel(a_, 2)), core::Version(1), {}};
  EXPECT_TRUE(CheckChildResponse(sibling, response)
                  .error()
                  .IsNonRetriable(DbErrorWriteNonRetriable::Kind::kValidationFailed));
  response.join_set_id = b_;
  EXPECT_TRUE(CheckChildResponse(events, response).error().IsNotFound());
}

}  // namespace
}  // namespace stele::storage::request_rules_test
