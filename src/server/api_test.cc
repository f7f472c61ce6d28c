// The HTTP API, in process (the fixture: api_test_fixture.h): every
// endpoint, its errors and the waiter limit. Metrics are in
// api_metrics_test.cc, races in api_race_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <thread>

#include "server/api_test_fixture.h"
#include "stele/defaults.h"

namespace stele::server {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers
using core::Json;
using ::testing::HasSubstr;
using ::testing::SizeIs;

TEST_F(ApiTest, SubmitRunsAndReturnsTheResult) {
  std::string id = Submit({{"ffqn", kEcho}, {"params", {"hello"}}});
  ASSERT_THAT(id, ::testing::StartsWith("E_"));
  auto res = Get("/v1/executions/" + id + "/result?timeout=30");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(Body(res)["result"], Json({{"ok", "hello"}}));

  auto status = Get("/v1/executions/" + id);
  ASSERT_EQ(status->status, 200);
  Json body = Body(status);
  EXPECT_EQ(body["execution_id"], id);
  EXPECT_EQ(body["ffqn"], kEcho);
  EXPECT_EQ(body["pending_state"]["status"], "finished");
  EXPECT_EQ(body["result"], Json({{"ok", "hello"}}));
  EXPECT_TRUE(body["created_at"].is_string());
  EXPECT_TRUE(body["first_scheduled_at"].is_string());
  EXPECT_THAT(body["component_digest"].get<std::string>(), ::testing::StartsWith("sha256:"));
}

TEST_F(ApiTest, ErrResultIsReported) {
  std::string id = Submit({{"ffqn", kFail}, {"params", Json::array()}});
  auto res = Get("/v1/executions/" + id + "/result?timeout=30");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(Body(res)["result"], Json({{"err", "nope"}}));
}

TEST_F(ApiTest, SubmitIsIdempotentPerExecutionId) {
  std::string id = core::ExecutionId::Generate().ToString();
  Json scheduled = {{"ffqn", kEcho},
                    {"params", {"x"}},
                    {"execution_id", id},
                    {"scheduled_at", "2999-01-01T00:00:00Z"}};
  EXPECT_EQ(Submit(scheduled, 201), id);
  EXPECT_EQ(Submit(scheduled, 200), id);
  scheduled["params"] = {"y"};
  auto conflict = Post("/v1/executions", scheduled);
  EXPECT_EQ(conflict->status, 409);
  EXPECT_EQ(ErrorKind(conflict), "conflict");
  // Scheduled far ahead: still pending, with no result.
  Json body = Body(Get("/v1/executions/" + id));
  EXPECT_EQ(body["pending_state"]["status"], "pending_at");
  EXPECT_EQ(body["first_scheduled_at"], "2999-01-01T00:00:00Z");
  EXPECT_FALSE(body.contains("result"));
  auto waited = Get("/v1/executions/" + id + "/result?timeout=0");
  EXPECT_EQ(waited->status, 408);
  EXPECT_EQ(ErrorKind(waited), "timeout");
}

TEST_F(ApiTest, SubmitValidation) {
  struct Case {
    Json body;
    int status;
    std::string message_part;
  };
  std::vector<Case> cases = {
      {{{"params", Json::array()}}, 400, "`ffqn` is required"},
      {{{"ffqn", 5}}, 400, "`ffqn` is required"},
      {{{"ffqn", "../../etc/passwd"}}, 400, "invalid ffqn"},
      {{{"ffqn", "nobody:x/y.z"}}, 404, "unknown ffqn"},
      {{{"ffqn", kApprove}}, 400, "stub activity"},
      {{{"ffqn", kEcho}, {"params", "hello"}}, 400, "must be a JSON array"},
      {{{"ffqn", kEcho}, {"params", {42}}}, 400, "parameter"},
      {{{"ffqn", kEcho}, {"params", {"a", "b"}}}, 400, "params"},
      {{{"ffqn", kEcho}, {"params", {"a"}}, {"execution_id", "E_nope"}},
       400,
       "invalid execution id"},
      {{{"ffqn", kEcho}, {"params", {"a"}}, {"execution_id", 7}}, 400, "execution_id"},
      {{{"ffqn", kEcho},
        {"params", {"a"}},
        {"execution_id", core::ExecutionId::Generate().ToString() + ".n:js_1"}},
       400,
       "child id"},
      {{{"ffqn", kEcho}, {"params", {"a"}}, {"scheduled_at", "tomorrow"}}, 400, "RFC 3339"},
      {{{"ffqn", kEcho}, {"params", {"a"}}, {"colour", "red"}}, 400, "unknown field `colour`"},
  };
  for (const auto& c : cases) {
    auto res = Post("/v1/executions", c.body);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, c.status) << c.body.dump() << " → " << res->body;
    Json body = Body(res);
    ASSERT_TRUE(body.contains("error")) << res->body;
    EXPECT_THAT(body["error"]["message"].get<std::string>(), HasSubstr(c.message_part))
        << c.body.dump();
  }
  // Nothing was created by any of them.
  Json list = Body(Get("/v1/executions"));
  EXPECT_THAT(list["executions"], SizeIs(0));
}

