// Test support for the replay engine: a real backend (memory or SQLite) per
// TestEnv, the real executor (ExecTask::TickForTest) and expired-timers
// watcher driven by a ManualClock, and a Worker that runs a scripted
// workflow — a std::function over WorkflowRun. Storage and executor are
// real; only the guest is a script.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "executor/exec_task.h"
#include "executor/executor_test_util.h"
#include "executor/expired_timers_watcher.h"
#include "runtime/workflow/workflow_run.h"
#include "storage/db_pool.h"

namespace stele::runtime::workflow::testing {

using executor::testing::Backend;
using executor::testing::kT0;
using executor::testing::Must;

const core::FunctionFqn& WorkflowFfqn();       // testing:workflow/ifc.workflow
const core::FunctionFqn& ChildWorkflowFfqn();  // testing:workflow/ifc.child-workflow
const core::FunctionFqn& ActivityFfqn();       // testing:workflow/ifc.activity
const core::FunctionFqn& FailingFfqn();        // testing:workflow/ifc.failing (traps, no retries)
const core::FunctionFqn& StubFfqn();           // testing:workflow/ifc.stub (activity_stub)
// testing:workflow/ifc.blocking: an activity that runs until its token
// fires (see TestEnv::SpawnBlocking).
const core::FunctionFqn& BlockingFfqn();
core::SupportedFunctionReturnValue OkValue(core::Json value);

using Script = std::function<executor::WorkerResult(WorkflowRun&)>;

// Stops a script on an Interruption: `WF_TRY(auto x, run.Call(...));`
// (`lhs` must declare a variable).
#define WF_TRY(lhs, expr)                                                        \
  auto STELE_INTERNAL_CONCAT(wf_try_, __LINE__) = (expr);                        \
  if (!STELE_INTERNAL_CONCAT(wf_try_, __LINE__)) {                               \
    return run.ToWorkerResult(STELE_INTERNAL_CONCAT(wf_try_, __LINE__).error()); \
  }                                                                              \
  [[maybe_unused]] lhs = *std::move(STELE_INTERNAL_CONCAT(wf_try_, __LINE__))
#define WF_TRY_VOID(expr)                                             \
  do {                                                                \
    auto wf_try_void = (expr);                                        \
    if (!wf_try_void) return run.ToWorkerResult(wf_try_void.error()); \
  } while (false)

// One database, the executors of one workflow component and one activity
// component, and the watcher, all on `clock`. One CancelRegistry is shared
// by the workflow runs and the activity executors, as in a process.
class TestEnv {
 public:
  TestEnv(Backend backend, WorkflowRunOptions options, Script script);
  ~TestEnv();

  storage::DbConnectionTest& db() { return *db_; }
  ManualClock& clock() { return *clock_; }
  const FunctionRegistry& registry() const { return registry_; }
  const WorkflowRunOptions& options() const { return options_; }
  storage::DbPool& pool() { return *pool_; }
  // Declares the parameter and return types of the activity function
  // ActivityFfqn. REQUIRES: before the first Round.
  void DeclareActivitySignature(core::FunctionSignature signature);

  // Creates a top-level execution of WorkflowFfqn at the clock's now.
  void CreateWorkflow(const core::ExecutionId& id, core::Json params = core::Json::array());
  // One round: workflow tick, activity tick, watcher tick, at now.
  void Round();
  // Rounds, advancing the clock by `step` after each, until `id` is
  // finished (or `max_rounds`). Returns whether it finished.
  bool RunToCompletion(const core::ExecutionId& id, int max_rounds = 100,
                       std::chrono::milliseconds step = std::chrono::milliseconds(1000));
  // Threaded tests: start the workflow runs due now on the executor's pool
  // without waiting for them; tick only the activity executor.
  void SpawnWorkflows();
  void TickActivities();
  // One workflow tick / watcher tick at now.
  void TickWorkflows();
  void TickWatcher();
  // Stops the workflow executor (as a process exit would) and starts a new
  // one, with a new executor id, on the same database.
  void RestartWorkflowExecutor();
  // Locks the BlockingFfqn executions due now on their own executor (lease
  // 1 h and no cancel watcher: only a cancel notified through the registry
  // stops them, never the deadline) and starts them
  // without waiting. Each opens blocking_started(), then waits (at most
  // 20 s) for its token; once it fired, opens blocking_cancelled().
  void SpawnBlocking();
  executor::testing::Gate& blocking_started() { return *blocking_started_; }
  executor::testing::Gate& blocking_cancelled() { return *blocking_cancelled_; }
  // Blocking runs not yet recorded.
  size_t BlockingInFlight() const;
  // Runs outside the executor: the context of `id` locked now for 1 s by a
  // fresh executor (REQUIRES: pending now), or of the whole log of a
  // finished `id` with a lease of 1 s from now (a replay that must write
  // nothing).
  executor::WorkerContext LockedContext(const core::ExecutionId& id);
  executor::WorkerContext ReplayContext(const core::ExecutionId& id);
  // Write transactions committed so far (SQLite); nullopt on other backends.
  std::optional<uint64_t> CommittedTransactions() const;
  storage::ExecutionLog Log(const core::ExecutionId& id);
  // History events of `id` with resolved times masked (JoinNext leases,
  // delay expiries): what must match between strategies and replays.
  std::vector<core::HistoryEvent> History(const core::ExecutionId& id);
  std::vector<std::string> EventNames(const core::ExecutionId& id);
  // The Finished result of `id`. REQUIRES: finished.
  core::SupportedFunctionReturnValue Result(const core::ExecutionId& id);
  size_t activity_runs() const { return activity_runs_->load(); }

 private:
  std::filesystem::path dir_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(kT0);
  WorkflowRunOptions options_;
  MapFunctionRegistry registry_;
  std::unique_ptr<storage::DbPool> pool_;
  std::unique_ptr<storage::DbConnectionTest> db_;
  std::unique_ptr<storage::DbConnection> worker_conn_;
  // Counted by activity runs on the executor's threads, several at once.
  std::shared_ptr<std::atomic<size_t>> activity_runs_ = std::make_shared<std::atomic<size_t>>(0);
  std::unique_ptr<executor::ExecTask> workflows_;
  std::unique_ptr<executor::ExecTask> activities_;
  std::unique_ptr<executor::ExecTask> failing_;
  std::unique_ptr<executor::ExecTask> blocking_;
  std::unique_ptr<executor::ExpiredTimersWatcher> watcher_;
  std::shared_ptr<executor::CancelRegistry> cancels_ = executor::CancelRegistry::Create();
  std::shared_ptr<executor::testing::Gate> blocking_started_ =
      std::make_shared<executor::testing::Gate>();
  std::shared_ptr<executor::testing::Gate> blocking_cancelled_ =
      std::make_shared<executor::testing::Gate>();
  Script script_;
  void StartWorkflowExecutor();
};

std::string StrategyName(BlockingStrategy strategy);
// Options for tests on a ManualClock: kAwait never waits warm (the lease
// would never end on a frozen clock), so both strategies are deterministic.
WorkflowRunOptions TestOptions(BlockingStrategy strategy);

std::string Describe(const std::vector<core::HistoryEvent>& events);

}  // namespace stele::runtime::workflow::testing
