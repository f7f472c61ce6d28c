// End-to-end tests of JavaScript workflows and activities on real SQLite
// files with the real executors and V8: the wasm host's scenario tests
// (src/runtime/wasm_host/wasm_host_test.cc, wasm_host_effects_test.cc)
// re-run on JS guests (testdata/*.js), plus what is JS's own (Date,
// awaiting forever, Err).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "core/json_codec.h"
#include "runtime/js/js_host_test_util.h"

namespace stele::runtime::js::testing {
namespace {

using core::Json;
using ::testing::HasSubstr;

class JsHostTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override {
    env_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  Env& Start(EnvConfig config) {
    if (!config.workflows) config.workflows = Workflows();
    env_ = std::make_unique<Env>(dir_, std::move(config));
    return *env_;
  }
  std::string Reason(const core::SupportedFunctionReturnValue& result) {
    const auto* failure = Failure(result);
    EXPECT_NE(failure, nullptr);
    return failure && failure->reason ? *failure->reason : "";
  }
  std::filesystem::path dir_;
  std::unique_ptr<Env> env_;
};

std::optional<std::string> FirstChild(const std::vector<core::ExecutionEvent>& events,
                                      std::string_view join_set_part = "") {
  for (const auto& e : events) {
    if (const auto* h = std::get_if<core::HistoryEventRequest>(&e.event)) {
      if (const auto* req = std::get_if<core::HistoryJoinSetRequest>(&h->event)) {
        if (req->join_set_id.name().find(join_set_part) == std::string::npos) continue;
        if (const auto* c = std::get_if<core::ChildExecutionRequest>(&req->request)) {
          return c->child_execution_id.ToString();
        }
      }
    }
  }
  return std::nullopt;
}

ActivityFn Greet() {
  return [](ActivityContext&, const Json& p) -> ActivityResult {
    return Json("hi, " + p.at(0).get<std::string>());
  };
}

TEST_F(JsHostTest, HelloCallsANativeActivityAndSleepsWithABacktraceOfTheSource) {
  EnvConfig config;
  config.native_activities["testing:js/act.greet"] = Greet();
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:js/wf.hello", Json::array({"Ada"}));
  EXPECT_EQ(OkJson(env.Await(id)), Json("hi, Ada"));
  // The call and the sleep each wrote events outside replay: the last
  // backtrace is the sleep's, with the file, line and column of the source.
  auto trace = env.api().GetBacktrace(id, storage::BacktraceFilter::Last());
  ASSERT_TRUE(trace) << trace.error().ToString();
  EXPECT_EQ(trace->component_id.name, "test_workflows");
  EXPECT_EQ(trace->component_id.component_type, core::ComponentType::kWorkflowJs);
  ASSERT_FALSE(trace->wasm_backtrace.frames.empty());
  const core::FrameInfo& frame = trace->wasm_backtrace.frames[0];
  ASSERT_EQ(frame.symbols.size(), 1u);
  EXPECT_EQ(frame.symbols[0].file, "test_workflows.js");
  EXPECT_EQ(frame.symbols[0].line, 43u);  // `await ctx.sleep(1);`
  EXPECT_EQ(frame.symbols[0].col, 17u);   // `sleep`
  EXPECT_EQ(trace->wasm_backtrace.engine, CreateV8JsEngine()->EngineId());
}

// docs/js.md, "Messages": receive with a timeout (it times out), a try
// (nothing yet), a send to itself that a receive then takes, publish, and
// a send to an unknown execution, which throws.
TEST_F(JsHostTest, MessagesAndPublishedValues) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:js/wf.messages", Json::array());
  EXPECT_EQ(
      OkJson(env.Await(id)),
      Json(
          R"([null,true,"orders",{"n":1},"send: execution E_01KBNHM5FQW81KP5Y3XMNX31K4 not found"])"));
  std::vector<Json> published;
  for (const auto& e : env.Events(id)) {
    if (const auto* h = std::get_if<core::HistoryEventRequest>(&e.event)) {
      if (const auto* p = std::get_if<core::HistoryPublish>(&h->event))
        published.push_back(p->value);
    }
  }
  EXPECT_EQ(published, (std::vector<Json>{Json("waiting"), Json{{"n", 1}}}));
}

TEST_F(JsHostTest, HelloCallsAJsActivity) {
  EnvConfig config;
  config.activities = Activities();
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:js/wf.hello", Json::array({"Ada"}));
  EXPECT_EQ(OkJson(env.Await(id)), Json("hello, Ada"));
}

TEST_F(JsHostTest, FanOutWritesTheSameHistoryUnderBothStrategies) {
  EnvConfig config;
  config.workflows = Workflows();
  config.activities = Activities();
  ExpectSameHistoryUnderBothStrategies(config, [](Env& env, const core::ExecutionId& id) {
    env.Submit("testing:js/wf.fan-out", Json::array({4}), id);
    EXPECT_EQ(OkJson(env.Await(id)), Json(30));
  });
}

TEST_F(JsHostTest, DurableSleepWakesUnderBothStrategies) {
  EnvConfig config;
  config.workflows = Workflows();
  ExpectSameHistoryUnderBothStrategies(config, [](Env& env, const core::ExecutionId& id) {
    env.Submit("testing:js/wf.sleep", Json::array({50}), id);
    EXPECT_EQ(OkJson(env.Await(id)), Json("slept"));
  });
}

// As for wasm (wasm_host_test.cc, issue 16): under a 2 s workflow lease
// (lock expiry and extension; 100 ms leeway; the watcher's 500 ms) and the
// default guest_slice cap (5 s), a guest that spins without an operation —
// from its start, or after one — is stopped before its lease ends: never
// two runs of the execution at once, and every timeout is the worker's own
// (the watcher never had to take an expired lease over). In the third
// attempt the execution fails for good, saying why and which setting
// controls the slice.
TEST_F(JsHostTest, SpinningGuestStopsBeforeItsLeaseAndFailsAfterBoundedAttempts) {
  EnvConfig config;
  config.workflow_lock = std::chrono::milliseconds(2000);
  config.watcher_leeway = std::chrono::milliseconds(500);
  Env& env = Start(std::move(config));
  EXPECT_EQ(env.workflow_worker().slice(), std::chrono::milliseconds(500));
  for (const char* ffqn : {"testing:js/wf.loop", "testing:js/wf.loop-after-call"}) {
    SCOPED_TRACE(ffqn);
    auto id = env.Submit(ffqn, Json::array());
    const auto result = env.Await(id);
    const auto* failure = Failure(result);
    ASSERT_NE(failure, nullptr);
    EXPECT_EQ(failure->kind, core::ExecutionFailureKind::kOutOfFuel);
    const std::string reason = failure->reason.value_or("");
    EXPECT_NE(reason.find("exceeded its CPU time slice"), std::string::npos) << reason;
    EXPECT_NE(reason.find("500 ms"), std::string::npos) << reason;
    EXPECT_NE(reason.find("in 3 attempts"), std::string::npos) << reason;
    EXPECT_NE(reason.find("WorkflowRunOptions::lock_extension"), std::string::npos) << reason;
    const auto events = env.Events(id);
    EXPECT_EQ(CountEvents<core::TemporarilyTimedOut>(events), 2u);
    for (const auto& e : events) {
      if (const auto* timed_out = std::get_if<core::TemporarilyTimedOut>(&e.event)) {
        EXPECT_NE(timed_out->reason.value_or("").find("CPU time slice"), std::string::npos)
            << timed_out->reason.value_or("(none)");
      }
    }
  }
  EXPECT_EQ(env.overlap_probe().max_overlap(), 1);
}

// A slice longer than the lease: the guest is still stopped before its
// lease ends (by the lease, not the slice), as a slice overrun.
TEST_F(JsHostTest, WithoutLockExtensionALoopStopsBeforeTheLeaseEnds) {
  EnvConfig config;
  config.guest_slice = std::chrono::hours(1);
  config.workflow_lock = std::chrono::milliseconds(500);
  config.lock_extension = false;
  config.watcher_leeway = std::chrono::seconds(30);  // only the run itself may end it
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:js/wf.loop", Json::array());
  EXPECT_TRUE(
      env.WaitUntil([&] { return CountEvents<core::TemporarilyTimedOut>(env.Events(id)) >= 1; }));
  EXPECT_EQ(CountEvents<core::Finished>(env.Events(id)), 0u);
  EXPECT_EQ(env.overlap_probe().max_overlap(), 1);
}

TEST_F(JsHostTest, StackOverflowIsRetriedNeverFinal) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:js/wf.recurse", Json::array({1000000000}));
  EXPECT_TRUE(env.WaitUntil([&] { return CountEvents<core::Unlocked>(env.Events(id)) >= 2; }));
  for (const auto& e : env.Events(id)) {
    if (const auto* unlocked = std::get_if<core::Unlocked>(&e.event)) {
      EXPECT_THAT(unlocked->reason, HasSubstr("stack overflow"));
    }
  }
  EXPECT_EQ(CountEvents<core::Finished>(env.Events(id)), 0u);
}

