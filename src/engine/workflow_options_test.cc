// Per-workflow settings (stele::WorkflowOptions): workflows of one engine
// with different blocking strategies, leases, backoffs, batching and
// per-run event limits each behave by their own settings, fall back to the
// engine's where they set nothing, and record the same history.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "core/execution_event.h"
#include "engine/sdk_test_util.h"
#include "service/component.h"
#include "stele/stele.h"

namespace stele {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::OkOrDie;
using testing::WaitForState;
using testing::WaitUntil;

constexpr const char* kApprove = "test:opts/human.approve";

// The history of an execution as text, the execution's own id replaced by
// "<id>" so that logs of different executions compare. JoinNext leases are
// not part of the text (they are where strategies differ, by design).
std::vector<std::string> History(const std::vector<core::ExecutionEvent>& events,
                                 const std::string& id) {
  std::vector<std::string> out;
  for (const core::ExecutionEvent& event : events) {
    if (!std::holds_alternative<core::HistoryEventRequest>(event.event)) continue;
    std::string text = core::ExecutionRequestToString(event.event);
    for (size_t at = text.find(id); at != std::string::npos; at = text.find(id, at)) {
      text.replace(at, id.size(), "<id>");
    }
    out.push_back(std::move(text));
  }
  return out;
}

std::vector<core::Locked> Locks(const std::vector<core::ExecutionEvent>& events) {
  std::vector<core::Locked> out;
  for (const core::ExecutionEvent& event : events) {
    if (const auto* locked = std::get_if<core::Locked>(&event.event)) out.push_back(*locked);
  }
  return out;
}

std::vector<DateTime> JoinNextLeases(const std::vector<core::ExecutionEvent>& events) {
  std::vector<DateTime> out;
  for (const core::ExecutionEvent& event : events) {
    const auto* history = std::get_if<core::HistoryEventRequest>(&event.event);
    if (history == nullptr) continue;
    if (const auto* next = std::get_if<core::HistoryJoinNext>(&history->event)) {
      out.push_back(next->run_expires_at);
    }
  }
  return out;
}

int CountUnlocked(const std::vector<core::ExecutionEvent>& events) {
  int n = 0;
  for (const core::ExecutionEvent& event : events) {
    n += std::holds_alternative<core::Unlocked>(event.event) ? 1 : 0;
  }
  return n;
}

class WorkflowOptionsTest : public testing::PoolEngineTest {
 protected:
  // How often each workflow function was entered (a replay enters it
  // again) and how often its frame was destroyed (an unload, or the end).
  struct Counters {
    std::atomic<int> entered{0};
    std::atomic<int> destroyed{0};
  };
  struct FrameGuard {
    Counters* counters;
    ~FrameGuard() { ++counters->destroyed; }
  };

