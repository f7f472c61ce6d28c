// ExecutionService: every use case of Stele, written once, below both
// faces. The HTTP API (src/server) and libstele's Engine
// (src/runtime/native) only translate their inputs into these calls and
// the results back (docs/architecture.md): the same checks, defaults and
// messages reach a user whichever face they use.
//
// It is also the one composition root of the runtime: given the
// components to serve (service/component.h) it owns the function registry,
// starts one executor::ExecTask per component with a worker, the
// expired-timers watcher, the retention collector, and the state they share (concurrency limits,
// the cancel registry, eager dispatch, result hand-off).
//
// Lifecycle: Create → AddComponent / AddFunction → Start → use cases →
// Stop (or destroy). Use cases work before Start (a submission waits
// pending until an executor serves it) and after Stop (reads; writes go to
// the database, nothing runs).
//
// Inputs are the faces' text (ids, ffqns, digests) and JSON; the service
// parses and validates them, so every face reports malformed input alike.
// Errors: ServiceError (service_error.h); each method names the kinds it
// returns, and kUnavailable whenever the database fails.
//
// Threading: AddComponent, AddFunction, Start and Stop are called from one
// controlling thread, AddComponent/AddFunction only before Start. Every use
// case may be called from any number of threads at any time, concurrently
// with Start and Stop. Ownership: the service shares the pool and the
// clock, owns its executors, watcher and connections; Stop (or
// destruction) joins every thread it started.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/cancellation.h"
#include "base/result.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/pending_state.h"
#include "core/return_value.h"
#include "executor/concurrency_limiter.h"
#include "executor/exec_task.h"
#include "executor/expired_timers_watcher.h"
#include "service/async_wait.h"
#include "service/component.h"
#include "service/retention.h"
#include "service/service_error.h"
#include "storage/db_external_api.h"