TEST_F(ApiTest, HostileBodies) {
  auto malformed = client_->Post("/v1/executions", "{\"ffqn\": ", "application/json");
  EXPECT_EQ(malformed->status, 400);
  EXPECT_THAT(Body(malformed)["error"]["message"].get<std::string>(), HasSubstr("malformed JSON"));
  auto not_object = client_->Post("/v1/executions", "[1,2]", "application/json");
  EXPECT_EQ(not_object->status, 400);
  auto empty = client_->Post("/v1/executions", "", "application/json");
  EXPECT_EQ(empty->status, 400);
  std::string deep = "{\"ffqn\": \"test:act/ifc.echo\", \"params\": [" + std::string(5000, '[') +
                     std::string(5000, ']') + "]}";
  auto nested = client_->Post("/v1/executions", deep, "application/json");
  EXPECT_EQ(nested->status, 400) << nested->body.substr(0, 200);
  std::string huge =
      "{\"ffqn\": \"test:act/ifc.echo\", \"params\": [\"" + std::string(100000, 'x') + "\"]}";
  auto too_large = client_->Post("/v1/executions", huge, "application/json");
  ASSERT_TRUE(too_large);
  EXPECT_EQ(too_large->status, 413);
  EXPECT_EQ(ErrorKind(too_large), "too_large");
  auto bad_utf8 = client_->Post("/v1/executions", "{\"ffqn\": \"\xff\xfe\"}", "application/json");
  EXPECT_EQ(bad_utf8->status, 400);
  Json list = Body(Get("/v1/executions"));
  EXPECT_THAT(list["executions"], SizeIs(0));
}

TEST_F(ApiTest, InvalidAndUnknownIds) {
  for (std::string path : {"/v1/executions/nope", "/v1/executions/..",
                           "/v1/executions/E_01ARZ3NDEKTSV4RRFFQ69G5FAV%00",
                           "/v1/executions/E_01ARZ3NDEKTSV4RRFFQ69G5FAV.n:x_1%2e%2e"}) {
    auto res = Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 400) << path << " " << res->body;
    EXPECT_EQ(ErrorKind(res), "validation") << path;
  }
  // An encoded '/' is decoded before routing: no route has that shape.
  auto traversal = Get("/v1/executions/E_..%2F..%2Fetc%2Fpasswd");
  EXPECT_EQ(traversal->status, 404);
  EXPECT_EQ(ErrorKind(traversal), "not_found");
  std::string missing = core::ExecutionId::Generate().ToString();
  for (std::string suffix : {"", "/result", "/events", "/responses", "/backtrace"}) {
    auto res = Get("/v1/executions/" + missing + suffix);
    EXPECT_EQ(res->status, 404) << suffix << " " << res->body;
    EXPECT_EQ(ErrorKind(res), "not_found") << suffix;
  }
  EXPECT_EQ(Put("/v1/executions/" + missing + "/cancel", Json::object())->status, 404);
  auto no_route = Get("/v2/whatever");
  EXPECT_EQ(no_route->status, 404);
  EXPECT_EQ(ErrorKind(no_route), "not_found");
}

