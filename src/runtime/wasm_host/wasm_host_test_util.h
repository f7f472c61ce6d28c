// Test support for runtime/wasm_host: an environment on a real SQLite file
// with the real executors — a stele::Engine (native activities, stubs, the
// expired-timers watcher) sharing the pool with one ExecTask for a wasm
// workflow component and one for a wasm activity component. Waits poll the
// database with bounded limits; no sleep decides an outcome.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "executor/exec_task.h"
#include "runtime/wasm/wasm_engine.h"
#include "runtime/wasm_host/wasm_activity_worker.h"
#include "runtime/wasm_host/wasm_component.h"
#include "runtime/wasm_host/wasm_workflow_worker.h"
#include "runtime/workflow/function_registry.h"
#include "stele/engine.h"
#include "storage/db_external_api.h"
#include "storage/operations.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele::runtime::wasm_host::testing {

template <class R>
auto Must(R result, const char* what) {
  if (!result) {
    ADD_FAILURE() << what << ": " << result.error();
    std::abort();
  }
  return std::move(*result);
}
inline core::FunctionFqn Ffqn(const std::string& text) {
  auto ffqn = core::FunctionFqn::Parse(text);
  if (!ffqn) {
    ADD_FAILURE() << "ffqn " << text << ": " << ffqn.error().message;
    std::abort();
  }
  return std::move(*ffqn);
}
template <class R>
auto MustDb(R result, const char* what) {
  if (!result) {
    ADD_FAILURE() << what << ": " << result.error().ToString();
    std::abort();
  }
  return std::move(*result);
}

inline std::filesystem::path MakeTempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "stele_wasm_XXXXXX").string();
  char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  return std::filesystem::path(pattern);
}

inline std::shared_ptr<const WasmComponent> LoadOrDie(const char* path, std::string name,
                                                      GuestKind kind,
                                                      WasmComponentLimits limits = {}) {
  return Must(LoadWasmComponentFile(wasm::CreateV8Engine(), path, std::move(name), kind, limits),
              "load");
}

// Passes runs through to `inner` and counts, per execution, the runs in
// progress at once: two runs of one execution must never overlap.
class OverlapProbe final : public executor::Worker {
 public:
  explicit OverlapProbe(std::shared_ptr<executor::Worker> inner) : inner_(std::move(inner)) {}
  executor::WorkerResult Run(executor::WorkerContext ctx) override {
    const std::string id = ctx.execution_id.ToString();
    {
      std::lock_guard lock(mu_);
      max_ = std::max(max_, ++running_[id]);
    }
    executor::WorkerResult result = inner_->Run(std::move(ctx));
    std::lock_guard lock(mu_);
    --running_[id];
    return result;
  }
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override {
    return inner_->ExportedFunctions();
  }
  // The most runs of one execution seen in progress at once.
  int max_overlap() const {
    std::lock_guard lock(mu_);
    return max_;
  }

 private:
  std::shared_ptr<executor::Worker> inner_;
  mutable std::mutex mu_;
  std::map<std::string, int> running_;
  int max_ = 0;
};

// Serves only some of a worker's functions (a test serves one ffqn natively).
class FilteredWorker final : public executor::Worker {
 public:
  FilteredWorker(std::shared_ptr<executor::Worker> inner, std::set<std::string> excluded)
      : inner_(std::move(inner)) {
    for (const auto& f : inner_->ExportedFunctions()) {
      if (!excluded.count(f.ToString())) ffqns_.push_back(f);
    }
  }
  executor::WorkerResult Run(executor::WorkerContext ctx) override {
    return inner_->Run(std::move(ctx));
  }
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

 private:
  std::shared_ptr<executor::Worker> inner_;
  std::vector<core::FunctionFqn> ffqns_;
};

