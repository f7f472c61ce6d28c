// Test support for runtime/js, as wasm_host_test_util.h is for wasm: a real
// SQLite file with the real executors — a stele::Engine (native
// activities, stubs, the expired-timers watcher) sharing the pool with one
// ExecTask for a JS workflow component and one for a JS activity
// component. Waits poll the database with bounded limits; no sleep decides
// an outcome.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "executor/exec_task.h"
#include "runtime/js/js_activity_worker.h"
#include "runtime/js/js_component.h"
#include "runtime/js/js_workflow_worker.h"
#include "runtime/workflow/function_registry.h"
#include "stele/engine.h"
#include "storage/db_external_api.h"
#include "storage/operations.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele::runtime::js::testing {

template <class R>
auto MustDb(R result, const char* what) {
  if (!result) {
    ADD_FAILURE() << what << ": " << result.error().ToString();
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

inline std::filesystem::path MakeTempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "stele_js_XXXXXX").string();
  char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  return std::filesystem::path(pattern);
}

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The test workflows with `const VARIANT = 1;` set to `variant`.
inline std::string WorkflowsSource(int variant = 1) {
  std::string text = ReadText(STELE_JS_TESTDATA "/test_workflows.js");
  const std::string marker = "const VARIANT = 1;";
  auto at = text.find(marker);
  EXPECT_NE(at, std::string::npos);
  text.replace(at, marker.size(), "const VARIANT = " + std::to_string(variant) + ";");
  return text;
}