TEST_F(ApiTest, ListWithFiltersAndCursor) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(Submit({{"ffqn", kEcho}, {"params", {"v"}}}));
  std::string fail = Submit({{"ffqn", kFail}});
  ASSERT_EQ(Get("/v1/executions/" + fail + "/result?timeout=30")->status, 200);

  Json all = Body(Get("/v1/executions?length=100"));
  ASSERT_THAT(all["executions"], SizeIs(6));
  EXPECT_EQ(all["executions"][0]["execution_id"], fail);  // newest first
  EXPECT_FALSE(all.contains("next_cursor"));

  Json echo = Body(Get("/v1/executions?ffqn_prefix=test:act/ifc.ec"));
  EXPECT_THAT(echo["executions"], SizeIs(5));
  Json by_id = Body(Get("/v1/executions?execution_id_prefix=" + ids[2]));
  ASSERT_THAT(by_id["executions"], SizeIs(1));
  EXPECT_EQ(by_id["executions"][0]["execution_id"], ids[2]);

  // Pages of two, older and back newer.
  Json page1 = Body(Get("/v1/executions?length=2"));
  ASSERT_THAT(page1["executions"], SizeIs(2));
  ASSERT_TRUE(page1.contains("next_cursor"));
  Json page2 =
      Body(Get("/v1/executions?length=2&cursor=" + page1["next_cursor"].get<std::string>()));
  ASSERT_THAT(page2["executions"], SizeIs(2));
  EXPECT_EQ(page2["executions"][0]["execution_id"], ids[3]);
  Json back = Body(Get("/v1/executions?length=2&direction=newer&cursor=" +
                       page2["executions"][0]["execution_id"].get<std::string>()));
  ASSERT_THAT(back["executions"], SizeIs(2));
  EXPECT_EQ(back["executions"][0]["execution_id"], fail);

  for (std::string bad : {"length=0", "length=100000", "direction=sideways", "cursor=zzz",
                          "show_derived=maybe", "length=-1", "length=1x"}) {
    auto res = Get("/v1/executions?" + bad);
    EXPECT_EQ(res->status, 400) << bad;
  }
}

TEST_F(ApiTest, HideFinished) {
  std::string done = Submit({{"ffqn", kFail}});
  ASSERT_EQ(Get("/v1/executions/" + done + "/result?timeout=30")->status, 200);
  std::string later =
      Submit({{"ffqn", kEcho}, {"params", {"v"}}, {"scheduled_at", "2999-01-01T00:00:00Z"}});
  Json open = Body(Get("/v1/executions?hide_finished=true"));
  ASSERT_THAT(open["executions"], SizeIs(1));
  EXPECT_EQ(open["executions"][0]["execution_id"], later);
}

TEST_F(ApiTest, EventsAndResponses) {
  std::string id = Submit({{"ffqn", kEcho}, {"params", {"e"}}});
  ASSERT_EQ(Get("/v1/executions/" + id + "/result?timeout=30")->status, 200);
  Json events = Body(Get("/v1/executions/" + id + "/events"));
  ASSERT_GE(events["events"].size(), 3u);  // created, locked, finished
  EXPECT_TRUE(events["events"][0]["event"].contains("created")) << events.dump();
  Json tail = Body(Get("/v1/executions/" + id + "/events?since_version=1&length=1"));
  ASSERT_THAT(tail["events"], SizeIs(1));
  EXPECT_EQ(tail["next_since_version"], 2);
  EXPECT_EQ(Get("/v1/executions/" + id + "/events?length=0")->status, 400);
  EXPECT_EQ(Get("/v1/executions/" + id + "/events?since_version=x")->status, 400);

  Json none = Body(Get("/v1/executions/" + id + "/responses"));
  EXPECT_THAT(none["responses"], SizeIs(0));
}

