// What the execution service serves: components (a unit of code with its
// functions and a worker factory) and the settings its executors run with.
// Both faces describe what they serve with these types — the server from
// stele.toml (server/components.h), libstele from Register* calls
// (runtime/native/engine.cc) — and the service composes the executors,
// the watcher and the shared runtime state from them, once.
//
// Threading: plain values; a WorkerFactory is called once, from the thread
// that starts the service. Ownership: WorkerEnv borrows from the service,
// which outlives every worker it starts.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "core/component_id.h"
#include "core/function_fqn.h"
#include "core/function_type.h"
#include "core/retry_config.h"
#include "executor/cancel_registry.h"
#include "executor/exec_task.h"
#include "executor/latency_histogram.h"
#include "executor/local_dispatch.h"
#include "executor/response_handoff.h"
#include "executor/worker.h"
#include "runtime/workflow/function_registry.h"
#include "runtime/workflow/workflow_run.h"
#include "stele/defaults.h"
#include "storage/db_pool.h"

namespace stele::service {

// What a worker may need from the running service.
struct WorkerEnv {
  storage::DbPool* pool = nullptr;
  SharedClock clock;
  const runtime::workflow::FunctionRegistry* registry = nullptr;
  // The service's executors by function (filled before they start): a
  // workflow locks the children they serve in the step that creates them.
  // nullptr when eager dispatch is off.
  const executor::LocalDispatch* dispatch = nullptr;
  // Children's results for their warm parents; nullptr when result hand-off
  // is off.
  executor::ResponseHandoff* handoff = nullptr;
  // Running activities of this process, for the cancels a workflow makes.
  executor::CancelRegistry* cancels = nullptr;
  // Where a workflow worker meters the writes of its runs; null for
  // activities.
  std::shared_ptr<executor::LatencyHistogram> workflow_writes;
  // Where this component's lease is set, in the face's words
  // (ServiceOptions::*_lock_expiry_setting): for a wasm workflow's slice
  // errors.
  std::string lock_expiry_setting;
  // The replay settings of a workflow component's runs: the service's
  // defaults with the component's lease as lock extension. A factory may
  // override per component (e.g. a configured blocking strategy).
  runtime::workflow::WorkflowRunOptions workflow_run;
};

using WorkerFactory =
    std::function<Result<std::shared_ptr<executor::Worker>, std::string>(const WorkerEnv& env)>;

// Per-component executor settings; unset fields take ServiceOptions'.
struct ExecutorOverrides {
  std::optional<uint32_t> batch_size;
  // Lease of a run; an activity's time limit per attempt.
  std::optional<std::chrono::milliseconds> lock_expiry;
  // Retries after the first attempt (activities and workflows).
  std::optional<uint32_t> max_retries;
  std::optional<std::chrono::milliseconds> retry_backoff;
  // Longest wait before one retry, and its jitter (0..100 %).
  std::optional<std::chrono::milliseconds> max_retry_backoff;
  std::optional<uint32_t> retry_jitter_percent;
  // Longest log of a workflow execution (events); unset: the service's
  // workflow_run.max_events_per_execution.
  std::optional<uint32_t> max_events_per_execution;
  // Lock by component digest instead of by function: wasm workflows, which
  // replay only on the code they were created with.
  bool lock_by_component_id = false;
};

struct ComponentSpec {
  core::ComponentId component_id;
  runtime::workflow::FunctionKind kind = runtime::workflow::FunctionKind::kActivity;
  std::vector<core::FunctionFqn> functions;
  // Declared signatures (a subset of `functions`, possibly empty): params
  // of submissions and children, and stub results, are checked against
  // them. A function without one takes any JSON.
  std::vector<core::FunctionSignature> signatures;
  // Empty for stub activities: no executor; results are written by Stub.
  WorkerFactory make_worker;
  ExecutorOverrides executor;
};

inline constexpr std::chrono::milliseconds kDefaultActivityLockExpiry{30000};

// The settings of a service; each default is the one both faces use
// unless their configuration says otherwise (docs/config.md, docs/sdk.md):
// the executor settings come from stele/defaults.h, which libstele's
// EngineOptions reads too.
inline constexpr std::chrono::milliseconds kDefaultCancelGrace = defaults::kCancelGrace;
// Retry defaults of both faces (docs/config.md, "Retries").
inline constexpr uint32_t kDefaultWorkflowMaxRetries = defaults::kWorkflowMaxRetries;
inline constexpr std::chrono::milliseconds kDefaultMaxRetryBackoff = defaults::kMaxRetryBackoff;
inline constexpr uint32_t kDefaultRetryJitterPercent = defaults::kRetryJitterPercent;

struct ServiceOptions {
  std::shared_ptr<storage::DbPool> pool;  // REQUIRES: non-null
  SharedClock clock;                      // nullptr: the system clock

