// stele_wasm_bench: what running WebAssembly costs Stele per run.
//
//   host_call          a guest loop calling a cheap host function N times,
//                      minus the same loop without the call
//                      (host_call_guest.c): the cost of one crossing into
//                      the host and back, through the adapter
//   workflow_instantiate  instantiate fan_out.wasm with the "stele"
//                      imports and drop it, calling nothing: the fixed cost
//                      of a workflow run without the instance pool
//   workflow_start_pooled  the same through the workers' instance pool
//                      (instance_pool.h): bind a warm instance to the run's
//                      imports, then restore it to its checkpoint
//   activity_attempt   instantiate square_activity.wasm with the WASI and
//                      HTTP imports, `_initialize`, call the export, drop —
//                      one wasm activity attempt without the database, and
//                      without the instance pool
//   activity_attempt_pooled  the same attempt through the instance pool
//   pool_rss_activity_full  resident memory a full pool (8 idle instances
//                      of square_activity.wasm, each after one attempt)
//                      adds to the process
//   fanout_e2e         sum-of-squares(n) (examples/wasm/fan_out.cc): n child
//                      activities submitted to one join set and awaited, on
//                      SQLite through the real executors
//   replay             the finished fan-out replayed from its recorded
//                      history (no database writes) by the workflow worker:
//                      the cost an `interrupt`-strategy workflow pays per
//                      wake-up
// STELE_BENCH_WASM_POOL=0 runs the fan-out and replays with instance pools of
// capacity 0 (a fresh instance per run, as before the pool).
//
// Usage: stele_wasm_bench <dir with the example .wasm files> [n...]
//        (STELE_BENCH_QUICK=1: few iterations, to check that it runs)
// Output: `stele wasm <metric> <value> <unit>` lines (BENCHMARKS.md).
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
#include "runtime/wasm/wasm_engine.h"
#include "runtime/wasm_host/guest_abi.h"
#include "runtime/wasm_host/http_host.h"
#include "runtime/wasm_host/instance_pool.h"
#include "runtime/wasm_host/wasi_host.h"
#include "runtime/wasm_host/wasm_activity_worker.h"
#include "runtime/wasm_host/wasm_component.h"
#include "runtime/wasm_host/wasm_workflow_worker.h"
#include "runtime/wasm_host/workflow_host.h"
#include "runtime/workflow/function_registry.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele::bench {
namespace {

namespace wh = runtime::wasm_host;
namespace wf = runtime::workflow;
using Clock = std::chrono::steady_clock;
using guest::CpuMicros;
using guest::Die;
using guest::MicrosSince;
using guest::Must;
using guest::Quick;
using guest::Report;

// VmRSS of this process.
double RssMiB() {
  FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return 0;
  char line[256];
  double kib = 0;
  while (std::fgets(line, sizeof line, status) != nullptr) {
    if (std::sscanf(line, "VmRSS: %lf kB", &kib) == 1) break;
  }
  std::fclose(status);
  return kib / 1024.0;
}

uint32_t CallU32(wasm::WasmInstance& instance, const char* name, uint32_t arg) {
  const wasm::Value args[] = {wasm::Value::I32(static_cast<int32_t>(arg))};
  auto result = Must(instance.Call(name, args), std::string("call ") + name);
  return static_cast<uint32_t>(result.at(0).AsI32());
}

void HostCall(const std::shared_ptr<wasm::WasmEngine>& engine, const std::filesystem::path& guest) {
  auto table = std::make_shared<wasm::ImportTable>();
  table->Add(
      "bench", "noop", wasm::FuncType{{wasm::ValType::kI32}, {wasm::ValType::kI32}},
      [](wasm::HostCall&,
         std::span<const wasm::Value> args) -> Result<std::vector<wasm::Value>, wasm::WasmError> {
        return std::vector<wasm::Value>{wasm::Value::I32(args[0].AsI32() + 1)};
      });
  auto bytes = Must(wh::ReadFileBytes(guest), "read " + guest.string());
  auto module = Must(engine->Compile(bytes, table->AsLimits()), "compile " + guest.string());
  auto instance = Must(engine->Instantiate(module, table), "instantiate " + guest.string());
  const uint32_t n = Quick() ? 10'000 : 10'000'000;
  // Both loops compute the same value: the host's noop(i) is i + 1.
  if (CallU32(*instance, "loop_host", 1000) != CallU32(*instance, "loop_empty", 1000)) {
    Die("loop_host and loop_empty disagree");
  }
  for (int i = 0; i < 3; ++i) {  // warm-up: tier-up to the optimising compiler
    CallU32(*instance, "loop_host", n / 10);
    CallU32(*instance, "loop_empty", n / 10);
  }
  auto start = Clock::now();
  CallU32(*instance, "loop_empty", n);
  const double empty = MicrosSince(start);
  start = Clock::now();
  CallU32(*instance, "loop_host", n);
  const double host = MicrosSince(start);
  Report("host_call_loop_empty", empty * 1000.0 / n, "ns/iteration");
  Report("host_call_loop_host", host * 1000.0 / n, "ns/iteration");
  Report("host_call", (host - empty) * 1000.0 / n, "ns/call");
}

void WorkflowInstantiate(const std::shared_ptr<const wh::WasmComponent>& workflows) {
  // The import table of a real run, bound to no run: nothing is called.
  wh::WorkflowHost host(nullptr, workflows->component_id);
  const auto imports = host.Imports();
  const int runs = Quick() ? 20 : 2000;
  auto once = [&] {
    Must(workflows->engine->Instantiate(workflows->module, imports), "instantiate");
  };
  for (int i = 0; i < runs / 10; ++i) once();  // warm-up
  auto start = Clock::now();
  for (int i = 0; i < runs; ++i) once();
  Report("workflow_instantiate", MicrosSince(start) / runs, "us/instance");
}

void WorkflowStartPooled(const std::shared_ptr<const wh::WasmComponent>& workflows) {
  wh::WorkflowHost host(nullptr, workflows->component_id);
  const auto imports = host.Imports();
  wh::InstancePool pool(workflows->engine, workflows->module, {}, nullptr);
  if (!pool.poolable()) Die("fan_out.wasm cannot be pooled: " + workflows->module->reset_blocker());
  const int runs = Quick() ? 20 : 20000;
  auto once = [&] { Must(pool.Acquire(imports), "acquire"); };
  for (int i = 0; i < runs / 10; ++i) once();  // warm-up
  auto start = Clock::now();
  for (int i = 0; i < runs; ++i) once();
  Report("workflow_start_pooled", MicrosSince(start) / runs, "us/run");
}

// Pools of this capacity in the fan-out's workers (STELE_BENCH_WASM_POOL).
size_t BenchPoolCapacity() {
  const char* pool = std::getenv("STELE_BENCH_WASM_POOL");
  return pool != nullptr && std::string(pool) == "0" ? 0 : wh::InstancePool::Options{}.capacity;
}

void ActivityAttempt(const std::shared_ptr<const wh::WasmComponent>& square, bool pooled) {
  const wh::DeclaredFunction* fn =
      square->Find(core::FunctionFqn::Parse("math:squares/api.square").value());
  if (fn == nullptr) Die("square_activity.wasm does not export math:squares/api.square");
  const int kRuns = Quick() ? 20 : 2000;
  auto table = std::make_shared<wasm::ImportTable>();
  wh::AddWasiImports(*table, std::make_shared<wh::WasiState>());
  wh::AddHttpImports(*table, std::make_shared<wh::HttpState>());
  const wh::InstancePool::Prepare initialize =
      [](wasm::WasmInstance& instance,
         const wasm::CallBudget& budget) -> Result<void, wasm::WasmError> {
    STELE_TRY(instance.Call("_initialize", {}, budget));
    return {};
  };
  wh::InstancePool pool(square->engine, square->module, {.capacity = pooled ? 8u : 0u}, initialize);
  auto once = [&] {
    auto lease = Must(pool.Acquire(table), "acquire");
    wasm::WasmInstance* instance = &lease.instance();
    const std::string params = "[12345]";
    uint32_t ptr = Must(wh::PlaceInGuest(*instance, params), "params");
    const wasm::Value args[] = {wasm::Value::I32(static_cast<int32_t>(ptr)),
                                wasm::Value::I32(static_cast<int32_t>(params.size()))};
    if (!instance->Call(fn->export_name, args)) Die("call");
  };
  for (int i = 0; i < kRuns / 20; ++i) once();  // warm-up: compile tiers, allocator
  auto start = Clock::now();
  for (int i = 0; i < kRuns; ++i) once();
  Report(pooled ? "activity_attempt_pooled" : "activity_attempt", MicrosSince(start) / kRuns,
         "us/attempt");
  if (!pooled) return;
  // The idle cost of a full pool: 8 attempts at once, then all returned.
  const double before = RssMiB();
  {
    wh::InstancePool full(square->engine, square->module, {}, initialize);
    std::vector<wh::InstancePool::Lease> leases;
    for (size_t i = 0; i < wh::InstancePool::Options{}.capacity; ++i) {
      leases.push_back(Must(full.Acquire(table), "acquire"));
    }
    leases.clear();
    if (full.idle() != wh::InstancePool::Options{}.capacity) Die("the pool did not keep them");
    Report("pool_rss_activity_full", RssMiB() - before, "MiB");
  }
}

// The fan-out on SQLite with one ExecTask per component, as the server runs it.
struct FanOutWorld {
  std::shared_ptr<storage::DbPool> pool;
  wf::MapFunctionRegistry registry;
  std::shared_ptr<wh::WasmWorkflowWorker> workflow_worker;
  std::vector<std::unique_ptr<executor::ExecTask>> tasks;
  executor::LocalDispatch dispatch;  // the tasks by function
  std::shared_ptr<const wh::WasmComponent> workflows;
  std::shared_ptr<const wh::WasmComponent> activities;

