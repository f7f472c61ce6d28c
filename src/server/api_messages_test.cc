// The HTTP face of messages and published values (docs/api.md, "Messages"):
// sends, idempotent redelivery, the 404 / 409 answers, hostile input that
// must write nothing, and reading published values with and without a wait.
#include <thread>

#include "server/api_test_fixture.h"
#include "storage/check/consistency_check.h"

namespace stele::server::testing {
namespace {

class ApiMessagesTest : public ApiTest {
 protected:
  // A workflow execution nothing runs (its component has no executor): it
  // stays pending, so every message it gets stays in its responses.
  core::ExecutionId PendingWorkflow() {
    auto db = server_->pool().Connection();
    EXPECT_TRUE(db.has_value());
    const DateTime now = SystemClock::Instance().Now();
    core::ExecutionId id = core::ExecutionId::Generate();
    EXPECT_TRUE((*db)->Create(storage::CreateRequest{
        now, id, Ffqn(kParent), Json::array(), std::nullopt, now, workflow_id_, {}, std::nullopt}));
    return id;
  }

  // Appends `events` to `id` as its lock holder would (a Locked first when
  // `lock`). Returns the version of the last one.
  core::Version AppendHistory(const core::ExecutionId& id, std::vector<core::HistoryEvent> events) {
    auto db = server_->pool().Connection();
    EXPECT_TRUE(db.has_value());
    const DateTime now = SystemClock::Instance().Now();
    auto last = (*db)->GetLastExecutionEvent(id);
    EXPECT_TRUE(last.has_value());
    std::vector<storage::AppendRequest> batch;
    for (core::HistoryEvent& event : events) {
      batch.push_back({now, core::HistoryEventRequest{std::move(event)}});
    }
    const core::Version first = last->version.Increment();
    auto next = (*db)->AppendBatch(now, batch, id, first);
    EXPECT_TRUE(next.has_value()) << (next ? "" : next.error().ToString());
    return core::Version(first.value() + static_cast<core::Version::Type>(batch.size()) - 1);
  }

  std::string MessagesPath(const core::ExecutionId& id, const std::string& channel) {
    return "/v1/executions/" + id.ToString() + "/messages/" + channel;
  }

  Json Responses(const core::ExecutionId& id) {
    return Body(Get("/v1/executions/" + id.ToString() + "/responses?length=100"));
  }

  std::vector<storage::check::Finding> Check() {
    auto api = server_->pool().ExternalApiConn();
    EXPECT_TRUE(api.has_value());
    auto report = storage::check::CheckStore(**api);
    EXPECT_TRUE(report.has_value()) << (report ? "" : report.error());
    return report ? report->findings : std::vector<storage::check::Finding>{};
  }
};

TEST_F(ApiMessagesTest, SendsAndRedeliversIdempotently) {
  const core::ExecutionId id = PendingWorkflow();
  auto first = Post(MessagesPath(id, "orders"), Json{{"body", {{"n", 1}}}, {"message_id", "m-1"}});
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  EXPECT_EQ(Body(first), (Json{{"execution_id", id.ToString()},
                               {"channel", "orders"},
                               {"message_id", "m-1"},
                               {"delivered_now", true}}));
  auto again = Post(MessagesPath(id, "orders"), Json{{"body", {{"n", 1}}}, {"message_id", "m-1"}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200) << again->body;
  EXPECT_EQ(Body(again)["delivered_now"], false);
  auto other = Post(MessagesPath(id, "orders"), Json{{"body", {{"n", 2}}}, {"message_id", "m-1"}});
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 409) << other->body;
  EXPECT_EQ(ErrorKind(other), "conflict");
  // A channel may hold `/`; without an id the server makes one.
  auto nested = Post(MessagesPath(id, "orders/eu"), Json{{"body", nullptr}});
  ASSERT_TRUE(nested);
  ASSERT_EQ(nested->status, 200) << nested->body;
  EXPECT_EQ(Body(nested)["channel"], "orders/eu");
  EXPECT_EQ(Body(nested)["message_id"].get<std::string>().rfind("msg_", 0), 0u);

  Json responses = Responses(id)["responses"];
  ASSERT_EQ(responses.size(), 2u) << responses.dump();
  EXPECT_EQ(responses[0]["response"]["event"]["join_set_id"], "m:orders");
  EXPECT_EQ(responses[0]["response"]["event"]["event"]["type"], "message_received");
  EXPECT_EQ(responses[0]["response"]["event"]["event"]["body"], (Json{{"n", 1}}));
  EXPECT_EQ(responses[1]["response"]["event"]["join_set_id"], "m:orders/eu");

  auto unknown = Post(MessagesPath(core::ExecutionId::Generate(), "orders"), Json{{"body", 1}});
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404) << unknown->body;
  auto metrics = Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("stele_messages_sent_total 2\n"), std::string::npos);
}

