// Messages in and published values out through libstele's face
// (docs/sdk.md, "Messages"): ctx.receive / try_receive / publish / send and
// Engine::SendMessage / GetValue / ListValues, on a real SQLite file.
#include <gtest/gtest.h>

#include <string>

#include "engine/sdk_test_util.h"
#include "stele/stele.h"

namespace stele {
namespace {

using testing::OkOrDie;
using namespace std::chrono_literals;

class MessageTest : public testing::PoolEngineTest {
 protected:
  // Counts the history events of `id` of type T.
  template <class T>
  size_t CountHistory(const std::string& id) {
    size_t n = 0;
    for (const core::ExecutionEvent& event : Events(id)) {
      const auto* history = std::get_if<core::HistoryEventRequest>(&event.event);
      n += history != nullptr && std::holds_alternative<T>(history->event);
    }
    return n;
  }
};

// Receives `n` messages of channel "orders" (n = params[0]) and returns
// their bodies in the order received, then the ids.
Task<Json> ReceiveN(WorkflowContext& ctx, Json params) {
  Json bodies = Json::array();
  const int n = params[0].get<int>();
  for (int i = 0; i < n; ++i) {
    auto message = co_await ctx.receive("orders");
    if (!message) co_return Json("receive failed: " + message.error().message);
    bodies.push_back(message->body);
    co_await ctx.publish("received", Json(i + 1));
  }
  co_return bodies;
}

TEST_F(MessageTest, KeptBeforeReceiveConsumedOnceInArrivalOrder) {
  EngineOptions options = Options();
  options.workflow_keep_warm = false;  // every receive that waits is a replay later
  Engine& engine = Open(std::move(options));
  ASSERT_TRUE(engine.RegisterWorkflow("test:msg/wf.receive-n", ReceiveN));
  const std::string id = OkOrDie(engine.Submit("test:msg/wf.receive-n", Params(3)), "submit");
  // Sent before the engine runs anything: kept until the workflow asks.
  OkOrDie(engine.SendMessage(id, "orders", Json("first")), "send 1");
  OkOrDie(engine.SendMessage(id, "other", Json("elsewhere")), "send other");
  OkOrDie(engine.SendMessage(id, "orders", Json("second")), "send 2");
  ASSERT_TRUE(engine.Start());
  // The third comes once the workflow has consumed the two and waits.
  ASSERT_TRUE(testing::WaitUntil([&] {
    auto value = engine.GetValue(id, "received");
    return value && value->value == Json(2);
  }));
  OkOrDie(engine.SendMessage(id, "orders", Json("third")), "send 3");
  ExecutionResult result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(result.value, (Json{"first", "second", "third"}));
  // Each message was consumed by exactly one JoinNext of its channel,
  // however many replays ran.
  size_t join_nexts = 0;
  for (const core::ExecutionEvent& event : Events(id)) {
    const auto* history = std::get_if<core::HistoryEventRequest>(&event.event);
    const auto* join_next =
        history != nullptr ? std::get_if<core::HistoryJoinNext>(&history->event) : nullptr;
    join_nexts += join_next != nullptr && join_next->join_set_id.ToString() == "m:orders";
  }
  EXPECT_EQ(join_nexts, 3u);
}

TEST_F(MessageTest, ReceiveWithTimeoutEndsEitherWay) {
  Engine& engine = Open();
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:msg/wf.timeout", [](WorkflowContext& ctx, Json) -> Task<Json> {
        Json out;
        // Nobody sends on "quiet": the timer wins.
        auto quiet = co_await ctx.receive("quiet", 20ms);
        out["quiet"] = !quiet && quiet.error().kind == ReceiveError::Kind::kTimedOut;
        co_await ctx.publish("waiting", Json(true));
        // A message wins over an hour's timer, which is then cancelled.
        auto loud = co_await ctx.receive("loud", std::chrono::hours(1));
        out["loud"] = loud ? loud->body : Json("timed out");
        // Its cancelled timer does not look like a message to a later try.
        auto after = co_await ctx.try_receive("loud");
        out["after"] = after && !*after;
        co_return out;
      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:msg/wf.timeout", Params()), "submit");
  OkOrDie(engine.GetValue(id, "waiting", std::nullopt, 20s), "wait for `waiting`");
  OkOrDie(engine.SendMessage(id, "loud", Json{{"x", 1}}), "send");
  ExecutionResult result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(result.value, (Json{{"quiet", true}, {"loud", Json{{"x", 1}}}, {"after", true}}));
}

TEST_F(MessageTest, SendIsIdempotentPerIdAndRefusesWhatItMust) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterWorkflow("test:msg/wf.receive-n", ReceiveN));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:msg/wf.receive-n", Params(1)), "submit");
  SendMessageOptions keyed{"order-7"};
  EXPECT_EQ(OkOrDie(engine.SendMessage(id, "orders", Json(7), keyed), "send"), "order-7");
  // The same id and body: the same answer, delivered once.
  EXPECT_EQ(OkOrDie(engine.SendMessage(id, "orders", Json(7), keyed), "resend"), "order-7");
  auto other_body = engine.SendMessage(id, "orders", Json(8), keyed);
  ASSERT_FALSE(other_body);
  EXPECT_EQ(other_body.error().kind, Error::Kind::kConflict) << other_body.error().ToString();
  ExecutionResult result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(result.value, Json::array({7}));
  // Finished: a new message is a conflict; the old id still answers.
  auto finished = engine.SendMessage(id, "orders", Json(9));
  ASSERT_FALSE(finished);
  EXPECT_EQ(finished.error().kind, Error::Kind::kConflict);
  EXPECT_NE(finished.error().message.find("already finished"), std::string::npos)
      << finished.error().message;
  EXPECT_TRUE(engine.SendMessage(id, "orders", Json(7), keyed));

