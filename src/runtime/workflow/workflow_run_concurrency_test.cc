// kAwait on real threads: the workflow run waits warm (response
// subscription) while the test thread completes its child; the same run
// continues without being unloaded and replayed.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "runtime/workflow/workflow_test_util.h"

namespace stele::runtime::workflow::testing {
namespace {

using namespace std::chrono_literals;  // NOLINT

class WarmAwaitTest : public ::testing::TestWithParam<Backend> {};

// Polls `done` every few milliseconds for at most 10 s (only a broken
// engine waits that long; nothing asserts on elapsed time).
template <class F>
bool Eventually(F done) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return done();
}

TEST_P(WarmAwaitTest, ResponseArrivingWhileWarmContinuesTheSameRun) {
  WorkflowRunOptions options;
  options.blocking_strategy = BlockingStrategy::kAwait;
  options.subscription_interruption = 50ms;
  options.max_warm_wait = 10s;  // the ManualClock never ends the lease
  TestEnv env(GetParam(), options, [](WorkflowRun& run) {
    WF_TRY(auto first, run.Call(ActivityFfqn(), core::Json::array({21})));
    const int64_t half = std::get<core::ReturnValueOk>(first).ok->get<int64_t>();
    WF_TRY(auto second, run.Call(ActivityFfqn(), core::Json::array({half})));
    return run.Finish(second);
  });
  const core::ExecutionId id = core::ExecutionId::Generate();
  env.CreateWorkflow(id);
  env.SpawnWorkflows();
  for (int call = 1; call <= 2; ++call) {
    const auto join_set =
        *core::JoinSetId::Create(core::JoinSetKind::kOneOff, std::to_string(call) + "-activity");
    const core::ExecutionId child = id.NextLevel(join_set, 1);
    ASSERT_TRUE(Eventually([&] { return env.db().Get(child).has_value(); })) << "call " << call;
    env.TickActivities();
  }
  ASSERT_TRUE(Eventually([&] { return env.Log(id).pending_state.IsFinished(); }));
  EXPECT_EQ(env.Result(id), OkValue(84));
  int locks = 0;
  for (const auto& name : env.EventNames(id)) locks += name == "Locked";
  EXPECT_EQ(locks, 1) << "the run was unloaded and replayed";
  EXPECT_EQ(env.activity_runs(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Backends, WarmAwaitTest,
                         ::testing::ValuesIn(executor::testing::AllBackends()),
                         executor::testing::BackendName);

}  // namespace
}  // namespace stele::runtime::workflow::testing
