// Cancellation reaching what a workflow leaves behind (docs/model.md §8.4,
// §8.5, §9.1): a join-set close stops a running activity of this process
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
    WF_TRY(auto got, run.Get(child, BlockingFfqn()));
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

// How a workflow fails for good in the tests below.
enum class Failure { kTrap, kUnknownFunction, kClosedJoinSet, kNondeterminism };

std::string FailureName(Failure failure) {
  switch (failure) {
    case Failure::kTrap:
      return "trap";
    case Failure::kUnknownFunction:
      return "unknown function";
    case Failure::kClosedJoinSet:
      return "submit to a closed join set";
    case Failure::kNondeterminism:
      return "nondeterminism";
  }
  return "?";
}

// sleep_activity_submit_then_trap_should_cancel_the_activity, for each way
// a workflow fails permanently: the activity and the delay it submitted
// and never awaited end cancelled — whether the submissions were written
// already (batching 0) or still cached when it failed (batching 100) — and
// the activity never runs.
TEST_P(WorkflowCancelTest, AWorkflowFailingForGoodCancelsItsUnawaitedActivitiesAndDelays) {
  for (const Failure failure : {Failure::kTrap, Failure::kUnknownFunction, Failure::kClosedJoinSet,
                                Failure::kNondeterminism}) {
    for (const uint32_t batching : {0u, 100u}) {
      SCOPED_TRACE(FailureName(failure) + ", batching " + std::to_string(batching));
      WorkflowRunOptions options = TestOptions(std::get<1>(GetParam()));
      options.non_blocking_event_batching = batching;
      auto diverge = std::make_shared<bool>(false);
      TestEnv env(std::get<0>(GetParam()), options, [failure, diverge](WorkflowRun& run) {
        WF_TRY(auto js, run.CreateJoinSet());
        WF_TRY(auto child, run.SubmitChild(js, ActivityFfqn(), core::Json::array({1})));
        WF_TRY(
            auto delay,
            run.SubmitDelay(js, core::HistoryEventScheduleAt::In(core::Duration::FromSecs(100))));
        switch (failure) {
          case Failure::kTrap:
            return run.Trap("panic");
          case Failure::kUnknownFunction: {
            WF_TRY(auto result, run.Call(*core::FunctionFqn::Parse("testing:workflow/ifc.nope"),
                                         core::Json::array()));
            return run.Finish(result);
          }
          case Failure::kClosedJoinSet: {
            WF_TRY(auto other, run.CreateJoinSet());
            WF_TRY_VOID(run.CloseJoinSet(other));
            WF_TRY(auto late, run.SubmitChild(other, ActivityFfqn(), core::Json::array()));
            return run.Finish(OkValue(late.ToString()));
          }
          case Failure::kNondeterminism:
            if (!*diverge) {
              WF_TRY(auto slept,
                     run.Sleep(core::HistoryEventScheduleAt::In(core::Duration::FromSecs(1))));
              return run.Finish(OkValue("first version"));
            }
            WF_TRY(uint64_t drawn, run.RandomU64(0, 10));  // the replay asks for something else
            return run.Finish(OkValue(drawn));
        }
        return run.Trap("unreachable");
      });
      const core::ExecutionId id = core::ExecutionId::Generate();
      env.CreateWorkflow(id);
      env.TickWorkflows();  // no activity tick: the activity could only run if never cancelled
      if (failure == Failure::kNondeterminism) {
        *diverge = true;  // "deploy" code that diverges from the log
        env.clock().Advance(1s);
        env.TickWatcher();
        env.TickWorkflows();
      }
      ASSERT_TRUE(env.Log(id).pending_state.IsFinished());
      const auto* error = std::get_if<core::FinishedExecutionError>(&(holder_ = env.Result(id)));
      ASSERT_NE(error, nullptr);
      const core::JoinSetId js = *core::JoinSetId::Parse("g:1");
      const auto child = id.NextLevel(js, 1);
      EXPECT_TRUE(IsCancelled(holder_ = env.Result(child)));
      EXPECT_EQ(FinishedCount(env, child), 1);
      EXPECT_EQ(DelayOutcome(env, id, core::DelayId(id, js, 2)), false);
      env.Round();
      EXPECT_EQ(env.activity_runs(), 0u);
    }
  }
}

// A trap stops a running activity of this process at once, as a close
// does (its token fires through the CancelRegistry).
TEST_P(WorkflowCancelTest, ATrapStopsItsRunningActivity) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto js, run.CreateJoinSet());
    WF_TRY(auto child, run.SubmitChild(js, BlockingFfqn(), core::Json::array()));
    WF_TRY(auto slept, run.Sleep(core::HistoryEventScheduleAt::In(core::Duration::FromSecs(1))));
    return run.Trap("panic after the sleep");
  });
  env->CreateWorkflow(id_);
  env->Round();
  env->SpawnBlocking();
  ASSERT_TRUE(env->blocking_started().WaitFor());
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_TRUE(std::holds_alternative<core::FinishedExecutionError>(holder_ = env->Result(id_)));
  EXPECT_TRUE(env->blocking_cancelled().WaitFor()) << "the running activity's token never fired";
  ASSERT_TRUE(Eventually([&] { return env->BlockingInFlight() == 0; }));
  const auto child = id_.NextLevel(*core::JoinSetId::Parse("g:1"), 1);
  EXPECT_TRUE(IsCancelled(holder_ = env->Result(child)));
  EXPECT_EQ(FinishedCount(*env, child), 1);
}

// What is not a failure of the workflow cancels nothing: a database error
// (the run writes nothing at all; the lock expires and a replay goes on)
// and kCancelled (the executor stopping the run, e.g. at shutdown).
TEST_P(WorkflowCancelTest, DbErrorsAndStoppedRunsCancelNothing) {
  for (const auto kind : {Interruption::Kind::kDbError, Interruption::Kind::kCancelled,
                          Interruption::Kind::kBlocked}) {
    SCOPED_TRACE(std::string(InterruptionKindName(kind)));
    WorkflowRunOptions options = TestOptions(std::get<1>(GetParam()));
    options.non_blocking_event_batching = 0;  // each submission is written at once
    TestEnv env(std::get<0>(GetParam()), options,
                [](WorkflowRun& run) { return run.Trap("unused"); });
    const core::ExecutionId id = core::ExecutionId::Generate();
    env.CreateWorkflow(id);
    auto conn = Must(env.pool().Connection());
    WorkflowRun run(env.LockedContext(id),
                    WorkflowRunDeps{conn.get(), &env.clock(), &env.registry()}, options);
    auto js = run.CreateJoinSet();
    ASSERT_TRUE(js);
    ASSERT_TRUE(run.SubmitChild(*js, ActivityFfqn(), core::Json::array()));
    ASSERT_TRUE(
        run.SubmitDelay(*js, core::HistoryEventScheduleAt::In(core::Duration::FromSecs(100))));
    const storage::ExecutionLog before = env.Log(id);
    const executor::WorkerResult result = run.ToWorkerResult(Interruption{kind, "injected", {}});
    EXPECT_EQ(env.Log(id), before) << result.ToString();
    const auto child = id.NextLevel(*js, 1);
    EXPECT_EQ(env.Log(child).pending_state.StateName(), "PendingAt");
  }
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