namespace stele::service {

class CronTicker;

struct SubmitRequest {
  std::string ffqn;
  core::Json params = core::Json::array();  // one element per argument
  // Caller-chosen top-level id "E_<ULID>"; nullopt: a new one.
  std::optional<std::string> execution_id;
  std::optional<DateTime> scheduled_at;  // nullopt: now
  // This execution's own policy (docs/model.md §5.7), checked by Submit:
  // retry overrides (unset: the component's; durations not negative,
  // jitter 0..100) and at most one of deadline (not in the past) and
  // timeout (positive, counted from now).
  std::optional<int64_t> max_retries = std::nullopt;
  std::optional<std::chrono::milliseconds> retry_backoff = std::nullopt;
  std::optional<std::chrono::milliseconds> max_retry_backoff = std::nullopt;
  std::optional<int64_t> retry_jitter_percent = std::nullopt;
  std::optional<DateTime> deadline = std::nullopt;
  std::optional<std::chrono::milliseconds> timeout = std::nullopt;
};

struct Submitted {
  core::ExecutionId execution_id;
  bool created = true;  // false: the same submission existed already
};

struct ExecutionInfo {
  core::ExecutionId execution_id;
  core::FunctionFqn ffqn;
  DateTime created_at;
  DateTime first_scheduled_at;
  core::InputContentDigest component_digest;
  core::PendingState pending_state;
  // Set when the execution is finished.
  std::optional<core::SupportedFunctionReturnValue> result;
};

enum class ListDirection {
  kOlder,  // ids before the cursor (without one: from the newest)
  kNewer,  // ids after the cursor (without one: from the oldest)
};

struct ListQuery {
  std::optional<std::string> ffqn;  // exactly this function
  std::string ffqn_prefix;          // functions starting with it
  std::string execution_id_prefix;  // ids starting with it
  bool top_level_only = true;
  bool hide_finished = false;
  // Only executions of this status (core::PendingState::StatusTag):
  // pending_at, locked, blocked_by_join_set, finished, paused, cancelling.
  std::optional<std::string> status;
  uint32_t limit = 20;  // 1..ServiceOptions::max_list_length
  // Where the page starts (excluded): ListPage::next_cursor of the page
  // before, with the same filters and direction.
  std::optional<std::string> cursor;
  ListDirection direction = ListDirection::kOlder;
};

struct ListPage {
  // Newest first in either direction.
  std::vector<storage::ExecutionWithState> executions;
  // Present when more executions may follow in `direction`.
  std::optional<core::ExecutionId> next_cursor;
};

struct EventsPage {
  std::vector<core::ExecutionEvent> events;
  std::optional<core::Version::Type> next_since_version;  // when the page was full
};

struct ResponsesPage {
  std::vector<storage::ResponseWithCursor> responses;
  std::optional<uint32_t> next_cursor;  // when the page was full
};

// What Cancel did.
enum class CancelOutcome {
  kCancelled,        // finished `cancelled` (now, or before)
  kAlreadyFinished,  // a delay that fired before (executions: kConflict instead)
  kCancelling,       // a workflow asked to cancel: it finishes `cancelled` soon
};

// How Cancel stops a workflow (docs/model.md §9.5); activities and delays
// are cancelled at once whatever it says.
struct CancelOptions {
  // End at once, without cleanup, instead of letting the workflow see the
  // cancellation and clean up within the grace period.
  bool terminate = false;
  // nullopt: ServiceOptions::cancel_grace.
  std::optional<std::chrono::milliseconds> grace;
  std::string reason;  // recorded with the request; shown in its events
};

// A message to a running execution (docs/api.md, "Messages").
struct SendMessageRequest {
  std::string execution_id;
  std::string channel;  // core::IsValidChannel
  core::Json body;      // any JSON value, within ServiceOptions::max_params_bytes
  // The caller's idempotency key (core::IsValidMessageId); nullopt: a new
  // one ("msg_<ULID>").
  std::optional<std::string> message_id;
};

struct MessageSent {
  std::string message_id;
  bool delivered_now = true;  // false: delivered before under this id (nothing written)
};

// The last value a workflow published under a key (docs/model.md §8.6).
struct PublishedValue {
  std::string key;
  core::Json value;
  core::Version version;  // of its Publish event: what a later wait passes as `after`
  DateTime published_at;
};

// How GetValue waits: until the key holds a value published after
// `after_version` (nullopt: any value), at most `timeout` (0: no wait).
struct ValueWait {
  std::optional<core::Version> after_version;
  std::chrono::milliseconds timeout{0};
};

// A cron schedule as a face gives it (docs/api.md, "Schedules";
// docs/config.md, "[[cron]]"): text the service validates.
struct ScheduleSpec {
  std::string name;        // [A-Za-z0-9_-], 1..128 bytes
  std::string expression;  // six fields with seconds (service/cron/cron_expression.h)
  std::string time_zone = "UTC";
  std::string ffqn;
  core::Json params = core::Json::array();
  std::string overlap = "skip";   // "skip" | "allow" | "buffer_one"
  std::string catch_up = "last";  // "skip" | "last" | "all"
  uint32_t catch_up_limit = 10;   // 1..1000; ticks kept by catch_up = "all"
};

struct ScheduleInfo {
  storage::Schedule schedule;
  // The first tick after the stored last tick (it may be due already);
  // nullopt when paused or when it never fires again.
  std::optional<DateTime> next_tick;
};

// Cron tick counters of this process (/metrics).
struct CronCounts {
  uint64_t fired = 0;    // ticks that created (or found) their execution
  uint64_t skipped = 0;  // ticks dropped by the catch-up or overlap policy
};

// An executor the service runs, for monitoring.
struct ExecutorView {
  std::string component_name;
  runtime::workflow::FunctionKind kind;
  const executor::ExecTask* task;
};

class ExecutionService {
 public:
  // Errors: kInvalidArgument for options out of range (named), kUnavailable
  // when no connection can be opened.
  static Result<std::unique_ptr<ExecutionService>, ServiceError> Create(ServiceOptions options);
  ~ExecutionService();
  ExecutionService(const ExecutionService&) = delete;
  ExecutionService& operator=(const ExecutionService&) = delete;

