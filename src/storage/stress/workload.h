// The stress workload: a small, restart-safe model of what executors do to a
// store — create executions, lock them in batches, fail them temporarily,
// spawn children, block parents on JoinNext and finish children with their
// parent's response — shared by the concurrency test and the crash writer.
//
// Every decision is taken from what the store returned (the LockedExecution),
// never from memory, so a worker can pick up executions left behind by a
// killed process exactly like a real executor replays them.
//
// Threading: a Worker is used by one thread; many Workers may share one
// DbConnection. The observer is called from the worker's thread and must be
// thread-safe when shared.
// Ownership: a Worker borrows the connection and the observer; both must
// outlive it.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/component_id.h"
#include "core/function_fqn.h"
#include "core/ids.h"
#include "core/retry_config.h"
#include "storage/db_connection.h"

namespace stele::storage::stress {

// The functions of the workload: a parent workflow that spawns children in
// one join set and awaits them one by one, its child activity, and a
// top-level activity.
const core::FunctionFqn& ParentFfqn();
const core::FunctionFqn& ChildFfqn();
const core::FunctionFqn& ActivityFfqn();
const std::vector<core::FunctionFqn>& AllFfqns();
const core::JoinSetId& ChildrenJoinSet();
core::ComponentRetryConfig WorkflowRetry();
core::ComponentRetryConfig ActivityRetry();
// Component of an execution of `ffqn` (workflow for parents).
core::ComponentId ComponentFor(const core::FunctionFqn& ffqn);

// What a Worker reports. Every On* call happens after the store
// acknowledged the write, except OnReleasing, which happens just before the
// write that gives up the lock (so a lock-holder registry never sees a new
// holder before the old one has let go).
class WorkloadObserver {
 public:
  virtual ~WorkloadObserver() = default;
  // An event the store acknowledged at `version` (Created at 0 included).
  virtual void OnAck(const ExecutionId& execution_id, Version version,
                     const core::ExecutionEvent& event) = 0;
  // A child's response the store acknowledged together with its Finished.
  virtual void OnResponseAck(const ExecutionId& parent, const core::ExecutionIdDerived& child,
                             Version finished_version) = 0;
  // A lock the store granted (before any write under it).
  virtual void OnLocked(const LockedExecution& locked, DateTime locked_at) = 0;
  // The lock holder is about to give up its lock on `execution_id`.
  virtual void OnReleasing(const ExecutionId& execution_id, const core::RunId& run_id) = 0;
  // `execution_id` reached Finished.
  virtual void OnFinished(const ExecutionId& execution_id) = 0;
  // The store did something the contract forbids, or failed unexpectedly.
  virtual void OnProblem(const std::string& problem) = 0;
};

struct WorkerOptions {
  uint32_t children_per_parent = 3;
  uint32_t lock_batch = 4;
  // Probability that a lock ends in a temporary failure (while fewer than
  // max_temporary_failures happened) instead of finishing.
  double temporary_failure_probability = 0.35;
  uint32_t max_temporary_failures = 2;
  // Probability of re-sending a child's finish after it succeeded; the store
  // must refuse it and write nothing.
  double duplicate_finish_probability = 0.1;
  // Lock lease; long by default so that no lock expires during a test.
  std::chrono::microseconds lock_duration = std::chrono::hours(1);
};

class Worker {
 public:
  Worker(DbConnection& db, WorkloadObserver& observer, uint64_t seed, WorkerOptions options = {});

  // Creates a top-level parent workflow or activity. Returns its id when
  // the store acknowledged it.
  std::optional<ExecutionId> CreateParent();
  std::optional<ExecutionId> CreateActivity();

  // One executor tick: LockPendingByFfqns (all functions of the workload,
  // a fresh run id) and one step of work on every execution it got.
  // Returns how many executions were locked.
  size_t LockAndProcess();

  // Tries to lock `execution_id` out of turn with LockOne at the version
  // after its last event, as a competing executor would; on success does
  // one step of work. Losing the race is fine; anything else is a problem.
  bool TryLockOne(const ExecutionId& execution_id, const core::FunctionFqn& ffqn);

  const core::ExecutorId& executor_id() const { return executor_id_; }

 private:
  void Process(const LockedExecution& locked);
  void ProcessParent(const LockedExecution& locked);
  void ProcessActivity(const LockedExecution& locked);
  bool AppendOne(const ExecutionId& id, Version version, core::ExecutionRequest event);
  void Problem(const std::string& what, const std::string& error);
  bool Chance(double p);

  DbConnection& db_;
  WorkloadObserver& observer_;
  WorkerOptions options_;
  std::mt19937_64 rng_;
  core::ExecutorId executor_id_;
};

}  // namespace stele::storage::stress