TEST_F(JsHostTest, AThrowIsAFinalTrapWithTheJsStack) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:js/wf.trap", Json::array());
  auto result = env.Await(id);
  EXPECT_THAT(Reason(result), HasSubstr("TypeError: deep trouble"));
  const auto* failure = Failure(result);
  ASSERT_TRUE(failure && failure->detail);
  EXPECT_THAT(*failure->detail, HasSubstr("deepThrow (test_workflows.js:14:"));
}

TEST_F(JsHostTest, AnErrIsTheWorkflowsErrResult) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:js/wf.err", Json::array());
  auto result = env.Await(id);
  const auto* err = std::get_if<core::ReturnValueErr>(&result);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->err, Json::parse(R"({"code":42})"));
}

TEST_F(JsHostTest, AwaitingForeverIsAFinalTrap) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:js/wf.forever", Json::array());
  EXPECT_THAT(Reason(env.Await(id)), HasSubstr("awaits a promise that no Stele operation settles"));
}

TEST_F(JsHostTest, HeapBeyondTheLimitIsAFinalTrap) {
  EnvConfig config;
  JsLimits limits;
  limits.max_heap_bytes = 32u << 20;
  config.workflows = Workflows(1, limits);
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:js/wf.memory", Json::array());
  EXPECT_THAT(Reason(env.Await(id)), HasSubstr("heap limit"));
}