struct EnvConfig {
  std::shared_ptr<const WasmComponent> workflows;
  std::shared_ptr<const WasmComponent> activities;  // may be null
  workflow::BlockingStrategy strategy = workflow::BlockingStrategy::kAwait;
  std::chrono::milliseconds guest_slice{5000};
  // The workflows' lock expiry and lock extension (the server sets both to
  // the component's lock_expiry).
  std::chrono::milliseconds workflow_lock{2000};
  uint32_t activity_max_retries = 2;
  std::chrono::milliseconds activity_lock{5000};
  WasmActivityOptions activity_options;
  // ffqn → native activity (served by the Engine instead of the wasm component).
  std::map<std::string, ActivityFn> native_activities;
  std::vector<std::string> stubs;
  // How long past a lock's expiry the watcher waits before it takes over;
  // tests of the executor's own timeout record give it a long one.
  std::chrono::milliseconds watcher_leeway{0};
};

class Env {
 public:
  Env(const std::filesystem::path& dir, EnvConfig config) : config_(std::move(config)) {
    storage::sqlite::SqliteOptions sqlite{.path = (dir / "stele.sqlite").string()};
    sqlite.synchronous = storage::sqlite::SqliteOptions::Synchronous::kNormal;
    pool_ =
        std::shared_ptr<storage::DbPool>(MustDb(storage::sqlite::SqlitePool::Open(sqlite), "open"));
    api_ = std::shared_ptr<storage::DbExternalApi>(MustDb(pool_->ExternalApiConn(), "api"));
    EngineOptions options;
    options.pool = pool_;
    options.tick_sleep = std::chrono::milliseconds(20);
    options.watcher_tick = std::chrono::milliseconds(20);
    options.watcher_leeway = config_.watcher_leeway;
    engine_ = MustDb(Engine::Open(options), "engine");

    std::set<std::string> native;
    for (auto& [ffqn, fn] : config_.native_activities) {
      EXPECT_TRUE(engine_->RegisterActivity(ffqn, fn, ActivityOptions{}));
      registry_.Add(Ffqn(ffqn),
                    {core::ComponentId::DummyActivity(), workflow::FunctionKind::kActivity});
      native.insert(ffqn);
    }
    for (const auto& ffqn : config_.stubs) {
      EXPECT_TRUE(engine_->RegisterStub(ffqn));
      registry_.Add(Ffqn(ffqn),
                    {core::ComponentId{core::ComponentType::kActivityStub, "native_stubs", {}},
                     workflow::FunctionKind::kActivityStub});
    }
    config_.workflows->RegisterIn(registry_);
    if (config_.activities) {
      for (const auto& f : config_.activities->Ffqns()) {
        if (!native.count(f.ToString())) {
          registry_.Add(f, {config_.activities->component_id, workflow::FunctionKind::kActivity});
        }
      }
    }
    EXPECT_TRUE(engine_->Start());

    workflow::WorkflowRunOptions run_options;
    run_options.blocking_strategy = config_.strategy;
    run_options.lock_extension = config_.workflow_lock;
    run_options.subscription_interruption = std::chrono::milliseconds(100);
    workflow_worker_ = std::make_shared<WasmWorkflowWorker>(
        config_.workflows,
        WasmWorkflowWorkerDeps{
            std::shared_ptr<storage::DbConnection>(MustDb(pool_->Connection(), "conn")),
            SystemClock::Shared(), &registry_, &dispatch_, handoff_.get(), run_options,
            config_.guest_slice, true});
    probe_ = std::make_shared<OverlapProbe>(workflow_worker_);
    executor::ExecutorOptions wf;
    wf.lock_expiry = config_.workflow_lock;
    wf.tick_sleep = std::chrono::milliseconds(20);
    wf.component_id = config_.workflows->component_id;
    // As the server: a workflow runs only on the digest it was created with.
    wf.locking_strategy = executor::LockingStrategy::kByComponentId;
    wf.retry_config = core::ComponentRetryConfig{std::nullopt, core::Duration::FromMillis(20)};
    wf.response_handoff = handoff_;
    tasks_.push_back(std::make_unique<executor::ExecTask>(
        probe_, MustDb(pool_->DbExecConn(), "exec"), SystemClock::Shared(), wf));
    dispatch_.Add(workflow_worker_->ExportedFunctions(), tasks_.back().get());
    if (config_.activities) {
      auto worker = std::make_shared<FilteredWorker>(
          std::make_shared<WasmActivityWorker>(config_.activities, config_.activity_options),
          native);
      executor::ExecutorOptions act;
      act.lock_expiry = config_.activity_lock;
      act.tick_sleep = std::chrono::milliseconds(20);
      act.component_id = config_.activities->component_id;
      act.retry_config =
          core::ComponentRetryConfig{config_.activity_max_retries, core::Duration::FromMillis(10)};
      act.response_handoff = handoff_;
      tasks_.push_back(std::make_unique<executor::ExecTask>(
          worker, MustDb(pool_->DbExecConn(), "exec"), SystemClock::Shared(), act));
      dispatch_.Add(worker->ExportedFunctions(), tasks_.back().get());
    }
    for (auto& task : tasks_) task->Start();
  }