TEST_F(ApiTest, StubAChildAndSeeTheParentsResponse) {
  core::ExecutionIdDerived child = ParentWithStubChild();
  std::string cid = child.ToString();
  std::string parent = child.SplitToParts().first.ToString();

  // Validation before anything is written.
  EXPECT_EQ(Put("/v1/executions/" + cid + "/stub", {{"result", {{"maybe", 1}}}})->status, 400);
  EXPECT_EQ(Put("/v1/executions/" + cid + "/stub", {{"result", {{"ok", 42}}}})->status, 400)
      << "result<string, string> does not accept 42";
  EXPECT_EQ(Put("/v1/executions/" + cid + "/stub", Json::object())->status, 400);
  EXPECT_EQ(Put("/v1/executions/" + parent + "/stub", {{"result", {{"ok", "x"}}}})->status, 400);

  auto stubbed = Put("/v1/executions/" + cid + "/stub", {{"result", {{"ok", "approved"}}}});
  ASSERT_EQ(stubbed->status, 200) << stubbed->body;
  EXPECT_EQ(Put("/v1/executions/" + cid + "/stub", {{"result", {{"ok", "approved"}}}})->status,
            200);
  auto other = Put("/v1/executions/" + cid + "/stub", {{"result", {{"err", "denied"}}}});
  EXPECT_EQ(other->status, 409);

  Json child_status = Body(Get("/v1/executions/" + cid));
  EXPECT_EQ(child_status["result"], Json({{"ok", "approved"}}));
  Json responses = Body(Get("/v1/executions/" + parent + "/responses"));
  ASSERT_THAT(responses["responses"], SizeIs(1));
  EXPECT_EQ(responses["responses"][0]["cursor"], 0);
  Json after = Body(Get("/v1/executions/" + parent + "/responses?cursor=0"));
  EXPECT_THAT(after["responses"], SizeIs(0));

  // Derived ids are listed only with show_derived.
  EXPECT_THAT(Body(Get("/v1/executions"))["executions"], SizeIs(1));
  EXPECT_THAT(Body(Get("/v1/executions?show_derived=true"))["executions"], SizeIs(2));
}

// Malformed bodies to PUT stub and PUT upgrade: 400 with the error
// envelope, and the database is as before (events, state, digest, responses).
TEST_F(ApiTest, MalformedStubAndUpgradeBodiesChangeNothing) {
  core::ExecutionIdDerived child = ParentWithStubChild();
  const std::string cid = child.ToString();
  const std::string parent = child.SplitToParts().first.ToString();
  const std::string later =
      Submit({{"ffqn", kEcho}, {"params", {"u"}}, {"scheduled_at", "2999-01-01T00:00:00Z"}});
  auto snapshot = [&] {
    Json out = Json::array();
    for (const std::string& id : {cid, parent, later}) {
      Json doc = Body(Get("/v1/executions/" + id));
      out.push_back({doc["pending_state"], doc["component_digest"],
                     Body(Get("/v1/executions/" + id + "/events?length=1000")),
                     Body(Get("/v1/executions/" + id + "/responses"))});
    }
    out.push_back(Body(Get("/v1/executions?show_derived=true&length=1000")));
    return out;
  };
  const Json before = snapshot();
  const std::string digest = Sha256Digest("v2").ToString();
  const std::vector<std::string> garbage = {
      "",
      "{",
      "{\"result\": ",
      "[]",
      "null",
      "42",
      "\"ok\"",
      "\xff\xfe{}",
      "{\"result\": {\"ok\": tru}}",
      std::string(5000, '[') + std::string(5000, ']'),
      "{\"result\": {\"ok\": \"x\"}, \"result\": 1, \"extra\": 2}"};
  for (const std::string& body : garbage) {
    for (const std::string& path :
         {"/v1/executions/" + cid + "/stub", "/v1/executions/" + later + "/upgrade"}) {
      auto res = client_->Put(path, body, "application/json");
      ASSERT_TRUE(res) << path;
      EXPECT_EQ(res->status, 400) << path << " " << body.substr(0, 40) << " → " << res->body;
      EXPECT_EQ(ErrorKind(res), "validation") << path << " " << body.substr(0, 40);
    }
  }
  // Well-formed JSON of the wrong shape.
  for (const Json& body : {Json{{"result", "ok"}}, Json{{"result", {{"ok", "a"}, {"err", "b"}}}},
                           Json{{"result", {{"ok", "a"}}}, {"extra", 1}}}) {
    EXPECT_EQ(Put("/v1/executions/" + cid + "/stub", body)->status, 400) << body.dump();
  }
  for (const Json& body : {Json{{"old_digest", 1}, {"new_digest", digest}},
                           Json{{"old_digest", digest}, {"new_digest", digest}, {"extra", 1}},
                           Json{{"new_digest", digest}}}) {
    EXPECT_EQ(Put("/v1/executions/" + later + "/upgrade", body)->status, 400) << body.dump();
  }
  EXPECT_EQ(snapshot(), before);
  // The same endpoints still work afterwards.
  EXPECT_EQ(Put("/v1/executions/" + cid + "/stub", {{"result", {{"ok", "fine"}}}})->status, 200);
  EXPECT_EQ(Put("/v1/executions/" + later + "/upgrade",
                {{"old_digest", before[2][1]}, {"new_digest", digest}, {"force", true}})
                ->status,
            200);
}

