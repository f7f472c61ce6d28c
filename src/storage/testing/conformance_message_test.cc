// Messages (DbConnection::AppendMessage; request_rules.h, "Messages"):
// validation, NotFound, idempotent redelivery and Conflict, the finished
// check after the redelivery check, arrival order with other responses,
// unblocking a JoinNext on the channel's join set, waking subscribers, and
// the Publish / SendMessage history events round-tripping through the log.
#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;

class MessageTest : public ConformanceTest {
 protected:
  static core::JoinSetId Channel(const std::string& name) {
    auto id = core::ChannelJoinSet(name);
    if (!id) {
      ADD_FAILURE() << id.error().message;
      return NamedJoinSet("invalid");
    }
    return *std::move(id);
  }
  Result<AppendMessageOutcome, DbErrorWrite> Send(const ExecutionId& id, DateTime at,
                                                  const std::string& channel,
                                                  const std::string& message_id, core::Json body) {
    return db().AppendMessage(at, id, Channel(channel), core::MessageReceived{message_id, body});
  }
  static core::JoinSetResponseEventOuter MessageAt(DateTime at, const std::string& channel,
                                                   const std::string& message_id, core::Json body) {
    return core::JoinSetResponseEventOuter{
        at, core::JoinSetResponseEvent{Channel(channel),
                                       core::MessageReceived{message_id, std::move(body)}}};
  }
};
STELE_INSTANTIATE_CONFORMANCE_SUITE(MessageTest);

TEST_P(MessageTest, DeliversInArrivalOrderAndRedeliversIdempotently) {
  ExecutionId id = NewId();
  Must(db().Create(CreateReq(id, kT0)));
  EXPECT_EQ(Must(Send(id, kT0 + 1s, "orders", "m-1", core::Json{{"n", 1}})),
            AppendMessageOutcome::kDelivered);
  EXPECT_EQ(Must(Send(id, kT0 + 2s, "other/chan", "m-2", core::Json("two"))),
            AppendMessageOutcome::kDelivered);
  EXPECT_EQ(Must(Send(id, kT0 + 3s, "orders", "m-3", core::Json())),
            AppendMessageOutcome::kDelivered);
  // The same id, channel and body: nothing more is written.
  EXPECT_EQ(Must(Send(id, kT0 + 4s, "orders", "m-1", core::Json{{"n", 1}})),
            AppendMessageOutcome::kAlreadyDelivered);
  // The same id with another body or channel: Conflict, nothing written.
  EXPECT_THAT(Send(id, kT0 + 5s, "orders", "m-1", core::Json{{"n", 2}}), IsNonRetriable(kConflict));
  EXPECT_THAT(Send(id, kT0 + 5s, "elsewhere", "m-1", core::Json{{"n", 1}}),
              IsNonRetriable(kConflict));
  ExecutionLog log = Must(db().Get(id));
  EXPECT_THAT(log.responses,
              ElementsAre(MessageAt(kT0 + 1s, "orders", "m-1", core::Json{{"n", 1}}),
                          MessageAt(kT0 + 2s, "other/chan", "m-2", core::Json("two")),
                          MessageAt(kT0 + 3s, "orders", "m-3", core::Json())));
  // Messages leave the log and the state alone.
  EXPECT_THAT(log.events, SizeIs(1));
  EXPECT_EQ(Must(db().GetPendingState(id)), PendingAtState(kT0, std::nullopt));
  // A message id is unique per execution only.
  ExecutionId other = NewId();
  Must(db().Create(CreateReq(other, kT0)));
  EXPECT_EQ(Must(Send(other, kT0 + 6s, "orders", "m-1", core::Json{{"n", 9}})),
            AppendMessageOutcome::kDelivered);
}

