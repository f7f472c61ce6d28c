// An execution's own deadline and retry policy through POST /v1/executions
// (docs/api.md, `timeout` / `deadline` / `retry`): malformed input is a 400
// naming the field with nothing written; accepted input is stored with the
// execution (its Created event) and enforced.
#include <chrono>
#include <thread>

#include "server/api_test_fixture.h"

namespace stele::server::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

class ApiPolicyTest : public ApiTest {};

TEST_F(ApiPolicyTest, MalformedDeadlinesAndRetryPoliciesAreRefusedAndWriteNothing) {
  struct Case {
    Json extra;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {{{"deadline", "tomorrow"}}, "`deadline` must be an RFC 3339"},
      {{{"deadline", 17}}, "`deadline` must be an RFC 3339"},
      {{{"deadline", "2001-01-01T00:00:00Z"}}, "is not in the future"},
      {{{"timeout", "-5s"}}, "`timeout`"},
      {{{"timeout", "0s"}}, "timeout must be positive"},
      {{{"timeout", 30}}, "`timeout` must be a duration string"},
      {{{"timeout", "banana"}}, "`timeout`"},
      {{{"timeout", "1m"}, {"deadline", "2999-01-01T00:00:00Z"}}, "not both"},
      {{{"retry", 3}}, "`retry` must be an object"},
      {{{"retry", {{"max_retries", -1}}}}, "max_retries must be 0 to 1000000"},
      {{{"retry", {{"max_retries", "3"}}}}, "`retry.max_retries` must be an integer"},
      {{{"retry", {{"backoff", "-1s"}}}}, "`retry.backoff`"},
      {{{"retry", {{"max_backoff", "soon"}}}}, "`retry.max_backoff`"},
      {{{"retry", {{"jitter_percent", 101}}}}, "retry_jitter_percent must be 0 to 100"},
      {{{"retry", {{"tries", 3}}}}, "unknown field `tries`"},
  };
  for (const Case& c : cases) {
    Json body = {{"ffqn", kEcho}, {"params", {"a"}}};
    for (const auto& [key, value] : c.extra.items()) body[key] = value;
    auto res = Post("/v1/executions", body);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << body.dump() << " → " << res->body;
    EXPECT_EQ(ErrorKind(res), "validation") << res->body;
    Json error = Body(res);
    ASSERT_TRUE(error.contains("error")) << res->body;
    EXPECT_THAT(error["error"]["message"].get<std::string>(), HasSubstr(c.message_part))
        << body.dump();
  }
  EXPECT_THAT(Body(Get("/v1/executions"))["executions"], SizeIs(0));
}

// Accepted: the Created event carries the policy; a timeout becomes the
// instant it ends at.
TEST_F(ApiPolicyTest, TheDeadlineAndRetryPolicyAreStoredWithTheExecution) {
  const std::string id = Submit({{"ffqn", kEcho},
                                 {"params", {"a"}},
                                 {"scheduled_at", "2999-01-01T00:00:00Z"},
                                 {"deadline", "2999-06-01T00:00:00Z"},
                                 {"retry", {{"max_retries", 0}, {"max_backoff", "1m"}}}});
  ASSERT_FALSE(id.empty());
  Json events = Body(Get("/v1/executions/" + id + "/events"));
  ASSERT_TRUE(events.contains("events")) << events.dump();
  const Json& created = events["events"][0]["event"]["created"];
  EXPECT_EQ(created["policy"]["deadline"], "2999-06-01T00:00:00Z") << created.dump();
  EXPECT_EQ(created["policy"]["retry"]["max_retries"], 0) << created.dump();
  EXPECT_EQ(created["policy"]["retry"]["max_backoff"], (Json{{"secs", 60}, {"nanos", 0}}));

  const std::string timed = Submit({{"ffqn", kEcho}, {"params", {"b"}}, {"timeout", "10m"}});
  Json timed_events = Body(Get("/v1/executions/" + timed + "/events"));
  EXPECT_TRUE(timed_events["events"][0]["event"]["created"]["policy"]["deadline"].is_string())
      << timed_events.dump();
}

// An execution past its deadline ends `timed_out`, and
// stele_deadlines_expired_total counts it once (docs/api.md, "Metrics").
TEST_F(ApiPolicyTest, AnExpiredDeadlineEndsTheExecutionAndMovesTheDeadlineCounter) {
  EXPECT_NE(Get("/metrics")->body.find("stele_deadlines_expired_total 0\n"), std::string::npos);
  // Scheduled far ahead, so only its deadline can end it.
  const std::string id = Submit({{"ffqn", kEcho},
                                 {"params", {"late"}},
                                 {"scheduled_at", "2999-01-01T00:00:00Z"},
                                 {"timeout", "200ms"}});
  ASSERT_FALSE(id.empty());
  auto result = Get("/v1/executions/" + id + "/result?timeout=30");
  ASSERT_EQ(result->status, 200) << result->body;
  EXPECT_EQ(Body(result)["result"]["execution_error"]["kind"], "timed_out") << result->body;
  // The watcher counts the deadline after its write, which the result
  // wait may see first.
  bool counted = false;
  for (int i = 0; i < 200 && !counted; ++i) {
    counted = Get("/metrics")->body.find("stele_deadlines_expired_total 1\n") != std::string::npos;
    if (!counted) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(counted) << Get("/metrics")->body;
}

}  // namespace
}  // namespace stele::server::testing