TEST_F(JsHostTest, ActivityTrapIsRetriedThenFinal) {
  EnvConfig config;
  config.activities = Activities();
  config.activity_max_retries = 2;
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:js/act.trap", Json::array());
  auto result = env.Await(id);
  EXPECT_THAT(Reason(result), HasSubstr("TypeError"));
  EXPECT_EQ(CountEvents<core::TemporarilyFailed>(env.Events(id)), 2u);
}

TEST_F(JsHostTest, ActivityErrIsRetriedThenIsTheResult) {
  EnvConfig config;
  config.activities = Activities();
  config.activity_max_retries = 1;
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:js/act.err", Json::array());
  auto result = env.Await(id);
  const auto* err = std::get_if<core::ReturnValueErr>(&result);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->err, Json("no luck"));
  EXPECT_EQ(CountEvents<core::TemporarilyFailed>(env.Events(id)), 1u);
}

// new Err(v, m, {retryable: false}) is the result at once, whatever retries
// remain.
TEST_F(JsHostTest, ANonRetryableErrIsTheResultAtOnce) {
  EnvConfig config;
  config.activities = Activities();
  config.activity_max_retries = 5;
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:js/act.declined", Json::array());
  auto result = env.Await(id);
  const auto* err = std::get_if<core::ReturnValueErr>(&result);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->err, Json("declined"));
  EXPECT_EQ(CountEvents<core::TemporarilyFailed>(env.Events(id)), 0u);
}

TEST_F(JsHostTest, ActivitySeesOnlyTheConfiguredEnvironment) {
  EnvConfig config;
  config.activities = Activities();
  config.activity_options.env = {{"GREETING", "yes"}};
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:js/act.env", Json::array());
  EXPECT_EQ(OkJson(env.Await(id)), Json::parse(R"(["yes",null,1])"));
}