TEST_F(ApiMessagesTest, AFinishedExecutionTakesNoMessage) {
  const core::ExecutionId id = PendingWorkflow();
  ASSERT_EQ(Post(MessagesPath(id, "orders"), Json{{"body", 1}, {"message_id", "m-1"}})->status,
            200);
  {
    auto db = server_->pool().Connection();
    ASSERT_TRUE(db.has_value());
    const DateTime now = SystemClock::Instance().Now();
    ASSERT_TRUE((*db)->Append(
        id, core::Version(1),
        storage::AppendRequest{now, core::Finished{core::ReturnValueOk{std::nullopt}, {}}}));
  }
  auto late = Post(MessagesPath(id, "orders"), Json{{"body", 2}});
  ASSERT_TRUE(late);
  EXPECT_EQ(late->status, 409) << late->body;
  EXPECT_EQ(ErrorKind(late), "already_finished");
  // The message delivered before still answers (a retrying sender).
  auto retried = Post(MessagesPath(id, "orders"), Json{{"body", 1}, {"message_id", "m-1"}});
  ASSERT_TRUE(retried);
  EXPECT_EQ(retried->status, 200) << retried->body;
  EXPECT_EQ(Responses(id)["responses"].size(), 1u);
}

TEST_F(ApiMessagesTest, HostileInputWritesNothing) {
  const core::ExecutionId id = PendingWorkflow();
  ASSERT_EQ(Post(MessagesPath(id, "orders"), Json{{"body", "kept"}})->status, 200);
  const Json before = {Responses(id), Body(Get("/v1/executions/" + id.ToString() + "/events"))};
  struct Case {
    std::string path;
    std::string body;
    int status;
  };
  const std::string ok_path = MessagesPath(id, "orders");
  const std::vector<Case> cases = {
      {MessagesPath(id, "bad_name"), R"({"body": 1})", 400},
      {MessagesPath(id, "a.b"), R"({"body": 1})", 400},
      {MessagesPath(id, "sp%20ace"), R"({"body": 1})", 400},
      {MessagesPath(id, "orders%00x"), R"({"body": 1})", 400},
      {MessagesPath(id, std::string(200, 'c')), R"({"body": 1})", 400},
      {"/v1/executions/E_nope/messages/orders", R"({"body": 1})", 400},
      {ok_path, "not json", 400},
      {ok_path, "", 400},
      {ok_path, "[1, 2]", 400},
      {ok_path, "{}", 400},
      {ok_path, R"({"body": 1, "extra": 2})", 400},
      {ok_path, R"({"body": 1, "message_id": 5})", 400},
      {ok_path, R"({"body": 1, "message_id": "has space"})", 400},
      {ok_path, R"({"body": 1, "message_id": ""})", 400},
      {ok_path, R"({"body": 1, "message_id": ")" + std::string(129, 'm') + R"("})", 400},
      {ok_path, std::string(200, '[') + std::string(200, ']'), 400},
      // Over [api] max_body_bytes (64 KiB here): refused before it is read.
      {ok_path, R"({"body": ")" + std::string(70'000, 'x') + R"("})", 413},
  };
  for (const Case& c : cases) {
    auto res = client_->Post(c.path.c_str(), c.body, "application/json");
    ASSERT_TRUE(res) << c.path;
    EXPECT_EQ(res->status, c.status) << c.path << " " << c.body.substr(0, 80) << ": " << res->body;
    if (res->status == 413)
      client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }
  const Json after = {Responses(id), Body(Get("/v1/executions/" + id.ToString() + "/events"))};
  EXPECT_EQ(after, before);
  for (const storage::check::Finding& finding : Check()) {
    ADD_FAILURE() << "db check: " << finding.execution_id << ": " << finding.description;
  }
}

TEST_F(ApiMessagesTest, PublishedValuesAreListedAndWaitedFor) {
  const core::ExecutionId id = PendingWorkflow();
  const std::string base = "/v1/executions/" + id.ToString() + "/values";
  EXPECT_EQ(Body(Get(base)), (Json{{"execution_id", id.ToString()}, {"values", Json::array()}}));
  EXPECT_EQ(Get(base + "/progress")->status, 404);
  const core::Version v1 = AppendHistory(
      id, {core::HistoryPublish{"progress", Json(1)}, core::HistoryPublish{"stage", Json("a")},
           core::HistoryPublish{"progress", Json(2)}});
  Json values = Body(Get(base))["values"];
  ASSERT_EQ(values.size(), 2u) << values.dump();
  EXPECT_EQ(values[0]["key"], "progress");
  EXPECT_EQ(values[0]["value"], 2);
  EXPECT_EQ(values[0]["version"], v1.value());
  EXPECT_EQ(values[1]["key"], "stage");
  EXPECT_EQ(Body(Get(base + "/progress"))["value"], 2);
  // Nothing newer than what the reader has: a bounded wait ends in 408.
  auto none = Get(base + "/progress?after_version=" + std::to_string(v1.value()) + "&timeout=1");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 408) << none->body;
  // A value published while the reader waits ends the wait.
  std::thread publisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    AppendHistory(id, {core::HistoryPublish{"progress", Json(3)}});
  });
  auto next = Get(base + "/progress?after_version=" + std::to_string(v1.value()) + "&timeout=30");
  publisher.join();
  ASSERT_TRUE(next);
  ASSERT_EQ(next->status, 200) << next->body;
  EXPECT_EQ(Body(next)["value"], 3);
  for (const char* bad :
       {"/bad_key", "/a.b", "/progress?after_version=x", "/progress?timeout=100000"}) {
    auto res = Get(base + bad);
    ASSERT_TRUE(res) << bad;
    EXPECT_EQ(res->status, 400) << bad << ": " << res->body;
  }
  EXPECT_EQ(Get("/v1/executions/" + core::ExecutionId::Generate().ToString() + "/values")->status,
            404);
}

}  // namespace
}  // namespace stele::server::testing