  // --- Composition (before Start) ---------------------------------------
  // Serves `spec`'s functions. Errors: kFailedPrecondition after Start;
  // kConflict when a function or the component id is served already.
  Result<void, ServiceError> AddComponent(ComponentSpec spec);
  // One more function of a component added before (its worker must export
  // it). Errors: as AddComponent; kNotFound for an unknown component.
  Result<void, ServiceError> AddFunction(const core::ComponentId& component_id,
                                         core::FunctionFqn ffqn,
                                         std::optional<core::FunctionSignature> signature);
  // Starts the executors and the watcher. Errors: kFailedPrecondition when
  // started before, kInvalidArgument from a worker factory (its message),
  // kUnavailable.
  Result<void, ServiceError> Start();
  // Stops the watcher and the executors (their runs are unlocked so nothing
  // waits for a lease to end) and cancels StopToken. Idempotent.
  void Stop();
  // Cancelled by Stop: waits that should end at shutdown pass it.
  const CancellationToken& StopToken() const { return stop_; }

  // --- Use cases ----------------------------------------------------------
  // Creates a top-level execution. Idempotent for a caller-chosen id with
  // the same ffqn and params. Errors: kInvalidArgument (malformed ffqn or
  // id, a child id, a stub activity, params not an array, over
  // max_params_bytes or not of the declared types), kNotFound (no
  // component serves the ffqn), kConflict (the id exists with another ffqn
  // or other params).
  Result<Submitted, ServiceError> Submit(const SubmitRequest& request);
  // Errors: kInvalidArgument, kNotFound.
  Result<ExecutionInfo, ServiceError> Get(std::string_view execution_id);
  // The result once finished. Errors: kInvalidArgument, kNotFound (checked
  // before waiting), kTimeout after `timeout`, kCancelled when `cancel`
  // fires first.
  Result<core::SupportedFunctionReturnValue, ServiceError> WaitForResult(
      std::string_view execution_id, std::chrono::milliseconds timeout,
      const CancellationToken& cancel = CancellationToken());
  // The callback form of WaitForResult, holding no thread while it waits
  // (async_wait.h): `done` gets, once, what WaitForResult would return
  // (kNotFound, kTimeout after `timeout`, kCancelled when `cancel` fires,
  // kUnavailable), run through `post` like every database read of the
  // wait; `done` itself may run on the timer or the cancelling thread and
  // must be cheap. Returns the handle to abandon it with (a client gone).
  // Errors returned at once: kInvalidArgument (malformed id).
  Result<std::shared_ptr<AsyncWait>, ServiceError> WaitForResultAsync(
      std::string_view execution_id, std::chrono::milliseconds timeout,
      const CancellationToken& cancel, PostFn post,
      std::function<void(Result<core::SupportedFunctionReturnValue, ServiceError>)> done);
  // Waits started by WaitForResultAsync / GetValueAsync still in flight.
  size_t AsyncWaitsInFlight() const { return async_waits_->size(); }
  // Errors: kInvalidArgument (limit, cursor, ffqn, prefixes over 512 bytes).
  Result<ListPage, ServiceError> List(const ListQuery& query);
  // Errors: kInvalidArgument (length), kNotFound.
  Result<EventsPage, ServiceError> Events(std::string_view execution_id, core::Version::Type since,
                                          uint32_t length);
  // From the first response, or after `cursor`. Errors: as Events.
  Result<ResponsesPage, ServiceError> Responses(std::string_view execution_id,
                                                std::optional<uint32_t> cursor, uint32_t length);
  // Errors: kInvalidArgument, kNotFound (no execution, or no backtrace).
  Result<core::BacktraceInfo, ServiceError> Backtrace(std::string_view execution_id,
                                                      storage::BacktraceFilter filter);
  // Cancels an execution ("E_…") or a delay ("Delay_…"). An activity
  // finishes `cancelled` at once (a running one of this process is stopped
  // at once): kCancelled. A workflow gets a cancel request in its log
  // (docs/model.md §9.5): kCancelling; it ends with its subtree cancelled.
  // Idempotent: a second request writes nothing and answers the same (a
  // terminate after a cancel is written); a workflow that finished
  // `cancelled` answers kCancelled. Errors: kInvalidArgument (malformed
  // id, grace out of range), kNotFound, kConflict (finished otherwise,
  // with "already finished" in the message; nothing written).
  Result<CancelOutcome, ServiceError> Cancel(std::string_view id,
                                             const CancelOptions& options = {});
  // Pauses (`pause`) or resumes an execution (docs/model.md §9.6). A
  // paused execution is never locked; a running one is stopped (its
  // attempt's outcome is discarded, no retry counted) and runs again after
  // the resume. Responses and expired delays still arrive meanwhile.
  // Idempotent: answers whether it is paused now (a second call writes
  // nothing). Errors: kInvalidArgument (malformed id, reason over 1 KiB),
  // kNotFound, kAlreadyFinished (nothing written).
  Result<bool, ServiceError> SetPaused(std::string_view id, bool pause,
                                       const std::string& reason = {});
  // Cancels a delay. Errors: kInvalidArgument, kNotFound.
  Result<CancelOutcome, ServiceError> CancelDelay(std::string_view delay_id);
  // Writes the result of a stub activity's child execution. Idempotent
  // for the same value. Errors: kInvalidArgument (not a stub child, a
  // result not of the declared type), kNotFound, kConflict (another value).
  Result<void, ServiceError> Stub(std::string_view execution_id,
                                  const core::SupportedFunctionReturnValue& result);
  // Moves an unfinished execution from component digest `old_digest` to
  // `new_digest`. Unless `force`, `new_digest` must be served by a component
  // of this service: an execution moved to a digest nothing serves would
  // wait forever. Errors: kInvalidArgument (malformed digests), kNotFound,
  // kConflict (no component serves `new_digest`, the execution does not
  // run `old_digest`, or it is finished).
  Result<void, ServiceError> Upgrade(std::string_view execution_id, std::string_view old_digest,
                                     std::string_view new_digest, bool force = false);