  ~Env() {
    for (auto& task : tasks_) task->Stop();
    engine_.reset();
    api_.reset();
    pool_->Close();
  }

  core::ExecutionId Submit(const std::string& ffqn, core::Json params,
                           std::optional<core::ExecutionId> id = std::nullopt,
                           core::ExecutionPolicy policy = {}) {
    auto f = Ffqn(ffqn);
    core::ComponentId component = config_.workflows->component_id;
    if (config_.activities && config_.activities->Find(f))
      component = config_.activities->component_id;
    core::ExecutionId execution_id = id ? *id : core::ExecutionId::Generate();
    DateTime now = SystemClock::Instance().Now();
    storage::CreateRequest request{now, execution_id, f,  std::move(params), std::nullopt,
                                   now, component,    {}, std::nullopt};
    request.policy = std::move(policy);
    MustDb(api_->Create(request), "create");
    return execution_id;
  }

  core::SupportedFunctionReturnValue Await(
      const core::ExecutionId& id, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    auto result = api_->WaitForFinishedResult(id, storage::WaitOptions::For(limit));
    if (!result) {
      ADD_FAILURE() << "waiting for " << id.ToString() << ": " << result.error().ToString();
      return core::FinishedExecutionError{
          core::ExecutionFailureKind::kUncategorized, "no result", {}};
    }
    return *result;
  }

  std::vector<core::ExecutionEvent> Events(const core::ExecutionId& id) {
    return MustDb(api_->ListExecutionEvents(id, core::Version(0), 10000, false), "events");
  }

