// Eager dispatch (executor/local_dispatch.h) through the Engine: a child
// that the engine serves is created locked for its executor in the
// workflow's own transaction, and the executions come out the same as when
// every child goes through the pending state; and the result hand-off
// (executor/response_handoff.h) that pairs with it.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/ids.h"
#include "engine/sdk_test_util.h"
#include "stele/stele.h"
#include "storage/db_external_api.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele {
namespace {

using testing::OkOrDie;

constexpr const char* kAdd = "test:dispatch/api.add";
constexpr const char* kFlow = "test:dispatch/wf.flow";
constexpr const char* kParent = "test:dispatch/wf.parent";
constexpr const char* kOneCall = "test:dispatch/wf.one-call";
constexpr int kSteps = 5;

ActivityResult Add(ActivityContext&, const Json& params) {
  return Json(params.at(0).get<int>() + 1);
}

// kSteps sequential calls, then a child workflow that calls once more.
Task<Json> Flow(WorkflowContext& ctx, Json params) {
  int value = params.at(0).get<int>();
  for (int i = 0; i < kSteps; ++i) {
    auto r = co_await ctx.call(kAdd, Params(value));
    value = r.value.get<int>();
  }
  co_return value;
}
// The shape of the W1 benchmark workload: one call.
Task<Json> OneCall(WorkflowContext& ctx, Json params) {
  auto r = co_await ctx.call(kAdd, Params(params.at(0).get<int>()));
  co_return r.value;
}
Task<Json> Parent(WorkflowContext& ctx, Json) {
  auto r = co_await ctx.call(kFlow, Params(0));
  auto last = co_await ctx.call(kAdd, Params(r.value));
  co_return last.value;
}

std::string Kind(const core::ExecutionEvent& event) {
  if (std::holds_alternative<core::Created>(event.event)) return "Created";
  if (std::holds_alternative<core::Locked>(event.event)) return "Locked";
  if (std::holds_alternative<core::Finished>(event.event)) return "Finished";
  return core::ExecutionRequestToString(event.event);
}

class DispatchTest : public testing::PoolEngineTest, public ::testing::WithParamInterface<bool> {
 protected:
  Engine& OpenEngine() {
    EngineOptions options = Options();
    options.eager_dispatch = GetParam();
    options.result_handoff = GetParam();
    Engine& engine = Open(std::move(options));
    EXPECT_TRUE(engine.RegisterActivity(kAdd, Add));
    EXPECT_TRUE(engine.RegisterWorkflow(kFlow, Flow));
    EXPECT_TRUE(engine.RegisterWorkflow(kParent, Parent));
    EXPECT_TRUE(engine.RegisterWorkflow(kOneCall, OneCall));
    EXPECT_TRUE(engine.Start());
    return engine;
  }
  // Ids of the children `id` requested, in request order.
  std::vector<std::string> Children(const std::string& id) {
    std::vector<std::string> children;
    for (const core::ExecutionEvent& event : Events(id)) {
      const auto* history = std::get_if<core::HistoryEventRequest>(&event.event);
      if (history == nullptr) continue;
      const auto* request = std::get_if<core::HistoryJoinSetRequest>(&history->event);
      if (request == nullptr) continue;
      if (const auto* child = std::get_if<core::ChildExecutionRequest>(&request->request)) {
        children.push_back(child->child_execution_id.ToString());
      }
    }
    return children;
  }
};

TEST_P(DispatchTest, ChildrenRunAndEachResultIsRecordedOnce) {
  Engine& engine = OpenEngine();
  const storage::sqlite::SqliteStats before = pool_->stats();
  const std::string id = OkOrDie(engine.Submit(kParent, Json::array()), "submit");
  ExecutionResult result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(result.value, Json(kSteps + 1));
  const storage::sqlite::SqliteStats after = pool_->stats();
  const uint64_t transactions = after.transactions_committed - before.transactions_committed;
  const uint64_t unsynced = after.unsynced_commits - before.unsynced_commits;

  const std::vector<std::string> children = Children(id);
  ASSERT_EQ(children.size(), 2u);
  const std::vector<std::string> grandchildren = Children(children[0]);
  ASSERT_EQ(grandchildren.size(), static_cast<size_t>(kSteps));
  std::vector<std::string> activities = grandchildren;
  activities.push_back(children[1]);
  for (const std::string& child : activities) {
    std::vector<core::ExecutionEvent> events = Events(child);
    ASSERT_EQ(events.size(), 3u) << child;
    EXPECT_EQ(Kind(events[0]), "Created") << child;
    EXPECT_EQ(Kind(events[1]), "Locked") << child;
    EXPECT_EQ(Kind(events[2]), "Finished") << child;
  }
  // Through the pending state every step chains the workflow's batch, the
  // child's lock and the child's result. With eager dispatch and the result
  // hand-off a step is one commit: the workflow's batch creates and locks
  // the next child and carries the previous child's result.
  //
  // Counted exactly: the durable (fsynced) commits. Lock-only commits are
  // left out: besides the locks of this test's executions they include the
  // executors' idle lock polls, whose number depends on timing.
  // Eager: the submit, the parent's step calling the child workflow (which
  // it creates locked), the child's five steps, the child's end (its last
  // activity's result taken in memory, its Finished, its response to the
  // parent), the parent's second call, and the parent's end.
  // Pending: the submit; the parent's call; five times the child's step and
  // the activity's result; the child's Finished; the parent's call, the
  // activity's result, the parent's Finished.
  const uint64_t steps = kSteps + 2;  // the activity calls and the child workflow
  const uint64_t durable = transactions - unsynced;
  std::cout << "[dispatch] " << transactions << " write transactions (" << unsynced
            << " lock-only) for " << steps << " steps\n";
  EXPECT_EQ(durable, GetParam() ? steps + 3 : 2 * steps + 2)
      << "durable commits for " << steps << " steps";
}

// The W1 workload's workflow (one call) costs exactly three durable
// commits: the submit, the call's step (the child created, and locked for
// its executor with eager dispatch), and the end (the child's result taken
// in memory with the workflow's Finished); plus the workflow's lock (not
// counted, as above). Through the pending state the child's result is a
// commit of its own (and its lock another lock-only one).
TEST_P(DispatchTest, AOneCallWorkflowCommitsExactly) {
  Engine& engine = OpenEngine();
  const storage::sqlite::SqliteStats before = pool_->stats();
  const std::string id = OkOrDie(engine.Submit(kOneCall, Params(0)), "submit");
  ExecutionResult result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  const storage::sqlite::SqliteStats after = pool_->stats();
  const uint64_t transactions = after.transactions_committed - before.transactions_committed;
  const uint64_t unsynced = after.unsynced_commits - before.unsynced_commits;
  std::cout << "[dispatch] one-call workflow: " << transactions << " write transactions ("
            << unsynced << " lock-only)\n";
  EXPECT_EQ(transactions - unsynced, GetParam() ? 3u : 4u) << "durable commits";
}

TEST_P(DispatchTest, ChildrenBeyondTheFreePermitsWaitPendingAndStillRun) {
  EngineOptions options = Options();
  options.eager_dispatch = GetParam();
  options.result_handoff = GetParam();
  options.max_concurrency = 1;  // one activity slot for a fan-out of eight
  Engine& engine = Open(std::move(options));
  ASSERT_TRUE(engine.RegisterActivity(kAdd, Add));
  ASSERT_TRUE(engine.RegisterWorkflow(kFlow, [](WorkflowContext& ctx, Json) -> Task<Json> {
    JoinSet join_set = co_await ctx.new_join_set();
    for (int i = 0; i < 8; ++i) (void)co_await ctx.submit(join_set, kAdd, Params(i));
    int sum = 0;
    for (int i = 0; i < 8; ++i) {
      auto next = co_await ctx.join_next(join_set);
      if (next && next->result.ok()) sum += next->result.value.get<int>();
    }
    co_return sum;
  }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit(kFlow, Json::array()), "submit");
  ExecutionResult result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(result.value, Json(36));  // (0+1) + ... + (7+1)
  for (const std::string& child : Children(id)) {
    std::vector<core::ExecutionEvent> events = Events(child);
    ASSERT_EQ(events.size(), 3u) << child;
    EXPECT_EQ(Kind(events[2]), "Finished") << child;
  }
}

// A warm run that took its child's result in memory and must extend its
// lock before the next call: the row still says BlockedByJoinSet (the
// result is not recorded yet), where a Locked event is refused, so the run
// records the result first and then extends — in the same run, with no
// replay. On a manual clock the child moves time to 50 ms before the
// workflow's lease ends (inside the 100 ms extension leeway); with the
// watcher off, a run that failed here would never finish.
TEST_P(DispatchTest, ARunHoldingAHandedOffResultExtendsItsLock) {
  auto clock = std::make_shared<ManualClock>(DateTimeFromMillis(1'700'000'000'000));
  EngineOptions options = Options();
  options.clock = clock;
  options.start_watcher = false;
  options.max_warm_wait = std::chrono::seconds(20);
  options.workflow_lock_expiry = std::chrono::milliseconds(2000);
  options.eager_dispatch = GetParam();
  options.result_handoff = GetParam();
  Engine& engine = Open(std::move(options));
  constexpr const char* kLate = "test:dispatch/api.late";
  ASSERT_TRUE(engine.RegisterActivity(kLate, [clock](ActivityContext&, const Json& params) {
    clock->Advance(std::chrono::milliseconds(1950));
    return ActivityResult(Json(params.at(0).get<int>() + 1));
  }));
  ASSERT_TRUE(engine.RegisterActivity(kAdd, Add));
  ASSERT_TRUE(engine.RegisterWorkflow(kFlow, [](WorkflowContext& ctx, Json) -> Task<Json> {
    auto late = co_await ctx.call(kLate, Params(0));
    auto next = co_await ctx.call(kAdd, Params(late.value));
    co_return next.value;
  }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit(kFlow, Json::array()), "submit");
  ExecutionResult result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(result.value, Json(2));

  std::set<std::string> runs;
  int locks = 0;
  for (const core::ExecutionEvent& event : Events(id)) {
    if (const auto* locked = std::get_if<core::Locked>(&event.event)) {
      runs.insert(locked->run_id.ToString());
      ++locks;
    }
    EXPECT_FALSE(std::holds_alternative<core::Unlocked>(event.event));
    EXPECT_FALSE(std::holds_alternative<core::TemporarilyFailed>(event.event));
    EXPECT_FALSE(std::holds_alternative<core::TemporarilyTimedOut>(event.event));
  }
  EXPECT_EQ(runs.size(), 1u) << "the workflow was replayed by another run";
  EXPECT_GE(locks, 2) << "the lock was not extended";
  for (const std::string& child : Children(id)) {
    std::vector<core::ExecutionEvent> events = Events(child);
    ASSERT_EQ(events.size(), 3u) << child;
    EXPECT_EQ(Kind(events[2]), "Finished") << child;
  }
}

INSTANTIATE_TEST_SUITE_P(EagerDispatch, DispatchTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return std::string(param.param ? "Eager" : "Pending");
                         });

}  // namespace
}  // namespace stele