  // --- Executors ---
  // Executions one executor locks per tick.
  uint32_t batch_size = defaults::kBatchSize;
  // Longest wait of an idle executor before it looks for work again
  // (commits of this process wake it at once).
  std::chrono::milliseconds tick_sleep{defaults::kTickSleep};
  // An activity attempt's time limit (its lease): 30 s, so that the scripts
  // and HTTP calls a new user starts with do not trip over it (issue 16;
  // docs/config.md, "Time limits and leases").
  std::chrono::milliseconds activity_lock_expiry{kDefaultActivityLockExpiry};
  // Lease of a workflow run, extended while it makes progress.
  std::chrono::milliseconds workflow_lock_expiry{defaults::kWorkflowLockExpiry};
  // Where a component's lease is set, in the face's words: named by the
  // reason of every timeout event (executor/outcome.h) and by a wasm
  // workflow's slice errors.
  std::string activity_lock_expiry_setting =
      "the component's lock expiry, else ServiceOptions::activity_lock_expiry";
  std::string workflow_lock_expiry_setting =
      "the component's lock expiry, else ServiceOptions::workflow_lock_expiry";
  // Where a workflow's limit of events is set, named by its error.
  std::string max_events_setting =
      "the component's max_events_per_execution, else "
      "ServiceOptions::workflow_run.max_events_per_execution";
  // Retry policy (docs/config.md, "Retries"). Nothing retries forever by
  // default: an activity gives up after 5 retries (6 attempts, the last
  // about 1.6 s after the first failure), a workflow after 10 failed or
  // timed-out runs (a run that made progress before its lease ended is
  // not counted). nullopt max_retries: forever, on request only.
  std::optional<uint32_t> activity_max_retries = 5;
  std::chrono::milliseconds activity_retry_backoff{100};
  std::optional<uint32_t> workflow_max_retries = kDefaultWorkflowMaxRetries;
  std::chrono::milliseconds workflow_retry_backoff{defaults::kWorkflowRetryBackoff};
  // No single wait is longer (the exponential growth stops here).
  std::chrono::milliseconds max_retry_backoff{kDefaultMaxRetryBackoff};
  // Each wait is shortened by up to this share (0..100 %), so that
  // executions that failed together do not retry in lockstep.
  uint32_t retry_jitter_percent = kDefaultRetryJitterPercent;
  // How long a cancelled workflow may clean up before it is terminated
  // (docs/model.md §9.5), unless the request names its own.
  std::chrono::milliseconds cancel_grace{kDefaultCancelGrace};
  // Activity attempts running at once, all activities together.
  uint32_t max_concurrency = defaults::kMaxConcurrency;
  // Workflow runs loaded at once. Separate from the activities' limit: a
  // workflow waiting warm for a child holds its slot, and one limit would
  // let waiting workflows starve the activities they wait for.
  uint32_t max_workflow_concurrency = defaults::kMaxWorkflowConcurrency;
  // Lock a child this process serves in the step that creates it and hand
  // it to its executor (docs/sdk.md, "Eager dispatch").
  bool eager_dispatch = true;
  // A child's result goes straight to a parent waiting warm on it alone
  // (docs/sdk.md, "Result hand-off").
  bool result_handoff = true;
  // The replay settings of every workflow run (lock_extension is set from
  // each component's lease).
  runtime::workflow::WorkflowRunOptions workflow_run;

  // --- Expired-timers watcher ---
  bool start_watcher = true;
  std::chrono::milliseconds watcher_tick{10};
  std::chrono::milliseconds watcher_leeway{500};

  // --- Retention (service/retention.h) ---
  // Trees of finished top-level executions are deleted once they finished
  // this long ago, by a collector started with the executors; nullopt:
  // executions are kept forever. The default of both faces: deleting
  // history is the operator's decision (docs/config.md "[retention]").
  std::optional<std::chrono::milliseconds> retention_finished_after;
  // Steady time between two passes of the collector.
  std::chrono::milliseconds retention_interval{60000};
  // Top-level executions one retention transaction examines (1..10000).
  uint32_t retention_batch_size = 100;
  // --- Cron ticker (cron_ticker.h) ---
  bool start_cron = true;
  // Longest sleep of the ticker: schedules created or resumed by another
  // process on the same database are seen within it.
  std::chrono::milliseconds cron_max_wait{1000};

  // --- Use cases ---
  // Largest params (serialised JSON) of a submission.
  uint64_t max_params_bytes = 1u << 20;
  // Largest page of List, Events and Responses.
  uint32_t max_list_length = 1000;
};

}  // namespace stele::service
