// The HTTP API's control operations on executions (the fixture:
// api_test_fixture.h): cancel, terminate, pause and resume, with their
// malformed inputs, which write nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "server/api_test_fixture.h"

namespace stele::server {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers
using core::Json;

// Cancel and terminate of a workflow (its end is the workflow run's; the
// e2e tests run it): malformed requests are refused writing nothing, the
// request is an event of the workflow, a second one writes nothing, a
// terminate after a cancel is written.
TEST_F(ApiTest, CancelAndTerminateAWorkflow) {
  core::ExecutionIdDerived child = ParentWithStubChild();
  const std::string parent = child.SplitToParts().first.ToString();
  const std::string events_path = "/v1/executions/" + parent + "/events?length=1000";
  const Json before = Body(Get(events_path));
  for (const Json& body :
       {Json{{"grace", "banana"}}, Json{{"grace", 5}}, Json{{"grace", "-1s"}}, Json{{"reason", 7}},
        Json{{"extra", 1}}, Json{{"reason", std::string(2000, 'x')}}}) {
    auto res = Put("/v1/executions/" + parent + "/cancel", body);
    EXPECT_EQ(res->status, 400) << body.dump() << " → " << res->body;
  }
  for (const Json& body : {Json{{"grace", "1s"}}, Json{{"extra", 1}}}) {
    EXPECT_EQ(Put("/v1/executions/" + parent + "/terminate", body)->status, 400) << body.dump();
  }
  EXPECT_EQ(Body(Get(events_path)), before) << "refused requests write nothing";

  auto requests = [&] {
    size_t n = 0;
    const Json events = Body(Get(events_path));
    for (const Json& event : events["events"]) {
      n += event.dump().find("cancel_request") != std::string::npos;
    }
    return n;
  };
  auto cancelled = Put("/v1/executions/" + parent + "/cancel", {{"grace", "10m"}, {"reason", "t"}});
  ASSERT_EQ(cancelled->status, 200) << cancelled->body;
  EXPECT_EQ(Body(cancelled)["outcome"], "cancelling");
  EXPECT_EQ(requests(), 1u);
  const Json state = Body(Get("/v1/executions/" + parent))["pending_state"];
  EXPECT_EQ(state["status"], "cancelling");
  EXPECT_EQ(state["state"], "pending_at") << "pending at once, for a run to see the request";
  EXPECT_EQ(Body(Put("/v1/executions/" + parent + "/cancel", Json::object()))["outcome"],
            "cancelling");
  EXPECT_EQ(requests(), 1u) << "a second cancel writes nothing";
  for (int i = 0; i < 2; ++i) {
    auto terminated = Put("/v1/executions/" + parent + "/terminate", Json::object());
    EXPECT_EQ(terminated->status, 200) << terminated->body;
    EXPECT_EQ(Body(terminated)["outcome"], "cancelling");
  }
  EXPECT_EQ(requests(), 2u) << "one terminate after the cancel";
}

// Pause and resume: malformed bodies write nothing; the status shows
// `paused` with the state underneath; lists filter by it; both are
// idempotent; finished is 409 and unknown 404.
TEST_F(ApiTest, PauseAndResumeAnExecution) {
  core::ExecutionIdDerived child = ParentWithStubChild(/*join_next=*/true);
  const std::string parent = child.SplitToParts().first.ToString();
  const std::string events_path = "/v1/executions/" + parent + "/events?length=1000";
  const Json before = Body(Get(events_path));
  for (const Json& body : {Json{{"reason", 7}}, Json{{"grace", "1s"}},
                           Json{{"reason", std::string(2000, 'x')}}, Json::array()}) {
    auto res = Put("/v1/executions/" + parent + "/pause", body);
    EXPECT_EQ(res->status, 400) << body.dump() << " → " << res->body;
  }
  EXPECT_EQ(Put("/v1/executions/E_not-an-id/pause", Json::object())->status, 400);
  EXPECT_EQ(Body(Get(events_path)), before) << "refused requests write nothing";

  auto paused = Put("/v1/executions/" + parent + "/pause", {{"reason", "maintenance"}});
  ASSERT_EQ(paused->status, 200) << paused->body;
  EXPECT_EQ(Body(paused)["outcome"], "paused");
  const Json state = Body(Get("/v1/executions/" + parent))["pending_state"];
  EXPECT_EQ(state["status"], "paused");
  EXPECT_EQ(state["state"], "blocked_by_join_set");
  EXPECT_TRUE(state.contains("join_set_id"));
  const Json listed = Body(Get("/v1/executions?status=paused"));
  ASSERT_EQ(listed["executions"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["executions"][0]["execution_id"], parent);
  EXPECT_EQ(Body(Get("/v1/executions?status=blocked_by_join_set"))["executions"].size(), 0u);
  EXPECT_EQ(Get("/v1/executions?status=sleeping")->status, 400);
  const size_t events = Body(Get(events_path))["events"].size();
  EXPECT_EQ(Body(Put("/v1/executions/" + parent + "/pause", Json::object()))["outcome"], "paused");
  EXPECT_EQ(Body(Get(events_path))["events"].size(), events) << "a second pause writes nothing";

  auto resumed = Put("/v1/executions/" + parent + "/resume", Json::object());
  ASSERT_EQ(resumed->status, 200) << resumed->body;
  EXPECT_EQ(Body(resumed)["outcome"], "resumed");
  EXPECT_EQ(Body(Get("/v1/executions/" + parent))["pending_state"]["status"],
            "blocked_by_join_set");
  EXPECT_NE(Get("/metrics")->body.find("stele_pauses_total{kind=\"pause\"} 1"), std::string::npos);

  const std::string finished = Submit({{"ffqn", kEcho}, {"params", {"x"}}});
  ASSERT_EQ(Get("/v1/executions/" + finished + "/result?timeout=30")->status, 200);
  auto refused = Put("/v1/executions/" + finished + "/pause", Json::object());
  EXPECT_EQ(refused->status, 409) << refused->body;
  EXPECT_EQ(Body(refused)["error"]["kind"], "already_finished") << refused->body;
  EXPECT_EQ(Put("/v1/executions/E_01KCR3SKWK5W50MA4Z2GJ9SXD4/resume", Json::object())->status, 404);
}

}  // namespace
}  // namespace stele::server
