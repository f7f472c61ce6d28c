// End-to-end tests of wasm workflows and activities on real SQLite files
// with the real executors, V8 and guests compiled by clang
// (testdata/*.c, built by this folder's CMakeLists.txt).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "core/json_codec.h"
#include "runtime/wasm_host/wasm_host_test_util.h"

namespace stele::runtime::wasm_host::testing {
namespace {

namespace wf = runtime::workflow;
using core::Json;

std::shared_ptr<const WasmComponent> Workflows(WasmComponentLimits limits = {}) {
  return LoadOrDie(STELE_TEST_WORKFLOWS_WASM, "test_workflows", GuestKind::kWorkflow, limits);
}
std::shared_ptr<const WasmComponent> Activities() {
  return LoadOrDie(STELE_TEST_ACTIVITIES_WASM, "test_activities", GuestKind::kActivity);
}

// The first child execution the log submitted.
std::optional<core::ExecutionId> FirstChild(const std::vector<core::ExecutionEvent>& events) {
  for (const auto& e : events) {
    if (const auto* h = std::get_if<core::HistoryEventRequest>(&e.event)) {
      if (const auto* req = std::get_if<core::HistoryJoinSetRequest>(&h->event)) {
        if (const auto* c = std::get_if<core::ChildExecutionRequest>(&req->request)) {
          return core::ExecutionId(c->child_execution_id);
        }
      }
    }
  }
  return std::nullopt;
}

class WasmHostTest : public ::testing::Test {
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
  std::filesystem::path dir_;
  std::unique_ptr<Env> env_;
};

TEST_F(WasmHostTest, HelloCallsANativeActivityAndSleeps) {
  EnvConfig config;
  config.native_activities["testing:wasm/act.greet"] = [](ActivityContext&,
                                                          const Json& p) -> ActivityResult {
    return Json("hi, " + p.at(0).get<std::string>());
  };
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:wasm/wf.hello", Json::array({"Ada"}));
  EXPECT_EQ(OkJson(env.Await(id)), Json("hi, Ada"));
  // The call and the sleep each wrote events from a host call outside replay.
  auto trace = env.api().GetBacktrace(id, storage::BacktraceFilter::Last());
  ASSERT_TRUE(trace) << trace.error().ToString();
  EXPECT_FALSE(trace->wasm_backtrace.frames.empty());
  EXPECT_EQ(trace->component_id.name, "test_workflows");
}

TEST_F(WasmHostTest, HelloCallsAWasmActivity) {
  EnvConfig config;
  config.activities = Activities();
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:wasm/wf.hello", Json::array({"Ada"}));
  EXPECT_EQ(OkJson(env.Await(id)), Json("hello, Ada"));
}

TEST_F(WasmHostTest, FanOutWithAJoinSet) {
  EnvConfig config;
  config.activities = Activities();
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:wasm/wf.fan-out", Json::array({5}));
  // 1 + 4 + 9 + 16 + 25; the guest also checked that a sixth join_next
  // reports STELE_ALL_PROCESSED.
  EXPECT_EQ(OkJson(env.Await(id)), Json(55));
}

// The replay scenarios run under both blocking strategies and must write
// the same history under each (ExpectSameHistoryUnderBothStrategies).
TEST_F(WasmHostTest, FanOutWritesTheSameHistoryUnderBothStrategies) {
  EnvConfig config;
  config.workflows = Workflows();
  config.activities = Activities();
  ExpectSameHistoryUnderBothStrategies(config, [](Env& env, const core::ExecutionId& id) {
    env.Submit("testing:wasm/wf.fan-out", Json::array({3}), id);
    EXPECT_EQ(OkJson(env.Await(id)), Json(14));
  });
}

TEST_F(WasmHostTest, DurableSleepWakesUnderBothStrategies) {
  EnvConfig config;
  config.workflows = Workflows();
  ExpectSameHistoryUnderBothStrategies(config, [](Env& env, const core::ExecutionId& id) {
    env.Submit("testing:wasm/wf.sleep", Json::array({50}), id);
    EXPECT_EQ(OkJson(env.Await(id)), Json("slept"));
  });
}

TEST_F(WasmHostTest, WorkflowImportingWasiIsRejectedAtLoad) {
  auto loaded = LoadWasmComponentFile(wasm::CreateV8Engine(), STELE_TEST_WASI_WORKFLOW_WASM,
                                      "wasi_workflow", GuestKind::kWorkflow);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().find("wasi_snapshot_preview1"), std::string::npos) << loaded.error();
  EXPECT_NE(loaded.error().find("no WASI"), std::string::npos) << loaded.error();
}

// Issue 16. Under the default workflow lease (lock expiry and extension
// 2 s, service::ServiceOptions; 100 ms leeway; the watcher's 500 ms) and the default
// guest_slice cap (5 s), a guest that spins without host calls — from its
// start, or after a host call — is stopped before its lease ends: never two
// runs of the execution at once, and every timeout is the worker's own
// (the watcher never had to take an expired lease over). After
// guest_slice_attempts attempts the execution fails for good, saying why
// and which setting controls the slice.
TEST_F(WasmHostTest, SpinningGuestStopsBeforeItsLeaseAndFailsAfterBoundedAttempts) {
  EnvConfig config;
  config.workflow_lock = std::chrono::milliseconds(2000);
  config.watcher_leeway = std::chrono::milliseconds(500);
  Env& env = Start(std::move(config));
  EXPECT_EQ(env.workflow_worker().slice(), std::chrono::milliseconds(500));
  for (const char* ffqn : {"testing:wasm/wf.loop", "testing:wasm/wf.loop-after-call"}) {
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
  EXPECT_GE(env.workflow_worker().watchdog().interrupts(), 6u);
}

// Deep recursion in a guest: where the engine's stack runs out depends on
// the JIT tier and on the stack the worker thread has left, so a stack
// overflow is never a workflow outcome (which replay would have to
// reproduce): the run ends as LimitReached — Unlocked, retried after the
// backoff, not counted against retries — and the execution never finishes.
TEST_F(WasmHostTest, StackOverflowIsRetriedNeverFinal) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:wasm/wf.recurse", Json::array({1000000000}));
  EXPECT_TRUE(env.WaitUntil([&] { return CountEvents<core::Unlocked>(env.Events(id)) >= 2; }));
  const auto events = env.Events(id);
  for (const auto& e : events) {
    if (const auto* unlocked = std::get_if<core::Unlocked>(&e.event)) {
      EXPECT_NE(unlocked->reason.find("stack overflow"), std::string::npos) << unlocked->reason;
      EXPECT_EQ(unlocked->engine, wasm::CreateV8Engine()->EngineId());
    }
  }
  EXPECT_EQ(CountEvents<core::Finished>(events), 0u);
  EXPECT_EQ(CountEvents<core::TemporarilyFailed>(events), 0u);
  EXPECT_EQ(CountEvents<core::TemporarilyTimedOut>(events), 0u);
}

TEST_F(WasmHostTest, WorkflowTrapIsFinalWithTheBacktrace) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:wasm/wf.trap", Json::array());
  auto result = env.Await(id);
  const auto* failure = Failure(result);
  ASSERT_NE(failure, nullptr);
  ASSERT_TRUE(failure->reason);
  EXPECT_NE(failure->reason->find("workflow trap"), std::string::npos) << *failure->reason;
  ASSERT_TRUE(failure->detail);
  EXPECT_NE(failure->detail->find("deep_trap"), std::string::npos) << *failure->detail;
  EXPECT_EQ(CountEvents<core::TemporarilyFailed>(env.Events(id)), 0u);
}