inline std::shared_ptr<const JsComponent> LoadOrDie(std::string source, std::string file,
                                                    std::string name, JsFlavor flavor,
                                                    JsLimits limits = {}) {
  auto loaded = LoadJsComponent(CreateV8JsEngine(), std::move(source), std::move(file),
                                std::move(name), flavor, limits);
  if (!loaded) {
    ADD_FAILURE() << "load: " << loaded.error();
    std::abort();
  }
  return *loaded;
}
inline std::shared_ptr<const JsComponent> Workflows(int variant = 1, JsLimits limits = {}) {
  return LoadOrDie(WorkflowsSource(variant), "test_workflows.js", "test_workflows",
                   JsFlavor::kWorkflow, limits);
}
inline std::shared_ptr<const JsComponent> Activities() {
  return LoadOrDie(ReadText(STELE_JS_TESTDATA "/test_activities.js"), "test_activities.js",
                   "test_activities", JsFlavor::kActivity);
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

struct EnvConfig {
  std::shared_ptr<const JsComponent> workflows;
  std::shared_ptr<const JsComponent> activities;  // may be null
  workflow::BlockingStrategy strategy = workflow::BlockingStrategy::kAwait;
  std::chrono::milliseconds guest_slice{5000};
  // The workflows' lock expiry, and their lock extension when
  // `lock_extension` (the server sets both to the component's lock_expiry).
  std::chrono::milliseconds workflow_lock{2000};
  bool lock_extension = true;
  uint32_t activity_max_retries = 2;
  std::chrono::milliseconds activity_lock{5000};
  JsActivityOptions activity_options;
  // ffqn → native activity (served by the Engine instead of JS).
  std::map<std::string, ActivityFn> native_activities;
  std::vector<std::string> stubs;
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
    std::vector<core::FunctionFqn> js_activities;
    if (config_.activities) {
      for (const auto& f : config_.activities->Ffqns()) {
        if (native.count(f.ToString())) continue;
        registry_.Add(f, {config_.activities->component_id, workflow::FunctionKind::kActivity});
        js_activities.push_back(f);
      }
    }
    EXPECT_TRUE(engine_->Start());

    workflow::WorkflowRunOptions run_options;
    run_options.blocking_strategy = config_.strategy;
    run_options.lock_extension =
        config_.lock_extension ? config_.workflow_lock : std::chrono::milliseconds(0);
    run_options.subscription_interruption = std::chrono::milliseconds(100);
    JsWorkflowWorkerDeps deps;
    deps.db = std::shared_ptr<storage::DbConnection>(MustDb(pool_->Connection(), "conn"));
    deps.clock = SystemClock::Shared();
    deps.functions = &registry_;
    deps.dispatch = &dispatch_;
    deps.handoff = handoff_.get();
    deps.run_options = run_options;
    deps.guest_slice = config_.guest_slice;
    workflow_worker_ = std::make_shared<JsWorkflowWorker>(config_.workflows, std::move(deps));
    executor::ExecutorOptions wf;
    wf.lock_expiry = config_.workflow_lock;
    wf.tick_sleep = std::chrono::milliseconds(20);
    wf.component_id = config_.workflows->component_id;
    // As the server: a workflow runs only on the digest it was created with.
    wf.locking_strategy = executor::LockingStrategy::kByComponentId;
    wf.retry_config = core::ComponentRetryConfig{std::nullopt, core::Duration::FromMillis(20)};
    wf.response_handoff = handoff_;
    probe_ = std::make_shared<OverlapProbe>(workflow_worker_);
    tasks_.push_back(std::make_unique<executor::ExecTask>(
        probe_, MustDb(pool_->DbExecConn(), "exec"), SystemClock::Shared(), wf));
    dispatch_.Add(workflow_worker_->ExportedFunctions(), tasks_.back().get());
    if (config_.activities && !js_activities.empty()) {
      auto worker = std::make_shared<Filtered>(
          std::make_shared<JsActivityWorker>(config_.activities, config_.activity_options),
          js_activities);
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
      const core::ExecutionId& id, std::chrono::milliseconds limit = std::chrono::seconds(60)) {
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
  bool WaitUntil(P predicate, std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (predicate()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

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
  JsWorkflowWorker& workflow_worker() { return *workflow_worker_; }
  const OverlapProbe& overlap_probe() const { return *probe_; }

 private:
  // Serves only the given functions of a worker.
  class Filtered final : public executor::Worker {
   public:
    Filtered(std::shared_ptr<executor::Worker> inner, std::vector<core::FunctionFqn> ffqns)
        : inner_(std::move(inner)), ffqns_(std::move(ffqns)) {}
    executor::WorkerResult Run(executor::WorkerContext ctx) override {
      return inner_->Run(std::move(ctx));
    }
    const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

   private:
    std::shared_ptr<executor::Worker> inner_;
    std::vector<core::FunctionFqn> ffqns_;
  };

  EnvConfig config_;
  std::shared_ptr<storage::DbPool> pool_;
  std::shared_ptr<storage::DbExternalApi> api_;
  std::unique_ptr<Engine> engine_;
  workflow::MapFunctionRegistry registry_;
  std::shared_ptr<JsWorkflowWorker> workflow_worker_;
  std::shared_ptr<OverlapProbe> probe_;
  std::vector<std::unique_ptr<executor::ExecTask>> tasks_;
  executor::LocalDispatch dispatch_;
  std::shared_ptr<executor::ResponseHandoff> handoff_ = executor::ResponseHandoff::Create();
};

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

// History events with JoinNext leases and delay expiries cleared (as
// wasm_host's NormalisedHistory), and step times (Persist of kind time:
// the clock of the first run) zeroed.
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
      if (auto* persist = std::get_if<core::HistoryPersist>(&event)) {
        if (std::holds_alternative<core::PersistKindTime>(persist->kind)) persist->value.clear();
      }
      out.push_back(std::move(event));
    }
  }
  return out;
}

// Runs `scenario(env, id)` under each blocking strategy on a fresh
// database with the same execution id; both must write the same history.
template <class Scenario>
void ExpectSameHistoryUnderBothStrategies(const EnvConfig& config, Scenario scenario) {
  const core::ExecutionId id = core::ExecutionId::Generate();
  std::vector<std::vector<core::HistoryEvent>> histories;
  for (auto strategy :
       {workflow::BlockingStrategy::kAwait, workflow::BlockingStrategy::kInterrupt}) {
    SCOPED_TRACE(strategy == workflow::BlockingStrategy::kAwait ? "await" : "interrupt");
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

}  // namespace stele::runtime::js::testing
