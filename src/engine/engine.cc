// Engine: libstele's face (stele/engine.h) over the execution service
// (service/execution_service.h). It opens the storage (SQLite unless the
// caller gives a pool), turns registrations into the service's components
// — one per group of workflows with equal lease and backoff, one per group
// of activities with equal options, one for the stubs — and translates
// every other call, and the service's errors, one to one.
#include "stele/engine.h"

#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "base/clock.h"
#include "core/component_id.h"
#include "core/function_fqn.h"
#include "core/json_codec.h"
#include "runtime/native/activity_worker.h"
#include "runtime/native/result_convert.h"
#include "runtime/native/workflow_worker.h"
#include "service/execution_service.h"
#include "service/parse.h"
#include "storage/db_pool.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele {

namespace {

namespace wf = runtime::workflow;
using runtime::native::NativeActivity;

std::string GroupName(const ActivityOptions& o) {
  // Component names allow [A-Za-z0-9_-]: the options spelt out make a stable
  // name, so a restarted engine locks by the same component.
  std::string name = "native_activities_r" + std::to_string(o.max_retries) + "_b" +
                     std::to_string(o.backoff.count()) + "_t" + std::to_string(o.timeout.count()) +
                     (o.retry_on_err ? "_e" : "_n");
  // Spelt out only when not the defaults, so the names of groups created
  // before these options existed do not change.
  const ActivityOptions defaults;
  if (o.max_backoff != defaults.max_backoff || o.jitter_percent != defaults.jitter_percent) {
    name += "_m" + std::to_string(o.max_backoff.count()) + "_j" + std::to_string(o.jitter_percent);
  }
  return name;
}

// Workflows whose runs are leased and retried alike share one executor and
// one component. The engine-wide settings keep the name every workflow had
// before per-workflow options, so databases written then stay consistent.
std::string WorkflowGroupName(const EngineOptions& engine, std::chrono::milliseconds lock_expiry,
                              std::chrono::milliseconds retry_backoff,
                              std::optional<uint32_t> max_retries) {
  const bool own_retries = max_retries != engine.workflow_max_retries;
  if (lock_expiry == engine.workflow_lock_expiry &&
      retry_backoff == engine.workflow_retry_backoff && !own_retries) {
    return "native_workflows";
  }
  std::string name = "native_workflows_l" + std::to_string(lock_expiry.count()) + "_b" +
                     std::to_string(retry_backoff.count());
  if (own_retries) name += max_retries ? "_r" + std::to_string(*max_retries) : "_rforever";
  return name;
}

// The replay settings of one workflow's runs: its own where set, the
// engine's otherwise.
wf::WorkflowRunOptions RunOptions(const EngineOptions& engine, const WorkflowOptions& workflow) {
  wf::WorkflowRunOptions run;
  run.lock_extension = workflow.lock_expiry.value_or(engine.workflow_lock_expiry);
  const bool await = workflow.blocking_strategy
                         ? *workflow.blocking_strategy == BlockingStrategy::kAwait
                         : engine.workflow_keep_warm;
  run.blocking_strategy = await ? wf::BlockingStrategy::kAwait : wf::BlockingStrategy::kInterrupt;
  run.max_warm_wait = workflow.max_warm_wait ? workflow.max_warm_wait : engine.max_warm_wait;
  run.non_blocking_event_batching =
      workflow.non_blocking_event_batching.value_or(engine.workflow_event_batching);
  run.max_events_per_run = workflow.max_events_per_run.value_or(engine.workflow_max_events_per_run);
  run.max_events_per_execution =
      workflow.max_events_per_execution.value_or(engine.workflow_max_events_per_execution);
  run.max_events_setting = workflow.max_events_per_execution
                               ? "WorkflowOptions::max_events_per_execution"
                               : "EngineOptions::workflow_max_events_per_execution";
  run.max_params_bytes = engine.max_params_bytes;
  return run;
}

Result<void, Error> CheckWorkflowOptions(const WorkflowOptions& o) {
  if (o.lock_expiry && o.lock_expiry->count() <= 0) {
    return Unexpected(Error::InvalidArgument("WorkflowOptions::lock_expiry must be positive, got " +
                                             std::to_string(o.lock_expiry->count()) + " ms"));
  }
  if (o.max_events_per_execution && *o.max_events_per_execution < 10) {
    return Unexpected(Error::InvalidArgument(
        "WorkflowOptions::max_events_per_execution must be at least 10, got " +
        std::to_string(*o.max_events_per_execution)));
  }
  if (o.retry_backoff && o.retry_backoff->count() < 0) {
    return Unexpected(
        Error::InvalidArgument("WorkflowOptions::retry_backoff must not be negative, got " +
                               std::to_string(o.retry_backoff->count()) + " ms"));
  }
  if (o.max_warm_wait && o.max_warm_wait->count() < 0) {
    return Unexpected(
        Error::InvalidArgument("WorkflowOptions::max_warm_wait must not be negative, got " +
                               std::to_string(o.max_warm_wait->count()) + " ms"));
  }
  return {};
}

core::ComponentId Component(core::ComponentType type, std::string name) {
  return core::ComponentId{type, std::move(name), core::InputContentDigest()};
}

DateTime ToDateTime(std::chrono::system_clock::time_point t) {
  return std::chrono::time_point_cast<std::chrono::microseconds>(t);
}

Error ToError(const service::ServiceError& e) {
  using Kind = service::ServiceError::Kind;
  switch (e.kind) {
    case Kind::kInvalidArgument:
      return Error::InvalidArgument(e.message);
    case Kind::kNotFound:
      return Error::NotFound(e.message);
    case Kind::kConflict:
    case Kind::kAlreadyFinished:
      return Error::Conflict(e.message);
    case Kind::kFailedPrecondition:
    case Kind::kCancelled:
      return Error::FailedPrecondition(e.message);
    case Kind::kTimeout:
      return Error::Timeout(e.message);
    case Kind::kUnavailable:
      return Error::Storage(e.message);
  }
  return Error::Storage(e.message);
}

template <class T>
Result<T, Error> Translate(Result<T, service::ServiceError> result) {
  if (!result) return Unexpected(ToError(result.error()));
  if constexpr (std::is_void_v<T>) {
    return {};
  } else {
    return std::move(*result);
  }
}

CancelOutcome ToPublic(service::CancelOutcome outcome) {
  switch (outcome) {
    case service::CancelOutcome::kCancelled:
      return CancelOutcome::kCancelled;
    case service::CancelOutcome::kAlreadyFinished:
      return CancelOutcome::kAlreadyFinished;
    case service::CancelOutcome::kCancelling:
      return CancelOutcome::kCancelling;
  }
  return CancelOutcome::kCancelled;
}

// The service's settings from the engine's: the same defaults (docs/sdk.md).
service::ServiceOptions ToServiceOptions(const EngineOptions& o,
                                         std::shared_ptr<storage::DbPool> pool) {
  service::ServiceOptions s;
  s.pool = std::move(pool);
  s.clock = o.clock;
  s.batch_size = o.batch_size;
  s.tick_sleep = o.tick_sleep;
  s.workflow_lock_expiry = o.workflow_lock_expiry;
  s.activity_lock_expiry_setting = "ActivityOptions::timeout";
  s.workflow_lock_expiry_setting =
      "WorkflowOptions::lock_expiry, else EngineOptions::workflow_lock_expiry";
  s.workflow_retry_backoff = o.workflow_retry_backoff;
  s.workflow_max_retries = o.workflow_max_retries;
  s.max_retry_backoff = o.workflow_max_retry_backoff;
  s.retry_jitter_percent = o.workflow_retry_jitter_percent;
  s.cancel_grace = o.cancel_grace;
  s.max_concurrency = o.max_concurrency;
  s.max_workflow_concurrency = o.max_workflow_concurrency;
  s.eager_dispatch = o.eager_dispatch;
  s.result_handoff = o.result_handoff;
  s.workflow_run = RunOptions(o, WorkflowOptions{});
  s.start_watcher = o.start_watcher;
  s.start_cron = o.start_cron;
  s.watcher_tick = o.watcher_tick;
  s.watcher_leeway = o.watcher_leeway;
  s.max_params_bytes = o.max_params_bytes;
  s.max_list_length = ListOptions::kMaxLimit;
  s.retention_finished_after = o.retention_finished_after;
  s.retention_interval = o.retention_interval;
  return s;
}

}  // namespace