TEST_F(WasmHostTest, ActivityTrapIsRetriedThenFinal) {
  EnvConfig config;
  config.activities = Activities();
  config.activity_max_retries = 2;
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:wasm/act.trap", Json::array());
  auto result = env.Await(id);
  const auto* failure = Failure(result);
  ASSERT_NE(failure, nullptr);
  EXPECT_EQ(CountEvents<core::TemporarilyFailed>(env.Events(id)), 2u);
}

TEST_F(WasmHostTest, ActivityErrIsRetriedThenIsTheResult) {
  EnvConfig config;
  config.activities = Activities();
  config.activity_max_retries = 1;
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:wasm/act.err", Json::array());
  auto result = env.Await(id);
  const auto* err = std::get_if<core::ReturnValueErr>(&result);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->err, Json("no luck"));
  EXPECT_EQ(CountEvents<core::TemporarilyFailed>(env.Events(id)), 1u);
}

TEST_F(WasmHostTest, ActivityProcExitIsATrap) {
  EnvConfig config;
  config.activities = Activities();
  config.activity_max_retries = 0;
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:wasm/act.exit", Json::array());
  auto result = env.Await(id);
  const auto* failure = Failure(result);
  ASSERT_NE(failure, nullptr);
  ASSERT_TRUE(failure->reason);
  EXPECT_NE(failure->reason->find("proc_exit(3)"), std::string::npos) << *failure->reason;
}