TEST_F(JsHostTest, ActivityLoopTimesOutAtTheLockDeadline) {
  EnvConfig config;
  config.activities = Activities();
  config.activity_max_retries = 0;
  config.activity_lock = std::chrono::milliseconds(200);
  config.watcher_leeway = std::chrono::seconds(30);
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:js/act.loop", Json::array());
  auto result = env.Await(id);
  const auto* failure = Failure(result);
  ASSERT_NE(failure, nullptr);
  EXPECT_EQ(failure->kind, core::ExecutionFailureKind::kTimedOut);
  const auto events = env.Events(id);
  const auto* finished = std::get_if<core::Finished>(&events.back().event);
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->engine, CreateV8JsEngine()->EngineId());
}

// A JS workflow runs only on the digest it was created with or upgraded
// to; upgraded to code changed inside its recorded prefix, it ends with
// nondeterminism detected. Changed only after the prefix, it continues.
TEST_F(JsHostTest, ChangedCodeInsideTheRecordedPrefixIsNondeterminism) {
  for (int variant : {2, 3}) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    core::ExecutionId id = core::ExecutionId::Generate();
    std::string child;
    const core::InputContentDigest v1 = Workflows()->component_id.input_digest;
    {
      EnvConfig config;
      config.activities = Activities();
      config.stubs = {"testing:js/stub.approve"};
      Env& env = Start(std::move(config));
      env.Submit("testing:js/wf.two-calls", Json::array(), id);
      ASSERT_TRUE(env.WaitUntil([&] { return env.StateName(id) == "BlockedByJoinSet"; }));
      std::optional<core::BacktraceInfo> trace;
      ASSERT_TRUE(env.WaitUntil([&] {
        auto got = env.api().GetBacktrace(id, storage::BacktraceFilter::Last());
        if (got) trace = *got;
        return got.has_value();
      }));
      bool named = false;
      for (const auto& frame : trace->wasm_backtrace.frames)
        named |= frame.func_name == "placeTheCall";
      EXPECT_TRUE(named);
      child = FirstChild(env.Events(id), "approve").value_or("");
      ASSERT_FALSE(child.empty());
      env_.reset();
    }
    EnvConfig config;
    config.workflows = Workflows(variant);
    const core::InputContentDigest v2 = config.workflows->component_id.input_digest;
    ASSERT_NE(v1, v2);
    config.activities = Activities();
    config.stubs = {"testing:js/stub.approve"};
    Env& env = Start(std::move(config));
    ASSERT_TRUE(env.engine().Stub(child, ExecutionResult::Ok(Json(true))));
    ASSERT_TRUE(env.WaitUntil([&] { return env.StateName(id) == "PendingAt"; }));
    ASSERT_TRUE(env.api().UpgradeExecutionComponent(id, v1, v2));
    auto result = env.Await(id);
    if (variant == 2) {
      const auto* failure = Failure(result);
      ASSERT_NE(failure, nullptr);
      EXPECT_EQ(failure->kind, core::ExecutionFailureKind::kNondeterminismDetected);
    } else {
      EXPECT_EQ(OkJson(result), Json::parse(R"(["hello, x","hello, x","v3"])"));
    }
    env_.reset();
  }
}

TEST_F(JsHostTest, HumanApprovalCompletedByStubUnderBothStrategies) {
  EnvConfig config;
  config.workflows = Workflows();
  config.stubs = {"testing:js/stub.approve"};
  ExpectSameHistoryUnderBothStrategies(config, [](Env& env, const core::ExecutionId& id) {
    env.Submit("testing:js/wf.approval", Json::array({100}), id);
    ASSERT_TRUE(env.WaitUntil([&] { return env.StateName(id) == "BlockedByJoinSet"; }));
    auto child = FirstChild(env.Events(id), "approve");
    ASSERT_TRUE(child);
    ASSERT_TRUE(env.engine().Stub(*child, ExecutionResult::Ok(Json(true))));
    EXPECT_EQ(OkJson(env.Await(id)), Json("approved"));
  });
}

TEST_F(JsHostTest, RandomnessIsRecordedAndInRangeUnderBothStrategies) {
  EnvConfig config;
  config.workflows = Workflows();
  ExpectSameHistoryUnderBothStrategies(config, [](Env& env, const core::ExecutionId& id) {
    env.Submit("testing:js/wf.random", Json::array(), id);
    Json v = OkJson(env.Await(id));
    ASSERT_TRUE(v.is_array()) << v.dump();
    EXPECT_LT(std::stoull(v[0].get<std::string>()), 1000000u);
    EXPECT_EQ(v[1], Json("5"));
    EXPECT_EQ(v[2].get<std::string>().size(), 8u);
    EXPECT_GE(v[3].get<int>(), -10);
    EXPECT_LT(v[3].get<int>(), 10);
    EXPECT_GE(v[4].get<double>(), 0.0);
    EXPECT_LT(v[4].get<double>(), 1.0);
    EXPECT_EQ(v[5].size(), 4u);
  });
}