  // --- Messages and published values (docs/api.md, "Messages") -----------
  // Delivers a message to `channel` of an execution, where a workflow's
  // receive takes it (docs/model.md §8.6). Idempotent per message id: the
  // same id with the same channel and body answers the same and writes
  // nothing, whatever the execution's state now. Errors: kInvalidArgument
  // (malformed id, channel, message id; a body over max_params_bytes),
  // kNotFound, kAlreadyFinished (the execution finished; nothing written),
  // kConflict (the id was used with another channel or body).
  Result<MessageSent, ServiceError> SendMessage(const SendMessageRequest& request);
  // The values the execution published, the last of each key, by key.
  // Errors: kInvalidArgument, kNotFound.
  Result<std::vector<PublishedValue>, ServiceError> ListValues(std::string_view execution_id);
  // The last value of `key`; with `wait`, the first one published after
  // `wait.after_version`, waiting for it. Errors: kInvalidArgument
  // (malformed id or key), kNotFound (no such execution; or no such value,
  // when not waiting or when the execution finished without it),
  // kTimeout, kCancelled when `cancel` fires.
  Result<PublishedValue, ServiceError> GetValue(
      std::string_view execution_id, std::string_view key, const ValueWait& wait = {},
      const CancellationToken& cancel = CancellationToken());
  // The callback form of GetValue, as WaitForResultAsync is of
  // WaitForResult. Errors returned at once: kInvalidArgument (malformed id
  // or key, a negative wait); every other outcome goes to `done`.
  Result<std::shared_ptr<AsyncWait>, ServiceError> GetValueAsync(
      std::string_view execution_id, std::string_view key, const ValueWait& wait,
      const CancellationToken& cancel, PostFn post,
      std::function<void(Result<PublishedValue, ServiceError>)> done);
  // Messages this service delivered (SendMessage and its workflows' sends;
  // idempotent repeats not counted) and messages its workflows consumed.
  struct MessageCounts {
    uint64_t sent = 0;
    uint64_t consumed = 0;
  };
  MessageCounts message_counts() const {
    return {messages_sent_->load(), messages_consumed_->load()};
  }

