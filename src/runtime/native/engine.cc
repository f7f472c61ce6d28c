// Engine: the composition root of libstele (stele/engine.h). Opens the
// storage, keeps the registrations, and runs one ExecTask per group of
// workflows with equal lease and backoff, one per group of activities with
// equal options, and the expired-timers watcher. The workflows share one
// ConcurrencyLimiter, the activities another.
#include "stele/engine.h"

#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "base/clock.h"
#include "base/log.h"
#include "core/component_id.h"
#include "core/function_fqn.h"
#include "executor/cancel_registry.h"
#include "executor/concurrency_limiter.h"
#include "executor/exec_task.h"
#include "executor/expired_timers_watcher.h"
#include "executor/local_dispatch.h"
#include "runtime/native/activity_worker.h"
#include "runtime/native/result_convert.h"
#include "runtime/native/workflow_worker.h"
#include "runtime/workflow/function_registry.h"
#include "storage/db_pool.h"
#include "storage/operations.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele {

namespace {

namespace wf = runtime::workflow;
using runtime::native::NativeActivity;

std::string GroupName(const ActivityOptions& o) {
  // Component names allow [A-Za-z0-9_-]: the options spelt out make a stable
  // name, so a restarted engine locks by the same component.
  return "native_activities_r" + std::to_string(o.max_retries) + "_b" +
         std::to_string(o.backoff.count()) + "_t" + std::to_string(o.timeout.count()) +
         (o.retry_on_err ? "_e" : "_n");
}

// Workflows whose runs are leased and retried alike share one executor and
// one component. The engine-wide settings keep the name every workflow had
// before per-workflow options, so databases written then stay consistent.
std::string WorkflowGroupName(const EngineOptions& engine, std::chrono::milliseconds lock_expiry,
                              std::chrono::milliseconds retry_backoff) {
  if (lock_expiry == engine.workflow_lock_expiry &&
      retry_backoff == engine.workflow_retry_backoff) {
    return "native_workflows";
  }
  return "native_workflows_l" + std::to_string(lock_expiry.count()) + "_b" +
         std::to_string(retry_backoff.count());
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
  run.max_params_bytes = engine.max_params_bytes;
  return run;
}

Result<void, Error> CheckWorkflowOptions(const WorkflowOptions& o) {
  if (o.lock_expiry && o.lock_expiry->count() <= 0) {
    return Unexpected(Error::InvalidArgument("WorkflowOptions::lock_expiry must be positive, got " +
                                             std::to_string(o.lock_expiry->count()) + " ms"));
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

Error FromWrite(const storage::DbErrorWrite& e, std::string_view what) {
  if (e.IsNotFound()) return Error::NotFound(std::string(what) + ": not found");
  if (e.kind() == storage::DbErrorWrite::Kind::kGeneric) {
    return Error::Storage(std::string(what) + ": " + e.ToString());
  }
  return Error::FailedPrecondition(std::string(what) + ": " + e.ToString());
}
Error FromRead(const storage::DbErrorRead& e, std::string_view what) {
  if (e.IsNotFound()) return Error::NotFound(std::string(what) + ": no such execution");
  return Error::Storage(std::string(what) + ": " + e.ToString());
}

DateTime ToDateTime(std::chrono::system_clock::time_point t) {
  return std::chrono::time_point_cast<std::chrono::microseconds>(t);
}

}  // namespace

class Engine::Impl {
 public:
  EngineOptions options;
  SharedClock clock = nullptr;
  std::shared_ptr<storage::DbPool> pool;
  bool owns_pool = false;
  std::shared_ptr<storage::DbExternalApi> api;  // Submit, status, waits, cancel, stub, list

  wf::MapFunctionRegistry registry;
  struct WorkflowGroup {
    std::chrono::milliseconds lock_expiry{0};
    std::chrono::milliseconds retry_backoff{0};
    std::map<core::FunctionFqn, runtime::native::NativeWorkflow> workflows;
  };
  std::map<std::string, WorkflowGroup> workflow_groups;  // by WorkflowGroupName
  struct ActivityGroup {
    ActivityOptions options;
    std::vector<NativeActivity> activities;
  };
  std::map<std::string, ActivityGroup> activity_groups;  // by GroupName
  // Lets Cancel stop a running activity at once (the DB write is the truth).
  std::shared_ptr<executor::CancelRegistry> cancels = executor::CancelRegistry::Create();

  std::mutex mu;  // guards started/stopped against concurrent API calls
  bool started = false;
  bool stopped = false;
  std::vector<std::unique_ptr<executor::ExecTask>> tasks;
  std::unique_ptr<executor::ExpiredTimersWatcher> watcher;
  // The tasks by function, for eager dispatch of children (filled in Start,
  // read by workflow runs; the tasks outlive every run: StopAll stops them
  // all before any is destroyed).
  executor::LocalDispatch dispatch;
  // Children's results for their warm parents (shared by every executor).
  std::shared_ptr<executor::ResponseHandoff> handoff = executor::ResponseHandoff::Create();

  ~Impl() {
    StopAll();
    api.reset();
    if (owns_pool && pool) pool->Close();
  }

  void StopAll() {
    std::vector<std::unique_ptr<executor::ExecTask>> to_stop;
    std::unique_ptr<executor::ExpiredTimersWatcher> watcher_to_stop;
    {
      std::lock_guard lock(mu);
      if (!started || stopped) return;
      stopped = true;
      to_stop.swap(tasks);
      watcher_to_stop.swap(watcher);
    }
    if (watcher_to_stop) watcher_to_stop->Stop();
    for (auto& task : to_stop) task->Stop();
  }

  Result<core::FunctionFqn, Error> ParseNew(std::string_view text) {
    auto ffqn = core::FunctionFqn::Parse(text);
    if (!ffqn) {
      return Unexpected(Error::InvalidArgument("invalid ffqn `" + std::string(text) +
                                               "` (expected ns:pkg/ifc.fn): " +
                                               ffqn.error().message));
    }
    std::lock_guard lock(mu);
    if (started) {
      return Unexpected(Error::FailedPrecondition("cannot register `" + std::string(text) +
                                                  "`: the engine has started"));
    }
    if (registry.Find(*ffqn)) {
      return Unexpected(Error::Conflict("`" + std::string(text) + "` is registered already"));
    }
    return std::move(*ffqn);
  }

  Result<core::ExecutionId, Error> ParseId(std::string_view text) {
    auto id = core::ExecutionId::Parse(text);
    if (!id) {
      return Unexpected(Error::InvalidArgument("invalid execution id `" + std::string(text) +
                                               "`: " + id.error().message));
    }
    return std::move(*id);
  }

  Result<void, Error> CheckParams(const Json& params) const {
    if (!params.is_array()) {
      return Unexpected(Error::InvalidArgument(
          std::string("params must be a JSON array (one element per argument), got ") +
          params.type_name()));
    }
    size_t size = params.dump().size();
    if (size > options.max_params_bytes) {
      return Unexpected(Error::InvalidArgument(
          "params are " + std::to_string(size) + " bytes, over the limit of " +
          std::to_string(options.max_params_bytes) + " (EngineOptions::max_params_bytes)"));
    }
    return {};
  }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Result<std::unique_ptr<Engine>, Error> Engine::Open(EngineOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->clock = options.clock ? options.clock : SystemClock::Shared();
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
  auto api = impl->pool->ExternalApiConn();
  if (!api) return Unexpected(Error::Storage("cannot connect: " + api.error().ToString()));
  impl->api = std::move(*api);
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
  std::string group = WorkflowGroupName(engine, lock_expiry, retry_backoff);
  impl_->registry.Add(ffqn, wf::FunctionInfo{Component(core::ComponentType::kWorkflowNative, group),
                                             wf::FunctionKind::kWorkflow});
  auto& entry = impl_->workflow_groups[group];
  entry.lock_expiry = lock_expiry;
  entry.retry_backoff = retry_backoff;
  entry.workflows.emplace(
      std::move(ffqn), runtime::native::NativeWorkflow{std::move(fn), RunOptions(engine, options),
                                                       engine.store_backtraces});
  return {};
}

Result<void, Error> Engine::RegisterActivity(std::string_view ffqn_text, ActivityFn fn,
                                             ActivityOptions options) {
  if (!fn) return Unexpected(Error::InvalidArgument("activity function is empty"));
  if (options.timeout.count() <= 0) {
    return Unexpected(Error::InvalidArgument("activity timeout must be positive"));
  }
  STELE_ASSIGN_OR_RETURN(auto ffqn, impl_->ParseNew(ffqn_text));
  std::string group = GroupName(options);
  impl_->registry.Add(ffqn, wf::FunctionInfo{Component(core::ComponentType::kActivityNative, group),
                                             wf::FunctionKind::kActivity});
  auto& entry = impl_->activity_groups[group];
  entry.options = options;
  entry.activities.push_back(NativeActivity{std::move(ffqn), std::move(fn)});
  return {};
}

Result<void, Error> Engine::RegisterStub(std::string_view ffqn_text) {
  STELE_ASSIGN_OR_RETURN(auto ffqn, impl_->ParseNew(ffqn_text));
  impl_->registry.Add(std::move(ffqn),
                      wf::FunctionInfo{Component(core::ComponentType::kActivityStub, "native_stubs"),
                                       wf::FunctionKind::kActivityStub});
  return {};
}

Result<void, Error> Engine::Start() {
  Impl& d = *impl_;
  std::lock_guard lock(d.mu);
  if (d.started) return Unexpected(Error::FailedPrecondition("the engine was started before"));
  if (d.options.max_concurrency == 0 || d.options.max_workflow_concurrency == 0 ||
      d.options.batch_size == 0) {
    return Unexpected(Error::InvalidArgument(
        "max_concurrency, max_workflow_concurrency and batch_size must be positive"));
  }
  // Activities share one limit, workflows have their own (see engine.h).
  auto limiter = executor::ConcurrencyLimiter::Create(d.options.max_concurrency);
  auto workflow_limiter = executor::ConcurrencyLimiter::Create(d.options.max_workflow_concurrency);
  std::vector<std::unique_ptr<executor::ExecTask>> tasks;

  // One executor per group of workflows with equal lease and backoff; the
  // rest of their settings are per workflow (RunOptions).
  for (auto& [name, group] : d.workflow_groups) {
    auto conn = d.pool->Connection();
    if (!conn) return Unexpected(Error::Storage("cannot connect: " + conn.error().ToString()));
    auto worker = std::make_shared<runtime::native::NativeWorkflowWorker>(
        group.workflows, std::shared_ptr<storage::DbConnection>(std::move(*conn)), d.clock,
        &d.registry, d.options.eager_dispatch ? &d.dispatch : nullptr,
        d.options.result_handoff ? d.handoff.get() : nullptr, d.cancels.get());
    executor::ExecutorOptions exec;
    exec.batch_size = d.options.batch_size;
    exec.lock_expiry = group.lock_expiry;
    exec.lock_expiry_setting = "WorkflowOptions::lock_expiry, else EngineOptions::workflow_lock_expiry";
    exec.tick_sleep = d.options.tick_sleep;
    exec.component_id = Component(core::ComponentType::kWorkflowNative, name);
    exec.retry_config = core::ComponentRetryConfig{
        std::nullopt,
        core::Duration::FromMillis(static_cast<uint64_t>(group.retry_backoff.count()))};
    exec.concurrency_limiter = workflow_limiter;
    if (d.options.result_handoff) exec.response_handoff = d.handoff;
    auto db = d.pool->DbExecConn();
    if (!db) return Unexpected(Error::Storage("cannot connect: " + db.error().ToString()));
    tasks.push_back(
        std::make_unique<executor::ExecTask>(worker, std::move(*db), d.clock, exec));
    d.dispatch.Add(worker->ExportedFunctions(), tasks.back().get());
  }
  for (auto& [name, group] : d.activity_groups) {
    auto worker = std::make_shared<runtime::native::NativeActivityWorker>(
        group.activities, group.options);
    executor::ExecutorOptions exec;
    exec.batch_size = d.options.batch_size;
    exec.lock_expiry = group.options.timeout;
    exec.lock_expiry_setting = "ActivityOptions::timeout";
    exec.tick_sleep = d.options.tick_sleep;
    exec.component_id = Component(core::ComponentType::kActivityNative, name);
    exec.retry_config = core::ComponentRetryConfig{
        group.options.max_retries,
        core::Duration::FromMillis(static_cast<uint64_t>(group.options.backoff.count()))};
    exec.concurrency_limiter = limiter;
    exec.cancel_registry = d.cancels;
    if (d.options.result_handoff) exec.response_handoff = d.handoff;
    auto db = d.pool->DbExecConn();
    if (!db) return Unexpected(Error::Storage("cannot connect: " + db.error().ToString()));
    tasks.push_back(
        std::make_unique<executor::ExecTask>(worker, std::move(*db), d.clock, exec));
    d.dispatch.Add(worker->ExportedFunctions(), tasks.back().get());
  }
  if (d.options.start_watcher) {
    auto conn = d.pool->Connection();
    if (!conn) return Unexpected(Error::Storage("cannot connect: " + conn.error().ToString()));
    executor::ExpiredTimersWatcherOptions watcher_options;
    watcher_options.tick_sleep = d.options.watcher_tick;
    watcher_options.leeway = d.options.watcher_leeway;
    watcher_options.lock_expiry_setting =
        "ActivityOptions::timeout of an activity, WorkflowOptions::lock_expiry of a workflow";
    d.watcher = std::make_unique<executor::ExpiredTimersWatcher>(std::move(*conn), d.clock,
                                                                 watcher_options);
  }
  for (auto& task : tasks) task->Start();
  if (d.watcher) d.watcher->Start();
  d.tasks = std::move(tasks);
  d.started = true;
  return {};
}

void Engine::Stop() { impl_->StopAll(); }

Result<std::string, Error> Engine::Submit(std::string_view ffqn_text, Json params,
                                          SubmitOptions options) {
  Impl& d = *impl_;
  auto ffqn = core::FunctionFqn::Parse(ffqn_text);
  if (!ffqn) {
    return Unexpected(Error::InvalidArgument("invalid ffqn `" + std::string(ffqn_text) +
                                             "` (expected ns:pkg/ifc.fn): " +
                                             ffqn.error().message));
  }
  auto info = d.registry.Find(*ffqn);
  if (!info) {
    return Unexpected(Error::NotFound("unknown ffqn `" + std::string(ffqn_text) +
                                      "`: no workflow or activity is registered under it"));
  }
  if (info->kind == wf::FunctionKind::kActivityStub) {
    return Unexpected(Error::InvalidArgument(
        "`" + std::string(ffqn_text) + "` is a stub activity: it is not submittable"));
  }
  STELE_TRY(d.CheckParams(params));
  core::ExecutionId id = core::ExecutionId::Generate();
  if (options.execution_id) {
    STELE_ASSIGN_OR_RETURN(id, d.ParseId(*options.execution_id));
    if (!id.IsTopLevel()) {
      return Unexpected(Error::InvalidArgument("execution id `" + *options.execution_id +
                                               "` is a child id; submit needs a top-level E_<ULID>"));
    }
  }
  DateTime now = d.clock->Now();
  DateTime scheduled_at = options.scheduled_at ? ToDateTime(*options.scheduled_at) : now;
  storage::CreateRequest request{now,         id,           *ffqn, params, std::nullopt,
                                 scheduled_at, info->component_id, {},   std::nullopt};
  auto created = d.api->Create(request);
  if (created) return id.ToString();
  const auto& error = created.error();
  if (error.IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kIllegalState)) {
    // The id exists: the same submission again is idempotent.
    auto existing = d.api->GetCreateRequest(id);
    if (!existing) return Unexpected(FromRead(existing.error(), "submit"));
    if (existing->ffqn == *ffqn && existing->params == params) return id.ToString();
    return Unexpected(Error::Conflict("execution " + id.ToString() +
                                      " exists with another ffqn or other params"));
  }
  return Unexpected(FromWrite(error, "submit"));
}

Result<ExecutionStatus, Error> Engine::GetStatus(std::string_view text) {
  STELE_ASSIGN_OR_RETURN(auto id, impl_->ParseId(text));
  auto created = impl_->api->GetCreateRequest(id);
  if (!created) return Unexpected(FromRead(created.error(), "status of " + std::string(text)));
  auto state = impl_->api->GetPendingState(id);
  if (!state) return Unexpected(FromRead(state.error(), "status of " + std::string(text)));
  return ExecutionStatus{id.ToString(), created->ffqn.ToString(), std::string(state->StateName()),
                         state->ToString(), state->IsFinished()};
}

Result<ExecutionResult, Error> Engine::WaitForResult(std::string_view text,
                                                     std::chrono::milliseconds timeout) {
  STELE_ASSIGN_OR_RETURN(auto id, impl_->ParseId(text));
  auto result = impl_->api->WaitForFinishedResult(id, storage::WaitOptions::For(timeout));
  if (result) return runtime::native::ToPublic(*result);
  if (result.error().IsTimeout()) {
    return Unexpected(Error::Timeout("execution " + id.ToString() + " did not finish within " +
                                     std::to_string(timeout.count()) + " ms"));
  }
  return Unexpected(Error::Storage("waiting for " + id.ToString() + ": " +
                                   result.error().ToString()));
}

Result<CancelOutcome, Error> Engine::Cancel(std::string_view text) {
  Impl& d = *impl_;
  DateTime now = d.clock->Now();
  if (text.starts_with("Delay_")) {
    auto delay = core::DelayId::Parse(text);
    if (!delay) {
      return Unexpected(Error::InvalidArgument("invalid delay id `" + std::string(text) +
                                               "`: " + delay.error().message));
    }
    auto outcome = storage::CancelDelay(*d.api, *delay, now);
    if (!outcome) return Unexpected(FromWrite(outcome.error(), "cancel " + std::string(text)));
    return *outcome == storage::CancelOutcome::kCancelled ? CancelOutcome::kCancelled
                                                          : CancelOutcome::kAlreadyFinished;
  }
  STELE_ASSIGN_OR_RETURN(auto id, d.ParseId(text));
  auto created = d.api->GetCreateRequest(id);
  if (!created) return Unexpected(FromRead(created.error(), "cancel " + std::string(text)));
  auto type = created->component_id.component_type;
  if (type == core::ComponentType::kWorkflow || type == core::ComponentType::kWorkflowNative) {
    return Unexpected(Error::InvalidArgument("execution " + id.ToString() +
                                             " is a workflow; only activities and delays can be "
                                             "cancelled"));
  }
  auto outcome = executor::CancelActivity(*d.api, d.cancels.get(), id, now);
  if (!outcome) return Unexpected(FromWrite(outcome.error(), "cancel " + std::string(text)));
  return *outcome == storage::CancelOutcome::kCancelled ? CancelOutcome::kCancelled
                                                        : CancelOutcome::kAlreadyFinished;
}

Result<void, Error> Engine::Stub(std::string_view text, ExecutionResult result) {
  Impl& d = *impl_;
  STELE_ASSIGN_OR_RETURN(auto id, d.ParseId(text));
  auto derived = id.AsDerived();
  if (!derived) {
    return Unexpected(Error::InvalidArgument("execution " + id.ToString() +
                                             " is top-level; only child executions of stub "
                                             "activities can be stubbed"));
  }
  auto created = d.api->GetCreateRequest(id);
  if (!created) return Unexpected(FromRead(created.error(), "stub " + std::string(text)));
  if (created->component_id.component_type != core::ComponentType::kActivityStub) {
    return Unexpected(Error::InvalidArgument("execution " + id.ToString() + " runs " +
                                             created->ffqn.ToString() +
                                             ", which is not a stub activity"));
  }
  auto [parent, join_set] = derived->SplitToParts();
  auto stubbed = storage::StubExecution(*d.api, *derived, parent, join_set, d.clock->Now(),
                                        runtime::native::ToCore(result));
  if (stubbed) return {};
  if (stubbed.error().IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kConflict)) {
    return Unexpected(Error::Conflict("execution " + id.ToString() +
                                      " holds a different result already"));
  }
  return Unexpected(FromWrite(stubbed.error(), "stub " + std::string(text)));
}

Result<ListPage, Error> Engine::List(const ListOptions& options) {
  std::optional<core::FunctionFqn> ffqn;
  if (options.ffqn) {
    auto parsed = core::FunctionFqn::Parse(*options.ffqn);
    if (!parsed) {
      return Unexpected(Error::InvalidArgument("invalid ffqn `" + *options.ffqn +
                                               "`: " + parsed.error().message));
    }
    ffqn = std::move(*parsed);
  }
  if (options.limit == 0 || options.limit > ListOptions::kMaxLimit) {
    return Unexpected(Error::InvalidArgument(
        "list limit must be 1.." + std::to_string(ListOptions::kMaxLimit) + ", got " +
        std::to_string(options.limit) + " (page with ListOptions::cursor for more)"));
  }
  std::optional<core::ExecutionId> cursor;
  if (options.cursor) {
    auto parsed = core::ExecutionId::Parse(*options.cursor);
    if (!parsed) {
      return Unexpected(
          Error::InvalidArgument("invalid list cursor `" + *options.cursor +
                                 "` (expected an execution id): " + parsed.error().message));
    }
    cursor = std::move(*parsed);
  }
  // One row more than asked tells whether another page follows.
  const auto fetch = static_cast<uint16_t>(options.limit + 1);
  using IdPage = core::Pagination<std::optional<core::ExecutionId>>;
  const bool newer = options.direction == ListDirection::kNewer;
  core::ExecutionListPagination pagination =
      newer ? IdPage::NewerThan(fetch, cursor, false) : IdPage::OlderThan(fetch, cursor, false);
  auto rows = impl_->api->ListExecutions(ffqn, options.top_level_only, pagination);
  if (!rows) return Unexpected(Error::Storage("list: " + rows.error().ToString()));
  // Rows come newest first either way; the one too many is the farthest in
  // `direction`: the oldest for kOlder, the newest for kNewer.
  const bool more = rows->size() > options.limit;
  if (more) rows->erase(newer ? rows->begin() : rows->end() - 1);
  ListPage page;
  page.executions.reserve(rows->size());
  for (const auto& row : *rows) {
    page.executions.push_back(ExecutionStatus{row.execution_id.ToString(), row.ffqn.ToString(),
                                              std::string(row.pending_state.StateName()),
                                              row.pending_state.ToString(),
                                              row.pending_state.IsFinished()});
  }
  if (more) {
    page.next_cursor =
        newer ? page.executions.front().execution_id : page.executions.back().execution_id;
  }
  return page;
}

Result<uint32_t, Error> Engine::FireExpiredTimersForTest(std::chrono::system_clock::time_point at) {
  auto progress = executor::HandleExpiredTimers(*impl_->api, ToDateTime(at));
  if (!progress) return Unexpected(Error::Storage(progress.error().ToString()));
  return progress->expired_locks + progress->expired_delays;
}

}  // namespace stele
