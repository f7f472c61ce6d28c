// /v1/schedules on a real server (127.0.0.1, a temp SQLite file, the system
// clock): create, the ticker firing on its own, get, list, pause, resume,
// trigger, delete, /metrics, and malformed or hostile requests.
#include <chrono>
#include <thread>

#include "server/api_test_fixture.h"

namespace stele::server::testing {
namespace {

using ::testing::HasSubstr;

class ApiSchedulesTest : public ApiTest {
 protected:
  Json EchoSchedule(const std::string& name, const std::string& expression) {
    return Json{{"name", name},
                {"schedule", expression},
                {"ffqn", kEcho},
                {"params", Json::array({"tick"})}};
  }
  // Executions of kEcho, waiting (bounded) until there are at least `n`.
  size_t WaitForEchoExecutions(size_t n) {
    size_t count = 0;
    for (int i = 0; i < 200; ++i) {
      Json page = Body(Get("/v1/executions?ffqn_prefix=test:act/ifc.echo&length=100"));
      count = page.contains("executions") ? page["executions"].size() : 0;
      if (count >= n) return count;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return count;
  }
};

TEST_F(ApiSchedulesTest, LifecycleThroughTheApi) {
  auto created = Post("/v1/schedules", EchoSchedule("every-second", "* * * * * *"));
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->body;
  Json s = Body(created);
  EXPECT_EQ(s["name"], "every-second");
  EXPECT_EQ(s["time_zone"], "UTC");
  EXPECT_EQ(s["overlap"], "skip");
  EXPECT_EQ(s["catch_up"], "last");
  EXPECT_EQ(s["source"], "api");
  EXPECT_EQ(s["paused"], false);
  EXPECT_EQ(s["params"], Json::array({"tick"}));
  EXPECT_TRUE(s["next_tick"].is_string());

  // The server's own ticker fires it (echo finishes at once: no overlap).
  // The ticker creates the execution first and records the tick after it,
  // so the schedule may name it a moment later.
  EXPECT_GE(WaitForEchoExecutions(1), 1u);
  Json got;
  for (int i = 0; i < 200; ++i) {
    got = Body(Get("/v1/schedules/every-second"));
    if (got["last_execution_id"].is_string()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(got["last_execution_id"].is_string()) << got.dump();

  Json paused = Body(Put("/v1/schedules/every-second/pause", Json::object()));
  EXPECT_EQ(paused["paused"], true);
  EXPECT_TRUE(paused["next_tick"].is_null());
  Json listed = Body(Get("/v1/schedules"));
  ASSERT_EQ(listed["schedules"].size(), 1u);
  EXPECT_EQ(listed["schedules"][0]["paused"], true);

  auto triggered = Post("/v1/schedules/every-second/trigger", Json::object());
  ASSERT_TRUE(triggered);
  EXPECT_EQ(triggered->status, 201);
  EXPECT_THAT(Body(triggered)["execution_id"].get<std::string>(), HasSubstr("E_"));

  EXPECT_EQ(Body(Put("/v1/schedules/every-second/resume", Json::object()))["paused"], false);
  auto deleted = client_->Delete("/v1/schedules/every-second");
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->status, 200);
  EXPECT_EQ(Body(deleted)["deleted"], "every-second");
  auto gone = Get("/v1/schedules/every-second");
  EXPECT_EQ(gone->status, 404);
  EXPECT_EQ(ErrorKind(gone), "not_found");

  auto metrics = Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body, HasSubstr("stele_cron_ticks_total{outcome=\"fired\"} "));
  EXPECT_THAT(metrics->body, HasSubstr("stele_cron_ticks_total{outcome=\"skipped\"} "));
}

TEST_F(ApiSchedulesTest, MalformedAndHostileRequestsWriteNothing) {
  struct Case {
    Json body;
    int status;
    std::string message;
  };
  auto with = [&](const char* key, Json value) {
    Json body = EchoSchedule("s", "0 * * * * *");
    body[key] = std::move(value);
    return body;
  };
  Json no_name = EchoSchedule("s", "0 * * * * *");
  no_name.erase("name");
  const std::vector<Case> cases = {
      {with("schedule", "61 * * * * *"), 400, "second: 61 is out of range 0-59"},
      {with("schedule", ""), 400, "expected 6 fields"},
      {with("schedule", 5), 400, "`schedule` must be a string"},
      {with("time_zone", "Mars/Base"), 400, "unknown time zone"},
      {with("time_zone", "../../etc/passwd"), 400, "unknown time zone"},
      {with("name", "../x"), 400, "invalid schedule name"},
      {with("name", std::string(200, 'a')), 400, "longer than 128"},
      {with("ffqn", "test:act/ifc.nope"), 404, "unknown ffqn"},
      {with("ffqn", kApprove), 400, "stub activity"},
      {with("params", Json::array({1})), 400, "params of `test:act/ifc.echo`"},
      {with("params", "tick"), 400, "params must be a JSON array"},
      {with("overlap", "sometimes"), 400, "overlap must be"},
      {with("catch_up_limit", -1), 400, "catch_up_limit"},
      {with("catch_up_limit", 5000), 400, "catch_up_limit"},
      {with("catch_up_limit", 0), 400, "catch_up_limit must be in 1..1000"},
      {with("catch_up_limit", "3"), 400, "catch_up_limit"},
      {with("color", "blue"), 400, "color"},
      {no_name, 400, "`name` is required"},
  };
  for (const Case& c : cases) {
    auto res = Post("/v1/schedules", c.body);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, c.status) << c.body.dump() << " -> " << res->body;
    EXPECT_THAT(res->body, HasSubstr(c.message)) << c.body.dump();
  }
  auto not_object = client_->Post("/v1/schedules", "[1]", "application/json");
  EXPECT_EQ(not_object->status, 400);
  EXPECT_EQ(Body(Get("/v1/schedules"))["schedules"].size(), 0u);

  ASSERT_EQ(Post("/v1/schedules", EchoSchedule("s", "0 0 0 1 1 *"))->status, 201);
  auto again = Post("/v1/schedules", EchoSchedule("s", "0 0 0 1 2 *"));
  EXPECT_EQ(again->status, 409);
  EXPECT_EQ(Body(Get("/v1/schedules/s"))["schedule"], "0 0 0 1 1 *");
  EXPECT_EQ(Get("/v1/schedules/a%20b")->status, 400);
  EXPECT_EQ(Put("/v1/schedules/%2e%2e/pause", Json::object())->status, 400);
  EXPECT_EQ(client_->Delete("/v1/schedules/nope")->status, 404);
  EXPECT_EQ(Post("/v1/schedules/nope/trigger", Json::object())->status, 404);
}

}  // namespace
}  // namespace stele::server::testing
