// Outcome of a run: what the executor (or the expired-timers watcher)
// appends once a run has ended, and the one place that writes it.
//
// `ComputeOutcome` is the whole retry policy of docs/model.md §5.3–§5.4 as
// a pure function of (WorkerResult, the lock's retry facts, now). With
// n = intermittent_event_count + 1 and d = RetryDelay(n, retry_config,
// execution id) (the backoff, capped and jittered):
//   Ok(value)                 Finished(value) (+ parent response)
//   DbUpdatedByWorkerOrWatcher, DbError   nothing
//   TemporaryTimeout          d ? TemporarilyTimedOut(now + d, reason)
//                               : Finished(ExecutionError{timed_out, reason})
//                             (reason: the timeout's own, else a generic one;
//                             the executor and the watcher pass the limit
//                             and where it is set, see DeadlineReason)
//   ActivityTrap              non_retryable or !d:
//                                 Finished(ExecutionError{uncategorized, same reason, detail})
//                               else TemporarilyFailed("activity trap: <reason>", detail)
//   ActivityReturnedError     d ? TemporarilyFailed("activity returned error", detail)
//                               : Finished(err)   (the err is the normal result)
//   LimitReached              Unlocked(now + backoff * 2^count) — never counted
//   Fatal(kCancelled)         Finished(ExecutionError{cancelled}) (idempotent cancel)
//   Fatal(other)              Finished(ExecutionError{kind}) with kind
//                             nondeterminism_detected / out_of_fuel, else
//                             uncategorized ("<fatal kind>: <reason>")
// Every TemporarilyFailed/TemporarilyTimedOut names its attempt ("attempt n
// of max_retries + 1"), so the final failure follows "attempt m of m".
// Every Finished of a derived execution carries its parent's response and is
// written with it in one transaction (AppendBatchRespondToParent).
// The result's `engine` (wasm runs) is copied onto whichever of Finished,
// TemporarilyFailed, TemporarilyTimedOut or Unlocked is written.
//
// Threading: the functions are pure or use only the DbExecutor passed in
// (itself thread-safe). Ownership: plain values.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/time.h"
#include "core/retry_config.h"
#include "executor/worker.h"
#include "storage/db_executor.h"
#include "storage/requests.h"

namespace stele::executor {

// What the mapping needs to know about the run besides its result.
struct RunInfo {
  ExecutionId execution_id;
  // Temporary failures/timeouts before this run.
  uint32_t intermittent_event_count = 0;
  // The retry config of the lock (copied into the Locked event), with the
  // execution's own override applied.
  core::ComponentRetryConfig retry_config;

  static RunInfo From(const storage::LockedExecution& locked);
};

// One append, fenced by `version`, plus the parent's response when the
// event finishes a derived (child) execution.
struct PlannedWrite {
  ExecutionId execution_id;
  Version version;
  storage::AppendRequest request;
  std::optional<storage::AppendResponseToExecution> parent_response;
  // Finished(cancelled) of a cancelled activity: if the execution turns out
  // to be Finished(cancelled) already, that is success, not a lost race.
  bool is_activity_cancel = false;
  friend bool operator==(const PlannedWrite&, const PlannedWrite&) = default;
};

// The retry policy above. nullopt: write nothing.
std::optional<PlannedWrite> ComputeOutcome(const WorkerResult& result, const RunInfo& run,
                                           DateTime now);

// What the watcher knows of an expired run: whether it is a workflow's and
// its retry policy, from the run's Locked event (its component type and
// retry config) merged with the execution's own override (RetryOverride of
// its Created event).
struct ExpiredRun {
  bool workflow = false;
  core::ComponentRetryConfig retry_config;
  // From the ExpiredLock's columns alone, when the Locked event cannot be
  // read: a workflow iff max_retries is unset (true of every row written
  // before workflows had a retry limit), no cap, no jitter.
  static ExpiredRun FromLock(const storage::ExpiredLock& lock);
};

// What the expired-timers watcher writes for an expired lock, all at
// `lock.next_version` so it loses cleanly to a worker that wrote meanwhile
// (docs/model.md §5.5): a workflow that made progress
// (locked_at_version + 1 < next_version) → Unlocked(at, "made progress");
// otherwise the TemporaryTimeout mapping of ComputeOutcome at `at`, with
// `reason` (ExpiredLockReason) and the run's retry policy.
PlannedWrite ComputeExpiredLockOutcome(const storage::ExpiredLock& lock, const ExpiredRun& run,
                                       DateTime at, std::string reason);
// The same with ExpiredRun::FromLock(lock).
PlannedWrite ComputeExpiredLockOutcome(const storage::ExpiredLock& lock, DateTime at,
                                       std::string reason);

// The reasons of timeout events: which limit a run exceeded and where it
// is set. `setting` names the setting, e.g. "lock_expiry of the
// component, else of [executor]" (ExecutorOptions::lock_expiry_setting).
// An activity run the executor stopped at its lock deadline:
//   "the activity ran past its time limit of 30 s (<setting>)".
std::string DeadlineReason(std::chrono::milliseconds limit, std::string_view setting);
// A lock the expired-timers watcher found expired, of a run locked for
// `lease` (nullopt: unknown) — nobody recorded the run's end in time:
//   activity: "the activity's lock of 30 s expired with no result
//              recorded: it ran past its time limit, or the server running
//              it stopped (<setting>)"
//   workflow: "the workflow run's lease of 1 s expired without progress:
//              the server running it stopped, or the run could not renew
//              its lease (<setting>)"
std::string ExpiredLockReason(bool workflow, std::optional<std::chrono::milliseconds> lease,
                              std::string_view setting);
// "30 s", "1.5 s", "250 ms".
std::string FormatLimit(std::chrono::milliseconds limit);

enum class ApplyStatus {
  kWritten,
  // VersionConflict, already finished, or the child's response exists:
  // someone else (the watcher, another run, a cancel) wrote first. Logged;
  // nothing more is written.
  kLostToAnotherWriter,
  // is_activity_cancel and the execution was already Finished(cancelled).
  kAlreadyCancelled,
};
std::string_view ApplyStatusName(ApplyStatus status);

// Writes `write` (Append, or AppendBatchRespondToParent with the parent
// response) and logs the result. Errors: those of the write other than the
// lost races above (NotFound, ValidationFailed, Generic); the caller logs
// them and leaves the cleanup to the expired-timers watcher.
Result<ApplyStatus, storage::DbErrorWrite> ApplyOutcome(storage::DbExecutor& db,
                                                        const PlannedWrite& write);

// `t + d`, saturating at 9999-12-31T23:59:59.999999Z so that any backoff
// stays a representable (RFC 3339) instant.
DateTime AddSaturating(DateTime t, core::Duration d);

}  // namespace stele::executor
