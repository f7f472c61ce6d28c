// Determinism property test (docs/model.md §6, §11): seeded random
// workflow programs (sleep, call, named join set, submit, submit-delay,
// join next, random, close, and messages: send to itself, receive with a
// timeout, try receive, publish) run to completion under kInterrupt and under
// kAwait, each with non-blocking event batching 0, 10 and 100, driven tick
// by tick; once more under kAwait kept warm on real threads (the run waits
// for its responses while the test thread runs the activities, the watcher
// and the clock); and once more from a wiped history given the first run's
// responses. All must append the same history events and return the same
// value. STELE_TEST_SEED=<n> reruns one program.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/workflow/workflow_test_util.h"

namespace stele::runtime::workflow::testing {
namespace {

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
  kSend,
  kReceive,
  kTryReceive,
  kPublish,
};
constexpr int kOpCount = 13;

struct ProgramStep {
  Op op;
  uint64_t arg;
};

std::vector<ProgramStep> Generate(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const size_t length = 4 + rng() % 12;
  std::vector<ProgramStep> program;
  for (size_t i = 0; i < length; ++i) {
    program.push_back(ProgramStep{static_cast<Op>(rng() % kOpCount), rng()});
  }
  return program;
}

std::string ResponseText(const JoinSetResponseValue& response) {
  if (const auto* child = std::get_if<ChildResponse>(&response)) {
    const auto* ok = std::get_if<core::ReturnValueOk>(&child->result);
    return child->child_execution_id.ToString() + "=" +
           (ok != nullptr && ok->ok ? ok->ok->dump() : std::string("failed"));
  }
  const auto& delay = std::get<DelayResponse>(response);
  return delay.delay_id.ToString() + (delay.ok ? "=fired" : "=cancelled");
}

// Interprets the program; every decision depends only on the program and
// on what the engine returns, as a deterministic workflow must.
Script ProgramScript(std::vector<ProgramStep> program) {
  return [program = std::move(program)](WorkflowRun& run) -> executor::WorkerResult {
    std::vector<core::JoinSetId> open;
    std::string trace;
    int named = 0;
    auto delay = [](uint64_t arg) {
      return core::HistoryEventScheduleAt::In(core::Duration::FromMillis((arg % 3) * 700));
    };
    for (const ProgramStep& step : program) {
      const size_t pick = open.empty() ? 0 : step.arg % open.size();
      switch (step.op) {
        case Op::kSleep: {
          WF_TRY(auto slept, run.Sleep(delay(step.arg)));
          trace += slept ? "slept;" : "sleep-cancelled;";
          break;
        }
        case Op::kCall: {
          WF_TRY(auto result, run.Call(ActivityFfqn(), core::Json::array({step.arg % 100})));
          trace += std::get<core::ReturnValueOk>(result).ok->dump() + ";";
          break;
        }
        case Op::kCreateNamed: {
          WF_TRY(auto js, run.CreateNamedJoinSet("js" + std::to_string(named++)));
          if (js) open.push_back(*js);
          break;
        }
        case Op::kSubmit: {
          if (open.empty()) break;
          WF_TRY(auto child,
                 run.SubmitChild(open[pick], ActivityFfqn(), core::Json::array({step.arg % 100})));
          trace += "submitted " + child.ToString() + ";";
          break;
        }
        case Op::kSubmitDelay: {
          if (open.empty()) break;
          WF_TRY(auto delay_id, run.SubmitDelay(open[pick], delay(step.arg)));
          trace += "delay " + delay_id.ToString() + ";";
          break;
        }
        case Op::kJoinNext: {
          if (open.empty()) break;
          WF_TRY(auto next, run.JoinNext(open[pick]));
          trace += (next ? ResponseText(*next) : std::string("all processed")) + ";";
          break;
        }
        case Op::kRandomU64: {
          WF_TRY(uint64_t value, run.RandomU64(0, 1000));
          trace += std::to_string(value) + ";";
          break;
        }
        case Op::kRandomString: {
          WF_TRY(std::string value, run.RandomString(1, 8));
          trace += value + ";";
          break;
        }
        case Op::kSend: {
          // To itself: what a receive finds depends only on the program.
          const std::string channel = "c" + std::to_string(step.arg % 2);
          WF_TRY(auto sent,
                 run.SendMessage(run.execution_id(), channel, core::Json::array({step.arg % 100})));
          trace += sent ? "sent;" : "not sent;";
          break;
        }
        case Op::kReceive: {
          const std::string channel = "c" + std::to_string(step.arg % 2);
          WF_TRY(auto message, run.Receive(channel, delay(step.arg / 3)));
          trace += (message ? message->message_id + "=" + message->body.dump()
                            : std::string("timed out")) +
                   ";";
          break;
        }
        case Op::kTryReceive: {
          const std::string channel = "c" + std::to_string(step.arg % 2);
          WF_TRY(auto message, run.TryReceive(channel));
          trace += (message && *message ? (*message)->message_id + "=" + (*message)->body.dump()
                                        : std::string("nothing")) +
                   ";";
          break;
        }
        case Op::kPublish: {
          WF_TRY_VOID(
              run.PublishValue("k" + std::to_string(step.arg % 2), core::Json(step.arg % 1000)));
          trace += "published;";
          break;
        }
        case Op::kClose: {
          if (open.empty()) break;
          WF_TRY_VOID(run.CloseJoinSet(open[pick]));
          open.erase(open.begin() + static_cast<std::ptrdiff_t>(pick));
          trace += "closed;";
          break;
        }
      }
    }
    return run.Finish(OkValue(trace));
  };
}

std::vector<uint64_t> Seeds() {
  if (const char* env = std::getenv("STELE_TEST_SEED")) return {std::strtoull(env, nullptr, 10)};
  std::vector<uint64_t> seeds;
  for (uint64_t s = 1; s <= 12; ++s) seeds.push_back(s);
  return seeds;
}

class DeterminismTest : public ::testing::TestWithParam<Backend> {};

using namespace std::chrono_literals;  // NOLINT

// Real threads: the workflow runs on its executor's pool and, under
// kAwait with max_warm_wait > 0, waits warm for its responses while this
// thread runs the activities and the watcher and moves the clock (100 ms
// a round; the lease is 1 s, so some waits end warm and some unload).
// Polls (1 ms) until `id` is finished, at most 60 s.
bool RunWarm(TestEnv& env, const core::ExecutionId& id) {
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < until) {
    env.SpawnWorkflows();  // nothing while a run holds the lock
    env.TickActivities();
    env.TickWatcher();
    if (env.Log(id).pending_state.IsFinished()) return true;
    env.clock().Advance(100ms);
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

TEST_P(DeterminismTest, StrategiesAndWipedReplayProduceIdenticalLogs) {
  // Runs (Locked events) of the warm variant and of the reference: the warm
  // variant must have continued runs warm, or it tested nothing warm.
  int warm_locks = 0;
  int interrupt_locks = 0;
  for (uint64_t seed : Seeds()) {
    SCOPED_TRACE("STELE_TEST_SEED=" + std::to_string(seed));
    const std::vector<ProgramStep> program = Generate(seed);
    // The same id everywhere: child ids, delay ids and the PRNG derive from it.
    const core::ExecutionId id(Ulid(0x0190000000000000ULL | seed, seed * 0x9E3779B97F4A7C15ULL));

    TestEnv interrupt(GetParam(), TestOptions(BlockingStrategy::kInterrupt),
                      ProgramScript(program));
    interrupt.CreateWorkflow(id);
    ASSERT_TRUE(interrupt.RunToCompletion(id, 200));
    const auto expected_history = interrupt.History(id);
    const auto expected_result = interrupt.Result(id);
    ASSERT_TRUE(std::holds_alternative<core::ReturnValueOk>(expected_result))
        << Describe(expected_history);

    for (const BlockingStrategy strategy :
         {BlockingStrategy::kInterrupt, BlockingStrategy::kAwait}) {
      for (const uint32_t batching : {0u, 10u, 100u}) {
        if (strategy == BlockingStrategy::kInterrupt && batching == 100) continue;  // the reference
        const std::string variant =
            StrategyName(strategy) + ", batching " + std::to_string(batching);
        SCOPED_TRACE(variant);
        WorkflowRunOptions options = TestOptions(strategy);
        options.non_blocking_event_batching = batching;
        TestEnv env(GetParam(), options, ProgramScript(program));
        env.CreateWorkflow(id);
        ASSERT_TRUE(env.RunToCompletion(id, 200));
        EXPECT_EQ(env.History(id), expected_history) << variant << ":\n"
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
      TestEnv warm(GetParam(), warm_options, ProgramScript(program));
      warm.CreateWorkflow(id);
      ASSERT_TRUE(RunWarm(warm, id));
      EXPECT_EQ(warm.History(id), expected_history) << "warm:\n"
                                                    << Describe(warm.History(id)) << "interrupt:\n"
                                                    << Describe(expected_history);
      EXPECT_EQ(warm.Result(id), expected_result);
      for (const auto& name : warm.EventNames(id)) warm_locks += name == "Locked" ? 1 : 0;
      for (const auto& name : interrupt.EventNames(id)) interrupt_locks += name == "Locked" ? 1 : 0;
    }

    // Wiped history, same responses: one run reaches the end at once. Not
    // for a program that tries a receive: a try in new territory answers
    // with what has arrived by then, and a wiped run is given every
    // response the first run ever got, so its tries would find messages
    // the first run's tries could not have seen yet (the replay of a try
    // is covered above: every variant replays recorded tries).
    bool tries = false;
    for (const ProgramStep& step : program) tries = tries || step.op == Op::kTryReceive;
    if (tries) continue;
    TestEnv wiped(GetParam(), TestOptions(BlockingStrategy::kInterrupt), ProgramScript(program));
    wiped.CreateWorkflow(id);
    const DateTime now = wiped.clock().Now();
    auto locked = Must(wiped.db().LockPendingByFfqns(
        1, now, {WorkflowFfqn()}, now, core::ComponentId::DummyWorkflow(),
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
    WorkflowRun run(std::move(ctx), WorkflowRunDeps{conn.get(), &wiped.clock(), &wiped.registry()},
                    TestOptions(BlockingStrategy::kInterrupt));
    executor::WorkerResult result = ProgramScript(program)(run);
    // The run wrote its Finished itself with its last events, or left it to
    // the executor (nothing else to write).
    if (const auto* ok = std::get_if<executor::WorkerOk>(&result.value)) {
      EXPECT_EQ(ok->value, expected_result);
    } else {
      ASSERT_TRUE(std::holds_alternative<executor::DbUpdatedByWorkerOrWatcher>(result.value))
          << result.ToString();
      EXPECT_EQ(wiped.Result(id), expected_result);
    }
    EXPECT_EQ(wiped.History(id), expected_history) << "wiped:\n"
                                                   << Describe(wiped.History(id)) << "original:\n"
                                                   << Describe(expected_history);
    if (::testing::Test::HasFailure()) return;
  }
  if (Seeds().size() > 1) {  // one program may have nothing to wait for
    EXPECT_LT(warm_locks, interrupt_locks) << "no warm run ever continued warm";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, DeterminismTest,
                         ::testing::ValuesIn(executor::testing::AllBackends()),
                         executor::testing::BackendName);

}  // namespace
}  // namespace stele::runtime::workflow::testing