TEST_F(WasmHostTest, ActivitySeesConfiguredEnvironment) {
  EnvConfig config;
  config.activities = Activities();
  config.activity_options.wasi.env = {{"STELE_TEST", "yes"}};
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:wasm/act.env", Json::array());
  EXPECT_EQ(OkJson(env.Await(id)), Json("yes"));
}

TEST_F(WasmHostTest, ActivityLoopTimesOutAtTheLockDeadline) {
  EnvConfig config;
  config.activities = Activities();
  config.activity_max_retries = 0;
  config.activity_lock = std::chrono::milliseconds(200);
  // The watcher would record a TimedOut without an engine if it won the race
  // against the executor's interrupt; keep it out of the way.
  config.watcher_leeway = std::chrono::seconds(30);
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:wasm/act.loop", Json::array());
  auto result = env.Await(id);
  const auto* failure = Failure(result);
  ASSERT_NE(failure, nullptr);
  EXPECT_EQ(failure->kind, core::ExecutionFailureKind::kTimedOut);
  // The executor's own timeout record still names the engine of the attempt.
  const auto events = env.Events(id);
  ASSERT_FALSE(events.empty());
  const auto* finished = std::get_if<core::Finished>(&events.back().event);
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->engine, wasm::CreateV8Engine()->EngineId());
}

TEST_F(WasmHostTest, MemoryGrowthBeyondTheCapFailsCleanly) {
  EnvConfig config;
  config.workflows = Workflows(WasmComponentLimits{.max_memory_pages = 4});
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:wasm/wf.memory", Json::array());
  auto result = env.Await(id);
  const auto* failure = Failure(result);
  ASSERT_NE(failure, nullptr);
  ASSERT_TRUE(failure->reason);
  EXPECT_NE(failure->reason->find("workflow trap"), std::string::npos) << *failure->reason;
}

// A workflow runs only on the component digest it was created with or
// upgraded to: the executor of new code (another digest) leaves it pending,
// and it runs once upgraded. Here the new code changed inside the recorded
// prefix, so the upgraded execution ends with nondeterminism detected.
TEST_F(WasmHostTest, ChangedCodeInsideTheRecordedPrefixIsNondeterminism) {
  core::ExecutionId id = core::ExecutionId::Generate();
  std::string child;
  const core::InputContentDigest v1 = Workflows()->component_id.input_digest;
  {
    EnvConfig config;
    config.activities = Activities();
    config.stubs = {"testing:wasm/stub.approve"};
    Env& env = Start(std::move(config));
    env.Submit("testing:wasm/wf.two-calls", Json::array(), id);
    // Blocked on the stub: the prefix is greet, then the stub call.
    ASSERT_TRUE(env.WaitUntil([&] { return env.StateName(id) == "BlockedByJoinSet"; }));
    // Backtraces name the guest function that made the host call. They are
    // stored when the run ends (a warm run ends when its lease does).
    std::optional<core::BacktraceInfo> trace;
    ASSERT_TRUE(env.WaitUntil([&] {
      auto got = env.api().GetBacktrace(id, storage::BacktraceFilter::Last());
      if (got) trace = *got;
      return got.has_value();
    }));
    bool named = false;
    for (const auto& frame : trace->wasm_backtrace.frames)
      named |= frame.func_name == "place_the_call";
    EXPECT_TRUE(named);
    for (const auto& e : env.Events(id)) {
      if (const auto* h = std::get_if<core::HistoryEventRequest>(&e.event)) {
        if (const auto* req = std::get_if<core::HistoryJoinSetRequest>(&h->event)) {
          if (req->join_set_id.name().find("approve") != std::string::npos) {
            if (const auto* c = std::get_if<core::ChildExecutionRequest>(&req->request)) {
              child = c->child_execution_id.ToString();
            }
          }
        }
      }
    }
    ASSERT_FALSE(child.empty());
    env_.reset();
  }
  EnvConfig config;
  config.workflows =
      LoadOrDie(STELE_TEST_WORKFLOWS_V2_WASM, "test_workflows", GuestKind::kWorkflow);
  const core::InputContentDigest v2 = config.workflows->component_id.input_digest;
  ASSERT_NE(v1, v2);
  config.activities = Activities();
  config.stubs = {"testing:wasm/stub.approve"};
  Env& env = Start(std::move(config));
  const size_t locks_under_v1 = CountEvents<core::Locked>(env.Events(id));
  ASSERT_TRUE(env.engine().Stub(child, ExecutionResult::Ok(Json(true))));
  // Unblocked, but created under v1: the v2 executor does not lock it. A
  // fresh v2 execution submitted after it runs to its end meanwhile (the
  // executor ticked), and the v1 one is still pending, unlocked.
  ASSERT_TRUE(env.WaitUntil([&] { return env.StateName(id) == "PendingAt"; }));
  auto fresh = env.Submit("testing:wasm/wf.sleep", Json::array({1}));
  EXPECT_EQ(OkJson(env.Await(fresh)), Json("slept"));
  EXPECT_EQ(env.StateName(id), "PendingAt");
  EXPECT_EQ(CountEvents<core::Locked>(env.Events(id)), locks_under_v1)
      << "the v2 executor locked it";
  ASSERT_TRUE(env.api().UpgradeExecutionComponent(id, v1, v2));
  auto result = env.Await(id);
  const auto* failure = Failure(result);
  ASSERT_NE(failure, nullptr);
  EXPECT_EQ(failure->kind, core::ExecutionFailureKind::kNondeterminismDetected);
}