TEST_F(ApiTest, CancelARunningActivity) {
  std::string id = Submit({{"ffqn", kBlock}});
  activities_->WaitForBlocked(1);
  auto cancelled = Put("/v1/executions/" + id + "/cancel", Json::object());
  ASSERT_EQ(cancelled->status, 200) << cancelled->body;
  EXPECT_EQ(Body(cancelled)["outcome"], "cancelled");
  auto result = Get("/v1/executions/" + id + "/result?timeout=30");
  ASSERT_EQ(result->status, 200);
  EXPECT_EQ(Body(result)["result"]["execution_error"]["kind"], "cancelled");
  auto again = Put("/v1/executions/" + id + "/cancel", Json::object());
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(Body(again)["outcome"], "cancelled");

  std::string done = Submit({{"ffqn", kFail}});
  ASSERT_EQ(Get("/v1/executions/" + done + "/result?timeout=30")->status, 200);
  auto finished = Put("/v1/executions/" + done + "/cancel", Json::object());
  EXPECT_EQ(finished->status, 409) << finished->body;
  EXPECT_EQ(ErrorKind(finished), "already_finished");
}

TEST_F(ApiTest, CancelDelayValidatesTheId) {
  EXPECT_EQ(Put("/v1/delays/nope/cancel", Json::object())->status, 400);
  std::string missing = "Delay_" + core::ExecutionId::Generate().ToString().substr(2) + ".n:js_1";
  auto res = Put("/v1/delays/" + missing + "/cancel", Json::object());
  EXPECT_EQ(res->status, 404) << res->body;
}

TEST_F(ApiTest, Upgrade) {
  std::string id =
      Submit({{"ffqn", kEcho}, {"params", {"u"}}, {"scheduled_at", "2999-01-01T00:00:00Z"}});
  std::string old_digest = Body(Get("/v1/executions/" + id))["component_digest"];
  std::string new_digest = Sha256Digest("v2").ToString();
  EXPECT_EQ(Put("/v1/executions/" + id + "/upgrade",
                {{"old_digest", "sha256:bad"}, {"new_digest", new_digest}})
                ->status,
            400);
  EXPECT_EQ(Put("/v1/executions/" + id + "/upgrade",
                {{"old_digest", new_digest}, {"new_digest", new_digest}, {"force", true}})
                ->status,
            409);
  // No component serves new_digest: the execution would wait forever.
  auto refused = Put("/v1/executions/" + id + "/upgrade",
                     {{"old_digest", old_digest}, {"new_digest", new_digest}});
  EXPECT_EQ(refused->status, 409);
  EXPECT_THAT(Body(refused)["error"]["message"].get<std::string>(), HasSubstr(new_digest));
  EXPECT_EQ(Body(Get("/v1/executions/" + id))["component_digest"], old_digest);
  EXPECT_EQ(Put("/v1/executions/" + id + "/upgrade",
                {{"old_digest", old_digest}, {"new_digest", new_digest}, {"force", "yes"}})
                ->status,
            400);
  auto forced = Put("/v1/executions/" + id + "/upgrade",
                    {{"old_digest", old_digest}, {"new_digest", new_digest}, {"force", true}});
  ASSERT_EQ(forced->status, 200) << forced->body;
  EXPECT_EQ(Body(Get("/v1/executions/" + id))["component_digest"], new_digest);
  // The moved execution waits on a digest nothing here serves: /metrics says so.
  const std::string unserved = "stele_executions_unserved{digest=\"" + new_digest + "\"}";
  EXPECT_EQ(MetricValue(Get("/metrics")->body, unserved), 1.0) << Get("/metrics")->body;
  // Back to a digest this server serves: no force needed.
  auto back = Put("/v1/executions/" + id + "/upgrade",
                  {{"old_digest", new_digest}, {"new_digest", old_digest}});
  ASSERT_EQ(back->status, 200) << back->body;
  EXPECT_EQ(Body(Get("/v1/executions/" + id))["component_digest"], old_digest);
}