  // Retention, once: deletes the trees of top-level executions that
  // finished, with every descendant, `older_than` or longer ago (before the
  // clock's now), in bounded batches (service/retention.h). What a failed
  // batch leaves is collected by the next call. Errors: kInvalidArgument
  // (older_than not positive), kUnavailable.
  Result<RetentionReport, ServiceError> CollectFinished(std::chrono::milliseconds older_than);
  // --- Cron schedules (docs/api.md, "Schedules") -------------------------
  // Errors: kInvalidArgument (name, expression, zone, policies, params as
  // for Submit, a stub activity), kNotFound (no component serves the ffqn),
  // kConflict (a schedule of that name exists).
  Result<ScheduleInfo, ServiceError> CreateSchedule(const ScheduleSpec& spec);
  // The schedules of stele.toml, at start: each is validated (errors as
  // CreateSchedule, naming the schedule) and upserted — its definition
  // replaced, its state (paused, last tick) kept —, and schedules declared
  // by an earlier configuration but not by this one are deleted. Nothing is
  // written unless every spec is valid.
  Result<void, ServiceError> DeclareSchedules(const std::vector<ScheduleSpec>& specs);
  // By name. Errors: kUnavailable.
  Result<std::vector<ScheduleInfo>, ServiceError> ListSchedules();
  // Errors: kInvalidArgument (malformed name), kNotFound.
  Result<ScheduleInfo, ServiceError> GetSchedule(std::string_view name);
  // Idempotent. Ticks that fall in a pause never fire. Errors: as GetSchedule.
  Result<ScheduleInfo, ServiceError> PauseSchedule(std::string_view name);
  Result<ScheduleInfo, ServiceError> ResumeSchedule(std::string_view name);
  // Errors: as GetSchedule.
  Result<void, ServiceError> DeleteSchedule(std::string_view name);
  // Submits the schedule's function now, outside its ticks (a new id; the
  // tick watermark and the overlap policy are not involved).
  // Errors: as GetSchedule, and those of Submit.
  Result<Submitted, ServiceError> TriggerSchedule(std::string_view name);
  // One pass of the cron ticker at `at` (tests on a manual clock with
  // start_cron = false). Errors: kUnavailable.
  Result<void, ServiceError> RunCronPassForTest(DateTime at);
  CronCounts cron_counts() const;

  // --- Introspection ------------------------------------------------------
  const std::vector<ComponentSpec>& components() const { return components_; }
  // Declared signature of `ffqn`, if any.
  const core::FunctionSignature* Signature(const core::FunctionFqn& ffqn) const;
  const runtime::workflow::FunctionRegistry& registry() const { return registry_; }
  // Valid after Start, until Stop.
  std::vector<ExecutorView> Executors() const;
  const executor::ConcurrencyLimiter& activity_limiter() const { return *limiter_; }
  const executor::ConcurrencyLimiter& workflow_limiter() const { return *workflow_limiter_; }
  size_t RunningActivities() const { return cancels_->size(); }
  // Cancels this service wrote, by what they did: an activity finished
  // `cancelled`, a workflow's cancel request, a workflow's terminate request.
  struct CancelCounts {
    uint64_t activities = 0;
    uint64_t workflow_cancels = 0;
    uint64_t workflow_terminates = 0;
    uint64_t pauses = 0;   // Paused events written
    uint64_t resumes = 0;  // Resumed events written
  };
  CancelCounts cancel_counts() const {
    return {cancelled_activities_.load(), workflow_cancels_.load(), workflow_terminates_.load(),
            pauses_.load(), resumes_.load()};
  }
  // Executions this service's watcher ended at their deadline (docs/model.md
  // §9.7): activities finished `timed_out`, workflows' terminate requests
  // marked timed_out. 0 before Start.
  uint64_t expired_deadlines() const { return watcher_ ? watcher_->expired_deadlines() : 0; }
  // The write latencies of each workflow component's runs, by name.
  const std::vector<std::pair<std::string, std::shared_ptr<executor::LatencyHistogram>>>&
  workflow_writes() const {
    return workflow_writes_;
  }
  Result<storage::ExecutionCounts, ServiceError> CountExecutionsByState();
  // Pending executions whose component digest no component of this
  // service serves, per digest: work this process will never lock (after a
  // forced upgrade or a configuration that dropped a component version).
  // Another process on the same database may still serve them.
  Result<std::vector<storage::DigestCount>, ServiceError> CountPendingOnUnservedDigests();
  bool Serves(const core::InputContentDigest& digest) const;
  Result<storage::PendingCounts, ServiceError> CountPending(
      const std::vector<core::FunctionFqn>& ffqns);
  // What retention deleted through this service (collector and one-off).
  const RetentionCounters& retention_counters() const { return *retention_counters_; }
  // One read of the database (health checks). Errors: kUnavailable.
  Result<void, ServiceError> Ping();
  const ServiceOptions& options() const { return options_; }
  const Clock& clock() const { return *options_.clock; }
  storage::DbPool& pool() { return *options_.pool; }

