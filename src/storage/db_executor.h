// DbExecutor: the executor's narrow view of storage — lock pending work,
// append outcomes, wait for new work.
//
// Threading: implementations are safe for concurrent use from many threads.
// Ownership: returned values are owned by the caller.
// All times are caller-supplied (the storage layer never reads a clock for
// semantics), so tests drive time explicitly.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.h"
#include "core/ids.h"
#include "storage/db_errors.h"
#include "storage/requests.h"
#include "storage/wait.h"

namespace stele::storage {

class DbExecutor {
 public:
  virtual ~DbExecutor() = default;

  // Locks up to `batch_size` executions of the given functions that are
  // pending at `pending_at_or_sooner` (PendingAt with scheduled_at <= it),
  // oldest scheduled first, appending a Locked event to each. Expired locks
  // are never stolen (the expired-timers watcher handles them). Rows that
  // fail re-validation are skipped. Errors: Generic only.
  virtual Result<std::vector<LockedExecution>, DbErrorGeneric> LockPendingByFfqns(
      uint32_t batch_size, DateTime pending_at_or_sooner,
      const std::vector<core::FunctionFqn>& ffqns, DateTime created_at,
      const core::ComponentId& component_id, const core::ExecutorId& executor_id,
      DateTime lock_expires_at, const core::RunId& run_id,
      const core::ComponentRetryConfig& retry_config) = 0;

  // As above, selecting by the component's input digest.
  virtual Result<std::vector<LockedExecution>, DbErrorGeneric> LockPendingByComponentId(
      uint32_t batch_size, DateTime pending_at_or_sooner, const core::ComponentId& component_id,
      DateTime created_at, const core::ExecutorId& executor_id, DateTime lock_expires_at,
      const core::RunId& run_id, const core::ComponentRetryConfig& retry_config) = 0;

  // Locks one execution at `version` (new lock or extension by the same
  // executor and run). Errors: NotFound; VersionConflict; ValidationFailed
  // ("invalid expiry date", "cannot lock, not yet pending"); IllegalState
  // ("cannot lock, already locked", blocked, "already finished"); Generic.
  virtual Result<LockedExecution, DbErrorWrite> LockOne(
      DateTime created_at, const core::ComponentId& component_id, const ExecutionId& execution_id,
      const core::RunId& run_id, Version version, const core::ExecutorId& executor_id,
      DateTime lock_expires_at, const core::ComponentRetryConfig& retry_config) = 0;

  // Appends one event at `version`; returns the next version.
  // REQUIRES: req.event is not Created (ValidationFailed otherwise).
  // Errors: NotFound; VersionConflict{expected, requested}; IllegalState
  // "already finished"; lock-rule errors for Locked; Generic.
  virtual Result<Version, DbErrorWrite> Append(const ExecutionId& execution_id, Version version,
                                               const AppendRequest& req) = 0;

  // The one write of a step (StepWrite; docs/storage_contract.md, "The step
  // write"), all or nothing. Returns the writer's next version (`version`
  // when `batch` is empty) and the children locked, in `locks` order.
  // Errors, with nothing written:
  //  - ValidateStepWrite's (request_rules.h);
  //  - per outcome: those of Append for the child's events; Conflict for
  //    a second response of one child id, and when the parent's response
  //    count is not the outcome's response_index; NotFound for a child its
  //    parent did not request in that join set;
  //  - for `batch`: those of Append (NotFound, VersionConflict, IllegalState
  //    "already finished", lock-rule errors), ValidationFailed for a Created
  //    event; IllegalState when a child exists already.
  // A child named in `locks` that the lock rules refuse is left pending and
  // missing from the result: never an error.
  // REQUIRES: every locks[i].child_id names an entry of `children`.
  virtual Result<CreatedAndLockedChildren, DbErrorWrite> WriteStep(const StepWrite& write) = 0;

  // A child's end and its response to its parent: WriteStep with that one
  // outcome, wherever the response lands (at most one response per child
  // id: a duplicate is Conflict). May unblock the parent. Returns the
  // child's next version.
  Result<Version, DbErrorWrite> AppendBatchRespondToParent(
      const AppendEventsToExecution& events, const AppendResponseToExecution& response,
      DateTime current_time);

  // Returns at once when something of `ffqns` is pending at
  // `pending_at_or_sooner`; otherwise blocks until a new pending execution
  // is committed or `wait` ends. A hint only: callers re-query.
  virtual void WaitForPendingByFfqn(DateTime pending_at_or_sooner,
                                    const std::vector<core::FunctionFqn>& ffqns,
                                    const WaitOptions& wait) = 0;
  virtual void WaitForPendingByComponentId(DateTime pending_at_or_sooner,
                                           const core::ComponentId& component_id,
                                           const WaitOptions& wait) = 0;

  // Last event (backtrace_id may be unset). Errors: NotFound, Generic.
  virtual Result<core::ExecutionEvent, DbErrorRead> GetLastExecutionEvent(
      const ExecutionId& execution_id) = 0;

  // Finishes an unfinished activity as Cancelled (with the parent response
  // when derived). Idempotent: Cancelled if already cancelled,
  // AlreadyFinished if finished otherwise.
  // Not version-fenced by the caller: it takes no expected version, reads
  // the last event and appends Finished at last.version + 1, so it cancels
  // whatever attempt is current (a running lock holder's later append then
  // fails with VersionConflict). Only that internal append is fenced: a
  // writer racing between the read and the append makes the call fail
  // with VersionConflict (hence CancelActivityWithRetries). The default
  // implementation composes GetLastExecutionEvent and Append /
  // AppendBatchRespondToParent; it does not stop a local run — see
  // executor/cancel_registry.h. Errors: NotFound, VersionConflict, Generic.
  virtual Result<CancelOutcome, DbErrorWrite> CancelActivity(const ExecutionId& execution_id,
                                                             DateTime cancelled_at);
  // CancelActivity retried up to 5 more times on any error.
  Result<CancelOutcome, DbErrorWrite> CancelActivityWithRetries(const ExecutionId& execution_id,
                                                                DateTime cancelled_at);
};

}  // namespace stele::storage
