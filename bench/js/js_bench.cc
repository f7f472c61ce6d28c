// stele_js_bench: what running JavaScript costs Stele per run (docs/js.md),
// the JS counterpart of stele_wasm_bench (bench/wasm/wasm_bench.cc).
//
//   host_call          a guest loop calling a cheap operation N times, minus
//                      the same loop without it: one crossing into the host
//                      and back through the adapter (JSON both ways)
//   workflow_instantiate  one run of a function that ends at once: take
//                      a realm, compile (V8's cache), link and evaluate a
//                      fresh module instance, call, drain, return the realm
//                      — the fixed cost of every workflow run
//   realm_create       a realm made from scratch (isolate, context,
//                      hardening), paid when the pool grows
//   activity_attempt   one run of the square activity (examples/js) with an
//                      activity's host — a JS activity attempt without the
//                      database
//   fanout_e2e         demo:hello-js/api.sum-of-squares(n) (examples/js):
//                      n JS child activities in one join set, on SQLite
//                      through the real executors
//   replay             the finished fan-out replayed from its recorded
//                      history (no writes): what an `interrupt`-strategy
//                      workflow pays per wake-up
//
// Usage: stele_js_bench <dir with workflows.js and activities.js> [n...]
//        (STELE_BENCH_QUICK=1: few iterations, to check that it runs)
// Output: `stele js <metric> <value> <unit>` lines (BENCHMARKS.md).
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "bench/guest_bench_util.h"
#include "core/ids.h"
#include "executor/exec_task.h"
#include "executor/local_dispatch.h"
#include "runtime/js/js_activity_worker.h"
#include "runtime/js/js_component.h"
#include "runtime/js/js_workflow_worker.h"
#include "runtime/js/v8_realm.h"
#include "runtime/workflow/function_registry.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele::bench {
namespace {

namespace js = runtime::js;
namespace wf = runtime::workflow;
using Clock = std::chrono::steady_clock;
using guest::CpuMicros;
using guest::Die;
using guest::MicrosSince;
using guest::Must;
using guest::Quick;
using guest::Report;

// Answers every operation with null; deterministic time and randomness.
class NullHost final : public js::JsHost {
 public:
  js::HostReply Call(std::string_view, const core::Json&,
                     const std::function<std::vector<js::JsFrame>()>&) override {
    return js::HostReply::Value(nullptr);
  }
  Result<double, std::string> Now() override { return 0.0; }
  Result<double, std::string> Random() override { return 0.5; }
  Result<void, std::string> RandomBytes(std::span<uint8_t>) override { return {}; }
};

js::RunInfo Info(const std::string& ffqn) { return js::RunInfo{"E_bench", ffqn, 1, 0, {}}; }

void HostCall() {
  const std::string source =
      "export const functions = {\n"
      "  'bench:js/api.host': {run: async (ctx, n) => { for (let i = 0; i < n; i++) "
      "ctx.log.trace(i); return n; }},\n"
      "  'bench:js/api.empty': {run: async (ctx, n) => { let s = 0; for (let i = 0; i < n; i++) s "
      "+= String(i).length; return s; }},\n"
      "};\n";
  auto engine = js::CreateV8JsEngine();
  auto module =
      Must(engine->Load("host_call.js", source, js::JsFlavor::kWorkflow, {}), "load host_call.js");
  NullHost host;
  const int n = Quick() ? 10'000 : 1'000'000;
  auto run = [&](const char* ffqn, int count) {
    Must(engine->Run(*module, ffqn, Info(ffqn), core::Json::array({count}), host,
                     js::RunBudget{std::chrono::hours(1), {}}),
         std::string("run ") + ffqn);
  };
  for (int i = 0; i < 3; ++i) {  // warm-up: tier-up
    run("bench:js/api.host", n / 10);
    run("bench:js/api.empty", n / 10);
  }
  auto start = Clock::now();
  run("bench:js/api.empty", n);
  const double empty = MicrosSince(start);
  start = Clock::now();
  run("bench:js/api.host", n);
  const double with_host = MicrosSince(start);
  Report("host_call_loop_empty", empty * 1000.0 / n, "ns/iteration");
  Report("host_call_loop_host", with_host * 1000.0 / n, "ns/iteration");
  Report("host_call", (with_host - empty) * 1000.0 / n, "ns/call");
}

void WorkflowInstantiate(const std::shared_ptr<const js::JsComponent>& workflows) {
  NullHost host;
  const int runs = Quick() ? 20 : 5000;
  // raffle([]): no operation at all, the function throws Err at once.
  const std::string ffqn = "demo:hello-js/api.raffle";
  auto once = [&] {
    auto outcome = Must(
        workflows->engine->Run(*workflows->module, ffqn, Info(ffqn),
                               core::Json::array({core::Json::array()}), host, js::RunBudget{}),
        "run raffle([])");
    if (outcome.ok) Die("raffle([]) did not end with its err");
  };
  for (int i = 0; i < runs / 10; ++i) once();  // warm-up
  const double cpu = CpuMicros();
  auto start = Clock::now();
  for (int i = 0; i < runs; ++i) once();
  Report("workflow_instantiate", MicrosSince(start) / runs, "us/run");
  Report("workflow_instantiate_cpu", (CpuMicros() - cpu) / runs, "us/run");
}

void RealmCreate(const std::filesystem::path& file) {
  const int runs = Quick() ? 3 : 50;
  std::string source;
  {
    std::FILE* f = std::fopen(file.c_str(), "rb");
    if (f == nullptr) Die("read " + file.string());
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) source.append(buffer, n);
    std::fclose(f);
  }
  const double cpu = CpuMicros();
  auto start = Clock::now();
  for (int i = 0; i < runs; ++i) {
    Must(js::internal::Realm::Create("workflows.js", source, js::JsFlavor::kWorkflow, {}), "realm");
  }
  Report("realm_create", MicrosSince(start) / runs, "us/realm");
  Report("realm_create_cpu", (CpuMicros() - cpu) / runs, "us/realm");
}