  template <class P>
  bool WaitUntil(P predicate, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (predicate()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  // The responses the execution received, in arrival order.
  std::vector<core::JoinSetResponseEventOuter> Responses(const core::ExecutionId& id) {
    auto page = MustDb(
        api_->ListResponses(id, core::Pagination<uint32_t>::NewerThan(1000, 0, true)), "responses");
    std::vector<core::JoinSetResponseEventOuter> out;
    for (auto& r : page) out.push_back(std::move(r.event));
    return out;
  }

  // Cancels a delay as `stele cancel` does.
  void CancelDelay(const core::DelayId& delay) {
    auto conn = MustDb(pool_->Connection(), "conn");
    MustDb(storage::CancelDelay(*conn, delay, SystemClock::Instance().Now()), "cancel delay");
  }

  std::string StateName(const core::ExecutionId& id) {
    auto state = api_->GetPendingState(id);
    return state ? std::string(state->StateName()) : "?";
  }

  Engine& engine() { return *engine_; }
  storage::DbExternalApi& api() { return *api_; }
  WasmWorkflowWorker& workflow_worker() { return *workflow_worker_; }
  const OverlapProbe& overlap_probe() const { return *probe_; }

 private:
  EnvConfig config_;
  std::shared_ptr<storage::DbPool> pool_;
  std::shared_ptr<storage::DbExternalApi> api_;
  std::unique_ptr<Engine> engine_;
  workflow::MapFunctionRegistry registry_;
  std::shared_ptr<WasmWorkflowWorker> workflow_worker_;
  std::shared_ptr<OverlapProbe> probe_;
  std::vector<std::unique_ptr<executor::ExecTask>> tasks_;
  // The executors above by function: children are dispatched eagerly, as in
  // the server.
  executor::LocalDispatch dispatch_;
  std::shared_ptr<executor::ResponseHandoff> handoff_ = executor::ResponseHandoff::Create();
};

// The ok value of a result (null, and a failure, when it is not ok).
inline core::Json OkJson(const core::SupportedFunctionReturnValue& v) {
  const auto* ok = std::get_if<core::ReturnValueOk>(&v);
  EXPECT_NE(ok, nullptr) << "not ok";
  if (ok == nullptr || !ok->ok) return nullptr;
  return *ok->ok;
}
inline const core::FinishedExecutionError* Failure(const core::SupportedFunctionReturnValue& v) {
  return std::get_if<core::FinishedExecutionError>(&v);
}

template <class T>
size_t CountEvents(const std::vector<core::ExecutionEvent>& events) {
  size_t n = 0;
  for (const auto& e : events) n += std::holds_alternative<T>(e.event) ? 1 : 0;
  return n;
}

// History events with the JoinNext leases cleared (the only field the
// blocking strategies may differ in) and the resolved expiries of delays
// (now + duration on the first run: two runs at different times differ;
// the schedule intent, which replay compares, is kept).
inline std::vector<core::HistoryEvent> NormalisedHistory(
    const std::vector<core::ExecutionEvent>& events) {
  std::vector<core::HistoryEvent> out;
  for (const auto& e : events) {
    if (const auto* h = std::get_if<core::HistoryEventRequest>(&e.event)) {
      core::HistoryEvent event = h->event;
      if (auto* next = std::get_if<core::HistoryJoinNext>(&event))
        next->run_expires_at = DateTime{};
      if (auto* request = std::get_if<core::HistoryJoinSetRequest>(&event)) {
        if (auto* delay = std::get_if<core::DelayRequest>(&request->request))
          delay->expires_at = DateTime{};
      }
      out.push_back(std::move(event));
    }
  }
  return out;
}

inline const char* StrategyName(workflow::BlockingStrategy strategy) {
  return strategy == workflow::BlockingStrategy::kAwait ? "await" : "interrupt";
}

// Runs `scenario(env, id)` — which submits `id` and checks its outcome —
// once under each blocking strategy, each on a fresh database with the same
// execution id, and expects both to have written the same history
// (NormalisedHistory): the replay engine's promise that the strategies
// differ only in JoinNext leases, kept by wasm guests too.
template <class Scenario>
void ExpectSameHistoryUnderBothStrategies(const EnvConfig& config, Scenario scenario) {
  const core::ExecutionId id = core::ExecutionId::Generate();
  std::vector<std::vector<core::HistoryEvent>> histories;
  for (auto strategy :
       {workflow::BlockingStrategy::kAwait, workflow::BlockingStrategy::kInterrupt}) {
    SCOPED_TRACE(std::string("blocking strategy ") + StrategyName(strategy));
    const std::filesystem::path dir = MakeTempDir();
    {
      EnvConfig copy = config;
      copy.strategy = strategy;
      Env env(dir, std::move(copy));
      scenario(env, id);
      histories.push_back(NormalisedHistory(env.Events(id)));
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  ASSERT_EQ(histories.size(), 2u);
  EXPECT_FALSE(histories[0].empty());
  EXPECT_EQ(histories[0], histories[1]) << "await and interrupt wrote different histories";
}

}  // namespace stele::runtime::wasm_host::testing