TEST_F(JsHostTest, DateIsTheRecordedTimeOfTheStep) {
  EnvConfig config;
  config.workflows = Workflows();
  ExpectSameHistoryUnderBothStrategies(config, [](Env& env, const core::ExecutionId& id) {
    const int64_t before = ToMicros(SystemClock::Instance().Now()) / 1000;
    env.Submit("testing:js/wf.time", Json::array(), id);
    Json v = OkJson(env.Await(id));
    ASSERT_EQ(v.size(), 3u) << v.dump();
    EXPECT_EQ(v[0], v[1]);  // one step, one time
    EXPECT_GE(v[0].get<int64_t>(), before);
    EXPECT_GE(v[2].get<int64_t>(), v[0].get<int64_t>() + 20);  // after the sleep
    size_t times = 0;
    for (const auto& e : env.Events(id)) {
      if (const auto* h = std::get_if<core::HistoryEventRequest>(&e.event)) {
        if (const auto* p = std::get_if<core::HistoryPersist>(&h->event)) {
          times += std::holds_alternative<core::PersistKindTime>(p->kind) ? 1 : 0;
        }
      }
    }
    EXPECT_EQ(times, 2u);
  });
}

TEST_F(JsHostTest, EveryJsRunRecordsTheEngine) {
  const std::string engine = CreateV8JsEngine()->EngineId();
  ASSERT_EQ(engine.rfind("v8 10.2.", 0), 0u) << engine;
  EnvConfig config;
  config.activities = Activities();
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:js/wf.hello", Json::array({"Ada"}));
  EXPECT_EQ(OkJson(env.Await(id)), Json("hello, Ada"));
  const auto events = env.Events(id);
  EXPECT_EQ(std::get<core::Finished>(events.back().event).engine, engine);
  auto child = FirstChild(events);
  ASSERT_TRUE(child);
  auto child_id = core::ExecutionId::Parse(*child);
  ASSERT_TRUE(child_id);
  EXPECT_EQ(core::ToJson(env.Events(*child_id).back().event)["finished"]["engine"], Json(engine));
}

TEST_F(JsHostTest, MalformedFfqnFromTheGuestFailsTheWorkflowClearly) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:js/wf.bad-ffqn", Json::array());
  EXPECT_THAT(Reason(env.Await(id)), HasSubstr("not an ffqn"));
}

TEST_F(JsHostTest, AValueWithoutJsonIsAResultParsingError) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:js/wf.bad-result", Json::array());
  EXPECT_THAT(Reason(env.Await(id)), HasSubstr("result parsing"));
}

// --- The effects (wasm_host_effects_test.cc) ---------------------------------------

TEST_F(JsHostTest, ScheduleCreatesATopLevelExecutionScheduledByTheWorkflow) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:js/wf.schedule", Json::array({0}));
  Json scheduled = OkJson(env.Await(id));
  auto scheduled_id = core::ExecutionId::Parse(scheduled.get<std::string>());
  ASSERT_TRUE(scheduled_id) << scheduled.dump();
  EXPECT_EQ(OkJson(env.Await(*scheduled_id)), Json("slept"));
}

TEST_F(JsHostTest, GetReadsAProcessedChildAndReportsMismatchAndNotFound) {
  EnvConfig config;
  config.activities = Activities();
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:js/wf.get", Json::array());
  Json v = OkJson(env.Await(id));
  ASSERT_EQ(v.size(), 6u) << v.dump();
  EXPECT_EQ(v[0], Json::parse(R"({"ok":25})"));
  EXPECT_TRUE(v[1].is_null());  // every submission of `batch` was awaited
  EXPECT_EQ(v[2], Json::parse(R"({"ok":25})"));
  EXPECT_THAT(v[3].get<std::string>(), HasSubstr("runs another function"));
  EXPECT_THAT(v[4].get<std::string>(), HasSubstr("not among the processed responses"));
  EXPECT_THAT(v[5].get<std::string>(), HasSubstr("not a child execution id"));
}