TEST_F(WasmHostTest, HumanApprovalCompletedByStubUnderBothStrategies) {
  EnvConfig config;
  config.workflows = Workflows();
  config.stubs = {"testing:wasm/stub.approve"};
  ExpectSameHistoryUnderBothStrategies(config, [](Env& env, const core::ExecutionId& id) {
    env.Submit("testing:wasm/wf.approval", Json::array({100}), id);
    ASSERT_TRUE(env.WaitUntil([&] { return env.StateName(id) == "BlockedByJoinSet"; }));
    auto children =
        env.api().ListExecutions(core::FunctionFqn::Parse("testing:wasm/stub.approve").value(),
                                 false, core::ExecutionListPagination{});
    ASSERT_TRUE(children);
    ASSERT_EQ(children->size(), 1u);
    ASSERT_TRUE(env.engine().Stub(children->front().execution_id.ToString(),
                                  ExecutionResult::Ok(Json(true))));
    EXPECT_EQ(OkJson(env.Await(id)), Json("approved"));
  });
}

TEST_F(WasmHostTest, RandomValuesAreInRangeUnderBothStrategies) {
  EnvConfig config;
  config.workflows = Workflows();
  ExpectSameHistoryUnderBothStrategies(config, [](Env& env, const core::ExecutionId& id) {
    env.Submit("testing:wasm/wf.random", Json::array(), id);
    Json values = OkJson(env.Await(id));
    ASSERT_TRUE(values.is_array());
    EXPECT_LT(values[0].get<uint64_t>(), 1000000u);
    EXPECT_EQ(values[1], Json(5));
    EXPECT_EQ(values[2].get<std::string>().size(), 8u);
  });
}

