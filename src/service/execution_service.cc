// ExecutionService: creation, composition of the executors and the
// watcher, introspection. The use cases are in submit.cc, read.cc and
// control.cc.
#include "service/execution_service.h"

#include <algorithm>
#include <set>
#include <utility>

#include "base/log.h"
#include "service/cron_ticker.h"

namespace stele::service {

namespace wf = runtime::workflow;

namespace {

bool IsWorkflow(wf::FunctionKind kind) { return kind == wf::FunctionKind::kWorkflow; }

Result<void, ServiceError> CheckOptions(const ServiceOptions& o) {
  if (o.pool == nullptr) return Unexpected(ServiceError::InvalidArgument("no storage pool given"));
  const std::pair<bool, const char*> checks[] = {
      {o.batch_size > 0, "batch_size"},
      {o.max_concurrency > 0, "max_concurrency"},
      {o.max_workflow_concurrency > 0, "max_workflow_concurrency"},
      {o.activity_lock_expiry.count() > 0, "the activity lock expiry"},
      {o.workflow_lock_expiry.count() > 0, "the workflow lock expiry"},
      {o.max_list_length > 0, "max_list_length"},
      {!o.retention_finished_after || o.retention_finished_after->count() > 0,
       "the retention age (finished_after)"},
      {o.retention_interval.count() > 0, "the retention interval"},
      {o.cron_max_wait.count() > 0, "cron_max_wait"},
  };
  for (const auto& [ok, name] : checks) {
    if (!ok)
      return Unexpected(ServiceError::InvalidArgument(std::string(name) + " must be positive"));
  }
  if (o.retention_batch_size == 0 || o.retention_batch_size > storage::kMaxRetentionBatch) {
    return Unexpected(ServiceError::InvalidArgument("the retention batch size must be 1.." +
                                                    std::to_string(storage::kMaxRetentionBatch)));
  }
  return {};
}

}  // namespace

ExecutionService::ExecutionService(ServiceOptions options,
                                   std::unique_ptr<storage::DbExternalApi> api)
    : options_(std::move(options)),
      api_(std::move(api)),
      async_waits_(std::make_unique<AsyncWaits>(*api_)) {
  limiter_ = executor::ConcurrencyLimiter::Create(options_.max_concurrency);
  workflow_limiter_ = executor::ConcurrencyLimiter::Create(options_.max_workflow_concurrency);
  cron_ = std::make_unique<CronTicker>(
      *api_, options_.clock, [this](const SubmitRequest& request) { return Submit(request); },
      [this](const std::string& ffqn) {
        auto parsed = core::FunctionFqn::Parse(ffqn);
        return parsed.has_value() && registry_.Find(*parsed).has_value();
      },
      options_.cron_max_wait);
}

ExecutionService::~ExecutionService() { Stop(); }

Result<std::unique_ptr<ExecutionService>, ServiceError> ExecutionService::Create(
    ServiceOptions options) {
  STELE_TRY(CheckOptions(options));
  if (options.clock == nullptr) options.clock = SystemClock::Shared();
  auto api = options.pool->ExternalApiConn();
  if (!api) return Unexpected(FromGeneric(api.error(), "cannot connect to the database"));
  return std::unique_ptr<ExecutionService>(
      new ExecutionService(std::move(options), std::move(*api)));
}

Result<void, ServiceError> ExecutionService::AddComponent(ComponentSpec spec) {
  std::lock_guard lock(mu_);
  if (started_) {
    return Unexpected(ServiceError::FailedPrecondition(
        "cannot add component `" + spec.component_id.name + "`: the service has started"));
  }
  for (const auto& existing : components_) {
    if (existing.component_id == spec.component_id) {
      return Unexpected(
          ServiceError::Conflict("component `" + spec.component_id.name + "` is served already"));
    }
  }
  std::set<core::FunctionFqn> seen;
  for (const auto& ffqn : spec.functions) {
    if (registry_.Find(ffqn) || !seen.insert(ffqn).second) {
      return Unexpected(ServiceError::Conflict("`" + ffqn.ToString() + "` is served already"));
    }
  }
  for (const auto& signature : spec.signatures) {
    if (!seen.contains(signature.ffqn)) {
      return Unexpected(ServiceError::InvalidArgument("component `" + spec.component_id.name +
                                                      "` declares `" + signature.ffqn.ToString() +
                                                      "`, which it does not export"));
    }
  }
  for (const auto& signature : spec.signatures) {
    signatures_.insert_or_assign(signature.ffqn, signature);
  }
  for (const auto& ffqn : spec.functions) {
    wf::FunctionInfo info{spec.component_id, spec.kind, nullptr};
    if (auto it = signatures_.find(ffqn); it != signatures_.end()) {
      info.signature = std::make_shared<const core::FunctionSignature>(it->second);
    }
    registry_.Add(ffqn, std::move(info));
  }
  components_.push_back(std::move(spec));
  return {};
}

Result<void, ServiceError> ExecutionService::AddFunction(
    const core::ComponentId& component_id, core::FunctionFqn ffqn,
    std::optional<core::FunctionSignature> signature) {
  std::lock_guard lock(mu_);
  if (started_) {
    return Unexpected(ServiceError::FailedPrecondition("cannot add `" + ffqn.ToString() +
                                                       "`: the service has started"));
  }
  if (registry_.Find(ffqn)) {
    return Unexpected(ServiceError::Conflict("`" + ffqn.ToString() + "` is served already"));
  }
  for (auto& component : components_) {
    if (component.component_id != component_id) continue;
    wf::FunctionInfo info{component_id, component.kind, nullptr};
    if (signature) {
      info.signature = std::make_shared<const core::FunctionSignature>(*signature);
      signatures_.insert_or_assign(ffqn, *signature);
      component.signatures.push_back(std::move(*signature));
    }
    registry_.Add(ffqn, std::move(info));
    component.functions.push_back(std::move(ffqn));
    return {};
  }
  return Unexpected(ServiceError::NotFound("no component `" + component_id.name + "`"));
}

Result<void, ServiceError> ExecutionService::Start() {
  std::lock_guard lock(mu_);
  if (started_)
    return Unexpected(ServiceError::FailedPrecondition("the service was started before"));
  auto started = StartExecutors();
  if (!started) {
    StopExecutors();
    return started;
  }
  started_ = true;
  return {};
}

// REQUIRES: mu_ held, not started.
Result<void, ServiceError> ExecutionService::StartExecutors() {
  WorkerEnv env;
  env.pool = options_.pool.get();
  env.clock = options_.clock;
  env.registry = &registry_;
  env.dispatch = options_.eager_dispatch ? &dispatch_ : nullptr;
  env.handoff = options_.result_handoff ? handoff_.get() : nullptr;
  env.cancels = cancels_.get();
  std::vector<std::unique_ptr<executor::ExecTask>> tasks;
  std::vector<size_t> task_components;
  for (size_t i = 0; i < components_.size(); ++i) {
    const ComponentSpec& component = components_[i];
    if (!component.make_worker) continue;  // stubs
    const bool workflow = IsWorkflow(component.kind);
    const ExecutorOverrides& o = component.executor;
    executor::ExecutorOptions exec;
    exec.batch_size = o.batch_size.value_or(options_.batch_size);
    exec.lock_expiry = o.lock_expiry.value_or(workflow ? options_.workflow_lock_expiry
                                                       : options_.activity_lock_expiry);
    exec.lock_expiry_setting =
        workflow ? options_.workflow_lock_expiry_setting : options_.activity_lock_expiry_setting;
    exec.tick_sleep = options_.tick_sleep;
    exec.component_id = component.component_id;
    exec.locking_strategy = o.lock_by_component_id ? executor::LockingStrategy::kByComponentId
                                                   : executor::LockingStrategy::kByFfqn;
    const auto backoff = o.retry_backoff.value_or(workflow ? options_.workflow_retry_backoff
                                                           : options_.activity_retry_backoff);
    // A failed workflow run is retried from its log, up to its limit too.
    const std::optional<uint32_t> max_retries =
        o.max_retries ? o.max_retries
                      : (workflow ? options_.workflow_max_retries : options_.activity_max_retries);
    const auto max_backoff = o.max_retry_backoff.value_or(options_.max_retry_backoff);
    exec.retry_config = core::ComponentRetryConfig{
        max_retries, core::Duration::FromMillis(static_cast<uint64_t>(backoff.count())),
        core::Duration::FromMillis(static_cast<uint64_t>(max_backoff.count())),
        std::min<uint32_t>(o.retry_jitter_percent.value_or(options_.retry_jitter_percent), 100)};
    exec.concurrency_limiter = workflow ? workflow_limiter_ : limiter_;
    if (options_.result_handoff) exec.response_handoff = handoff_;
    exec.cancel_registry = workflow ? workflow_runs_ : cancels_;

    env.workflow_writes = nullptr;
    env.workflow_run = options_.workflow_run;
    env.workflow_run.lock_extension = exec.lock_expiry;
    env.workflow_run.max_params_bytes = options_.max_params_bytes;
    env.workflow_run.messages_consumed = messages_consumed_;
    env.workflow_run.messages_sent = messages_sent_;
    if (o.max_events_per_execution) {
      env.workflow_run.max_events_per_execution = *o.max_events_per_execution;
    }
    env.workflow_run.max_events_setting = options_.max_events_setting;
    env.lock_expiry_setting = exec.lock_expiry_setting;
    if (workflow) {
      env.workflow_writes = std::make_shared<executor::LatencyHistogram>();
      workflow_writes_.emplace_back(component.component_id.name, env.workflow_writes);
    }
    auto worker = component.make_worker(env);
    if (!worker) {
      return Unexpected(ServiceError::InvalidArgument("component `" + component.component_id.name +
                                                      "`: " + worker.error()));
    }
    auto db = options_.pool->DbExecConn();
    if (!db) return Unexpected(FromGeneric(db.error(), "cannot connect to the database"));
    tasks.push_back(std::make_unique<executor::ExecTask>(*worker, std::move(*db), options_.clock,
                                                         std::move(exec)));
    task_components.push_back(i);
    dispatch_.Add((*worker)->ExportedFunctions(), tasks.back().get());
  }
  if (options_.start_watcher) {
    auto conn = options_.pool->Connection();
    if (!conn) return Unexpected(FromGeneric(conn.error(), "cannot connect to the database"));
    executor::ExpiredTimersWatcherOptions watcher;
    watcher.tick_sleep = options_.watcher_tick;
    watcher.leeway = options_.watcher_leeway;
    watcher.activity_lock_expiry_setting = options_.activity_lock_expiry_setting;
    watcher.workflow_lock_expiry_setting = options_.workflow_lock_expiry_setting;
    watcher.cancel_registry = cancels_;
    watcher_ =
        std::make_unique<executor::ExpiredTimersWatcher>(std::move(*conn), options_.clock, watcher);
  }
  if (options_.retention_finished_after) {
    auto api = options_.pool->ExternalApiConn();
    if (!api) return Unexpected(FromGeneric(api.error(), "cannot connect to the database"));
    RetentionCollector::Options retention;
    retention.finished_after = *options_.retention_finished_after;
    retention.interval = options_.retention_interval;
    retention.batch_size = options_.retention_batch_size;
    retention_ = std::make_unique<RetentionCollector>(std::move(*api), options_.clock, retention,
                                                      retention_counters_);
  }
  for (auto& task : tasks) task->Start();
  if (watcher_) watcher_->Start();
  if (retention_) retention_->Start();
  if (options_.start_cron) cron_->Start();
  tasks_ = std::move(tasks);
  task_components_ = std::move(task_components);
  return {};
}

void ExecutionService::Stop() {
  std::lock_guard lock(mu_);
  if (stopped_) return;
  stopped_ = true;
  stop_.Cancel();
  StopExecutors();
}

// REQUIRES: mu_ held. Every task is stopped before any is destroyed: a
// stopping task's runs may still dispatch children to the others.
void ExecutionService::StopExecutors() {
  if (retention_) retention_->Stop();
  cron_->Stop();
  if (watcher_) watcher_->Stop();
  for (auto& task : tasks_) task->Stop();
}

std::vector<ExecutorView> ExecutionService::Executors() const {
  std::lock_guard lock(mu_);
  std::vector<ExecutorView> out;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const ComponentSpec& component = components_[task_components_[i]];
    out.push_back({component.component_id.name, component.kind, tasks_[i].get()});
  }
  return out;
}

