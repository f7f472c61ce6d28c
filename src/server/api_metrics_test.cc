// The HTTP API's metrics, in process (the fixture: api_test_fixture.h):
// /metrics and /healthz, the execution state gauges, the executor queue
// depth and the limits a server gets when its config sets none.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/resource.h>

#include <algorithm>
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

TEST_F(ApiTest, ComponentsHealthzMetrics) {
  Json components = Body(Get("/v1/components"));
  ASSERT_THAT(components["components"], SizeIs(3));
  EXPECT_EQ(components["components"][0]["name"], "approvals");
  EXPECT_EQ(components["components"][0]["type"], "activity_stub");
  EXPECT_EQ(components["components"][0]["functions"][0]["ffqn"], kApprove);
  EXPECT_EQ(components["components"][0]["functions"][0]["return_type"], "result<string, string>");
  EXPECT_EQ(components["components"][1]["functions"][0]["params"][0]["type"], "string");

  auto health = Get("/healthz");
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(Body(health)["status"], "ok");
  auto metrics = Get("/metrics");
  ASSERT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->body, HasSubstr("stele_components 3"));
  EXPECT_THAT(metrics->body, HasSubstr("stele_http_responses_total{code=\"200\"}"));
  EXPECT_THAT(metrics->body, HasSubstr("stele_sqlite_queued_ops"));
  EXPECT_THAT(metrics->body, HasSubstr("stele_executions{state=\"pending_at\"}"));
  EXPECT_THAT(metrics->body, HasSubstr("stele_executions{state=\"finished\"}"));
  EXPECT_THAT(metrics->body, HasSubstr("# TYPE stele_lock_latency_seconds histogram"));
  EXPECT_THAT(metrics->body, HasSubstr("stele_record_latency_seconds_count"));

  // A finished execution's outcome was recorded and measured. The executor
  // records the latency after the append that wakes the result waiter:
  // poll (bounded) instead of expecting it at once.
  const std::string records = "stele_record_latency_seconds_count{component=\"test_activities\"}";
  EXPECT_EQ(MetricValue(metrics->body, records), 0.0) << metrics->body;
  std::string id = Submit({{"ffqn", kEcho}, {"params", {"measured"}}});
  ASSERT_EQ(Get("/v1/executions/" + id + "/result?timeout=30")->status, 200);
  std::optional<double> count;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    count = MetricValue(Get("/metrics")->body, records);
    if (count && *count > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(count.has_value());
  EXPECT_EQ(*count, 1.0);
  const std::string text = Get("/metrics")->body;
  EXPECT_EQ(
      MetricValue(text,
                  "stele_record_latency_seconds_bucket{component=\"test_activities\",le=\"+Inf\"}"),
      1.0);
  EXPECT_GT(*MetricValue(text, "stele_record_latency_seconds_sum{component=\"test_activities\"}"),
            0.0);
  // Its lock was measured too (before its run; a scrape right after the
  // start may come before any executor's first lock call).
  EXPECT_THAT(text, ::testing::ContainsRegex("stele_lock_latency_seconds_bucket\\{component=\"test_"
                                             "activities\",le=\"\\+Inf\"\\} [1-9]"));
}

// /metrics re-reads the database on every scrape (snapshot age 0): the
// state gauges follow the executions.
class ApiMetricsTest : public ApiTest {
 protected:
  void SetUp() override {
    metrics_snapshot_max_age_ = std::chrono::milliseconds(0);
    StartServer("");
  }
  double State(const std::string& state) {
    auto res = Get("/metrics");
    EXPECT_EQ(res->status, 200);
    auto v = MetricValue(res->body, "stele_executions{state=\"" + state + "\"}");
    EXPECT_TRUE(v.has_value()) << res->body;
    return v.value_or(-1);
  }
};