TEST_F(ApiTest, BacktraceNotStored) {
  std::string id = Submit({{"ffqn", kFail}});
  auto res = Get("/v1/executions/" + id + "/backtrace");
  EXPECT_EQ(res->status, 404);
  EXPECT_THAT(Body(res)["error"]["message"].get<std::string>(), HasSubstr("no backtrace stored"));
  EXPECT_EQ(Get("/v1/executions/" + id + "/backtrace?version=first")->status, 404);
  EXPECT_EQ(Get("/v1/executions/" + id + "/backtrace?version=3")->status, 404);
  EXPECT_EQ(Get("/v1/executions/" + id + "/backtrace?version=latest")->status, 400);
}

TEST_F(ApiTest, FollowStreamsStatesUntilFinished) {
  std::string id = Submit({{"ffqn", kBlock}});
  activities_->WaitForBlocked(1);
  std::string stream;
  std::thread canceller;
  bool cancel_started = false;
  auto res =
      client_->Get(("/v1/executions/" + id + "/follow").c_str(), [&](const char* data, size_t len) {
        stream.append(data, len);
        if (!cancel_started && stream.find("\"locked\"") != std::string::npos) {
          cancel_started = true;
          canceller = std::thread([&] {
            httplib::Client c("127.0.0.1", server_->port());
            c.Put(("/v1/executions/" + id + "/cancel").c_str(), "{}", "application/json");
          });
        }
        return true;
      });
  if (canceller.joinable()) canceller.join();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(stream, HasSubstr("event: state\ndata: {\"status\":\"locked\""));
  EXPECT_THAT(stream, HasSubstr("event: finished\ndata: "));
  EXPECT_THAT(stream, HasSubstr("\"kind\":\"cancelled\""));
  EXPECT_EQ(Get("/v1/executions/E_nope/follow")->status, 400);
  // A valid id that does not exist: 404 before any stream starts.
  for (const std::string& missing : {core::ExecutionId::Generate().ToString(),
                                     core::ExecutionId::Generate().ToString() + ".n:js_1"}) {
    auto unknown = Get("/v1/executions/" + missing + "/follow");
    ASSERT_TRUE(unknown);
    EXPECT_EQ(unknown->status, 404) << unknown->body;
    EXPECT_EQ(ErrorKind(unknown), "not_found");
    EXPECT_THAT(unknown->get_header_value("Content-Type"), HasSubstr("application/json"));
  }
  // No stream is left open (the finished one is released just after its
  // last chunk: wait for it, bounded).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline &&
         Get("/metrics")->body.find("stele_follow_streams 0\n") == std::string::npos) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_THAT(Get("/metrics")->body, HasSubstr("stele_follow_streams 0\n"));
}

TEST_F(ApiTest, ResultTimeoutIsCapped) {
  std::string id = Submit({{"ffqn", kFail}});
  EXPECT_EQ(Get("/v1/executions/" + id + "/result?timeout=99999999")->status, 400);
  EXPECT_EQ(Get("/v1/executions/" + id + "/result?timeout=abc")->status, 400);
}