  // A workflow that draws a random value, asks the stub for a decision and
  // returns both: one wait, in a one-off join set.
  WorkflowFn AskForApproval(Counters& counters) {
    return [&counters](WorkflowContext& ctx, Json params) -> Task<Json> {
      ++counters.entered;
      FrameGuard guard{&counters};
      uint64_t ticket = co_await ctx.random_u64(0, 1000);
      auto decision = co_await ctx.call(kApprove, params);
      co_return Json{{"ticket", ticket}, {"decision", decision.value}};
    };
  }
};

// On a frozen clock a lease never ends: a warm run waits until the
// response comes, an interrupting one unloads at once.
TEST_F(WorkflowOptionsTest, EachWorkflowBlocksByItsOwnStrategy) {
  auto clock = std::make_shared<ManualClock>(DateTimeFromMillis(1'700'000'000'000));
  EngineOptions options = Options();
  options.clock = clock;
  options.start_watcher = false;
  options.workflow_keep_warm = false;  // the engine default: interrupt
  options.workflow_lock_expiry = seconds(2);
  Engine& engine = Open(options);
  Counters cold, warm, brief;
  ASSERT_TRUE(engine.RegisterStub(kApprove));
  // Inherits the engine's kInterrupt.
  ASSERT_TRUE(engine.RegisterWorkflow("test:opts/wf.cold", AskForApproval(cold)));
  ASSERT_TRUE(engine.RegisterWorkflow("test:opts/wf.warm", AskForApproval(warm),
                                      {.blocking_strategy = BlockingStrategy::kAwait}));
  // Warm, but for no time at all: unloads after its first wait.
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:opts/wf.brief", AskForApproval(brief),
      {.blocking_strategy = BlockingStrategy::kAwait, .max_warm_wait = milliseconds(0)}));
  ASSERT_TRUE(engine.Start());

  const DateTime now = clock->Now();
  std::map<std::string, std::string> ids;
  for (const char* name : {"cold", "warm", "brief"}) {
    ids[name] =
        OkOrDie(engine.Submit(std::string("test:opts/wf.") + name, Params("order-7")), name);
  }
  for (const auto& [name, id] : ids)
    ASSERT_TRUE(WaitForState(engine, id, "BlockedByJoinSet")) << name;
  // Unloaded without the lease ending: their frames are gone before any
  // response exists.
  ASSERT_TRUE(WaitUntil([&] { return cold.destroyed.load() == 1; }));
  ASSERT_TRUE(WaitUntil([&] { return brief.destroyed.load() == 1; }));
  EXPECT_EQ(warm.destroyed.load(), 0);
  // The interrupting JoinNext gives its lease up (expires now); the warm
  // one keeps the lock's.
  EXPECT_EQ(JoinNextLeases(Events(ids["cold"])), std::vector<DateTime>{now});
  EXPECT_EQ(JoinNextLeases(Events(ids["warm"])), std::vector<DateTime>{now + seconds(2)});

  auto decide = [&](const std::string& name) {
    const std::string& id = ids[name];
    EXPECT_TRUE(engine.Stub(id + ".o:1-approve_1", ExecutionResult::Ok(name == "cold")));
  };
  auto check = [&](const std::string& name) {
    ExecutionResult result = Await(ids[name]);
    EXPECT_TRUE(result.ok()) << name << ": " << result.ToString();
    EXPECT_EQ(result.value["decision"], Json(name == "cold")) << name;
  };
  decide("warm");
  check("warm");
  decide("cold");
  check("cold");
  // The brief run left its lease on the JoinNext: the response makes it
  // pending once that lease is over.
  decide("brief");
  clock->Advance(seconds(3));
  check("brief");
  // The warm run continued where it waited; the others were replayed by a
  // second run.
  EXPECT_EQ(warm.entered.load(), 1);
  EXPECT_EQ(cold.entered.load(), 2);
  EXPECT_EQ(brief.entered.load(), 2);
  EXPECT_EQ(Locks(Events(ids["warm"])).size(), 1u);
  EXPECT_EQ(Locks(Events(ids["cold"])).size(), 2u);
  EXPECT_EQ(Locks(Events(ids["brief"])).size(), 2u);

  // Same code, same history, whatever the strategy.
  const std::vector<std::string> warm_history = History(Events(ids["warm"]), ids["warm"]);
  EXPECT_EQ(warm_history.size(), 4u) << ::testing::PrintToString(warm_history);
  EXPECT_EQ(History(Events(ids["cold"]), ids["cold"]), warm_history);
  EXPECT_EQ(History(Events(ids["brief"]), ids["brief"]), warm_history);
}

