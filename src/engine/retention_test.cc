// Retention through libstele (EngineOptions::retention_finished_after,
// Engine::CollectFinished) on a manual clock: finished workflows go with
// their children, running ones and young ones stay, bad ages are refused.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "base/time.h"
#include "engine/sdk_test_util.h"
#include "stele/stele.h"

namespace stele {
namespace {

using std::chrono::hours;
using testing::OkOrDie;
using testing::PoolEngineTest;

constexpr const char* kRetEcho = "test:retention/api.echo";
constexpr const char* kRetFlow = "test:retention/wf.flow";
constexpr const char* kRetWaits = "test:retention/wf.waits";
constexpr const char* kRetApproval = "test:retention/human.ok";

class RetentionEngineTest : public PoolEngineTest {
 protected:
  // An engine on the manual clock with an activity, a workflow calling it
  // and a workflow waiting on a stub that never comes.
  Engine& OpenWithFunctions(EngineOptions options) {
    options.clock = clock_;
    options.start_watcher = false;
    options.workflow_keep_warm = false;
    Engine& engine = Open(std::move(options));
    EXPECT_TRUE(engine.RegisterActivity(
        kRetEcho, [](ActivityContext&, const Json& params) { return ActivityResult(params); }));
    EXPECT_TRUE(engine.RegisterStub(kRetApproval));
    EXPECT_TRUE(engine.RegisterWorkflow(kRetFlow, [](WorkflowContext& ctx, Json p) -> Task<Json> {
      auto r = co_await ctx.call(kRetEcho, p);
      co_return r.value;
    }));
    EXPECT_TRUE(engine.RegisterWorkflow(kRetWaits, [](WorkflowContext& ctx, Json) -> Task<Json> {
      auto r = co_await ctx.call(kRetApproval, Json::array());
      co_return r.value;
    }));
    return engine;
  }
  bool Gone(const std::string& id) {
    auto status = engine_->GetStatus(id);
    return !status && status.error().kind == Error::Kind::kNotFound;
  }
  // How many executions the store holds, children included.
  size_t Stored() {
    const core::ExecutionListPagination all =
        core::Pagination<std::optional<core::ExecutionId>>::OlderThan(1000, std::nullopt, false);
    auto rows = OkOrDie(api_->ListExecutions(std::nullopt, false, all), "list");
    return rows.size();
  }

  std::shared_ptr<ManualClock> clock_ =
      std::make_shared<ManualClock>(DateTimeFromMillis(1'700'000'000'000));
};

TEST_F(RetentionEngineTest, CollectFinishedDeletesFinishedTreesOnly) {
  Engine& engine = OpenWithFunctions(Options());
  ASSERT_TRUE(engine.Start());
  const std::string done = OkOrDie(engine.Submit(kRetFlow, Params(7)), "submit");
  EXPECT_EQ(Await(done).value, Params(7));
  const std::string waiting = OkOrDie(engine.Submit(kRetWaits, Json::array()), "submit");
  ASSERT_TRUE(testing::WaitForState(engine, waiting, "BlockedByJoinSet"));
  ASSERT_EQ(Stored(), 4u);  // two workflows, the activity, the stub child

  // Too young: nothing goes.
  auto none = OkOrDie(engine.CollectFinished(hours(1)), "collect");
  EXPECT_EQ(none.executions, 0u);
  clock_->Advance(hours(2));
  auto collected = OkOrDie(engine.CollectFinished(hours(1)), "collect");
  EXPECT_EQ(collected.top_level, 1u);
  EXPECT_EQ(collected.executions, 2u);  // the workflow and its activity
  EXPECT_TRUE(Gone(done));
  EXPECT_FALSE(Gone(waiting));
  EXPECT_EQ(Stored(), 2u);
  // Idempotent.
  EXPECT_EQ(OkOrDie(engine.CollectFinished(hours(1)), "collect").executions, 0u);
}

TEST_F(RetentionEngineTest, BadAgesAreRefused) {
  Engine& engine = OpenWithFunctions(Options());
  for (auto age : {std::chrono::milliseconds(0), std::chrono::milliseconds(-5)}) {
    auto result = engine.CollectFinished(age);
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().kind, Error::Kind::kInvalidArgument) << result.error().ToString();
    EXPECT_NE(result.error().message.find("must be positive"), std::string::npos);
  }
  EngineOptions options = Options();
  options.retention_finished_after = std::chrono::milliseconds(0);
  engine_.reset();
  auto opened = Engine::Open(options);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().kind, Error::Kind::kInvalidArgument);
  EXPECT_NE(opened.error().message.find("finished_after"), std::string::npos)
      << opened.error().ToString();
}

TEST_F(RetentionEngineTest, TheCollectorDeletesWhatFinishedLongEnoughAgo) {
  EngineOptions options = Options();
  options.retention_finished_after = hours(24);
  options.retention_interval = std::chrono::milliseconds(20);
  Engine& engine = OpenWithFunctions(std::move(options));
  ASSERT_TRUE(engine.Start());
  const std::string done = OkOrDie(engine.Submit(kRetFlow, Params(1)), "submit");
  EXPECT_EQ(Await(done).value, Params(1));
  const std::string waiting = OkOrDie(engine.Submit(kRetWaits, Json::array()), "submit");
  ASSERT_TRUE(testing::WaitForState(engine, waiting, "BlockedByJoinSet"));
  clock_->Advance(hours(25));
  EXPECT_TRUE(testing::WaitUntil([&] { return Gone(done); }));
  EXPECT_FALSE(Gone(waiting));
  EXPECT_EQ(Stored(), 2u);
}

}  // namespace
}  // namespace stele
