// The determinism property test of the replay engine
// (src/runtime/workflow/determinism_test.cc) on JavaScript workflows: the
// same kind of seeded random programs (sleep, call, named join set, submit,
// submit-delay, join next, random, close — plus what JS adds: Date.now()
// and Math.random()), written out as JS modules and run by the JS runtime
// over the same test environment (real backends, executor and watcher on
// a ManualClock), under kInterrupt and kAwait with event batching 0, 10
// and 100, under kAwait kept warm on real threads, and once more from a
// wiped history given the first run's responses. All must append the same
// history events (step times masked: they are the clock of whichever run
// first reached the step) and return the same value.
// STELE_TEST_SEED=<n> reruns one program.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/js/js_component.h"
#include "runtime/js/js_workflow_worker.h"
#include "runtime/workflow/workflow_test_util.h"

namespace stele::runtime::js {
namespace {

using namespace std::chrono_literals;  // NOLINT
using workflow::BlockingStrategy;
using workflow::WorkflowRun;
using workflow::WorkflowRunOptions;
using workflow::testing::Backend;
using workflow::testing::Describe;
using workflow::testing::Must;
using workflow::testing::Script;
using workflow::testing::TestEnv;
using workflow::testing::TestOptions;

enum class Op {
  kSleep,
  kCall,
  kCreateNamed,
  kSubmit,
  kSubmitDelay,
  kJoinNext,
  kRandomU64,
  kRandomString,
  kClose,
  kDateNow,     // JS only
  kMathRandom,  // JS only
};
constexpr int kOpCount = 11;

// The program as a JS module declaring the test environment's workflow.
std::string Generate(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const size_t length = 4 + rng() % 12;
  std::string body;
  for (size_t i = 0; i < length; ++i) {
    const auto op = static_cast<Op>(rng() % kOpCount);
    const uint64_t arg = rng() % 1000003;
    const std::string a = std::to_string(arg);
    const std::string delay = std::to_string((arg % 3) * 700);
    const std::string pick = "open[" + a + " % open.length]";
    switch (op) {
      case Op::kSleep:
        body += "  trace += (await ctx.sleep(" + delay + ")) ? 'slept;' : 'sleep-cancelled;';\n";
        break;
      case Op::kCall:
        body += "  trace += JSON.stringify(await ctx.call(ACT, [" + std::to_string(arg % 100) +
                "])) + ';';\n";
        break;
      case Op::kCreateNamed:
        body += "  open.push(ctx.joinSet('js' + named++));\n";
        break;
      case Op::kSubmit:
        body += "  if (open.length) trace += 'submitted ' + " + pick + ".submit(ACT, [" +
                std::to_string(arg % 100) + "]) + ';';\n";
        break;
      case Op::kSubmitDelay:
        body += "  if (open.length) trace += 'delay ' + " + pick + ".submitDelay(" + delay +
                ") + ';';\n";
        break;
      case Op::kJoinNext:
        body += "  if (open.length) trace += text(await " + pick + ".next()) + ';';\n";
        break;
      case Op::kRandomU64:
        body += "  trace += ctx.randomU64(0, 1000) + ';';\n";
        break;
      case Op::kRandomString:
        body += "  trace += ctx.randomString(1, 8) + ';';\n";
        break;
      case Op::kClose:
        body += "  if (open.length) { const i = " + a +
                " % open.length; await open[i].close(); "
                "open.splice(i, 1); trace += 'closed;'; }\n";
        break;
      case Op::kDateNow:
        body +=
            "  { const t = Date.now(); trace += t >= last ? 'time;' : 'time went back;'; last = t; "
            "}\n";
        break;
      case Op::kMathRandom:
        body += "  trace += Math.floor(Math.random() * 1000) + ';';\n";
        break;
    }
  }
  return "const ACT = 'testing:workflow/ifc.activity';\n"
         "function text(r) {\n"
         "  if (r === null) return 'all processed';\n"
         "  if (r.kind === 'delay') return r.id + (r.expired ? '=fired' : '=cancelled');\n"
         "  return r.id + '=' + ('ok' in r.result ? JSON.stringify(r.result.ok) : 'failed');\n"
         "}\n"
         "export const functions = {'testing:workflow/ifc.workflow': {run: async (ctx) => {\n"
         "  const open = []; let trace = ''; let named = 0; let last = 0;\n" +
         body + "  return trace;\n}}};\n";
}

Script JsScript(std::shared_ptr<const JsComponent> component) {
  return [component](WorkflowRun& run) {
    JsRunLimits limits;
    limits.slice.slice = std::chrono::seconds(30);
    return RunJsWorkflow(*component, run, nullptr, limits, CancellationToken(), {});
  };
}

// TestEnv::History with the values of step times cleared.
std::vector<core::HistoryEvent> Masked(std::vector<core::HistoryEvent> history) {
  for (auto& event : history) {
    if (auto* persist = std::get_if<core::HistoryPersist>(&event)) {
      if (std::holds_alternative<core::PersistKindTime>(persist->kind)) persist->value.clear();
    }
  }
  return history;
}

std::vector<uint64_t> Seeds() {
  if (const char* env = std::getenv("STELE_TEST_SEED")) return {std::strtoull(env, nullptr, 10)};
  std::vector<uint64_t> seeds;
  for (uint64_t s = 1; s <= 12; ++s) seeds.push_back(s);
  return seeds;
}

// Runs of `id`: distinct run ids of its Locked events (a lock extension is
// a Locked event of the same run).
int Runs(TestEnv& env, const core::ExecutionId& id) {
  std::set<std::string> runs;
  for (const auto& e : env.Log(id).events) {
    if (const auto* locked = std::get_if<core::Locked>(&e.event))
      runs.insert(locked->run_id.ToString());
  }
  return static_cast<int>(runs.size());
}

// As determinism_test.cc's RunWarm, with the clock moving 10 ms a round
// rather than 100: a JS run (a realm, a module instance, under ASan) takes
// milliseconds of real time, during which a faster clock would expire the
// 1 s lease mid-run and turn warm runs into replays.
bool RunWarm(TestEnv& env, const core::ExecutionId& id) {
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < until) {
    env.SpawnWorkflows();
    env.TickActivities();
    env.TickWatcher();
    if (env.Log(id).pending_state.IsFinished()) return true;
    env.clock().Advance(10ms);
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

class JsDeterminismTest : public ::testing::TestWithParam<Backend> {};

TEST_P(JsDeterminismTest, StrategiesAndWipedReplayProduceIdenticalLogs) {
  // Runs of the warm variant and of the reference: the warm variant must
  // have continued runs warm, or it tested nothing warm.
  int warm_locks = 0;
  int interrupt_locks = 0;
  for (uint64_t seed : Seeds()) {
    SCOPED_TRACE("STELE_TEST_SEED=" + std::to_string(seed));
    const std::string source = Generate(seed);
    SCOPED_TRACE(source);
    auto component =
        LoadJsComponent(CreateV8JsEngine(), source, "program.js", "program", JsFlavor::kWorkflow);
    ASSERT_TRUE(component.has_value()) << component.error();
    const Script script = JsScript(*component);
    const core::ExecutionId id(Ulid(0x0190000000000000ULL | seed, seed * 0x9E3779B97F4A7C15ULL));

    TestEnv interrupt(GetParam(), TestOptions(BlockingStrategy::kInterrupt), script);
    interrupt.CreateWorkflow(id);
    ASSERT_TRUE(interrupt.RunToCompletion(id, 200));
    const auto expected_history = Masked(interrupt.History(id));
    const auto expected_result = interrupt.Result(id);
    ASSERT_TRUE(std::holds_alternative<core::ReturnValueOk>(expected_result))
        << Describe(expected_history);

    for (const BlockingStrategy strategy :
         {BlockingStrategy::kInterrupt, BlockingStrategy::kAwait}) {
      for (const uint32_t batching : {0u, 10u, 100u}) {
        if (strategy == BlockingStrategy::kInterrupt && batching == 100) continue;  // the reference
        const std::string variant =
            workflow::testing::StrategyName(strategy) + ", batching " + std::to_string(batching);
        SCOPED_TRACE(variant);
        WorkflowRunOptions options = TestOptions(strategy);
        options.non_blocking_event_batching = batching;
        TestEnv env(GetParam(), options, script);
        env.CreateWorkflow(id);
        ASSERT_TRUE(env.RunToCompletion(id, 200));
        EXPECT_EQ(Masked(env.History(id)), expected_history)
            << variant << ":\n"
            << Describe(env.History(id)) << "interrupt:\n"
            << Describe(expected_history);
        EXPECT_EQ(env.Result(id), expected_result);
      }
    }

    {
      WorkflowRunOptions warm_options;
      warm_options.blocking_strategy = BlockingStrategy::kAwait;
      warm_options.max_warm_wait = 200ms;
      warm_options.subscription_interruption = 5ms;
      warm_options.non_blocking_event_batching = std::vector<uint32_t>{0, 10, 100}[seed % 3];
      SCOPED_TRACE("warm, batching " + std::to_string(warm_options.non_blocking_event_batching));
      TestEnv warm(GetParam(), warm_options, script);
      warm.CreateWorkflow(id);
      ASSERT_TRUE(RunWarm(warm, id));
      EXPECT_EQ(Masked(warm.History(id)), expected_history)
          << "warm:\n"
          << Describe(warm.History(id)) << "interrupt:\n"
          << Describe(expected_history);
      EXPECT_EQ(warm.Result(id), expected_result);
      warm_locks += Runs(warm, id);
      interrupt_locks += Runs(interrupt, id);
    }

    // Wiped history, same responses: one run reaches the end at once.
    TestEnv wiped(GetParam(), TestOptions(BlockingStrategy::kInterrupt), script);
    wiped.CreateWorkflow(id);
    const DateTime now = wiped.clock().Now();
    auto locked = Must(wiped.db().LockPendingByFfqns(
        1, now, {workflow::testing::WorkflowFfqn()}, now, core::ComponentId::DummyWorkflow(),
        core::ExecutorId::Generate(), now + std::chrono::seconds(1), core::RunId::Generate(),
        core::ComponentRetryConfig{std::nullopt, core::Duration::FromMillis(100)}));
    ASSERT_EQ(locked.size(), 1u);
    executor::WorkerContext ctx{
        .execution_id = id,
        .ffqn = locked[0].ffqn,
        .params = locked[0].params,
        .metadata = locked[0].metadata,
        .event_history = {},
        .responses = interrupt.Log(id).responses,
        .version = locked[0].next_version,
        .locked_event = locked[0].locked_event,
        .parent = std::nullopt,
        .intermittent_event_count = 0,
        .can_be_retried = true,
        .execution_deadline = locked[0].locked_event.lock_expires_at,
        .cancel = CancellationToken(),
        .run_id = locked[0].locked_event.run_id,
        .executor_id = locked[0].locked_event.executor_id,
    };
    auto conn = Must(wiped.pool().Connection());
    WorkflowRun run(std::move(ctx),
                    workflow::WorkflowRunDeps{conn.get(), &wiped.clock(), &wiped.registry()},
                    TestOptions(BlockingStrategy::kInterrupt));
    executor::WorkerResult result = script(run);
    if (const auto* ok = std::get_if<executor::WorkerOk>(&result.value)) {
      EXPECT_EQ(ok->value, expected_result);
    } else {
      ASSERT_TRUE(std::holds_alternative<executor::DbUpdatedByWorkerOrWatcher>(result.value))
          << result.ToString();
      EXPECT_EQ(wiped.Result(id), expected_result);
    }
    EXPECT_EQ(Masked(wiped.History(id)), expected_history)
        << "wiped:\n"
        << Describe(wiped.History(id)) << "original:\n"
        << Describe(expected_history);
    if (::testing::Test::HasFailure()) return;
  }
  if (Seeds().size() > 1) {
    EXPECT_LT(warm_locks, interrupt_locks) << "no warm run ever continued warm";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, JsDeterminismTest,
                         ::testing::ValuesIn(executor::testing::AllBackends()),
                         executor::testing::BackendName);

}  // namespace
}  // namespace stele::runtime::js