TEST_F(JsHostTest, SubmittedDelayExpires) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:js/wf.delay", Json::array({10}));
  EXPECT_EQ(OkJson(env.Await(id)), Json::parse(R"(["delay",true,true])"));
}

TEST_F(JsHostTest, NamedJoinSetConflictAndInvalidName) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:js/wf.named", Json::array());
  Json v = OkJson(env.Await(id));
  ASSERT_EQ(v.size(), 3u) << v.dump();
  EXPECT_EQ(v[0], Json("n:orders"));
  EXPECT_THAT(v[1].get<std::string>(), HasSubstr("exists already"));
  EXPECT_THAT(v[2].get<std::string>(), HasSubstr("invalid join set name"));
}

TEST_F(JsHostTest, ClosingCancelsActivitiesAndDelaysAndAwaitsChildWorkflows) {
  EnvConfig config;
  config.stubs = {"testing:js/stub.approve"};
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:js/wf.close", Json::array());
  EXPECT_EQ(OkJson(env.Await(id)), Json("parent done"));
  auto stub = FirstChild(env.Events(id), "second");
  ASSERT_TRUE(stub);
  size_t cancelled = 0;
  for (const auto& e : env.Events(id)) {
    if (const auto* h = std::get_if<core::HistoryEventRequest>(&e.event)) {
      if (const auto* next = std::get_if<core::HistoryJoinNext>(&h->event))
        cancelled += next->closing ? 1 : 0;
    }
  }
  EXPECT_EQ(cancelled, 3u);  // one closing JoinNext per unawaited submission
}

TEST_F(JsHostTest, JoinNextWithAnotherFfqnIsAMismatchThatConsumesTheResponse) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:js/wf.mismatch", Json::array());
  EXPECT_EQ(OkJson(env.Await(id)), Json::parse(R"(["delay",true])"));
}

TEST_F(JsHostTest, GuestStubsItsChildIdempotently) {
  EnvConfig config;
  config.stubs = {"testing:js/stub.approve"};
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:js/wf.stub", Json::array());
  EXPECT_EQ(OkJson(env.Await(id)), Json::parse(R"([true,true,false,{"ok":true}])"));
}

TEST_F(JsHostTest, EmptyRandomRangeIsAWorkflowTrap) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:js/wf.empty-random", Json::array());
  EXPECT_THAT(Reason(env.Await(id)), HasSubstr("empty range"));
}

// --- Per-child options (docs/js.md, "Deadlines") ------------------------------------

std::vector<core::ExecutionId> JsChildrenOf(Env& env, const core::ExecutionId& id) {
  std::vector<core::ExecutionId> children;
  for (const auto& e : env.Events(id)) {
    if (const auto* h = std::get_if<core::HistoryEventRequest>(&e.event)) {
      if (const auto* req = std::get_if<core::HistoryJoinSetRequest>(&h->event)) {
        if (const auto* c = std::get_if<core::ChildExecutionRequest>(&req->request)) {
          children.push_back(core::ExecutionId(c->child_execution_id));
        }
      }
    }
  }
  return children;
}

// The Created event of `id` (its version 0) and when it was written.
std::pair<core::Created, DateTime> JsCreatedOf(Env& env, const core::ExecutionId& id) {
  auto events = env.Events(id);
  EXPECT_FALSE(events.empty());
  return {std::get<core::Created>(events.at(0).event), events.at(0).created_at};
}

Json ChildOptionsParams(const char* options, const char* ffqn, uint64_t x) {
  return Json::array({options, ffqn, x});
}

