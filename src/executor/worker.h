// Worker: the seam between the executor and a runtime (docs/model.md §1.2
// step 4), one small interface as Obelisk's `Worker` trait is. The executor
// locks an execution, hands everything a run needs to `Worker::Run` in one
// plain `WorkerContext` and maps the returned `WorkerResult` to the event it
// appends (executor/outcome.h). The executor never knows whether a worker
// runs WASM, a native C++ function, a host process or a test double.
//
// Threading: `Run` is called concurrently from the executor's worker threads,
// one call per locked execution; implementations must be thread-safe. A run
// may block. It must watch `ctx.cancel` and return soon after it fires (lock
// deadline passed, executor shutting down, execution cancelled); what it
// returns then is still recorded, mapped as described in exec_task.h.
// Ownership: the context is moved into `Run`; the result is owned by the
// caller. Workers are shared (`std::shared_ptr<Worker>`) by the executors
// that serve their functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/cancellation.h"
#include "base/time.h"
#include "core/execution_event.h"
#include "core/function_fqn.h"
#include "core/ids.h"
#include "core/metadata.h"
#include "core/return_value.h"
#include "core/version.h"
#include "storage/db_errors.h"

namespace stele::executor {

using core::ExecutionId;
using core::Version;

// Everything one run of one execution needs (Obelisk's `WorkerContext`).
struct WorkerContext {
  ExecutionId execution_id;
  core::FunctionFqn ffqn;
  core::Params params;
  core::ExecutionMetadata metadata;
  // HistoryEvents already in the log, with their versions (replay input).
  std::vector<std::pair<core::HistoryEvent, Version>> event_history;
  // All responses of the execution, in arrival order.
  std::vector<core::JoinSetResponseEventOuter> responses;
  // The version the run's next append must name.
  Version version;
  // The Locked event of this run (component, executor, run, retry config).
  core::Locked locked_event;
  std::optional<std::pair<ExecutionId, core::JoinSetId>> parent;
  // Temporary failures and timeouts before this run (Unlocked never counts).
  uint32_t intermittent_event_count = 0;
  // Whether a retriable failure of this run would be retried
  // (CanBeRetriedAfter(intermittent_event_count + 1, ...) holds). An
  // activity uses it to decide whether an `err` result is retried.
  bool can_be_retried = false;
  // End of the lock: an activity is timed out when it runs past it; a
  // workflow extends the lock before it or returns without writing.
  DateTime execution_deadline;
  // The whole execution's deadline (core::ExecutionPolicy), which a
  // workflow's children inherit; nullopt: none.
  std::optional<DateTime> deadline = std::nullopt;
  // Fired when the run must stop: deadline passed (activities), executor
  // shutting down, or the execution was cancelled.
  CancellationToken cancel;
  core::RunId run_id;
  core::ExecutorId executor_id;
  // ExecutorOptions::max_result_bytes (0: none), for a worker that writes
  // its execution's Finished itself (a workflow ending with one commit):
  // a larger result is left to the executor, which records the error.
  uint64_t max_result_bytes = 0;
};

// --- Errors (docs/model.md §5.4, §3.6) -------------------------------------

enum class FatalErrorKind {
  kNondeterminismDetected,
  kParamsParsingError,
  kCannotInstantiate,
  kResultParsingError,
  kImportedFunctionCallError,
  kWorkflowTrap,  // workflow traps are permanent
  kOutOfFuel,
  kConstraintViolation,
  kCancelled,
  kResultTooLarge,  // over ExecutorOptions::max_result_bytes
};
// Human form: "nondeterminism detected", "params parsing error", ...
std::string_view FatalErrorKindName(FatalErrorKind kind);

// A failure retrying cannot fix: the execution finishes with an
// ExecutionError (or, for kCancelled, is cancelled).
struct FatalError {
  FatalErrorKind kind = FatalErrorKind::kWorkflowTrap;
  std::string reason;
  std::optional<std::string> detail;
  friend bool operator==(const FatalError&, const FatalError&) = default;
};

// The activity trapped (panicked, crashed, failed to run). Retried while
// retries remain, then final.
struct ActivityTrap {
  std::string reason;
  std::optional<std::string> detail;
  core::HttpClientTraces http_client_traces;
  // The failure is permanent (an exec activity's non-retryable exit
  // status): final at once, whatever retries remain.
  bool non_retryable = false;
  friend bool operator==(const ActivityTrap&, const ActivityTrap&) = default;
};

// The activity returned its `err` value and is configured to retry on it
// (`retry_on_err`, default true). Retried while retries remain; once they
// are exhausted, `err` is stored as the execution's normal result.
struct ActivityReturnedError {
  core::ReturnValueErr err;
  // Shown in TemporarilyFailed; the JSON of `err` when unset.
  std::optional<std::string> detail;
  core::HttpClientTraces http_client_traces;
  friend bool operator==(const ActivityReturnedError&, const ActivityReturnedError&) = default;
};

// The run did not finish before its lock deadline (or, for a wasm
// workflow, computed longer than its slice without a host call).
struct TemporaryTimeout {
  core::HttpClientTraces http_client_traces;
  // Which limit was exceeded and where it is set; unset: the executor
  // fills in its own lock deadline (outcome.h, DeadlineReason).
  std::optional<std::string> reason = std::nullopt;
  friend bool operator==(const TemporaryTimeout&, const TemporaryTimeout&) = default;
};

// A resource limit was hit (e.g. an engine pool exhausted): the execution
// is unlocked with a backoff and the attempt is not counted.
struct LimitReached {
  std::string reason;
  friend bool operator==(const LimitReached&, const LimitReached&) = default;
};

// The worker's own storage access failed; nothing more is written and the
// expired-timers watcher cleans up once the lock expires.
struct WorkerDbError {
  storage::DbErrorWrite error;
  friend bool operator==(const WorkerDbError&, const WorkerDbError&) = default;
};

struct WorkerError {
  // The version the outcome event must be written at (a workflow that
  // appended history events during the run has moved it on).
  Version version;
  std::variant<ActivityTrap, ActivityReturnedError, TemporaryTimeout, LimitReached, WorkerDbError,
               FatalError>
      error;
  friend bool operator==(const WorkerError&, const WorkerError&) = default;
};

// --- Result -------------------------------------------------------------------

// The function returned: Finished(value).
struct WorkerOk {
  core::SupportedFunctionReturnValue value;
  Version version;  // where Finished goes
  core::HttpClientTraces http_client_traces;
  friend bool operator==(const WorkerOk&, const WorkerOk&) = default;
};

// The worker (or the watcher, racing it) already wrote whatever was needed,
// e.g. a workflow that blocked on a join set or found its lock expired.
struct DbUpdatedByWorkerOrWatcher {
  friend bool operator==(const DbUpdatedByWorkerOrWatcher&,
                         const DbUpdatedByWorkerOrWatcher&) = default;
};

struct WorkerResult {
  std::variant<WorkerOk, DbUpdatedByWorkerOrWatcher, WorkerError> value;
  // The WebAssembly engine that ran the guest ("v8 10.2.154.26-node.36"),
  // set by the wasm workers; nullopt for every other worker. The event the
  // executor records for the run (Finished, TemporarilyFailed,
  // TemporarilyTimedOut, Unlocked) carries it (outcome.h).
  std::optional<std::string> engine = std::nullopt;