  auto unknown = engine.SendMessage("E_01KBNHM5FQW81KP5Y3XMNX31K4", "orders", Json(1));
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().kind, Error::Kind::kNotFound);
  for (const char* channel : {"", "has space", "under_score", "a.b"}) {
    auto bad = engine.SendMessage(id, channel, Json(1));
    ASSERT_FALSE(bad) << channel;
    EXPECT_EQ(bad.error().kind, Error::Kind::kInvalidArgument) << channel;
  }
  auto bad_id = engine.SendMessage(id, "orders", Json(1), SendMessageOptions{"no spaces"});
  ASSERT_FALSE(bad_id);
  EXPECT_EQ(bad_id.error().kind, Error::Kind::kInvalidArgument);
  auto huge = engine.SendMessage(id, "orders", Json(std::string(2 << 20, 'x')));
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().kind, Error::Kind::kInvalidArgument);
  EXPECT_NE(huge.error().message.find("over the limit"), std::string::npos);
}

TEST_F(MessageTest, PublishedValuesLastWriteWinsAndWaitsAfterAVersion) {
  Engine& engine = Open();
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:msg/wf.progress", [](WorkflowContext& ctx, Json) -> Task<Json> {
        co_await ctx.publish("progress", Json(1));
        co_await ctx.publish("stage", Json("started"));
        auto go = co_await ctx.receive("go");
        co_await ctx.publish("progress", Json(2));
        co_return go ? go->body : Json();
      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:msg/wf.progress", Params()), "submit");
  PublishedValue first = OkOrDie(engine.GetValue(id, "progress", std::nullopt, 20s), "first");
  EXPECT_EQ(first.value, Json(1));
  // Nothing newer yet: a short wait times out.
  auto none = engine.GetValue(id, "progress", first.version, 50ms);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, Error::Kind::kTimeout);
  auto missing = engine.GetValue(id, "nothing");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, Error::Kind::kNotFound);
  OkOrDie(engine.SendMessage(id, "go", Json("go")), "send");
  PublishedValue second = OkOrDie(engine.GetValue(id, "progress", first.version, 20s), "second");
  EXPECT_EQ(second.value, Json(2));
  EXPECT_GT(second.version, first.version);
  ASSERT_TRUE(Await(id).ok());
  std::vector<PublishedValue> all = OkOrDie(engine.ListValues(id), "list");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].key, "progress");
  EXPECT_EQ(all[0].value, Json(2));
  EXPECT_EQ(all[1].key, "stage");
  // Finished without a newer value: not found at once, not a timeout.
  auto after_end = engine.GetValue(id, "progress", second.version, 20s);
  ASSERT_FALSE(after_end);
  EXPECT_EQ(after_end.error().kind, Error::Kind::kNotFound);
}