const core::FunctionSignature* ExecutionService::Signature(const core::FunctionFqn& ffqn) const {
  auto it = signatures_.find(ffqn);
  return it == signatures_.end() ? nullptr : &it->second;
}

Result<storage::ExecutionCounts, ServiceError> ExecutionService::CountExecutionsByState() {
  auto counts = api_->CountExecutionsByState();
  if (!counts) return Unexpected(FromGeneric(counts.error(), "count executions"));
  return *counts;
}

Result<storage::PendingCounts, ServiceError> ExecutionService::CountPending(
    const std::vector<core::FunctionFqn>& ffqns) {
  auto counts = api_->CountPendingByFfqns(ffqns, options_.clock->Now());
  if (!counts) return Unexpected(FromGeneric(counts.error(), "count pending executions"));
  return *counts;
}

bool ExecutionService::Serves(const core::InputContentDigest& digest) const {
  return std::any_of(components_.begin(), components_.end(), [&](const ComponentSpec& component) {
    return component.component_id.input_digest == digest;
  });
}

Result<std::vector<storage::DigestCount>, ServiceError>
ExecutionService::CountPendingOnUnservedDigests() {
  auto counts = api_->CountPendingByComponentDigest();
  if (!counts) return Unexpected(FromGeneric(counts.error(), "count pending executions"));
  std::vector<storage::DigestCount> unserved;
  for (const auto& count : *counts) {
    if (!Serves(count.digest)) unserved.push_back(count);
  }
  return unserved;
}