class Engine::Impl {
 public:
  EngineOptions options;
  std::shared_ptr<storage::DbPool> pool;
  bool owns_pool = false;
  std::unique_ptr<service::ExecutionService> service;

  // The registered functions by group (one component each). The worker
  // factories share these maps and read them at Start, when registration
  // is closed.
  using Workflows = std::map<core::FunctionFqn, runtime::native::NativeWorkflow>;
  using Activities = std::vector<NativeActivity>;
  std::map<std::string, std::shared_ptr<Workflows>> workflow_groups;
  std::map<std::string, std::shared_ptr<Activities>> activity_groups;
  bool stubs_added = false;

  std::mutex mu;  // guards `started` against concurrent calls
  bool started = false;

  ~Impl() {
    if (service) service->Stop();
    service.reset();
    if (owns_pool && pool) pool->Close();
  }

  // The ffqn of a new registration. Errors: malformed, after Start.
  Result<core::FunctionFqn, Error> ParseNew(std::string_view text) {
    auto ffqn = service::internal::ParseFfqn(text);
    if (!ffqn) return Unexpected(ToError(ffqn.error()));
    std::lock_guard lock(mu);
    if (started) {
      return Unexpected(Error::FailedPrecondition("cannot register `" + std::string(text) +
                                                  "`: the engine has started"));
    }
    if (service->registry().Find(*ffqn)) {
      return Unexpected(Error::Conflict("`" + std::string(text) + "` is registered already"));
    }
    return std::move(*ffqn);
  }