void ActivityAttempt(const std::shared_ptr<const js::JsComponent>& activities) {
  const std::string ffqn = "demo:hello-js/activity.square";
  NullHost host;
  const int runs = Quick() ? 20 : 5000;
  auto once = [&] {
    auto outcome = Must(activities->engine->Run(*activities->module, ffqn, Info(ffqn),
                                                core::Json::array({12345}), host, js::RunBudget{}),
                        "run square");
    if (!outcome.ok) Die("square failed");
  };
  for (int i = 0; i < runs / 10; ++i) once();
  auto start = Clock::now();
  for (int i = 0; i < runs; ++i) once();
  Report("activity_attempt", MicrosSince(start) / runs, "us/attempt");
}

// The fan-out on SQLite with one ExecTask per component, as the server runs it.
struct FanOutWorld {
  std::shared_ptr<storage::DbPool> pool;
  wf::MapFunctionRegistry registry;
  std::shared_ptr<js::JsWorkflowWorker> workflow_worker;
  std::vector<std::unique_ptr<executor::ExecTask>> tasks;
  executor::LocalDispatch dispatch;
  std::shared_ptr<const js::JsComponent> workflows;
  std::shared_ptr<const js::JsComponent> activities;

  FanOutWorld(const std::filesystem::path& db, std::shared_ptr<const js::JsComponent> wf_component,
              std::shared_ptr<const js::JsComponent> act_component)
      : workflows(std::move(wf_component)), activities(std::move(act_component)) {
    storage::sqlite::SqliteOptions sqlite{.path = db.string()};
    pool = std::shared_ptr<storage::DbPool>(
        Must(storage::sqlite::SqlitePool::Open(sqlite), "open sqlite"));
    workflows->RegisterIn(registry);
    activities->RegisterIn(registry);
    js::JsWorkflowWorkerDeps deps;
    deps.db = std::shared_ptr<storage::DbConnection>(Must(pool->Connection(), "connection"));
    deps.clock = SystemClock::Shared();
    deps.functions = &registry;
    deps.dispatch = &dispatch;
    deps.run_options.blocking_strategy = wf::BlockingStrategy::kInterrupt;
    workflow_worker = std::make_shared<js::JsWorkflowWorker>(workflows, std::move(deps));
    auto add_task = [&](std::shared_ptr<executor::Worker> worker,
                        const core::ComponentId& component) {
      const std::vector<core::FunctionFqn> ffqns = worker->ExportedFunctions();
      executor::ExecutorOptions options;
      options.component_id = component;
      options.batch_size = 64;
      options.tick_sleep = std::chrono::milliseconds(100);
      options.lock_expiry = std::chrono::seconds(10);
      tasks.push_back(std::make_unique<executor::ExecTask>(
          std::move(worker), Must(pool->DbExecConn(), "exec connection"), SystemClock::Shared(),
          options));
      dispatch.Add(ffqns, tasks.back().get());
    };
    add_task(workflow_worker, workflows->component_id);
    add_task(std::make_shared<js::JsActivityWorker>(activities, js::JsActivityOptions{}),
             activities->component_id);
    for (auto& task : tasks) task->Start();
  }
  ~FanOutWorld() {
    for (auto& task : tasks) task->Stop();
    pool->Close();
  }
};