TEST_F(ApiMetricsTest, ExecutionStateGaugesFollowTheExecutions) {
  EXPECT_EQ(State("locked"), 0);
  EXPECT_EQ(State("blocked_by_join_set"), 0);
  EXPECT_EQ(State("finished"), 0);

  // An activity that runs until cancelled: locked while it runs.
  std::string running = Submit({{"ffqn", kBlock}});
  activities_->WaitForBlocked(1);
  EXPECT_EQ(State("locked"), 1);
  EXPECT_EQ(State("pending_at"), 0);

  // A workflow awaiting a stub child: blocked; its child pending.
  core::ExecutionIdDerived child = ParentWithStubChild(/*join_next=*/true);
  std::string parent = child.SplitToParts().first.ToString();
  ASSERT_EQ(Body(Get("/v1/executions/" + parent))["pending_state"]["status"],
            "blocked_by_join_set");
  EXPECT_EQ(State("blocked_by_join_set"), 1);
  EXPECT_EQ(State("locked"), 1);
  EXPECT_EQ(State("pending_at"), 1);

  // The cancel is written before it answers: no longer locked.
  ASSERT_EQ(Body(Put("/v1/executions/" + running + "/cancel", Json::object()))["outcome"],
            "cancelled");
  EXPECT_EQ(State("locked"), 0);
  EXPECT_EQ(State("finished"), 1);

  // The child's result unblocks the parent (nothing runs test_workflows,
  // so it stays unfinished, but no longer blocked).
  ASSERT_EQ(
      Put("/v1/executions/" + child.ToString() + "/stub", {{"result", {{"ok", "yes"}}}})->status,
      200);
  EXPECT_EQ(State("blocked_by_join_set"), 0);
  EXPECT_EQ(State("finished"), 2);
  EXPECT_NE(Body(Get("/v1/executions/" + parent))["pending_state"]["status"],
            "blocked_by_join_set");
}

// An [executor] section that sets no limit (the fixture sets only
// tick_sleep) and an [api] section that sets none: the server runs with
// the executor defaults of stele/defaults.h (libstele's, but for the
// workflow slots of guest workflows) and serves
// a thousand clients waiting for results at once (issue 21: 500 clients
// collecting W5's results after a restart got 503s with the old limits of
// 256 connections and 128 waiters).
TEST_F(ApiTest, UnsetLimitsAreTheSharedDefaults) {
  auto metrics = Get("/metrics");
  ASSERT_EQ(metrics->status, 200);
  const std::string& text = metrics->body;
  EXPECT_THAT(text, HasSubstr("stele_concurrency_limit{kind=\"activity\"} " +
                              std::to_string(defaults::kMaxConcurrency) + "\n"));
  EXPECT_THAT(text, HasSubstr("stele_concurrency_limit{kind=\"workflow\"} " +
                              std::to_string(defaults::kGuestMaxWorkflowConcurrency) + "\n"));
  // 60,000 connections and 50,000 waiters, unless the hard open-file limit
  // is lower: then what fits beside the server's own 1,024 files.
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  size_t connections = 60000;
  size_t waiters = 50000;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < connections + 1024) {
    connections = static_cast<size_t>(limit.rlim_max) - 1024;
    waiters = std::min(waiters, connections * 5 / 6);
  }
  EXPECT_THAT(text, HasSubstr("stele_http_max_connections " + std::to_string(connections) + "\n"));
  EXPECT_THAT(text, HasSubstr("stele_http_max_waiters " + std::to_string(waiters) + "\n"));
}

// One activity permit: the first gate run holds it and the next two wait,
// due but unlocked — the executor's queue.
class ApiQueueTest : public ApiTest {
 protected:
  void SetUp() override { StartServer("", "max_concurrency = 1\n"); }
};

TEST_F(ApiQueueTest, MetricsReportTheExecutorQueueDepth) {
  for (int i = 0; i < 3; ++i) Submit({{"ffqn", kGate}});
  for (int i = 0; i < 2; ++i) {
    Submit({{"ffqn", kEcho}, {"params", {"later"}}, {"scheduled_at", "2999-01-01T00:00:00Z"}});
  }
  activities_->WaitForGateCount(1);
  // Settled: no permit is left, so nothing else gets locked. (The figures
  // are a snapshot of at most 5 s; this is the first scrape.)
  auto metrics = Get("/metrics");
  ASSERT_EQ(metrics->status, 200);
  const std::string& text = metrics->body;
  EXPECT_THAT(text, HasSubstr("# TYPE stele_executor_queue_depth gauge"));
  EXPECT_THAT(text, HasSubstr("stele_executor_queue_depth{component=\"test_activities\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("stele_executor_locked{component=\"test_activities\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("stele_executor_scheduled{component=\"test_activities\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("stele_runs_in_flight{kind=\"activity\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("stele_concurrency_limit{kind=\"activity\"} 1\n"));
  // Components without an executor (the stub, the executor-less workflow) have no queue.
  EXPECT_THAT(text,
              ::testing::Not(HasSubstr("stele_executor_queue_depth{component=\"approvals\"}")));
  EXPECT_THAT(
      text, ::testing::Not(HasSubstr("stele_executor_queue_depth{component=\"test_workflows\"}")));
}

}  // namespace
}  // namespace stele::server