  FanOutWorld(const std::filesystem::path& db,
              std::shared_ptr<const wh::WasmComponent> wf_component,
              std::shared_ptr<const wh::WasmComponent> act_component)
      : workflows(std::move(wf_component)), activities(std::move(act_component)) {
    storage::sqlite::SqliteOptions sqlite{.path = db.string()};
    pool = std::shared_ptr<storage::DbPool>(
        Must(storage::sqlite::SqlitePool::Open(sqlite), "open sqlite"));
    workflows->RegisterIn(registry);
    activities->RegisterIn(registry);
    wf::WorkflowRunOptions run_options;
    run_options.blocking_strategy = wf::BlockingStrategy::kInterrupt;
    wh::WasmWorkflowWorkerDeps deps{
        std::shared_ptr<storage::DbConnection>(Must(pool->Connection(), "connection")),
        SystemClock::Shared(),
        &registry,
        &dispatch,
        nullptr,
        run_options};
    deps.instance_pool.capacity = BenchPoolCapacity();
    workflow_worker = std::make_shared<wh::WasmWorkflowWorker>(workflows, std::move(deps));
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
      dispatch.Add(ffqns, tasks.back().get());  // as the server does
    };
    add_task(workflow_worker, workflows->component_id);
    wh::WasmActivityOptions activity_options;
    activity_options.instance_pool.capacity = BenchPoolCapacity();
    add_task(std::make_shared<wh::WasmActivityWorker>(activities, std::move(activity_options)),
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
  const auto ffqn = core::FunctionFqn::Parse("math:squares/api.sum-of-squares").value();
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

  // Replay input: exactly what the executor would hand a new run.
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
  ctx.execution_deadline = SystemClock::Instance().Now() + std::chrono::hours(1);
  Report("fanout_runs_n" + std::to_string(n), static_cast<double>(runs), "runs");
  Report("fanout_history_n" + std::to_string(n), static_cast<double>(ctx.event_history.size()),
         "events");

  const int kReplays = Quick() ? 2 : 20;
  auto replay_start = Clock::now();
  for (int i = 0; i < kReplays; ++i) {
    auto replayed = world.workflow_worker->Run(ctx);
    if (!std::holds_alternative<executor::WorkerOk>(replayed.value))
      Die("replay did not return the result");
  }
  const double per_replay = MicrosSince(replay_start) / kReplays;
  Report("replay_n" + std::to_string(n), per_replay, "us/run");
  Report("replay_per_event_n" + std::to_string(n),
         per_replay / static_cast<double>(ctx.event_history.size()), "us/event");
}

int Main(int argc, char** argv) {
  guest::program = "stele_wasm_bench";
  guest::group = "wasm";
  if (argc < 2) {
    Die("usage: stele_wasm_bench <dir with fan_out.wasm and square_activity.wasm> [n...]");
  }
  const std::filesystem::path dir = argv[1];
  std::vector<int> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {10, 100, 500};

  auto engine = wasm::CreateV8Engine();
  if (engine == nullptr) Die("no wasm engine");
  auto workflows = Must(
      wh::LoadWasmComponentFile(engine, dir / "fan_out.wasm", "fan_out", wh::GuestKind::kWorkflow),
      "load fan_out.wasm");
  auto activities = Must(wh::LoadWasmComponentFile(engine, dir / "square_activity.wasm", "square",
                                                   wh::GuestKind::kActivity),
                         "load square_activity.wasm");
  std::printf("stele wasm engine %s\n", engine->EngineId().c_str());

#ifdef STELE_BENCH_HOST_CALL_WASM
  HostCall(engine, STELE_BENCH_HOST_CALL_WASM);  // built next to this binary
#else
  HostCall(engine, dir / "host_call_guest.wasm");
#endif
  WorkflowInstantiate(workflows);
  WorkflowStartPooled(workflows);
  ActivityAttempt(activities, /*pooled=*/false);
  ActivityAttempt(activities, /*pooled=*/true);
  Report("fanout_pool_capacity", static_cast<double>(BenchPoolCapacity()), "instances");

  const char* tmp = std::getenv("STELE_BENCH_DIR");
  std::filesystem::path db = std::filesystem::path(tmp ? tmp : "/tmp") / "stele_wasm_bench.sqlite";
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