  // One pass of the expired-timers watcher at `at` (tests on a manual
  // clock with start_watcher = false). Returns how many timers it handled.
  Result<uint32_t, ServiceError> FireExpiredTimersForTest(DateTime at);

 private:
  ExecutionService(ServiceOptions options, std::unique_ptr<storage::DbExternalApi> api);
  Result<void, ServiceError> StartExecutors();
  // Validates `spec` into a stored definition. Errors: as CreateSchedule.
  Result<storage::ScheduleDefinition, ServiceError> ValidateSchedule(const ScheduleSpec& spec,
                                                                     bool from_config) const;
  // Checks that `params` may be submitted to `ffqn_text`. Errors: as Submit.
  Result<std::pair<core::FunctionFqn, runtime::workflow::FunctionInfo>, ServiceError> CheckCall(
      std::string_view ffqn_text, const core::Json& params) const;
  ScheduleInfo ToInfo(storage::Schedule schedule) const;
  Result<CancelOutcome, ServiceError> CancelWorkflow(const core::ExecutionId& id,
                                                     const CancelOptions& options);
  static ServiceError AlreadyFinished(const core::ExecutionId& id);
  void StopExecutors();

  ServiceOptions options_;
  std::unique_ptr<storage::DbExternalApi> api_;
  // Waits in flight without a thread; destroyed (abandoning them) before
  // api_, which they use.
  std::unique_ptr<AsyncWaits> async_waits_;
  runtime::workflow::MapFunctionRegistry registry_;
  std::map<core::FunctionFqn, core::FunctionSignature> signatures_;
  std::vector<ComponentSpec> components_;
  std::shared_ptr<executor::CancelRegistry> cancels_ = executor::CancelRegistry::Create();
  // The workflow runs of this process, by execution: a pause stops a run
  // waiting warm before it runs guest code on (docs/model.md §9.6).
  std::shared_ptr<executor::CancelRegistry> workflow_runs_ = executor::CancelRegistry::Create();
  std::shared_ptr<executor::ConcurrencyLimiter> limiter_;
  std::shared_ptr<executor::ConcurrencyLimiter> workflow_limiter_;
  std::shared_ptr<executor::ResponseHandoff> handoff_ = executor::ResponseHandoff::Create();
  // Ticks cron schedules (cron_ticker.h); started with the executors when
  // options_.start_cron.
  std::unique_ptr<CronTicker> cron_;
  // The executors by function, for eager dispatch (filled in Start; the
  // tasks outlive every run: StopExecutors stops them all before any is
  // destroyed).
  executor::LocalDispatch dispatch_;
  std::vector<std::pair<std::string, std::shared_ptr<executor::LatencyHistogram>>> workflow_writes_;
  CancellationToken stop_;
  std::atomic<uint64_t> cancelled_activities_{0};
  std::atomic<uint64_t> workflow_cancels_{0};
  std::atomic<uint64_t> workflow_terminates_{0};
  std::atomic<uint64_t> pauses_{0};
  std::atomic<uint64_t> resumes_{0};
  // Shared with every workflow run (WorkflowRunOptions::messages_sent,
  // messages_consumed).
  std::shared_ptr<std::atomic<uint64_t>> messages_sent_ =
      std::make_shared<std::atomic<uint64_t>>(0);
  std::shared_ptr<std::atomic<uint64_t>> messages_consumed_ =
      std::make_shared<std::atomic<uint64_t>>(0);

  mutable std::mutex mu_;  // guards the lifecycle below against the use cases
  bool started_ = false;
  bool stopped_ = false;
  std::vector<std::unique_ptr<executor::ExecTask>> tasks_;
  std::vector<size_t> task_components_;  // index into components_, per task
  std::unique_ptr<executor::ExpiredTimersWatcher> watcher_;
  std::shared_ptr<RetentionCounters> retention_counters_ = std::make_shared<RetentionCounters>();
  std::unique_ptr<RetentionCollector> retention_;
};

}  // namespace stele::service