TEST_F(JsHostTest, ChildOptionsGiveEachChildItsDeadlineAndRetryPolicy) {
  EnvConfig config;
  config.activities = Activities();
  Env& env = Start(std::move(config));
  auto id = env.Submit(
      "testing:js/wf.child-options",
      ChildOptionsParams(
          R"({"timeout": 60000, "maxRetries": 2, "backoff": 50, "maxBackoff": 500, "jitterPercent": 10})",
          "testing:js/act.square", 3));
  EXPECT_EQ(OkJson(env.Await(id)), Json(R"([9,{"ok":9}])"));
  const auto children = JsChildrenOf(env, id);
  ASSERT_EQ(children.size(), 2u);
  for (const auto& child : children) {
    SCOPED_TRACE(child.ToString());
    const auto [created, at] = JsCreatedOf(env, child);
    // From the workflow's time at the call (read again for the policy,
    // microseconds after the child's creation time).
    ASSERT_TRUE(created.policy.deadline);
    const auto from_creation = *created.policy.deadline - at;
    EXPECT_GT(from_creation, std::chrono::seconds(59));
    EXPECT_LT(from_creation, std::chrono::seconds(61));
    EXPECT_EQ(created.policy.retry.max_retries, 2u);
    EXPECT_EQ(created.policy.retry.retry_exp_backoff, core::Duration::FromMillis(50));
    EXPECT_EQ(created.policy.retry.max_backoff, core::Duration::FromMillis(500));
    EXPECT_EQ(created.policy.retry.jitter_percent, 10u);
  }
}

TEST_F(JsHostTest, ChildTimeoutIsClampedToTheParentsDeadline) {
  EnvConfig config;
  config.activities = Activities();
  Env& env = Start(std::move(config));
  core::ExecutionPolicy parent;
  parent.deadline = SystemClock::Instance().Now() + std::chrono::hours(1);
  auto id = env.Submit("testing:js/wf.child-options",
                       ChildOptionsParams(R"({"timeout": 36000000})", "testing:js/act.square", 4),
                       std::nullopt, parent);
  EXPECT_EQ(OkJson(env.Await(id)), Json(R"([16,{"ok":16}])"));
  const auto children = JsChildrenOf(env, id);
  ASSERT_EQ(children.size(), 2u);
  for (const auto& child : children) {
    EXPECT_EQ(JsCreatedOf(env, child).first.policy.deadline, parent.deadline);
  }
}

TEST_F(JsHostTest, ChildPastItsTimeoutEndsTimedOut) {
  Env& env = Start(EnvConfig{});
  // Each child sleeps ten minutes; its own 200 ms deadline ends it.
  auto id = env.Submit("testing:js/wf.child-options",
                       ChildOptionsParams(R"({"timeout": 200})", "testing:js/wf.sleep", 600000));
  const Json seen = Json::parse(OkJson(env.Await(id)).get<std::string>());
  ASSERT_EQ(seen.size(), 2u) << seen;
  EXPECT_EQ(seen[0], "ExecutionFailure: timed_out");
  EXPECT_EQ(seen[1]["failure"]["kind"], "timed_out") << seen;
}

TEST_F(JsHostTest, MalformedChildOptionsAreATypeErrorTheWorkflowCatches) {
  EnvConfig config;
  config.activities = Activities();
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:js/wf.child-options",
                       ChildOptionsParams(R"({"retries": 1})", "testing:js/act.square", 3));
  const Json seen = Json::parse(OkJson(env.Await(id)).get<std::string>());
  ASSERT_EQ(seen.size(), 2u) << seen;
  EXPECT_THAT(seen[0].get<std::string>(), HasSubstr("TypeError: call: unknown option retries"));
  EXPECT_THAT(seen[1].get<std::string>(), HasSubstr("TypeError: submit: unknown option retries"));
  EXPECT_TRUE(JsChildrenOf(env, id).empty());
}

TEST_F(JsHostTest, NonPositiveTimeoutOrJitterOver100FailsTheWorkflow) {
  const struct {
    const char* options;
    const char* reason;
  } cases[] = {
      {R"({"timeout": 0})", "a child's timeout must be positive"},
      {R"({"jitterPercent": 101})", "a child's retry jitter must be 0 to 100 %"},
  };
  EnvConfig config;
  config.activities = Activities();
  Env& env = Start(std::move(config));
  for (const auto& c : cases) {
    SCOPED_TRACE(c.options);
    auto id = env.Submit("testing:js/wf.child-options",
                         ChildOptionsParams(c.options, "testing:js/act.square", 3));
    EXPECT_THAT(Reason(env.Await(id)), HasSubstr(c.reason));
    EXPECT_TRUE(JsChildrenOf(env, id).empty());
  }
}

}  // namespace
}  // namespace stele::runtime::js::testing