  static WorkerResult Ok(core::SupportedFunctionReturnValue value, Version version,
                         core::HttpClientTraces traces = std::nullopt) {
    return {WorkerOk{std::move(value), version, std::move(traces)}};
  }
  static WorkerResult DbUpdated() { return {DbUpdatedByWorkerOrWatcher{}}; }
  template <class E>
  static WorkerResult Err(Version version, E error) {
    // Built in place: a temporary WorkerError trips g++ 12's
    // -Wmaybe-uninitialized at -O2 (a false positive in variant's dtor).
    WorkerResult result;
    WorkerError& err = result.value.emplace<WorkerError>();
    err.version = version;
    err.error.emplace<E>(std::move(error));
    return result;
  }
  static WorkerResult Fatal(Version version, FatalErrorKind kind, std::string reason,
                            std::optional<std::string> detail = std::nullopt) {
    return Err(version, FatalError{kind, std::move(reason), std::move(detail)});
  }
  // Short human form for logs, e.g. "Ok", "ActivityTrap(boom)".
  std::string ToString() const;
  friend bool operator==(const WorkerResult&, const WorkerResult&) = default;
};

// --- The interface --------------------------------------------------------------

class Worker {
 public:
  virtual ~Worker() = default;

  // Runs (or continues, for a workflow) the execution described by `ctx`.
  // Must not throw. See the threading notes at the top of this file.
  virtual WorkerResult Run(WorkerContext ctx) = 0;

  // The functions this worker serves; an executor locks only these (by the
  // kByFfqn strategy). Stable for the worker's lifetime.
  virtual const std::vector<core::FunctionFqn>& ExportedFunctions() const = 0;
};

}  // namespace stele::executor