Result<RetentionReport, ServiceError> ExecutionService::CollectFinished(
    std::chrono::milliseconds older_than) {
  if (older_than.count() <= 0) {
    return Unexpected(
        ServiceError::InvalidArgument("the age of the executions to delete must be positive, got " +
                                      std::to_string(older_than.count()) + " ms"));
  }
  // Not StopToken(): a one-off runs to its end in the caller's thread,
  // after Stop too (a use case that writes).
  auto report =
      RunRetentionPass(*api_, options_.clock->Now() - older_than, options_.retention_batch_size,
                       CancellationToken(), *retention_counters_);
  ++retention_counters_->passes;
  if (!report) ++retention_counters_->failed_passes;
  return report;
}

Result<void, ServiceError> ExecutionService::Ping() {
  core::ExecutionListPagination one =
      core::Pagination<std::optional<core::ExecutionId>>::OlderThan(1, std::nullopt, false);
  auto rows = api_->ListExecutions(std::nullopt, true, one);
  if (!rows) return Unexpected(FromGeneric(rows.error(), "database check"));
  return {};
}

Result<uint32_t, ServiceError> ExecutionService::FireExpiredTimersForTest(DateTime at) {
  auto progress = executor::HandleExpiredTimers(*api_, at);
  if (!progress) return Unexpected(FromGeneric(progress.error(), "expired timers"));
  return progress->expired_locks + progress->expired_delays;
}

}  // namespace stele::service