// [retention]: the server's collector deletes a finished execution once it
// is old enough, keeps a pending one, and counts what it deleted on
// /metrics.
class ApiRetentionTest : public ApiTest {
 protected:
  void SetUp() override {
    StartServer("", "\n[retention]\nfinished_after = \"1s\"\ninterval = \"20ms\"\n");
  }
};

TEST_F(ApiRetentionTest, TheCollectorDeletesFinishedExecutionsAndCountsThem) {
  const std::string metrics_before = Get("/metrics")->body;
  EXPECT_EQ(MetricValue(metrics_before, "stele_retention_deleted_executions_total"), 0.0)
      << metrics_before;
  std::string done = Submit({{"ffqn", kEcho}, {"params", {"old"}}});
  ASSERT_EQ(Get("/v1/executions/" + done + "/result?timeout=30")->status, 200);
  std::string pending =
      Submit({{"ffqn", kEcho}, {"params", {"later"}}, {"scheduled_at", "2999-01-01T00:00:00Z"}});
  bool gone = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!gone && std::chrono::steady_clock::now() < deadline) {
    gone = Get("/v1/executions/" + done)->status == 404;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone);
  EXPECT_EQ(Get("/v1/executions/" + pending)->status, 200);
  // The collector counts a pass after its deletes commit: the 404 may come
  // a moment before the counters move.
  std::string text;
  for (int i = 0; i < 1500; ++i) {
    text = Get("/metrics")->body;
    if (MetricValue(text, "stele_retention_deleted_trees_total") == 1.0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_THAT(text, HasSubstr("# TYPE stele_retention_deleted_executions_total counter"));
  EXPECT_EQ(MetricValue(text, "stele_retention_deleted_executions_total"), 1.0) << text;
  EXPECT_EQ(MetricValue(text, "stele_retention_deleted_trees_total"), 1.0) << text;
  EXPECT_GT(*MetricValue(text, "stele_retention_passes_total{outcome=\"ok\"}"), 0.0) << text;
  EXPECT_EQ(MetricValue(text, "stele_retention_passes_total{outcome=\"failed\"}"), 0.0) << text;
}

// Result waits and follow streams are bounded by max_waiters; while that
// many are parked (more than httplib's old fixed pool of 8 threads), every
// other request is still served.
class ApiWaitersTest : public ApiTest {
 protected:
  void SetUp() override { StartServer("max_connections = 24\nmax_waiters = 12\n"); }
};

TEST_F(ApiWaitersTest, ParkedWaitersLeaveRoomForOtherRequests) {
  constexpr int kWaiters = 12;
  std::string id =
      Submit({{"ffqn", kEcho}, {"params", {"x"}}, {"scheduled_at", "2999-01-01T00:00:00Z"}});
  std::vector<std::thread> threads;
  std::vector<int> statuses(kWaiters, 0);
  std::vector<Json> results(kWaiters);
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", server_->port());
      c.set_read_timeout(60, 0);
      auto r = c.Get(("/v1/executions/" + id + "/result?timeout=50").c_str());
      statuses[i] = r ? r->status : -1;
      if (r) results[i] = Body(r)["result"];
    });
  }
  auto waiting = [&](int n) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      auto m = Get("/metrics");
      if (m &&
          m->body.find("stele_http_waiters " + std::to_string(n) + "\n") != std::string::npos) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  ASSERT_TRUE(waiting(kWaiters));

  auto health = Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(Get("/v1/executions/" + id)->status, 200);
  EXPECT_EQ(Get("/v1/components")->status, 200);
  Submit({{"ffqn", kEcho}, {"params", {"y"}}});
  // One waiter more: refused at once, with the error envelope.
  auto over = Get("/v1/executions/" + id + "/result?timeout=50");
  ASSERT_TRUE(over);
  EXPECT_EQ(over->status, 503);
  EXPECT_EQ(ErrorKind(over), "overloaded");
  EXPECT_THAT(Body(over)["error"]["message"].get<std::string>(), HasSubstr("max_waiters"));
  EXPECT_EQ(over->get_header_value("Retry-After"), "1");
  auto follow = Get("/v1/executions/" + id + "/follow");
  ASSERT_TRUE(follow);
  EXPECT_EQ(follow->status, 503);
  EXPECT_EQ(ErrorKind(follow), "overloaded");
  // A look without waiting holds no slot.
  EXPECT_EQ(Get("/v1/executions/" + id + "/result?timeout=0")->status, 408);
  EXPECT_THAT(Get("/metrics")->body, HasSubstr("stele_http_waiters_refused_total 2\n"));

  // Finishing the execution releases every waiter with its result.
  EXPECT_EQ(Body(Put("/v1/executions/" + id + "/cancel", Json::object()))["outcome"], "cancelled");
  for (auto& t : threads) t.join();
  for (int i = 0; i < kWaiters; ++i) {
    EXPECT_EQ(statuses[i], 200) << i;
    EXPECT_EQ(results[i]["execution_error"]["kind"], "cancelled") << results[i].dump();
  }
  ASSERT_TRUE(waiting(0));
  EXPECT_EQ(Get("/v1/executions/" + id + "/result?timeout=5")->status, 200);
}