  // Adds `ffqn` to the component `spec` describes: the component itself
  // the first time (`is_new`), one more function of it afterwards.
  Result<void, Error> AddToComponent(bool is_new, service::ComponentSpec spec,
                                     core::FunctionFqn ffqn) {
    if (is_new) {
      spec.functions.push_back(std::move(ffqn));
      return Translate(service->AddComponent(std::move(spec)));
    }
    return Translate(service->AddFunction(spec.component_id, std::move(ffqn), std::nullopt));
  }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Result<std::unique_ptr<Engine>, Error> Engine::Open(EngineOptions options) {
  auto impl = std::make_unique<Impl>();
  if (options.pool) {
    impl->pool = options.pool;
  } else {
    storage::sqlite::SqliteOptions sqlite;
    sqlite.path = options.sqlite_path;
    sqlite.synchronous = options.sqlite_synchronous_full
                             ? storage::sqlite::SqliteOptions::Synchronous::kFull
                             : storage::sqlite::SqliteOptions::Synchronous::kNormal;
    auto pool = storage::sqlite::SqlitePool::Open(sqlite);
    if (!pool) {
      return Unexpected(Error::Storage("cannot open SQLite database `" + options.sqlite_path +
                                       "`: " + pool.error().ToString()));
    }
    impl->pool = std::shared_ptr<storage::DbPool>(std::move(*pool));
    impl->owns_pool = true;
  }
  if (!options.clock) options.clock = SystemClock::Shared();
  auto service = service::ExecutionService::Create(ToServiceOptions(options, impl->pool));
  if (!service) return Unexpected(ToError(service.error()));
  impl->service = std::move(*service);
  impl->options = std::move(options);
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Result<void, Error> Engine::RegisterWorkflow(std::string_view ffqn, WorkflowFn fn,
                                             WorkflowOptions options) {
  if (!fn) return Unexpected(Error::InvalidArgument("workflow function is empty"));
  return RegisterWorkflow(ffqn, runtime::native::AdaptOkOnly(std::move(fn)), options);
}

Result<void, Error> Engine::RegisterWorkflow(std::string_view ffqn_text, WorkflowFnWithErr fn,
                                             WorkflowOptions options) {
  if (!fn) return Unexpected(Error::InvalidArgument("workflow function is empty"));
  STELE_TRY(CheckWorkflowOptions(options));
  STELE_ASSIGN_OR_RETURN(auto ffqn, impl_->ParseNew(ffqn_text));
  const EngineOptions& engine = impl_->options;
  const auto lock_expiry = options.lock_expiry.value_or(engine.workflow_lock_expiry);
  const auto retry_backoff = options.retry_backoff.value_or(engine.workflow_retry_backoff);
  const std::optional<uint32_t> max_retries =
      options.max_retries ? options.max_retries : engine.workflow_max_retries;
  const std::string name = WorkflowGroupName(engine, lock_expiry, retry_backoff, max_retries);
  auto& group = impl_->workflow_groups[name];
  const bool is_new = group == nullptr;
  if (is_new) group = std::make_shared<Impl::Workflows>();
  service::ComponentSpec spec;
  spec.component_id = Component(core::ComponentType::kWorkflowNative, name);
  spec.kind = wf::FunctionKind::kWorkflow;
  spec.executor.lock_expiry = lock_expiry;
  spec.executor.retry_backoff = retry_backoff;
  spec.executor.max_retries = max_retries;
  spec.make_worker =
      [workflows = group](
          const service::WorkerEnv& env) -> Result<std::shared_ptr<executor::Worker>, std::string> {
    auto conn = env.pool->Connection();
    if (!conn) return Unexpected("cannot connect to the database: " + conn.error().ToString());
    return std::shared_ptr<executor::Worker>(
        std::make_shared<runtime::native::NativeWorkflowWorker>(
            *workflows, std::shared_ptr<storage::DbConnection>(std::move(*conn)), env.clock,
            env.registry, env.dispatch, env.handoff, env.cancels));
  };
  STELE_TRY(impl_->AddToComponent(is_new, std::move(spec), ffqn));
  group->emplace(std::move(ffqn),
                 runtime::native::NativeWorkflow{std::move(fn), RunOptions(engine, options),
                                                 engine.store_backtraces});
  return {};
}

Result<void, Error> Engine::RegisterActivity(std::string_view ffqn_text, ActivityFn fn,
                                             ActivityOptions options) {
  if (!fn) return Unexpected(Error::InvalidArgument("activity function is empty"));
  if (options.timeout.count() <= 0) {
    return Unexpected(Error::InvalidArgument("activity timeout must be positive"));
  }
  if (options.backoff.count() < 0 || options.max_backoff.count() < 0) {
    return Unexpected(
        Error::InvalidArgument("activity backoff and max_backoff must not be negative"));
  }
  if (options.jitter_percent > 100) {
    return Unexpected(Error::InvalidArgument("activity jitter_percent must be 0 to 100, got " +
                                             std::to_string(options.jitter_percent)));
  }
  STELE_ASSIGN_OR_RETURN(auto ffqn, impl_->ParseNew(ffqn_text));
  const std::string name = GroupName(options);
  auto& group = impl_->activity_groups[name];
  const bool is_new = group == nullptr;
  if (is_new) group = std::make_shared<Impl::Activities>();
  service::ComponentSpec spec;
  spec.component_id = Component(core::ComponentType::kActivityNative, name);
  spec.kind = wf::FunctionKind::kActivity;
  spec.executor.lock_expiry = options.timeout;
  spec.executor.max_retries = options.max_retries;
  spec.executor.retry_backoff = options.backoff;
  spec.executor.max_retry_backoff = options.max_backoff;
  spec.executor.retry_jitter_percent = options.jitter_percent;
  spec.make_worker =
      [activities = group, options](
          const service::WorkerEnv&) -> Result<std::shared_ptr<executor::Worker>, std::string> {
    return std::shared_ptr<executor::Worker>(
        std::make_shared<runtime::native::NativeActivityWorker>(*activities, options));
  };
  STELE_TRY(impl_->AddToComponent(is_new, std::move(spec), ffqn));
  group->push_back(NativeActivity{std::move(ffqn), std::move(fn)});
  return {};
}

Result<void, Error> Engine::RegisterStub(std::string_view ffqn_text) {
  STELE_ASSIGN_OR_RETURN(auto ffqn, impl_->ParseNew(ffqn_text));
  service::ComponentSpec spec;
  spec.component_id = Component(core::ComponentType::kActivityStub, "native_stubs");
  spec.kind = wf::FunctionKind::kActivityStub;
  STELE_TRY(impl_->AddToComponent(!impl_->stubs_added, std::move(spec), std::move(ffqn)));
  impl_->stubs_added = true;
  return {};
}

Result<void, Error> Engine::Start() {
  std::lock_guard lock(impl_->mu);
  if (impl_->started) return Unexpected(Error::FailedPrecondition("the engine was started before"));
  STELE_TRY(Translate(impl_->service->Start()));
  impl_->started = true;
  return {};
}

void Engine::Stop() { impl_->service->Stop(); }

Result<std::string, Error> Engine::Submit(std::string_view ffqn, Json params,
                                          SubmitOptions options) {
  service::SubmitRequest request;
  request.ffqn = std::string(ffqn);
  request.params = std::move(params);
  request.execution_id = std::move(options.execution_id);
  if (options.scheduled_at) request.scheduled_at = ToDateTime(*options.scheduled_at);
  if (options.retry.max_retries) request.max_retries = *options.retry.max_retries;
  request.retry_backoff = options.retry.backoff;
  request.max_retry_backoff = options.retry.max_backoff;
  if (options.retry.jitter_percent) request.retry_jitter_percent = *options.retry.jitter_percent;
  if (options.deadline) request.deadline = ToDateTime(*options.deadline);
  request.timeout = options.timeout;
  STELE_ASSIGN_OR_RETURN(auto submitted, Translate(impl_->service->Submit(request)));
  return submitted.execution_id.ToString();
}

Result<ExecutionStatus, Error> Engine::GetStatus(std::string_view execution_id) {
  STELE_ASSIGN_OR_RETURN(auto info, Translate(impl_->service->Get(execution_id)));
  return ExecutionStatus{info.execution_id.ToString(), info.ffqn.ToString(),
                         std::string(info.pending_state.DisplayStateName()),
                         info.pending_state.ToString(), info.pending_state.IsFinished()};
}

Result<ExecutionResult, Error> Engine::WaitForResult(std::string_view execution_id,
                                                     std::chrono::milliseconds timeout) {
  STELE_ASSIGN_OR_RETURN(auto result,
                         Translate(impl_->service->WaitForResult(execution_id, timeout)));
  return runtime::native::ToPublic(result);
}

namespace {

PublishedValue ToPublicValue(service::PublishedValue value) {
  return PublishedValue{std::move(value.key), std::move(value.value), value.version.value(),
                        std::chrono::system_clock::time_point(
                            std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                value.published_at.time_since_epoch()))};
}

}  // namespace

Result<std::string, Error> Engine::SendMessage(std::string_view execution_id,
                                               std::string_view channel, Json body,
                                               const SendMessageOptions& options) {
  service::SendMessageRequest request{std::string(execution_id), std::string(channel),
                                      std::move(body), options.message_id};
  STELE_ASSIGN_OR_RETURN(auto sent, Translate(impl_->service->SendMessage(request)));
  return std::move(sent.message_id);
}

Result<PublishedValue, Error> Engine::GetValue(std::string_view execution_id, std::string_view key,
                                               std::optional<uint32_t> after_version,
                                               std::chrono::milliseconds timeout) {
  service::ValueWait wait{std::nullopt, timeout};
  if (after_version) wait.after_version = core::Version(*after_version);
  STELE_ASSIGN_OR_RETURN(auto value, Translate(impl_->service->GetValue(execution_id, key, wait)));
  return ToPublicValue(std::move(value));
}

Result<std::vector<PublishedValue>, Error> Engine::ListValues(std::string_view execution_id) {
  STELE_ASSIGN_OR_RETURN(auto values, Translate(impl_->service->ListValues(execution_id)));
  std::vector<PublishedValue> out;
  out.reserve(values.size());
  for (auto& value : values) out.push_back(ToPublicValue(std::move(value)));
  return out;
}

Result<CancelOutcome, Error> Engine::Cancel(std::string_view id, const CancelOptions& options) {
  service::CancelOptions request{options.terminate, options.grace, options.reason};
  STELE_ASSIGN_OR_RETURN(auto outcome, Translate(impl_->service->Cancel(id, request)));
  return ToPublic(outcome);
}

Result<void, Error> Engine::Pause(std::string_view execution_id, std::string reason) {
  STELE_TRY(Translate(impl_->service->SetPaused(execution_id, true, reason)));
  return {};
}

Result<void, Error> Engine::Resume(std::string_view execution_id, std::string reason) {
  STELE_TRY(Translate(impl_->service->SetPaused(execution_id, false, reason)));
  return {};
}

Result<void, Error> Engine::Stub(std::string_view execution_id, ExecutionResult result) {
  return Translate(impl_->service->Stub(execution_id, runtime::native::ToCore(result)));
}

Result<CollectedExecutions, Error> Engine::CollectFinished(std::chrono::milliseconds older_than) {
  STELE_ASSIGN_OR_RETURN(auto report, Translate(impl_->service->CollectFinished(older_than)));
  return CollectedExecutions{report.deleted_top_level, report.deleted};
}

Result<ListPage, Error> Engine::List(const ListOptions& options) {
  service::ListQuery query;
  query.ffqn = options.ffqn;
  query.top_level_only = options.top_level_only;
  query.status = options.status;
  query.limit = options.limit;
  query.cursor = options.cursor;
  query.direction = options.direction == ListDirection::kNewer ? service::ListDirection::kNewer
                                                               : service::ListDirection::kOlder;
  STELE_ASSIGN_OR_RETURN(auto rows, Translate(impl_->service->List(query)));
  ListPage page;
  page.executions.reserve(rows.executions.size());
  for (const auto& row : rows.executions) {
    page.executions.push_back(ExecutionStatus{row.execution_id.ToString(), row.ffqn.ToString(),
                                              std::string(row.pending_state.DisplayStateName()),
                                              row.pending_state.ToString(),
                                              row.pending_state.IsFinished()});
  }
  if (rows.next_cursor) page.next_cursor = rows.next_cursor->ToString();
  return page;
}

Result<uint32_t, Error> Engine::FireExpiredTimersForTest(std::chrono::system_clock::time_point at) {
  return Translate(impl_->service->FireExpiredTimersForTest(ToDateTime(at)));
}

namespace {

std::chrono::system_clock::time_point FromDateTime(DateTime t) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(t.time_since_epoch()));
}

