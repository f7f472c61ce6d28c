// Durable steps (WorkflowContext::step): a function run in the workflow's
// own process whose value is recorded in the workflow's log, returned on
// replay without running the function again, and retried with the workflow
// when it fails.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>

#include "engine/sdk_test_util.h"
#include "stele/stele.h"

namespace stele {
namespace {

using testing::OkOrDie;

class StepTest : public testing::PoolEngineTest {
 protected:
  // `id`'s events, one line each: "Locked(...)", "HistoryEvent(Step(draw))",
  // a TemporarilyFailed with its reason, ...
  std::vector<std::string> Kinds(const std::string& id) {
    std::vector<std::string> out;
    for (const core::ExecutionEvent& event : Events(id)) {
      std::string line = core::ExecutionRequestToString(event.event);
      if (const auto* failed = std::get_if<core::TemporarilyFailed>(&event.event)) {
        line += " " + failed->reason;
      }
      out.push_back(std::move(line));
    }
    return out;
  }
  size_t Count(const std::string& id, std::string_view prefix) {
    size_t n = 0;
    for (const std::string& kind : Kinds(id)) n += kind.starts_with(prefix) ? 1 : 0;
    return n;
  }
};

TEST_F(StepTest, StepsRunInTheWorkflowAndAreRecordedInItsLog) {
  auto runs = std::make_shared<std::atomic<int>>(0);
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:step/wf.sum", [runs](WorkflowContext& ctx, Json params) -> Task<Json> {
        int64_t sum = 0;
        for (int i = 1; i <= 3; ++i) {
          ExecutionResult r = co_await ctx.step("add-" + std::to_string(i), [&, i] {
            ++*runs;
            return Result<Json, Json>(Json(params.at(0).get<int64_t>() * i));
          });
          sum += r.value.get<int64_t>();
        }
        ExecutionResult refused = co_await ctx.step(
            "refuse", [] { return Result<Json, Json>(Unexpected(Json("no such account"))); });
        co_return Json{{"sum", sum}, {"err", refused.value}, {"ok", refused.ok()}};
      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:step/wf.sum", Params(10)), "submit");
  ExecutionResult result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(result.value, (Json{{"sum", 60}, {"err", "no such account"}, {"ok", false}}));
  EXPECT_EQ(runs->load(), 3);
  EXPECT_EQ(Count(id, "HistoryEvent(Step("), 4u);
  EXPECT_EQ(Count(id, "HistoryEvent(JoinSetRequest"), 0u) << "a step is no child execution";
}

// Unloaded at a sleep and replayed after it, the workflow gets its steps'
// recorded values back: the functions ran once.
TEST_F(StepTest, AReplayReturnsTheRecordedValueWithoutRunningTheStepAgain) {
  auto runs = std::make_shared<std::atomic<int>>(0);
  EngineOptions options = Options();
  options.workflow_keep_warm = false;  // unloaded at the sleep, replayed after
  Engine& engine = Open(std::move(options));
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:step/wf.replay", [runs](WorkflowContext& ctx, Json) -> Task<Json> {
        ExecutionResult first = co_await ctx.step(
            "draw", [r = runs.get()] { return Result<Json, Json>(Json(100 + ++*r)); });
        co_await ctx.sleep(std::chrono::milliseconds(50));
        co_return first.value;
      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:step/wf.replay", Json::array()), "submit");
  ExecutionResult result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(result.value, Json(101));
  EXPECT_EQ(runs->load(), 1);
  EXPECT_GE(Count(id, "Locked"), 2u) << "the workflow was not replayed";
}

// A step that throws fails the run; the workflow is retried after its
// backoff and the step runs again, once more.
TEST_F(StepTest, AFailedStepIsRetriedWithTheWorkflow) {
  auto runs = std::make_shared<std::atomic<int>>(0);
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:step/wf.flaky", [runs](WorkflowContext& ctx, Json) -> Task<Json> {
        ExecutionResult r = co_await ctx.step("flaky", [r = runs.get()]() -> Result<Json, Json> {
          if (++*r == 1) throw std::runtime_error("connection reset");
          return Json("done");
        });
        co_return r.value;
      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:step/wf.flaky", Json::array()), "submit");
  ExecutionResult result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(result.value, Json("done"));
  EXPECT_EQ(runs->load(), 2);
  bool failed_with_reason = false;
  for (const std::string& kind : Kinds(id)) {
    failed_with_reason =
        failed_with_reason ||
        (kind.starts_with("TemporarilyFailed") &&
         kind.find("step `flaky` failed: it threw: connection reset") != std::string::npos);
  }
  EXPECT_TRUE(failed_with_reason) << ::testing::PrintToString(Kinds(id));
}

// A workflow whose code names another step where the log holds one is
// nondeterministic, as for any other operation.
TEST_F(StepTest, AnotherStepNameOnReplayIsNondeterminism) {
  auto version = std::make_shared<std::atomic<int>>(1);
  EngineOptions options = Options();
  options.workflow_keep_warm = false;
  Engine& engine = Open(std::move(options));
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:step/wf.changed", [version](WorkflowContext& ctx, Json) -> Task<Json> {
        const std::string name = version->load() == 1 ? "first" : "renamed";
        co_await ctx.step(name, [] { return Result<Json, Json>(Json(1)); });
        version->store(2);  // the code "changes" before the replay
        co_await ctx.sleep(std::chrono::milliseconds(20));
        co_return Json("unreachable");
      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:step/wf.changed", Json::array()), "submit");
  ExecutionResult result = Await(id);
  EXPECT_EQ(result.kind, ExecutionResult::Kind::kFailed);
  EXPECT_EQ(result.failure_kind, "nondeterminism_detected") << result.ToString();
}

}  // namespace
}  // namespace stele