TEST_F(WorkflowOptionsTest, LeaseAndBackoffArePerWorkflowWithTheEngineAsDefault) {
  auto clock = std::make_shared<ManualClock>(DateTimeFromMillis(1'700'000'000'000));
  EngineOptions options = Options();
  options.clock = clock;
  options.start_watcher = false;
  options.workflow_lock_expiry = seconds(2);
  options.workflow_retry_backoff = milliseconds(100);
  Engine& engine = Open(options);
  auto done = [](WorkflowContext&, Json params) -> Task<Json> { co_return params; };
  ASSERT_TRUE(engine.RegisterWorkflow("test:opts/wf.plain", done));
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:opts/wf.leased", done,
                              {.lock_expiry = seconds(7), .retry_backoff = milliseconds(250)}));
  // Equal to the engine's: shares the engine's executor and component.
  ASSERT_TRUE(engine.RegisterWorkflow("test:opts/wf.same", done, {.lock_expiry = seconds(2)}));
  ASSERT_TRUE(engine.Start());
  const DateTime now = clock->Now();
  struct Expected {
    const char* ffqn;
    std::chrono::milliseconds lease;
    uint64_t backoff_ms;
    const char* component;
  };
  for (const Expected& e :
       {Expected{"test:opts/wf.plain", seconds(2), 100, "native_workflows"},
        Expected{"test:opts/wf.leased", seconds(7), 250, "native_workflows_l7000_b250"},
        Expected{"test:opts/wf.same", seconds(2), 100, "native_workflows"}}) {
    const std::string id = OkOrDie(engine.Submit(e.ffqn, Params(1)), e.ffqn);
    ASSERT_TRUE(Await(id).ok()) << e.ffqn;
    const std::vector<core::Locked> locks = Locks(Events(id));
    ASSERT_EQ(locks.size(), 1u) << e.ffqn;
    EXPECT_EQ(locks[0].lock_expires_at, now + e.lease) << e.ffqn;
    EXPECT_EQ(locks[0].retry_config.retry_exp_backoff, core::Duration::FromMillis(e.backoff_ms))
        << e.ffqn;
    EXPECT_EQ(locks[0].retry_config.max_retries, 10u)
        << e.ffqn << ": EngineOptions::workflow_max_retries, not forever";
    EXPECT_EQ(locks[0].component_id.name, e.component) << e.ffqn;
  }
}

TEST_F(WorkflowOptionsTest, MaxEventsPerRunYieldsOnlyTheWorkflowThatSetsIt) {
  Engine& engine = Open();
  auto draws = [](WorkflowContext& ctx, Json) -> Task<Json> {
    Json values = Json::array();
    for (int i = 0; i < 6; ++i) values.push_back(co_await ctx.random_u64(0, 100));
    co_return values;
  };
  ASSERT_TRUE(engine.RegisterWorkflow("test:opts/wf.long", draws));
  ASSERT_TRUE(engine.RegisterWorkflow("test:opts/wf.polite", draws, {.max_events_per_run = 2}));
  ASSERT_TRUE(engine.Start());
  const std::string id_long = OkOrDie(engine.Submit("test:opts/wf.long", Json::array()), "long");
  const std::string id_polite =
      OkOrDie(engine.Submit("test:opts/wf.polite", Json::array()), "polite");
  ASSERT_TRUE(Await(id_long).ok());
  ASSERT_TRUE(Await(id_polite).ok());
  EXPECT_EQ(CountUnlocked(Events(id_long)), 0);
  EXPECT_GE(CountUnlocked(Events(id_polite)), 2) << "six events, at most two per run";
  EXPECT_EQ(History(Events(id_polite), id_polite), History(Events(id_long), id_long));
}

TEST_F(WorkflowOptionsTest, EventBatchingIsPerWorkflow) {
  Engine& engine = Open();
  auto draws = [](WorkflowContext& ctx, Json) -> Task<Json> {
    uint64_t sum = 0;
    for (int i = 0; i < 12; ++i) sum += co_await ctx.random_u64(0, 100);
    co_return Json(sum);
  };
  ASSERT_TRUE(engine.RegisterWorkflow("test:opts/wf.batched", draws));
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:opts/wf.unbatched", draws, {.non_blocking_event_batching = 0}));
  ASSERT_TRUE(engine.Start());
  // One at a time, so that each one's commits can be counted.
  auto commits_of = [&](const char* ffqn) {
    const uint64_t before = pool_->stats().transactions_committed;
    const std::string id = OkOrDie(engine.Submit(ffqn, Json::array()), ffqn);
    EXPECT_TRUE(Await(id).ok()) << ffqn;
    return pool_->stats().transactions_committed - before;
  };
  const uint64_t batched = commits_of("test:opts/wf.batched");
  const uint64_t unbatched = commits_of("test:opts/wf.unbatched");
  // Created, Locked, then the twelve Persists with the finish; unbatched,
  // each Persist is a commit of its own.
  EXPECT_LE(batched, 5u);
  EXPECT_GE(unbatched, 12u);
}

