// stele/engine.h — libstele's entry point: durable workflows and activities
// inside a C++ program, on an embedded SQLite file or a storage backend the
// caller provides.
//
//   auto engine = stele::Engine::Open({.sqlite_path = "app.sqlite"}).value();
//   engine->RegisterActivity("shop:pay/api.charge", Charge);
//   engine->RegisterWorkflow("shop:orders/api.place", PlaceOrder);
//   engine->Start();
//   auto id = engine->Submit("shop:orders/api.place", stele::Params(42)).value();
//   auto result = engine->WaitForResult(id, std::chrono::seconds(10));
//
// Lifecycle: Open → Register* → Start → Submit / GetStatus / WaitForResult /
// Cancel / Stub / List / CollectFinished → Stop (or destroy). Registration is closed by
// Start. Submissions are durable once Submit returns: executions left
// unfinished by a crash continue when an engine with the same functions
// registered starts on the same database (after their lock expires).
//
// Errors: every expected failure is a Result<_, stele::Error> with a clear
// message: malformed or unregistered ffqn, params that are not a JSON array
// or exceed EngineOptions::max_params_bytes, malformed execution ids,
// resubmission of an id with other params (kConflict), database failures
// (kStorage).
//
// Threading: after Start, Submit, GetStatus, WaitForResult, Cancel, Stub and
// List may be called from any number of threads. Register*, Start and Stop
// are called from one controlling thread. Workflows and activities run on
// the engine's threads.
// Ownership: Open returns the sole owner. The engine owns the database it
// opened (closed on destruction) but only shares a caller-given pool.
// Destruction stops the engine.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stele/activity.h"
#include "stele/clock.h"
#include "stele/defaults.h"
#include "stele/error.h"
#include "stele/execution_result.h"
#include "stele/json.h"
#include "stele/result.h"
#include "stele/task.h"
#include "stele/workflow_context.h"

