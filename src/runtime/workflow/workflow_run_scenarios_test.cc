// More scenarios of the workflow worker and its event history
// (docs/model.md §6–§9) that need no WASM: stubs racing delays in one join
// set, join sets closed in scope, a stub of an execution that does not
// exist, a sleep surviving an executor restart, and the determinism of
// closing many join sets. Every backend, both blocking strategies, the real
// executor and watcher on a ManualClock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/workflow/workflow_test_util.h"

namespace stele::runtime::workflow::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;  // NOLINT

using Param = std::tuple<Backend, BlockingStrategy>;

core::HistoryEventScheduleAt In(core::Duration d) { return core::HistoryEventScheduleAt::In(d); }

core::JoinSetId Named(const std::string& name) {
  return *core::JoinSetId::Create(core::JoinSetKind::kNamed, name);
}

class WorkflowScenarioTest : public ::testing::TestWithParam<Param> {
 protected:
  std::unique_ptr<TestEnv> Env(Script script) {
    return std::make_unique<TestEnv>(std::get<0>(GetParam()), TestOptions(std::get<1>(GetParam())),
                                     std::move(script));
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
  // The join sets of the closing JoinNexts of `id`, in log order.
  static std::vector<std::string> ClosingJoinNexts(TestEnv& env, const core::ExecutionId& id) {
    std::vector<std::string> closing;
    for (const auto& event : env.History(id)) {
      const auto* next = std::get_if<core::HistoryJoinNext>(&event);
      if (next != nullptr && next->closing) closing.push_back(next->join_set_id.ToString());
    }
    return closing;
  }
  static int FinishedCount(TestEnv& env, const core::ExecutionId& id) {
    int finished = 0;
    for (const auto& event : env.Log(id).events) {
      finished += std::holds_alternative<core::Finished>(event.event) ? 1 : 0;
    }
    return finished;
  }

  const core::ExecutionId id_ = core::ExecutionId::Generate();
  core::SupportedFunctionReturnValue holder_;
};

// stub_submit_race_join_next_stub: a stub activity and a delay race in one
// join set; the stub's result is written at once, so JoinNext returns it,
// `Get` finds it among the processed responses, and closing the join set at
// the end cancels the delay.
TEST_P(WorkflowScenarioTest, StubSubmitRaceJoinNextStub) {
  for (const bool stub_ok : {true, false}) {
    SCOPED_TRACE(stub_ok ? "stub ok" : "stub err");
    const core::SupportedFunctionReturnValue value =
        stub_ok ? OkValue("ok") : core::SupportedFunctionReturnValue(core::ReturnValueErr{});
    const core::ExecutionId id = core::ExecutionId::Generate();
    auto env = Env([value](WorkflowRun& run) {
      WF_TRY(auto js, run.CreateJoinSet());
      WF_TRY(auto child, run.SubmitChild(js, StubFfqn(), core::Json::array({"some param"})));
      WF_TRY(auto delay, run.SubmitDelay(js, In(core::Duration::FromMillis(10))));
      WF_TRY(auto stubbed, run.Stub(StubFfqn(), child, value));
      if (!stubbed) return run.Trap("the stub must accept its first value");
      WF_TRY(auto next, run.JoinNext(js));
      if (!next) return run.Trap("two submissions, nothing processed yet");
      const auto* response = std::get_if<ChildResponse>(&*next);
      if (response == nullptr || response->child_execution_id != child) {
        return run.Trap("the delay won the race");
      }
      WF_TRY(auto got, run.Get(child, StubFfqn()));
      if (!got || *got != response->result || *got != value) return run.Trap("get");
      return run.Finish(OkValue(delay.ToString()));
    });
    env->CreateWorkflow(id);
    ASSERT_TRUE(env->RunToCompletion(id));
    const auto* ok = std::get_if<core::ReturnValueOk>(&(holder_ = env->Result(id)));
    ASSERT_NE(ok, nullptr) << core::ExecutionRequestToString(env->Log(id).events.back().event);
    const core::DelayId delay(id, *core::JoinSetId::Parse("g:1"), 2);
    EXPECT_EQ(ok->ok, core::Json(delay.ToString()));
    EXPECT_EQ(DelayOutcome(*env, id, delay), false) << "closing cancels the unawaited delay";
    EXPECT_THAT(ClosingJoinNexts(*env, id), ElementsAre("g:1"));
  }
}

// stub_submit_race_join_next_delay: nobody stubs the activity, so the delay
// answers first; closing the join set cancels the stub activity, whose
// cancelled result `Get` then finds.
TEST_P(WorkflowScenarioTest, StubSubmitRaceJoinNextDelay) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto js, run.CreateJoinSet());
    WF_TRY(auto child, run.SubmitChild(js, StubFfqn(), core::Json::array({"some param"})));
    WF_TRY(auto delay, run.SubmitDelay(js, In(core::Duration::FromMillis(10))));
    WF_TRY(auto next, run.JoinNext(js));
    const auto* fired = next ? std::get_if<DelayResponse>(&*next) : nullptr;
    if (fired == nullptr || fired->delay_id != delay || !fired->ok) {
      return run.Trap("the delay must answer first, not cancelled");
    }
    WF_TRY(auto before, run.Get(child, StubFfqn()));
    if (before) return run.Trap("the stub's result is not processed yet");
    WF_TRY_VOID(run.CloseJoinSet(js));
    WF_TRY(auto got, run.Get(child, StubFfqn()));
    if (!got) return run.Trap("closing processed the cancelled activity's response");
    return run.Finish(*got);
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_TRUE(IsCancelled(holder_ = env->Result(id_)))
      << core::ExecutionRequestToString(env->Log(id_).events.back().event);
  const auto child = id_.NextLevel(*core::JoinSetId::Parse("g:1"), 1);
  EXPECT_TRUE(IsCancelled(holder_ = env->Result(child)));
  EXPECT_EQ(FinishedCount(*env, child), 1);
}