TEST_F(MessageTest, AWorkflowSendsOnceWhateverItsReplays) {
  EngineOptions options = Options();
  options.workflow_keep_warm = false;
  Engine& engine = Open(std::move(options));
  ASSERT_TRUE(engine.RegisterWorkflow("test:msg/wf.receive-n", ReceiveN));
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:msg/wf.sender", [](WorkflowContext& ctx, Json params) -> Task<Json> {
        const std::string target = params[0].get<std::string>();
        auto sent = co_await ctx.send(target, "orders", Json("from a workflow"));
        // Unloaded here: the rest runs in a replay that must not send again.
        co_await ctx.sleep(10ms);
        auto missing = co_await ctx.send("E_01KBNHM5FQW81KP5Y3XMNX31K4", "orders", Json(1));
        co_return Json{{"sent", sent.has_value()}, {"missing", missing ? "sent" : missing.error()}};
      }));
  ASSERT_TRUE(engine.Start());
  const std::string receiver =
      OkOrDie(engine.Submit("test:msg/wf.receive-n", Params(1)), "submit receiver");
  const std::string sender =
      OkOrDie(engine.Submit("test:msg/wf.sender", Params(receiver)), "submit sender");
  ExecutionResult sent = Await(sender);
  ASSERT_TRUE(sent.ok()) << sent.ToString();
  EXPECT_EQ(sent.value["sent"], Json(true));
  EXPECT_NE(sent.value["missing"].get<std::string>().find("not found"), std::string::npos);
  ExecutionResult received = Await(receiver);
  ASSERT_TRUE(received.ok()) << received.ToString();
  EXPECT_EQ(received.value, Json::array({"from a workflow"}));
  EXPECT_EQ(CountHistory<core::HistorySendMessage>(sender), 2u);
  auto responses = OkOrDie(
      api_->ListResponses(*core::ExecutionId::Parse(receiver),
                          core::Pagination<uint32_t>::NewerThan(100, 0, /*including_cursor=*/true)),
      "responses");
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(std::get<core::MessageReceived>(responses[0].event.event.event).message_id,
            sender + "@1");
}

TEST_F(MessageTest, ConsumedExactlyOnceAcrossARestart) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterWorkflow("test:msg/wf.receive-n", ReceiveN));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:msg/wf.receive-n", Params(2)), "submit");
  OkOrDie(engine.SendMessage(id, "orders", Json("before")), "send 1");
  ASSERT_TRUE(testing::WaitUntil([&] {
    auto value = engine.GetValue(id, "received");
    return value && value->value == Json(1);
  }));
  // The process goes away while the workflow waits for its second message.
  engine_.reset();
  Engine& again = Open();
  ASSERT_TRUE(again.RegisterWorkflow("test:msg/wf.receive-n", ReceiveN));
  ASSERT_TRUE(again.Start());
  OkOrDie(again.SendMessage(id, "orders", Json("after")), "send 2");
  ExecutionResult result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(result.value, (Json{"before", "after"}));
}

}  // namespace
}  // namespace stele