namespace stele {

namespace storage {
class DbPool;
}  // namespace storage

struct EngineOptions {
  // SQLite database file, created when missing. Ignored when `pool` is set.
  std::string sqlite_path = "stele.sqlite";
  // true: every commit is fsynced (synchronous=FULL, no acknowledged write
  // lost on power loss); false: synchronous=NORMAL (safe across process
  // crashes, faster).
  bool sqlite_synchronous_full = true;
  // A storage backend given by the caller instead of the SQLite file.
  std::shared_ptr<storage::DbPool> pool = nullptr;
  // Source of time; nullptr: the system clock. Shared: the engine's
  // threads keep reading it until the engine is stopped and destroyed.
  std::shared_ptr<const Clock> clock = nullptr;
  // Largest params (serialised JSON) Submit accepts.
  size_t max_params_bytes = 1 << 20;
  // Activity attempts running at once in this process (all activities).
  uint32_t max_concurrency = defaults::kMaxConcurrency;
  // Workflow runs loaded at once. Separate from the activities' limit on
  // purpose: a workflow waiting warm for a child holds its slot, and
  // sharing one limit would let waiting workflows starve the activities
  // they wait for.
  uint32_t max_workflow_concurrency = defaults::kMaxWorkflowConcurrency;
  // Executions one executor locks per tick.
  uint32_t batch_size = defaults::kBatchSize;
  // The workflow settings below are the defaults of every workflow;
  // WorkflowOptions overrides them per workflow.
  // Lease of a workflow run; a run that dies is retried after it ends.
  std::chrono::milliseconds workflow_lock_expiry{defaults::kWorkflowLockExpiry};
  // true (BlockingStrategy::kAwait): a workflow whose awaited response is
  // not in yet stays loaded until its lease ends (short calls finish
  // without a replay); false (kInterrupt): it is unloaded at once and
  // replayed when the response arrives.
  bool workflow_keep_warm = true;
  // With workflow_keep_warm: longest steady time one wait stays warm
  // (nullopt: until the lease ends). Tests on a ManualClock set it.
  std::optional<std::chrono::milliseconds> max_warm_wait = std::nullopt;
  // Backoff of a workflow retried after a failed run (an inline step that
  // failed, a run that timed out without progress).
  std::chrono::milliseconds workflow_retry_backoff{defaults::kWorkflowRetryBackoff};
  // Failed runs a workflow retries before it ends with its last failure
  // (docs/sdk.md, "Retries"): nothing retries forever unless asked to
  // (nullopt). A run that made progress before its lease ended is not
  // counted.
  std::optional<uint32_t> workflow_max_retries = defaults::kWorkflowMaxRetries;
  // Longest wait before a workflow retry, and its jitter (0..100 %).
  std::chrono::milliseconds workflow_max_retry_backoff{defaults::kMaxRetryBackoff};
  uint32_t workflow_retry_jitter_percent = defaults::kRetryJitterPercent;
  // How long a cancelled workflow may clean up before it is terminated
  // (Engine::Cancel; CancelOptions::grace overrides it per request).
  std::chrono::milliseconds cancel_grace{defaults::kCancelGrace};
  // Non-blocking events (join sets, submissions, random values, stubs) a
  // run keeps in memory and writes with its next blocking write (a wait, a
  // direct call, a sleep, the finish); at most this many are kept before
  // they are written on their own. 0: each is written at once.
  uint32_t workflow_event_batching = 100;
  // After writing this many events a run unlocks its execution and frees
  // its slot (the execution is pending again at once and continues in a
  // new run), so one long workflow cannot hold a slot indefinitely.
  // 0: no limit.
  uint32_t workflow_max_events_per_run = 0;
  // The longest log of one workflow execution, in events (a runaway loop
  // ends instead of growing it without bound). At least 10.
  uint32_t workflow_max_events_per_execution = 100'000;
  // Longest wait of an idle executor before it looks for work again.
  std::chrono::milliseconds tick_sleep{defaults::kTickSleep};
  // Expired-timers watcher: its tick bounds how late a durable sleep ends
  // (one indexed query per tick); the leeway is how late an expired lock
  // must be before the watcher takes it over (delays fire on time).
  std::chrono::milliseconds watcher_tick{10};
  std::chrono::milliseconds watcher_leeway{500};
  // Start the watcher with the executors (tests drive it by hand).
  bool start_watcher = true;
  // Tick the cron schedules (CreateSchedule; docs/sdk.md, "Cron
  // schedules"). Off for tests on a manual clock (RunCronPassForTest).
  bool start_cron = true;
  // Store where each workflow waits: the call site (file, line, function)
  // of every operation that wrote to the log, as the execution's backtrace
  // (DbExternalApi::GetBacktrace; GET /v1/executions/{id}/backtrace of a
  // server on the same database). Costs one write per run that recorded
  // events, hence off by default.
  bool store_backtraces = false;
  // A child that this engine serves is locked in the transaction of the
  // workflow step that creates it and handed to its executor at once,
  // instead of being created pending and locked by a second transaction
  // (see docs/sdk.md, "Eager dispatch"). Off: every child goes through the
  // pending state and the executors' lock loop.
  bool eager_dispatch = true;
  // A child's result goes straight to its parent when the parent waits warm
  // on it alone (a `call`), and commits with the parent's next step instead
  // of a transaction of its own: a sequential step is one durable commit,
  // not two (docs/sdk.md, "Result hand-off"). Off: every result is
  // committed by the child's executor first.
  bool result_handoff = true;
  // Retention (docs/sdk.md, "Retention"): the trees of top-level executions
  // that finished, with every descendant, at least this long ago are
  // deleted — events, responses, timers, backtraces, children — by a
  // collector the engine runs from Start, every retention_interval, in
  // short batches. Nothing running and nothing with a running descendant
  // is deleted. nullopt (the default): executions are kept forever; the
  // program decides when its history may go (it may still look results up
  // by id). Must be positive when set.
  std::optional<std::chrono::milliseconds> retention_finished_after = std::nullopt;
  std::chrono::milliseconds retention_interval{60000};
};

// What CollectFinished deleted.
struct CollectedExecutions {
  uint64_t top_level = 0;   // trees
  uint64_t executions = 0;  // children included
};

// How a workflow run waits for a response that is not in yet.
enum class BlockingStrategy {
  kAwait,      // stays loaded (warm) while its lease lasts: no replay for short waits
  kInterrupt,  // is unloaded at once and replayed when the response arrives
};

// Settings of one workflow. Every field left unset takes the engine-wide
// value of EngineOptions named beside it. Both strategies and every
// setting here record the same history for the same code and results;
// they change when a run is unloaded, how many commits it makes and how
// it is leased, never what the workflow does. Workflows with equal
// lock_expiry, retry_backoff and max_retries share one executor.
struct WorkflowOptions {
  // nullopt: EngineOptions::workflow_keep_warm (true: kAwait).
  std::optional<BlockingStrategy> blocking_strategy = std::nullopt;
  // kAwait: longest steady time one wait stays warm; a wait never outlasts
  // the lease. nullopt: EngineOptions::max_warm_wait. Must not be negative.
  std::optional<std::chrono::milliseconds> max_warm_wait = std::nullopt;
  // nullopt: EngineOptions::workflow_event_batching.
  std::optional<uint32_t> non_blocking_event_batching = std::nullopt;
  // nullopt: EngineOptions::workflow_max_events_per_run.
  std::optional<uint32_t> max_events_per_run = std::nullopt;
  // The longest log of one execution, in events: past it the execution
  // ends with a constraint violation naming this limit. nullopt:
  // EngineOptions::workflow_max_events_per_execution. At least 10.
  std::optional<uint32_t> max_events_per_execution = std::nullopt;
  // Lease of a run (extended while it makes progress). nullopt:
  // EngineOptions::workflow_lock_expiry. Must be positive.
  std::optional<std::chrono::milliseconds> lock_expiry = std::nullopt;
  // Backoff before a failed run is retried. nullopt:
  // EngineOptions::workflow_retry_backoff. Must not be negative.
  std::optional<std::chrono::milliseconds> retry_backoff = std::nullopt;
  // Failed runs retried before the execution ends with the last failure.
  // nullopt: EngineOptions::workflow_max_retries.
  std::optional<uint32_t> max_retries = std::nullopt;
};

// One execution's own retry policy (SubmitOptions::retry); each field left
// unset keeps its function's (ActivityOptions, WorkflowOptions).
struct RetryPolicy {
  std::optional<uint32_t> max_retries = std::nullopt;
  std::optional<std::chrono::milliseconds> backoff = std::nullopt;
  std::optional<std::chrono::milliseconds> max_backoff = std::nullopt;
  std::optional<uint32_t> jitter_percent = std::nullopt;  // 0..100
};

struct SubmitOptions {
  // Caller-chosen id "E_<ULID>": submitting the same id again with the same
  // ffqn and params returns it (idempotent); with others it is kConflict.
  std::optional<std::string> execution_id = std::nullopt;
  // Run no earlier than this; nullopt: now.
  std::optional<std::chrono::system_clock::time_point> scheduled_at = std::nullopt;
  // Overrides of the function's retry policy for this execution.
  RetryPolicy retry = {};
  // A deadline for the whole execution, or a timeout from now (at most one
  // of them): past it the execution ends `timed_out`, with its children
  // (docs/sdk.md, "Deadlines"). The deadline must be in the future, the
  // timeout positive.
  std::optional<std::chrono::system_clock::time_point> deadline = std::nullopt;
  std::optional<std::chrono::milliseconds> timeout = std::nullopt;
};

struct ExecutionStatus {
  std::string execution_id;
  std::string ffqn;
  // "PendingAt", "Locked", "BlockedByJoinSet", "Finished", or, while
  // unfinished, "Paused" (Engine::Pause) or "Cancelling" (Engine::Cancel).
  std::string state;
  // A one-line human form, e.g. "Finished(ok)".
  std::string description;
  bool finished = false;
};

// Which way List pages from its cursor. Executions are ordered by id
// (ULIDs sort by creation time; children sort right after their parent).
enum class ListDirection {
  kOlder,  // ids before the cursor (without one: from the newest)
  kNewer,  // ids after the cursor (without one: from the oldest)
};

struct ListOptions {
  // Largest page List returns; a larger limit is refused, not truncated.
  static constexpr uint32_t kMaxLimit = 1000;
  std::optional<std::string> ffqn = std::nullopt;  // only this function
  bool top_level_only = false;
  // Only executions of this status: "pending_at", "locked",
  // "blocked_by_join_set", "finished", "paused" or "cancelling".
  std::optional<std::string> status = std::nullopt;
  uint32_t limit = 20;  // executions per page, 1..kMaxLimit
  // Where the page starts (excluded): ListPage::next_cursor of the page
  // before, with the same filters and direction. nullopt: from the end
  // `direction` starts at.
  std::optional<std::string> cursor = std::nullopt;
  ListDirection direction = ListDirection::kOlder;
};

struct ListPage {
  // At most `limit` executions, newest first in either direction.
  std::vector<ExecutionStatus> executions;
  // Present when more executions follow in `direction`: pass it as
  // ListOptions::cursor for the next page.
  std::optional<std::string> next_cursor;
};

// A message sent to a running execution (Engine::SendMessage).
struct SendMessageOptions {
  // The caller's idempotency key: 1 to 128 ASCII letters, digits and
  // `_ . : @ / -`. The same id with the same channel and body is delivered
  // once; with another, kConflict. nullopt: a new id.
  std::optional<std::string> message_id = std::nullopt;
};

// The last value a workflow published under a key (ctx.publish).
struct PublishedValue {
  std::string key;
  Json value;
  // The log version of the publish: pass it as `after_version` to wait for
  // the next value.
  uint32_t version = 0;
  std::chrono::system_clock::time_point published_at;
};

enum class CancelOutcome {
  kCancelled,        // finished `cancelled` (now, or before)
  kAlreadyFinished,  // a delay that had fired
  kCancelling,       // a workflow was asked to cancel; it finishes `cancelled` soon
};

// How Cancel stops a workflow (docs/model.md §9.5).
struct CancelOptions {
  // End at once: no cleanup, the subtree cancelled, the result `cancelled`.
  bool terminate = false;
  // How long the workflow may clean up after it sees the cancellation
  // (join_next's kCancelled); nullopt: EngineOptions::cancel_grace.
  std::optional<std::chrono::milliseconds> grace;
  std::string reason;  // recorded with the request
};

// How a cron schedule treats its ticks (docs/sdk.md, "Cron schedules";
// the same rules as stele.toml's [[cron]], docs/config.md).
struct ScheduleOptions {
  std::string time_zone = "UTC";  // IANA name, e.g. "Europe/Berlin"
  std::string overlap = "skip";   // "skip" | "allow" | "buffer_one"
  std::string catch_up = "last";  // "skip" | "last" | "all"
  uint32_t catch_up_limit = 10;   // 1..1000: ticks catch_up = "all" runs
};

struct ScheduleStatus {
  std::string name;
  std::string cron;  // six fields with seconds
  std::string ffqn;
  Json params;
  ScheduleOptions options;
  bool paused = false;
  // Every tick at or before it fired or was skipped.
  std::chrono::system_clock::time_point last_tick;
  std::optional<std::string> last_execution_id;                    // of the last tick fired
  std::optional<std::chrono::system_clock::time_point> next_tick;  // nullopt when paused
};

class Engine {
 public:
  // Opens the database (or takes options.pool). Errors: kStorage with the
  // reason (unwritable path, damaged file, newer schema).
  static Result<std::unique_ptr<Engine>, Error> Open(EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // --- Registration (before Start) --------------------------------------
  // Errors: kInvalidArgument for a malformed ffqn or options out of range
  // (named in the message), kConflict when the ffqn is registered already,
  // kFailedPrecondition after Start.
  Result<void, Error> RegisterWorkflow(std::string_view ffqn, WorkflowFn fn,
                                       WorkflowOptions options = {});
  Result<void, Error> RegisterWorkflow(std::string_view ffqn, WorkflowFnWithErr fn,
                                       WorkflowOptions options = {});
  Result<void, Error> RegisterActivity(std::string_view ffqn, ActivityFn fn,
                                       ActivityOptions options = {});
  // A stub activity: no code runs; its result is written by Stub (or by a
  // workflow's ctx.stub) — human approval, external callbacks.
  Result<void, Error> RegisterStub(std::string_view ffqn);

  // --- Running ------------------------------------------------------------
  // Starts one executor per group of workflows with equal lock_expiry and
  // retry_backoff (WorkflowOptions), one per group of activities with
  // equal options, and the expired-timers watcher. Errors:
  // kFailedPrecondition when started before, kStorage.
  Result<void, Error> Start();
  // Stops the executors (their runs are unlocked so nothing waits for a
  // lease to end) and the watcher. Idempotent.
  void Stop();

  // --- Executions ---------------------------------------------------------
  // Creates a top-level execution of a registered workflow or activity.
  // Returns its id.
  Result<std::string, Error> Submit(std::string_view ffqn, Json params, SubmitOptions options = {});
  Result<ExecutionStatus, Error> GetStatus(std::string_view execution_id);
  // The result once the execution finished; kTimeout after `timeout`.
  Result<ExecutionResult, Error> WaitForResult(std::string_view execution_id,
                                               std::chrono::milliseconds timeout);
  // Cancels an execution ("E_...") or a delay ("Delay_..."). An activity
  // finishes `cancelled` at once (a running one's token is fired):
  // kCancelled. A workflow is asked to cancel (docs/sdk.md, "Cancelling a
  // workflow"): kCancelling; it sees the request at its next blocking call,
  // may clean up within the grace period, and finishes `cancelled` with
  // its open children cancelled. Idempotent: a second call answers the
  // same and writes nothing. Errors: kInvalidArgument for a bad id or
  // grace; kNotFound for an unknown execution or a delay its workflow never
  // requested; kConflict when the execution finished otherwise (nothing is
  // written).
  Result<CancelOutcome, Error> Cancel(std::string_view id, const CancelOptions& options = {});
  // Pauses an execution (docs/sdk.md, "Pausing an execution"): it is not
  // run again until Resume; a run in progress is stopped (a workflow at its
  // next write, an activity's attempt at once, its outcome discarded and no
  // retry counted). Responses and expired sleeps still arrive meanwhile.
  // Idempotent. Errors: kInvalidArgument (bad id, reason over 1 KiB),
  // kNotFound, kConflict when finished (nothing written).
  Result<void, Error> Pause(std::string_view execution_id, std::string reason = {});
  // Undoes Pause; idempotent. Errors: as Pause.
  Result<void, Error> Resume(std::string_view execution_id, std::string reason = {});
  // Writes the result of a stub activity execution. Idempotent for the same
  // value; kConflict when another value was written.
  Result<void, Error> Stub(std::string_view execution_id, ExecutionResult result);
  // Sends `body` to `channel` of a running execution, where its workflow's
  // ctx.receive(channel) takes it (docs/sdk.md, "Messages"). Returns the
  // message id. Errors: kInvalidArgument (malformed id, channel or message
  // id; a body over EngineOptions::max_params_bytes), kNotFound, kConflict
  // (the execution finished — nothing is delivered —, or the message id
  // was used with another channel or body).
  Result<std::string, Error> SendMessage(std::string_view execution_id, std::string_view channel,
                                         Json body, const SendMessageOptions& options = {});
  // The last value the execution published under `key`; with a timeout,
  // waits up to it for one published after `after_version` (any value when
  // nullopt). Errors: kInvalidArgument, kNotFound (no execution; no value
  // when not waiting, or the execution finished without one), kTimeout.
  Result<PublishedValue, Error> GetValue(
      std::string_view execution_id, std::string_view key,
      std::optional<uint32_t> after_version = std::nullopt,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  // Every key's last value, by key. Errors: kInvalidArgument, kNotFound.
  Result<std::vector<PublishedValue>, Error> ListValues(std::string_view execution_id);
  // One page of executions. Errors: kInvalidArgument for a malformed ffqn
  // or cursor, or a limit of 0 or over ListOptions::kMaxLimit; kStorage.
  Result<ListPage, Error> List(const ListOptions& options = {});
  // Deletes now, once, what retention would (EngineOptions::
  // retention_finished_after): the trees of top-level executions that
  // finished, with every descendant, `older_than` or longer ago. Works
  // before Start and after Stop. Errors: kInvalidArgument when
  // `older_than` is not positive, kStorage.
  Result<CollectedExecutions, Error> CollectFinished(std::chrono::milliseconds older_than);

  // --- Cron schedules (docs/sdk.md, "Cron schedules") --------------------
  // Each tick of `cron` (six fields with seconds) in options.time_zone
  // submits `ffqn` with `params`, exactly once across restarts and
  // engines sharing a database. Errors: kInvalidArgument (name, cron
  // expression, zone, options, params), kNotFound (ffqn not registered),
  // kConflict (the name is taken).
  Result<ScheduleStatus, Error> CreateSchedule(std::string_view name, std::string_view cron,
                                               std::string_view ffqn, Json params,
                                               ScheduleOptions options = {});
  Result<std::vector<ScheduleStatus>, Error> ListSchedules();
  // Errors (also of the calls below): kInvalidArgument for a malformed
  // name, kNotFound.
  Result<ScheduleStatus, Error> GetSchedule(std::string_view name);
  // Ticks that fall in a pause never fire.
  Result<ScheduleStatus, Error> PauseSchedule(std::string_view name);
  Result<ScheduleStatus, Error> ResumeSchedule(std::string_view name);
  Result<void, Error> DeleteSchedule(std::string_view name);
  // Submits the schedule's function now, outside its ticks; returns the id.
  Result<std::string, Error> TriggerSchedule(std::string_view name);
  // One pass of the cron ticker at `at`, for tests on a manual clock with
  // start_cron = false.
  Result<void, Error> RunCronPassForTest(std::chrono::system_clock::time_point at);

  // One pass of the expired-timers watcher over the timers expired at
  // `at` (fires due delays, settles expired locks), for tests on a manual
  // clock with start_watcher = false. Returns how many it handled.
  Result<uint32_t, Error> FireExpiredTimersForTest(std::chrono::system_clock::time_point at);

  class Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace stele