// stub_join_next_in_scope: join sets closed as a scope ends (a: a stub and
// a delay, both cancelled; b: fully awaited, so closing writes nothing)
// and the ones left open closed when the workflow returns, in reverse
// creation order (c, then f).
TEST_P(WorkflowScenarioTest, StubJoinNextInScope) {
  auto env = Env([](WorkflowRun& run) {
    {
      WF_TRY(auto a, run.CreateNamedJoinSet("a"));
      if (!a) return run.Trap("a");
      WF_TRY(auto exe_a, run.SubmitChild(*a, StubFfqn(), core::Json::array({"a"})));
      WF_TRY(auto delay_a, run.SubmitDelay(*a, In(core::Duration::FromSecs(86'400))));
      WF_TRY(auto b, run.CreateNamedJoinSet("b"));
      if (!b) return run.Trap("b");
      WF_TRY(auto exe_b, run.SubmitChild(*b, StubFfqn(), core::Json::array({"b"})));
      WF_TRY(auto stubbed, run.Stub(StubFfqn(), exe_b, core::ReturnValueErr{}));
      if (!stubbed) return run.Trap("stub b");
      WF_TRY(auto response_b, run.JoinNext(*b));
      const auto* child_b = response_b ? std::get_if<ChildResponse>(&*response_b) : nullptr;
      if (child_b == nullptr || child_b->child_execution_id != exe_b ||
          !std::holds_alternative<core::ReturnValueErr>(child_b->result)) {
        return run.Trap("b's response");
      }
      WF_TRY(auto f, run.CreateNamedJoinSet("f"));
      if (!f) return run.Trap("f");
      WF_TRY(auto exe_f, run.SubmitChild(*f, StubFfqn(), core::Json::array({"f"})));
      WF_TRY(auto delay_f, run.SubmitDelay(*f, In(core::Duration::FromSecs(86'400))));
      // End of scope: b, then a (f is left open).
      WF_TRY_VOID(run.CloseJoinSet(*b));
      WF_TRY_VOID(run.CloseJoinSet(*a));
    }
    WF_TRY_VOID(run.Log(LogLevel::kInfo, "after scope closed"));
    WF_TRY(auto c, run.CreateNamedJoinSet("c"));
    if (!c) return run.Trap("c");
    WF_TRY(auto exe_c, run.SubmitChild(*c, StubFfqn(), core::Json::array({"c"})));
    return run.Finish(OkValue("done"));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(env->Result(id_), OkValue("done"));
  EXPECT_THAT(ClosingJoinNexts(*env, id_), ElementsAre("n:a", "n:a", "n:c", "n:f", "n:f"));
  for (const char* name : {"a", "c", "f"}) {
    const auto child = id_.NextLevel(Named(name), 1);
    EXPECT_TRUE(IsCancelled(holder_ = env->Result(child))) << name;
  }
  EXPECT_TRUE(
      std::holds_alternative<core::ReturnValueErr>(env->Result(id_.NextLevel(Named("b"), 1))));
  for (const char* name : {"a", "f"}) {
    EXPECT_EQ(DelayOutcome(*env, id_, core::DelayId(id_, Named(name), 2)), false) << name;
  }
}

// stub_not_found: stubbing a child execution that was never submitted is a
// permanent failure of the workflow.
TEST_P(WorkflowScenarioTest, StubNotFound) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto js, run.CreateJoinSet());
    const core::ExecutionIdDerived never_submitted = run.execution_id().NextLevel(js, 1);
    WF_TRY(auto stubbed, run.Stub(StubFfqn(), never_submitted, OkValue("x")));
    return run.Finish(OkValue(stubbed.has_value()));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  const auto* error = std::get_if<core::FinishedExecutionError>(&(holder_ = env->Result(id_)));
  ASSERT_NE(error, nullptr);
  EXPECT_THAT(error->reason.value_or(""), HasSubstr("imported function call error"));
  EXPECT_THAT(error->reason.value_or(""), HasSubstr("not found"));
  EXPECT_FALSE(env->db().Get(id_.NextLevel(*core::JoinSetId::Parse("g:1"), 1)).has_value());
}

// sleep_should_be_persisted_after_executor_restart, deterministically: the
// sleep is written, the executor goes away, a new one (another executor
// id) finishes the workflow once the clock passes the delay's expiry.
TEST_P(WorkflowScenarioTest, SleepPersistedAcrossAnExecutorRestart) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto slept, run.Sleep(In(core::Duration::FromSecs(10))));
    if (!slept) return run.Trap("the sleep was cancelled");
    return run.Finish(OkValue(FormatRfc3339(*slept)));
  });
  env->CreateWorkflow(id_);
  env->TickWorkflows();
  EXPECT_EQ(env->Log(id_).pending_state.StateName(), "BlockedByJoinSet");
  env->RestartWorkflowExecutor();
  env->clock().Advance(10s);
  env->TickWatcher();    // the delay fires
  env->TickWorkflows();  // the new executor replays the sleep and finishes
  ASSERT_TRUE(env->Log(id_).pending_state.IsFinished());
  EXPECT_EQ(env->Result(id_), OkValue(FormatRfc3339(kT0 + 10s)));
  EXPECT_THAT(env->EventNames(id_),
              ElementsAre("Created", "Locked", "join_set_create", "join_set_request", "join_next",
                          "Locked", "Finished"));
  std::set<std::string> executors;
  for (const auto& event : env->Log(id_).events) {
    if (const auto* locked = std::get_if<core::Locked>(&event.event)) {
      executors.insert(locked->executor_id.ToString());
    }
  }
  EXPECT_EQ(executors.size(), 2u) << "the second run belongs to the new executor";
}

// check_determinism_closing_multiple_join_sets: ten named join sets, each
// holding a stub activity, closed as the workflow returns (reverse
// creation order, one cancel and one closing JoinNext each); replaying the
// finished log reaches the same result and writes nothing.
TEST_P(WorkflowScenarioTest, CheckDeterminismClosingMultipleJoinSets) {
  constexpr int kSubmits = 10;
  Script script = [](WorkflowRun& run) {
    for (int i = 0; i < kSubmits; ++i) {
      WF_TRY(auto js, run.CreateNamedJoinSet(std::to_string(i)));
      if (!js) return run.Trap("join set " + std::to_string(i));
      WF_TRY(auto child, run.SubmitChild(*js, StubFfqn(), core::Json::array({i})));
    }
    return run.Finish(OkValue("closed all"));
  };
  auto env = Env(script);
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(env->Result(id_), OkValue("closed all"));
  std::vector<std::string> expected;
  for (int i = kSubmits - 1; i >= 0; --i) expected.push_back("n:" + std::to_string(i));
  EXPECT_EQ(ClosingJoinNexts(*env, id_), expected);
  for (int i = 0; i < kSubmits; ++i) {
    const auto child = id_.NextLevel(Named(std::to_string(i)), 1);
    EXPECT_TRUE(IsCancelled(holder_ = env->Result(child))) << i;
    EXPECT_EQ(FinishedCount(*env, child), 1) << i;
  }

  const storage::ExecutionLog finished = env->Log(id_);
  auto conn = Must(env->pool().Connection());
  WorkflowRun replay(env->ReplayContext(id_),
                     WorkflowRunDeps{conn.get(), &env->clock(), &env->registry()},
                     TestOptions(std::get<1>(GetParam())));
  const executor::WorkerResult result = script(replay);
  const auto* ok = std::get_if<executor::WorkerOk>(&result.value);
  ASSERT_NE(ok, nullptr) << result.ToString();
  EXPECT_EQ(ok->value, OkValue("closed all"));
  EXPECT_EQ(env->Log(id_), finished) << "verifying determinism wrote something";
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return std::string(std::get<0>(info.param) == Backend::kMemory ? "Memory" : "Sqlite") +
         StrategyName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Backends, WorkflowScenarioTest,
                         ::testing::Combine(::testing::ValuesIn(executor::testing::AllBackends()),
                                            ::testing::Values(BlockingStrategy::kInterrupt,
                                                              BlockingStrategy::kAwait)),
                         ParamName);

}  // namespace
}  // namespace stele::runtime::workflow::testing
