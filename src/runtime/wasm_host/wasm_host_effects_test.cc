// The host functions of the guest ABI called by a real wasm guest
// (testdata/effect_workflows.c): schedule, get, submit_delay (expired and
// cancelled), named join sets, join_set_close with pending submissions,
// join_next with a mismatching ffqn, stub, empty random ranges, per-child
// options (call_with_options, submit_with_options). Each
// scenario mirrors a native one of src/runtime/workflow/workflow_run_test.cc,
// asserts what the guest observed, and runs under both blocking strategies,
// which must write the same history (ExpectSameHistoryUnderBothStrategies).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/wasm_host/wasm_host_test_util.h"

namespace stele::runtime::wasm_host::testing {
namespace {

using core::Json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kStub = "testing:wasm/stub.approve";

EnvConfig WorkflowsAnd(bool activities, bool stubs) {
  EnvConfig config;
  config.workflows = LoadOrDie(STELE_TEST_WORKFLOWS_WASM, "test_workflows", GuestKind::kWorkflow);
  if (activities) {
    config.activities =
        LoadOrDie(STELE_TEST_ACTIVITIES_WASM, "test_activities", GuestKind::kActivity);
  }
  if (stubs) config.stubs = {kStub};
  return config;
}

core::JoinSetId JoinSet(const char* text) { return *core::JoinSetId::Parse(text); }

std::vector<core::HistoryEvent> History(Env& env, const core::ExecutionId& id) {
  return NormalisedHistory(env.Events(id));
}

TEST(WasmEffectsTest, ScheduleCreatesATopLevelExecutionScheduledByTheWorkflow) {
  const auto config = WorkflowsAnd(false, false);
  const core::ComponentId component = config.workflows->component_id;
  ExpectSameHistoryUnderBothStrategies(config, [&](Env& env, const core::ExecutionId& id) {
    env.Submit("testing:wasm/wf.schedule", Json::array({60000}), id);
    Json scheduled_text = OkJson(env.Await(id));
    ASSERT_TRUE(scheduled_text.is_string());
    auto scheduled = core::ExecutionId::Parse(scheduled_text.get<std::string>());
    ASSERT_TRUE(scheduled) << scheduled_text;
    EXPECT_TRUE(scheduled->IsTopLevel());
    const auto events = env.Events(*scheduled);
    ASSERT_FALSE(events.empty());
    const auto& created = std::get<core::Created>(events[0].event);
    EXPECT_EQ(created.ffqn.ToString(), "testing:wasm/wf.sleep");
    EXPECT_EQ(created.params, Json::array({1}));
    EXPECT_EQ(created.scheduled_by, id);
    // The component serving the ffqn, digest included: what locks it.
    EXPECT_EQ(created.component_id, component);
    EXPECT_GE(created.scheduled_at, events[0].created_at + std::chrono::seconds(59));
    EXPECT_EQ(env.StateName(*scheduled), "PendingAt");
  });
}

TEST(WasmEffectsTest, GetReadsAProcessedChildAndReportsMismatchAndNotFound) {
  ExpectSameHistoryUnderBothStrategies(
      WorkflowsAnd(true, false), [](Env& env, const core::ExecutionId& id) {
        env.Submit("testing:wasm/wf.get", Json::array(), id);
        // [awaited, next join_next, get, its value, get with another ffqn,
        //  get of an unawaited child, get of a malformed id]
        EXPECT_EQ(OkJson(env.Await(id)), Json::parse("[25, 3, 0, 25, 4, 5, 5]"));
        const auto history = History(env, id);
        // The second join_next of `batch` found nothing left: recorded as such.
        size_t too_many = 0;
        for (const auto& e : history)
          too_many += std::holds_alternative<core::HistoryJoinNextTooMany>(e);
        EXPECT_EQ(too_many, 1u);
      });
}

TEST(WasmEffectsTest, SubmittedDelayExpires) {
  ExpectSameHistoryUnderBothStrategies(
      WorkflowsAnd(false, false), [](Env& env, const core::ExecutionId& id) {
        env.Submit("testing:wasm/wf.delay", Json::array({10}), id);
        EXPECT_EQ(OkJson(env.Await(id)), Json::parse("[0, true, null]"));
      });
}

TEST(WasmEffectsTest, CancelledDelayReportsFailedToTheGuest) {
  ExpectSameHistoryUnderBothStrategies(WorkflowsAnd(false, false), [](Env& env,
                                                                      const core::ExecutionId& id) {
    env.Submit("testing:wasm/wf.delay", Json::array({100000000}), id);
    ASSERT_TRUE(env.WaitUntil([&] { return env.StateName(id) == "BlockedByJoinSet"; }));
    std::optional<core::DelayId> delay;
    for (const auto& e : History(env, id)) {
      if (const auto* request = std::get_if<core::HistoryJoinSetRequest>(&e)) {
        if (const auto* d = std::get_if<core::DelayRequest>(&request->request)) delay = d->delay_id;
      }
    }
    ASSERT_TRUE(delay);
    env.CancelDelay(*delay);
    EXPECT_EQ(
        OkJson(env.Await(id)),
        Json::parse(R"([2, true, {"kind":"cancelled","reason":"delay cancelled","detail":null}])"));
    const auto responses = env.Responses(id);
    ASSERT_EQ(responses.size(), 1u);
    const auto* finished = std::get_if<core::DelayFinished>(&responses[0].event.event);
    ASSERT_NE(finished, nullptr);
    EXPECT_FALSE(finished->ok);
  });
}

TEST(WasmEffectsTest, NamedJoinSetConflictAndInvalidName) {
  ExpectSameHistoryUnderBothStrategies(WorkflowsAnd(false, false), [](Env& env,
                                                                      const core::ExecutionId& id) {
    env.Submit("testing:wasm/wf.named", Json::array(), id);
    EXPECT_EQ(OkJson(env.Await(id)),
              Json::array({0, "n:orders", 1, "a join set named `orders` exists already", 1,
                           "invalid join set name `no spaces`: use ASCII "
                           "letters, digits, '-' and '/'"}));
    // Only the first creation is in the history.
    const auto history = History(env, id);
    ASSERT_EQ(history.size(), 1u);
    EXPECT_EQ(std::get<core::HistoryJoinSetCreate>(history[0]).join_set_id, JoinSet("n:orders"));
  });
}

TEST(WasmEffectsTest, ClosingCancelsActivitiesAndDelaysAndAwaitsChildWorkflows) {
  const auto config = WorkflowsAnd(false, true);
  const core::ComponentId workflows = config.workflows->component_id;
  ExpectSameHistoryUnderBothStrategies(config, [&](Env& env, const core::ExecutionId& id) {
    env.Submit("testing:wasm/wf.close", Json::array(), id);
    EXPECT_EQ(OkJson(env.Await(id)), Json("parent done"));
    // Explicit closes in the guest's order: `second` (two closing
    // JoinNexts), then `first` (one).
    std::vector<std::string> closing;
    for (const auto& e : History(env, id)) {
      if (const auto* next = std::get_if<core::HistoryJoinNext>(&e)) {
        EXPECT_TRUE(next->closing);
        closing.push_back(next->join_set_id.ToString());
      }
    }
    EXPECT_THAT(closing, ElementsAre("n:second", "n:second", "n:first"));
    // The stub activity was cancelled, the child workflow ran to its end.
    const core::ExecutionId stub(id.NextLevel(JoinSet("n:second"), 2));
    const auto stub_result = env.Await(stub);
    const auto* cancelled = Failure(stub_result);
    ASSERT_NE(cancelled, nullptr);
    EXPECT_EQ(cancelled->kind, core::ExecutionFailureKind::kCancelled);
    const core::ExecutionId child(id.NextLevel(JoinSet("n:second"), 1));
    EXPECT_EQ(OkJson(env.Await(child)), Json("slept"));
    // Each child carries the component (digest) serving its ffqn: what
    // the workflow executor locks the child workflow by.
    EXPECT_EQ(std::get<core::Created>(env.Events(child).at(0).event).component_id, workflows);
    EXPECT_EQ(std::get<core::Created>(env.Events(stub).at(0).event).component_id.component_type,
              core::ComponentType::kActivityStub);
    // The delay was cancelled, not fired.
    bool delay_cancelled = false;
    for (const auto& response : env.Responses(id)) {
      if (const auto* d = std::get_if<core::DelayFinished>(&response.event.event))
        delay_cancelled = !d->ok;
    }
    EXPECT_TRUE(delay_cancelled);
  });
}

TEST(WasmEffectsTest, JoinNextWithAnotherFfqnIsAMismatchThatConsumesTheResponse) {
  ExpectSameHistoryUnderBothStrategies(
      WorkflowsAnd(true, false), [](Env& env, const core::ExecutionId& id) {
        env.Submit("testing:wasm/wf.mismatch", Json::array(), id);
        // A delay answered where act.square was asked for, then act.square
        // (value 9) where act.greet was; nothing is left afterwards.
        EXPECT_EQ(OkJson(env.Await(id)), Json::parse("[4, true, 4, true, 9, 3]"));
      });
}

TEST(WasmEffectsTest, GuestStubsItsChildIdempotently) {
  ExpectSameHistoryUnderBothStrategies(
      WorkflowsAnd(false, true), [](Env& env, const core::ExecutionId& id) {
        env.Submit("testing:wasm/wf.stub", Json::array(), id);
        // Stubbed, the same value again (ok), another value (conflict), awaited.
        EXPECT_EQ(OkJson(env.Await(id)), Json::parse(R"([0, 0, 1, 0, "approved"])"));
        const auto history = History(env, id);
        ASSERT_EQ(history.size(), 6u);
        EXPECT_TRUE(std::get<core::HistoryStub>(history[2]).persist_result_ok);
        EXPECT_TRUE(std::get<core::HistoryStub>(history[3]).persist_result_ok);
        EXPECT_FALSE(std::get<core::HistoryStub>(history[4]).persist_result_ok);
        const core::ExecutionId child(id.NextLevel(JoinSet("g:1"), 1));
        EXPECT_EQ(OkJson(env.Await(child)), Json("approved"));
      });
}

TEST(WasmEffectsTest, EmptyRandomRangeIsAWorkflowTrap) {
  const char* expected[] = {"random u64: empty range", "random u64: empty range",
                            "random string: invalid length range"};
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE("which " + std::to_string(which));
    ExpectSameHistoryUnderBothStrategies(
        WorkflowsAnd(false, false), [&](Env& env, const core::ExecutionId& id) {
          env.Submit("testing:wasm/wf.empty-random", Json::array({which}), id);
          const auto result = env.Await(id);
          const auto* failure = Failure(result);
          ASSERT_NE(failure, nullptr);
          EXPECT_THAT(failure->reason.value_or(""), HasSubstr("workflow trap"));
          EXPECT_THAT(failure->reason.value_or(""), HasSubstr(expected[which]));
          // Final at once, not retried.
          EXPECT_EQ(CountEvents<core::TemporarilyFailed>(env.Events(id)), 0u);
        });
  }
}

// The children a workflow created, in creation order (from its requests).
std::vector<core::ExecutionIdDerived> ChildrenOf(Env& env, const core::ExecutionId& id) {
  std::vector<core::ExecutionIdDerived> children;
  for (const auto& e : History(env, id)) {
    if (const auto* request = std::get_if<core::HistoryJoinSetRequest>(&e)) {
      if (const auto* c = std::get_if<core::ChildExecutionRequest>(&request->request)) {
        children.push_back(c->child_execution_id);
      }
    }
  }
  return children;
}

const core::Created& CreatedOf(Env& env, const core::ExecutionId& id,
                               std::vector<core::ExecutionEvent>& keep) {
  keep = env.Events(id);
  EXPECT_FALSE(keep.empty());
  return std::get<core::Created>(keep.at(0).event);
}

TEST(WasmEffectsTest, ChildOptionsGiveEachChildItsDeadlineAndRetryPolicy) {
  ExpectSameHistoryUnderBothStrategies(
      WorkflowsAnd(true, false), [](Env& env, const core::ExecutionId& id) {
        const std::string options =
            R"({"timeout_ms": 60000, "max_retries": 2, "backoff_ms": 50, "max_backoff_ms": 500,)"
            R"( "jitter_percent": 10})";
        env.Submit("testing:wasm/wf.child-options",
                   Json::array({options, "testing:wasm/act.square", 3}), id);
        EXPECT_EQ(OkJson(env.Await(id)), Json::parse("[0, 9, 0, 9]"));
        const auto children = ChildrenOf(env, id);
        ASSERT_EQ(children.size(), 2u);
        for (const auto& child : children) {
          SCOPED_TRACE(child.ToString());
          std::vector<core::ExecutionEvent> events;
          const core::Created& created = CreatedOf(env, core::ExecutionId(child), events);
          // The timeout counts from the workflow's time at the call (read
          // again for the policy, microseconds after the child's creation
          // time).
          ASSERT_TRUE(created.policy.deadline);
          const auto from_creation = *created.policy.deadline - events[0].created_at;
          EXPECT_GT(from_creation, std::chrono::seconds(59));
          EXPECT_LT(from_creation, std::chrono::seconds(61));
          EXPECT_EQ(created.policy.retry.max_retries, 2u);
          EXPECT_EQ(created.policy.retry.retry_exp_backoff, core::Duration::FromMillis(50));
          EXPECT_EQ(created.policy.retry.max_backoff, core::Duration::FromMillis(500));
          EXPECT_EQ(created.policy.retry.jitter_percent, 10u);
        }
      });
}

TEST(WasmEffectsTest, ChildTimeoutIsClampedToTheParentsDeadline) {
  const std::filesystem::path dir = MakeTempDir();
  Env env(dir, WorkflowsAnd(true, false));
  core::ExecutionPolicy parent;
  parent.deadline = SystemClock::Instance().Now() + std::chrono::hours(1);
  auto id = env.Submit("testing:wasm/wf.child-options",
                       Json::array({R"({"timeout_ms": 36000000})", "testing:wasm/act.square", 4}),
                       std::nullopt, parent);
  EXPECT_EQ(OkJson(env.Await(id)), Json::parse("[0, 16, 0, 16]"));
  const auto children = ChildrenOf(env, id);
  ASSERT_EQ(children.size(), 2u);
  for (const auto& child : children) {
    std::vector<core::ExecutionEvent> events;
    EXPECT_EQ(CreatedOf(env, core::ExecutionId(child), events).policy.deadline, parent.deadline);
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

TEST(WasmEffectsTest, ChildPastItsTimeoutEndsTimedOut) {
  ExpectSameHistoryUnderBothStrategies(
      WorkflowsAnd(false, false), [](Env& env, const core::ExecutionId& id) {
        // Each child sleeps ten minutes; its own 200 ms deadline ends it.
        env.Submit("testing:wasm/wf.child-options",
                   Json::array({R"({"timeout_ms": 200})", "testing:wasm/wf.sleep", 600000}), id);
        const Json seen = OkJson(env.Await(id));
        ASSERT_TRUE(seen.is_array() && seen.size() == 4) << seen;
        EXPECT_EQ(seen[0], 2);
        EXPECT_EQ(seen[1]["kind"], "timed_out") << seen;
        EXPECT_EQ(seen[2], 2);
        EXPECT_EQ(seen[3]["kind"], "timed_out") << seen;
      });
}

TEST(WasmEffectsTest, InvalidChildOptionsFailTheWorkflow) {
  const struct {
    const char* options;
    const char* reason;
  } cases[] = {
      {R"({"timeout_ms": 0})", "a child's timeout must be positive"},
      {R"({"timeout_ms": -5})", "a child's timeout must be positive"},
      {R"({"jitter_percent": 101})", "a child's retry jitter must be 0 to 100 %"},
      {R"({"retries": 1})", "unknown child option `retries`"},
      {R"({"backoff_ms": -1})", "child option `backoff_ms` must be"},
      {R"({"timeout_ms": "1s"})", "child option `timeout_ms` must be"},
      {"[1]", "child options must be a JSON object"},
      {"not json", "child options must be a JSON object"},
  };
  // The workflow fails before it writes anything: one run, no history to
  // compare across strategies.
  const std::filesystem::path dir = MakeTempDir();
  {
    Env env(dir, WorkflowsAnd(true, false));
    for (const auto& c : cases) {
      SCOPED_TRACE(c.options);
      auto id = env.Submit("testing:wasm/wf.child-options",
                           Json::array({c.options, "testing:wasm/act.square", 3}));
      const auto result = env.Await(id);
      const auto* failure = Failure(result);
      ASSERT_NE(failure, nullptr);
      EXPECT_THAT(failure->reason.value_or(""), HasSubstr(c.reason));
      // Final at once, and nothing was created.
      EXPECT_EQ(CountEvents<core::TemporarilyFailed>(env.Events(id)), 0u);
      EXPECT_TRUE(ChildrenOf(env, id).empty());
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace stele::runtime::wasm_host::testing