TEST_P(MessageTest, RejectsBadInputUnknownAndFinishedExecutions) {
  ExecutionId id = NewId();
  Must(db().Create(CreateReq(id, kT0)));
  // Not a channel's join set, or a bad message id: ValidationFailed.
  EXPECT_THAT(db().AppendMessage(kT0, id, NamedJoinSet("orders"),
                                 core::MessageReceived{"m-1", core::Json(1)}),
              IsNonRetriable(kValidationFailed));
  EXPECT_THAT(Send(id, kT0, "orders", "", core::Json(1)), IsNonRetriable(kValidationFailed));
  EXPECT_THAT(Send(id, kT0, "orders", "has space", core::Json(1)),
              IsNonRetriable(kValidationFailed));
  EXPECT_THAT(
      Send(id, kT0, "orders", std::string(core::kMaxMessageIdLength + 1, 'a'), core::Json(1)),
      IsNonRetriable(kValidationFailed));
  EXPECT_THAT(Send(NewId(), kT0, "orders", "m-1", core::Json(1)), IsNotFound());

  EXPECT_EQ(Must(Send(id, kT0 + 1s, "orders", "m-1", core::Json(1))),
            AppendMessageOutcome::kDelivered);
  Must(db().Append(id, Version(1), FinishedReq(kT0 + 2s, OkResult())));
  // Finished: a new message is IllegalState; the one delivered before
  // still answers as delivered (a sender retrying after a crash).
  EXPECT_THAT(Send(id, kT0 + 3s, "orders", "m-2", core::Json(2)), IsNonRetriable(kIllegalState));
  EXPECT_EQ(Must(Send(id, kT0 + 3s, "orders", "m-1", core::Json(1))),
            AppendMessageOutcome::kAlreadyDelivered);
  EXPECT_THAT(Must(db().Get(id)).responses, SizeIs(1));
}

TEST_P(MessageTest, UnblocksAJoinNextOnItsChannelOnly) {
  ExecutionId id = NewId();
  Runner runner = Runner::New();
  Version v = CreateLocked(db(), id, kT0, runner, kT0 + 10s);
  const core::JoinSetId orders = Channel("orders");
  // A receive: JoinNext on the channel with no message yet blocks.
  v = Must(db().Append(id, v, JoinNextReq(kT0 + 1s, orders, kT0 + 1s)));
  EXPECT_EQ(Must(db().GetPendingState(id)), BlockedState(orders, kT0 + 1s));
  // A message on another channel leaves it blocked...
  Must(Send(id, kT0 + 2s, "other", "m-1", core::Json(1)));
  EXPECT_EQ(Must(db().GetPendingState(id)), BlockedState(orders, kT0 + 1s));
  // ...one on its channel makes it pending, and wakes a subscriber.
  Must(Send(id, kT0 + 3s, "orders", "m-2", core::Json(2)));
  EXPECT_EQ(Must(db().GetPendingState(id)), PendingAtState(kT0 + 3s, runner.locked_by()));
  EXPECT_THAT(Must(db().SubscribeToNextResponses(id, 1, WaitOptions::For(10s))),
              ElementsAre(MessageAt(kT0 + 3s, "orders", "m-2", core::Json(2))));
  // A second receive finds the kept message at once: the k-th JoinNext of
  // the channel takes its k-th message.
  Must(Send(id, kT0 + 4s, "orders", "m-3", core::Json(3)));
  Runner again = Runner::New();
  LockedExecution locked = Must(LockOneAt(db(), id, v, kT0 + 5s, again, kT0 + 15s));
  EXPECT_THAT(locked.responses, SizeIs(3));
  Must(db().Append(id, locked.next_version, JoinNextReq(kT0 + 6s, orders, kT0 + 15s)));
  EXPECT_EQ(Must(db().GetPendingState(id)), PendingAtState(kT0 + 15s, again.locked_by()));
}

TEST_P(MessageTest, PublishAndSendEventsRoundTrip) {
  ExecutionId id = NewId();
  Runner runner = Runner::New();
  Version v = CreateLocked(db(), id, kT0, runner, kT0 + 10s);
  core::HistoryPublish publish{"progress", core::Json{{"done", 3}, {"of", 10}}};
  core::HistorySendMessage send{TopLevelId(7), "orders", id.ToString() + "@1", core::Json("hi"),
                                core::SendOutcome::kAlreadyFinished};
  v = Must(db().AppendBatch(kT0 + 1s, {HistoryReq(kT0 + 1s, publish), HistoryReq(kT0 + 1s, send)},
                            id, v));
  ExecutionLog log = Must(db().Get(id));
  ASSERT_THAT(log.events, SizeIs(4));
  EXPECT_EQ(log.events[2].event, core::ExecutionRequest(core::HistoryEventRequest{publish}));
  EXPECT_EQ(log.events[3].event, core::ExecutionRequest(core::HistoryEventRequest{send}));
  // Neither moves the state.
  EXPECT_EQ(Must(db().GetPendingState(id)), LockedState(runner, kT0 + 10s));
}

}  // namespace
}  // namespace stele::storage::conformance