TEST_F(WorkflowOptionsTest, OptionsOutOfRangeAreRefused) {
  Engine& engine = Open();
  auto done = [](WorkflowContext&, Json params) -> Task<Json> { co_return params; };
  struct Case {
    WorkflowOptions options;
    const char* field;
  };
  for (const Case& c : {Case{{.lock_expiry = milliseconds(0)}, "lock_expiry"},
                        Case{{.lock_expiry = milliseconds(-5)}, "lock_expiry"},
                        Case{{.retry_backoff = milliseconds(-1)}, "retry_backoff"},
                        Case{{.max_warm_wait = milliseconds(-1)}, "max_warm_wait"}}) {
    auto registered = engine.RegisterWorkflow("test:opts/wf.bad", done, c.options);
    ASSERT_FALSE(registered) << c.field;
    EXPECT_EQ(registered.error().kind, Error::Kind::kInvalidArgument) << c.field;
    EXPECT_NE(registered.error().message.find(c.field), std::string::npos)
        << registered.error().ToString();
  }
  // Nothing was registered by the refused calls.
  EXPECT_TRUE(engine.RegisterWorkflow("test:opts/wf.bad", done));
}

// A workflow that loops writing events ends at its own limit of events,
// and the error names where that limit is set.
TEST_F(WorkflowOptionsTest, MaxEventsPerExecutionEndsARunawayWorkflowNamingTheLimit) {
  Engine& engine = Open();
  WorkflowOptions options;
  options.max_events_per_execution = 40;
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:opts/wf.runaway",
      [](WorkflowContext& ctx, Json) -> Task<Json> {
        for (;;) co_await ctx.random_u64(0, 10);
      },
      options));
  WorkflowOptions bad;
  bad.max_events_per_execution = 3;
  EXPECT_FALSE(engine.RegisterWorkflow(
      "test:opts/wf.tiny", [](WorkflowContext&, Json) -> Task<Json> { co_return Json(); }, bad));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:opts/wf.runaway", Params()), "submit");
  ExecutionResult result = Await(id);
  ASSERT_TRUE(result.failed()) << result.ToString();
  EXPECT_NE(result.failure_reason.find("limit of 40 events"), std::string::npos)
      << result.failure_reason;
  EXPECT_NE(result.failure_reason.find("WorkflowOptions::max_events_per_execution"),
            std::string::npos)
      << result.failure_reason;
  EXPECT_LE(Events(id).size(), 42u);
}

// libstele and the server (which starts from ServiceOptions) run their
// executors alike unless told otherwise: both read stele/defaults.h.
TEST(EngineDefaultsTest, EngineOptionsStartFromTheServiceDefaults) {
  const EngineOptions engine;
  const service::ServiceOptions service;
  EXPECT_EQ(engine.batch_size, service.batch_size);
  EXPECT_EQ(engine.max_concurrency, service.max_concurrency);
  EXPECT_EQ(engine.max_workflow_concurrency, service.max_workflow_concurrency);
  EXPECT_EQ(engine.workflow_lock_expiry, service.workflow_lock_expiry);
  EXPECT_EQ(engine.tick_sleep, service.tick_sleep);
  EXPECT_EQ(engine.workflow_retry_backoff, service.workflow_retry_backoff);
  EXPECT_EQ(engine.workflow_max_retries, service.workflow_max_retries);
  EXPECT_EQ(engine.workflow_max_retry_backoff, service.max_retry_backoff);
  EXPECT_EQ(engine.workflow_retry_jitter_percent, service.retry_jitter_percent);
  EXPECT_EQ(engine.cancel_grace, service.cancel_grace);
}

}  // namespace
}  // namespace stele