ScheduleStatus ToPublic(const service::ScheduleInfo& info) {
  const storage::Schedule& s = info.schedule;
  ScheduleStatus out;
  out.name = s.definition.name;
  out.cron = s.definition.expression;
  out.ffqn = s.definition.ffqn;
  auto params = core::ParseJson(s.definition.params);
  out.params = params ? *params : Json();
  out.options = ScheduleOptions{s.definition.time_zone, s.definition.overlap, s.definition.catch_up,
                                s.definition.catch_up_limit};
  out.paused = s.paused;
  out.last_tick = FromDateTime(s.last_tick);
  if (s.last_execution_id) out.last_execution_id = s.last_execution_id->ToString();
  if (info.next_tick) out.next_tick = FromDateTime(*info.next_tick);
  return out;
}

}  // namespace

Result<ScheduleStatus, Error> Engine::CreateSchedule(std::string_view name, std::string_view cron,
                                                     std::string_view ffqn, Json params,
                                                     ScheduleOptions options) {
  service::ScheduleSpec spec{std::string(name), std::string(cron),     options.time_zone,
                             std::string(ffqn), std::move(params),     options.overlap,
                             options.catch_up,  options.catch_up_limit};
  STELE_ASSIGN_OR_RETURN(auto info, Translate(impl_->service->CreateSchedule(spec)));
  return ToPublic(info);
}