void FanOut(FanOutWorld& world, int n) {
  auto api = Must(world.pool->ExternalApiConn(), "api connection");
  const core::ExecutionId id = core::ExecutionId::Generate();
  const DateTime now = SystemClock::Instance().Now();
  const auto ffqn = core::FunctionFqn::Parse("demo:hello-js/api.sum-of-squares").value();
  auto start = Clock::now();
  storage::CreateRequest request{now,
                                 id,
                                 ffqn,
                                 core::Json::array({n}),
                                 std::nullopt,
                                 now,
                                 world.workflows->component_id,
                                 {},
                                 std::nullopt};
  Must(api->Create(request), "create");
  auto result =
      Must(api->WaitForFinishedResult(id, storage::WaitOptions::For(std::chrono::minutes(5))),
           "wait for the fan-out");
  const double e2e = MicrosSince(start);
  if (!std::holds_alternative<core::ReturnValueOk>(result)) Die("fan-out did not finish ok");
  Report("fanout_e2e_n" + std::to_string(n), e2e / 1000.0, "ms");

  auto events = Must(api->ListExecutionEvents(id, core::Version(0), 1'000'000, false), "events");
  std::vector<core::JoinSetResponseEventOuter> responses;
  for (uint32_t cursor = 0;;) {
    auto page = Must(api->ListResponses(id, core::Pagination<uint32_t>::NewerThan(
                                                1000, cursor, responses.empty())),
                     "responses");
    for (auto& r : page) responses.push_back(std::move(r.event));
    if (page.size() < 1000) break;
    cursor = page.back().cursor;
  }
  executor::WorkerContext ctx{
      .execution_id = id,
      .ffqn = ffqn,
      .params = core::Json::array({n}),
      .metadata = {},
      .event_history = {},
      .responses = {},
      .version = core::Version(0),
      .locked_event = core::Locked{world.workflows->component_id, core::ExecutorId::Generate(),
                                   core::RunId::Generate(), now + std::chrono::hours(1),
                                   core::ComponentRetryConfig{0u, core::Duration::FromMillis(0)}},
      .parent = std::nullopt,
      .intermittent_event_count = 0,
      .can_be_retried = false,
      .execution_deadline = now,
      .cancel = {},
      .run_id = core::RunId::Generate(),
      .executor_id = core::ExecutorId::Generate()};
  size_t runs = 0;
  for (const auto& e : events) {
    if (const auto* h = std::get_if<core::HistoryEventRequest>(&e.event)) {
      ctx.event_history.emplace_back(h->event, e.version);
    } else if (const auto* locked = std::get_if<core::Locked>(&e.event)) {
      ctx.locked_event = *locked;
      ++runs;
    }
    ctx.version = e.version.Increment();
  }
  ctx.responses = std::move(responses);
  ctx.locked_event.lock_expires_at = SystemClock::Instance().Now() + std::chrono::hours(1);
  ctx.execution_deadline = ctx.locked_event.lock_expires_at;
  Report("fanout_runs_n" + std::to_string(n), static_cast<double>(runs), "runs");
  Report("fanout_history_n" + std::to_string(n), static_cast<double>(ctx.event_history.size()),
         "events");

  const int kReplays = Quick() ? 2 : 20;
  auto replay_start = Clock::now();
  for (int i = 0; i < kReplays; ++i) {
    auto replayed = world.workflow_worker->Run(ctx);
    if (!std::holds_alternative<executor::WorkerOk>(replayed.value)) {
      Die("replay did not return the result: " + replayed.ToString());
    }
  }
  const double per_replay = MicrosSince(replay_start) / kReplays;
  Report("replay_n" + std::to_string(n), per_replay, "us/run");
  Report("replay_per_event_n" + std::to_string(n),
         per_replay / static_cast<double>(ctx.event_history.size()), "us/event");
}

int Main(int argc, char** argv) {
  guest::program = "stele_js_bench";
  guest::group = "js";
  if (argc < 2) Die("usage: stele_js_bench <dir with workflows.js and activities.js> [n...]");
  const std::filesystem::path dir = argv[1];
  std::vector<int> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {10, 100, 500};

  auto engine = js::CreateV8JsEngine();
  auto workflows = Must(
      js::LoadJsComponentFile(engine, dir / "workflows.js", "hello_js", js::JsFlavor::kWorkflow),
      "load workflows.js");
  auto activities = Must(js::LoadJsComponentFile(engine, dir / "activities.js",
                                                 "hello_js_activities", js::JsFlavor::kActivity),
                         "load activities.js");
  std::printf("stele js engine %s\n", engine->EngineId().c_str());

  HostCall();
  WorkflowInstantiate(workflows);
  RealmCreate(dir / "workflows.js");
  ActivityAttempt(activities);

  const char* tmp = std::getenv("STELE_BENCH_DIR");
  std::filesystem::path db = std::filesystem::path(tmp ? tmp : "/tmp") / "stele_js_bench.sqlite";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + suffix);
  {
    FanOutWorld world(db, workflows, activities);
    for (int n : sizes) FanOut(world, n);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + suffix);
  return 0;
}

}  // namespace
}  // namespace stele::bench

int main(int argc, char** argv) { return stele::bench::Main(argc, argv); }
