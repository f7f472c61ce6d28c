// Cancellation reaching what a workflow leaves behind (reference/obelisk.md
// §2.11, §4.6): a join-set close stops a running activity of this process
// at once (its token fires through the CancelRegistry), and a workflow that
// fails permanently cancels its unawaited activities and delays. Every
// backend, both blocking strategies, the real executor and watcher on a
// ManualClock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <tuple>

#include "runtime/workflow/workflow_test_util.h"
#include "storage/operations.h"

namespace stele::runtime::workflow::testing {
namespace {

using namespace std::chrono_literals;  // NOLINT

using Param = std::tuple<Backend, BlockingStrategy>;

class WorkflowCancelTest : public ::testing::TestWithParam<Param> {
 protected:
  std::unique_ptr<TestEnv> Env(Script script) {
    return std::make_unique<TestEnv>(std::get<0>(GetParam()), TestOptions(std::get<1>(GetParam())),
                                     std::move(script));
  }
  // Finished events in the log of `id`.
  static int FinishedCount(TestEnv& env, const core::ExecutionId& id) {
    int finished = 0;
    for (const auto& event : env.Log(id).events) {
      finished += std::holds_alternative<core::Finished>(event.event) ? 1 : 0;
    }
    return finished;
  }
  static bool IsCancelled(const core::SupportedFunctionReturnValue& value) {
    const auto* error = std::get_if<core::FinishedExecutionError>(&value);
    return error != nullptr && error->kind == core::ExecutionFailureKind::kCancelled;
  }
  // The response of `delay` in `id`'s log: true fired, false cancelled.
  static std::optional<bool> DelayOutcome(TestEnv& env, const core::ExecutionId& id,
                                          const core::DelayId& delay) {
    for (const auto& response : env.Log(id).responses) {
      const auto* d = std::get_if<core::DelayFinished>(&response.event.event);
      if (d != nullptr && d->delay_id == delay) return d->ok;
    }
    return std::nullopt;
  }
  // Waits (bounded) for `done`; a broken engine is reported, not waited on.
  template <class F>
  static bool Eventually(F done) {
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < until) {
      if (done()) return true;
      std::this_thread::sleep_for(1ms);
    }
    return done();
  }

  const core::ExecutionId id_ = core::ExecutionId::Generate();
  core::SupportedFunctionReturnValue holder_;
};

// A running activity of this process stops as soon as the join set holding
// it closes, instead of running (and holding its permit) until its 1 h
// deadline; its execution is Finished(cancelled) exactly once.
TEST_P(WorkflowCancelTest, ClosingAJoinSetStopsItsRunningActivity) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto js, run.CreateJoinSet());
    WF_TRY(auto child, run.SubmitChild(js, BlockingFfqn(), core::Json::array()));
    // Gives the test time to start the activity before the close.
    WF_TRY(auto slept, run.Sleep(core::HistoryEventScheduleAt::In(core::Duration::FromSecs(1))));
    WF_TRY_VOID(run.CloseJoinSet(js));
    auto got = run.Get(child, BlockingFfqn());
    return run.Finish(OkValue(got.has_value() ? "closed" : "not processed"));
  });
  env->CreateWorkflow(id_);
  env->Round();  // the submission and the sleep are written; blocked
  const auto child = id_.NextLevel(*core::JoinSetId::Parse("g:1"), 1);
  env->SpawnBlocking();
  ASSERT_TRUE(env->blocking_started().WaitFor()) << "the activity did not start";
  ASSERT_FALSE(env->blocking_cancelled().is_open());

  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(env->Result(id_), OkValue("closed"));
  EXPECT_TRUE(env->blocking_cancelled().WaitFor()) << "the running activity's token never fired";
  ASSERT_TRUE(Eventually([&] { return env->BlockingInFlight() == 0; }));
  EXPECT_TRUE(IsCancelled(holder_ = env->Result(child)));
  EXPECT_EQ(FinishedCount(*env, child), 1) << "the stopped run recorded nothing over the cancel";
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return std::string(std::get<0>(info.param) == Backend::kMemory ? "Memory" : "Sqlite") +
         StrategyName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Backends, WorkflowCancelTest,
                         ::testing::Combine(::testing::ValuesIn(executor::testing::AllBackends()),
                                            ::testing::Values(BlockingStrategy::kInterrupt,
                                                              BlockingStrategy::kAwait)),
                         ParamName);

}  // namespace
}  // namespace stele::runtime::workflow::testing