Result<std::vector<ScheduleStatus>, Error> Engine::ListSchedules() {
  STELE_ASSIGN_OR_RETURN(auto infos, Translate(impl_->service->ListSchedules()));
  std::vector<ScheduleStatus> out;
  for (const auto& info : infos) out.push_back(ToPublic(info));
  return out;
}

Result<ScheduleStatus, Error> Engine::GetSchedule(std::string_view name) {
  STELE_ASSIGN_OR_RETURN(auto info, Translate(impl_->service->GetSchedule(name)));
  return ToPublic(info);
}

Result<ScheduleStatus, Error> Engine::PauseSchedule(std::string_view name) {
  STELE_ASSIGN_OR_RETURN(auto info, Translate(impl_->service->PauseSchedule(name)));
  return ToPublic(info);
}

Result<ScheduleStatus, Error> Engine::ResumeSchedule(std::string_view name) {
  STELE_ASSIGN_OR_RETURN(auto info, Translate(impl_->service->ResumeSchedule(name)));
  return ToPublic(info);
}

Result<void, Error> Engine::DeleteSchedule(std::string_view name) {
  return Translate(impl_->service->DeleteSchedule(name));
}

Result<std::string, Error> Engine::TriggerSchedule(std::string_view name) {
  STELE_ASSIGN_OR_RETURN(auto submitted, Translate(impl_->service->TriggerSchedule(name)));
  return submitted.execution_id.ToString();
}

Result<void, Error> Engine::RunCronPassForTest(std::chrono::system_clock::time_point at) {
  return Translate(impl_->service->RunCronPassForTest(ToDateTime(at)));
}

}  // namespace stele