// Stop ends a parked result wait at once with 503 shutting_down.
TEST_F(ApiTest, StopEndsResultWaits) {
  std::string id =
      Submit({{"ffqn", kEcho}, {"params", {"x"}}, {"scheduled_at", "2999-01-01T00:00:00Z"}});
  int status = 0;
  std::string kind;
  std::thread waiter([&] {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(120, 0);
    auto r = c.Get(("/v1/executions/" + id + "/result?timeout=60").c_str());
    status = r ? r->status : -1;
    kind = ErrorKind(r);
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline &&
         Get("/metrics")->body.find("stele_http_waiters 1\n") == std::string::npos) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  client_.reset();
  server_->Stop();
  waiter.join();
  EXPECT_EQ(status, 503);
  EXPECT_EQ(kind, "shutting_down");
}

class ApiTokenTest : public ApiTest {
 protected:
  void SetUp() override {
    // sha256("letmein")
    StartServer("token_sha256 = \"" + Sha256Hex("letmein") + "\"\n");
  }
};

TEST_F(ApiTokenTest, BearerTokenIsRequired) {
  auto missing = Get("/v1/components");
  EXPECT_EQ(missing->status, 401);
  EXPECT_EQ(ErrorKind(missing), "unauthorized");
  client_->set_bearer_token_auth("wrong");
  EXPECT_EQ(Get("/v1/components")->status, 401);
  EXPECT_EQ(Post("/v1/executions", {{"ffqn", kEcho}, {"params", {"x"}}})->status, 401);
  client_->set_bearer_token_auth("letmein");
  EXPECT_EQ(Get("/v1/components")->status, 200);
  EXPECT_EQ(Get("/healthz")->status, 200);
  // Nothing was submitted by the unauthorised request.
  EXPECT_THAT(Body(Get("/v1/executions"))["executions"], SizeIs(0));
}

class ApiPlainTokenTest : public ApiTest {
 protected:
  void SetUp() override { StartServer("token = \"plain-token\"\n"); }
};

TEST_F(ApiPlainTokenTest, PlainToken) {
  EXPECT_EQ(Get("/v1/executions")->status, 401);
  client_->set_bearer_token_auth("plain-token");
  EXPECT_EQ(Get("/v1/executions")->status, 200);
  client_->set_bearer_token_auth("plain-token-longer");
  EXPECT_EQ(Get("/v1/executions")->status, 401);
}

TEST(ServerStartTest, BadListenAddressIsAClearError) {
  auto config = ParseConfig(
      "[api]\nlisten = \"203.0.113.1:1\"\n", "stele.toml",
      (std::filesystem::temp_directory_path() / "stele_api_badlisten").string(), ProcessEnv());
  ASSERT_TRUE(config.has_value());
  auto server = Server::Start(std::move(*config), {});
  ASSERT_FALSE(server.has_value());
  EXPECT_THAT(server.error(), HasSubstr("cannot listen"));
  std::filesystem::remove_all(std::filesystem::temp_directory_path() / "stele_api_badlisten");
}

}  // namespace
}  // namespace stele::server