// The engine id and version of each run are in the durable record: on the
// event the executor wrote for every activity attempt and workflow run
// (Finished, TemporarilyFailed, ...), and on every backtrace a workflow run
// stored; read back through the read API as stored.
TEST_F(WasmHostTest, EveryWasmRunRecordsTheEngine) {
  const std::string engine = wasm::CreateV8Engine()->EngineId();
  ASSERT_EQ(engine.rfind("v8 10.2.", 0), 0u) << engine;
  EnvConfig config;
  config.activities = Activities();
  config.activity_max_retries = 1;
  Env& env = Start(std::move(config));

  // An activity that traps: two attempts, each recorded with the engine.
  auto trapped = env.Submit("testing:wasm/act.trap", Json::array());
  env.Await(trapped);
  std::vector<std::optional<std::string>> attempts;
  for (const auto& e : env.Events(trapped)) {
    if (const auto* failed = std::get_if<core::TemporarilyFailed>(&e.event))
      attempts.push_back(failed->engine);
    if (const auto* finished = std::get_if<core::Finished>(&e.event))
      attempts.push_back(finished->engine);
  }
  EXPECT_EQ(attempts, (std::vector<std::optional<std::string>>{engine, engine}));

  // A workflow calling a wasm activity and sleeping: its runs end blocked
  // (their backtraces carry the engine) and finished (the Finished does).
  auto id = env.Submit("testing:wasm/wf.hello", Json::array({"Ada"}));
  EXPECT_EQ(OkJson(env.Await(id)), Json("hello, Ada"));
  const auto events = env.Events(id);
  const auto* finished = std::get_if<core::Finished>(&events.back().event);
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->engine, engine);
  for (auto filter : {storage::BacktraceFilter::First(), storage::BacktraceFilter::Last()}) {
    auto trace = env.api().GetBacktrace(id, filter);
    ASSERT_TRUE(trace) << trace.error().ToString();
    EXPECT_EQ(trace->wasm_backtrace.engine, engine);
  }
  // The child activity's attempt too, and the JSON of the API carries it.
  std::optional<core::ExecutionId> child = FirstChild(events);
  ASSERT_TRUE(child);
  const auto child_events = env.Events(*child);
  EXPECT_EQ(core::ToJson(child_events.back().event)["finished"]["engine"], Json(engine));
}

// A native activity called by a wasm workflow: the workflow's record names
// the engine, the native child's does not (its JSON is as it always was).
TEST_F(WasmHostTest, NativeRunsRecordNoEngine) {
  EnvConfig config;
  config.native_activities["testing:wasm/act.greet"] = [](ActivityContext&,
                                                          const Json& p) -> ActivityResult {
    return Json("hi, " + p.at(0).get<std::string>());
  };
  Env& env = Start(std::move(config));
  auto id = env.Submit("testing:wasm/wf.hello", Json::array({"Ada"}));
  EXPECT_EQ(OkJson(env.Await(id)), Json("hi, Ada"));
  const auto events = env.Events(id);
  EXPECT_EQ(std::get<core::Finished>(events.back().event).engine,
            wasm::CreateV8Engine()->EngineId());
  std::optional<core::ExecutionId> child = FirstChild(events);
  ASSERT_TRUE(child);
  const auto child_events = env.Events(*child);
  const auto* finished = std::get_if<core::Finished>(&child_events.back().event);
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->engine, std::nullopt);
  EXPECT_FALSE(core::ToJson(child_events.back().event)["finished"].contains("engine"));
}

TEST_F(WasmHostTest, MalformedFfqnFromTheGuestFailsTheWorkflowClearly) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:wasm/wf.bad-ffqn", Json::array());
  auto result = env.Await(id);
  const auto* failure = Failure(result);
  ASSERT_NE(failure, nullptr);
  ASSERT_TRUE(failure->reason);
  EXPECT_NE(failure->reason->find("not an ffqn"), std::string::npos) << *failure->reason;
}

TEST_F(WasmHostTest, MalformedResultIsAResultParsingError) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:wasm/wf.bad-result", Json::array());
  auto result = env.Await(id);
  const auto* failure = Failure(result);
  ASSERT_NE(failure, nullptr);
  ASSERT_TRUE(failure->reason);
  EXPECT_NE(failure->reason->find("result parsing"), std::string::npos) << *failure->reason;
}

}  // namespace
}  // namespace stele::runtime::wasm_host::testing

namespace stele::runtime::wasm_host::testing {
namespace {

TEST_F(WasmHostTest, GuestPointerOutsideMemoryIsAWorkflowTrap) {
  Env& env = Start(EnvConfig{});
  auto id = env.Submit("testing:wasm/wf.oob", core::Json::array());
  auto result = env.Await(id);
  const auto* failure = Failure(result);
  ASSERT_NE(failure, nullptr);
  ASSERT_TRUE(failure->reason);
  EXPECT_NE(failure->reason->find("workflow trap"), std::string::npos) << *failure->reason;
}

}  // namespace
}  // namespace stele::runtime::wasm_host::testing
