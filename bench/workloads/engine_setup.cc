// The workload functions and the helpers the drivers share.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "bench/workloads/workloads.h"

namespace stele::bench {
namespace {

uint32_t EnvU32(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
}

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Task<Json> W1Workflow(WorkflowContext& ctx, Json /*params*/) {
  ExecutionResult r = co_await ctx.call(kStep, Json::array());
  co_return r.value;
}

// The step activity's work (returns 1), run inline.
Result<Json, Json> InlineStep() { return Json(1); }

Task<Json> W1StepsWorkflow(WorkflowContext& ctx, Json /*params*/) {
  ExecutionResult r = co_await ctx.step("step", InlineStep);
  co_return r.value;
}

Task<Json> W2StepsWorkflow(WorkflowContext& ctx, Json params) {
  const int steps = params.at(0).get<int>();
  int64_t sum = 0;
  for (int i = 0; i < steps; ++i) {
    ExecutionResult r = co_await ctx.step("step", InlineStep);
    sum += r.value.get<int64_t>();
  }
  co_return sum;
}

Task<Json> W2Workflow(WorkflowContext& ctx, Json params) {
  const int steps = params.at(0).get<int>();
  int64_t sum = 0;
  for (int i = 0; i < steps; ++i) {
    ExecutionResult r = co_await ctx.call(kStep, Json::array());
    sum += r.value.get<int64_t>();
  }
  co_return sum;
}

Task<Json> W3Workflow(WorkflowContext& ctx, Json params) {
  const int children = params.at(0).get<int>();
  JoinSet join_set = co_await ctx.new_join_set();
  for (int i = 0; i < children; ++i) {
    (void)co_await ctx.submit(join_set, kW1, Json::array());
  }
  int64_t sum = 0;
  for (int i = 0; i < children; ++i) {
    auto next = co_await ctx.join_next(join_set);
    if (next && next->result.ok()) sum += next->result.value.get<int64_t>();
  }
  co_return sum;
}

Task<Json> W4Workflow(WorkflowContext& ctx, Json params) {
  const int64_t sleep_ms = params.at(0).get<int64_t>();
  ExecutionResult t0 = co_await ctx.call(kNow, Json::array());
  (void)co_await ctx.sleep(std::chrono::milliseconds(sleep_ms));
  ExecutionResult t1 = co_await ctx.call(kNow, Json::array());
  co_return t1.value.get<int64_t>() - t0.value.get<int64_t>() - sleep_ms * 1000;
}

Task<Json> W5Workflow(WorkflowContext& ctx, Json params) {
  const int64_t sleep_ms = params.at(0).get<int64_t>();
  (void)co_await ctx.sleep(std::chrono::milliseconds(sleep_ms));
  // Built outside the co_await: g++ 12 miscompiles an initializer list
  // inside a co_await expression ("array used as initializer").
  Json args = Json::array();
  args.push_back(ctx.execution_id());
  ExecutionResult r = co_await ctx.call(kEffect, std::move(args));
  co_return r.value;
}

}  // namespace

Knobs Knobs::FromEnv(const std::string& self) {
  Knobs k;
  k.warmup_n = EnvU32("WARMUP_N", k.warmup_n);
  k.w1_n = EnvU32("W1_N", k.w1_n);
  k.w1_conc = EnvU32("W1_CONC", k.w1_conc);
  k.w2_steps = EnvU32("W2_STEPS", k.w2_steps);
  k.w3_children = EnvU32("W3_CHILDREN", k.w3_children);
  k.w4_n = EnvU32("W4_N", k.w4_n);
  k.w4_sleep_ms = EnvU32("W4_SLEEP_MS", k.w4_sleep_ms);
  k.w5_n = EnvU32("W5_N", k.w5_n);
  k.w5_sleep_ms = EnvU32("W5_SLEEP_MS", k.w5_sleep_ms);
  k.w5_kill_after_ms = EnvU32("W5_KILL_AFTER_MS", k.w5_kill_after_ms);
  k.w5_down_ms = EnvU32("W5_DOWN_MS", k.w5_down_ms);
  k.repeat = std::max(1u, EnvU32("STELE_BENCH_REPEAT", k.repeat));
  const char* postgres_url = std::getenv("STELE_BENCH_POSTGRES_URL");
  if (postgres_url != nullptr) k.postgres_url = postgres_url;
  k.processes = std::clamp(EnvU32("STELE_BENCH_PROCESSES", k.processes), 1u, 2u);
  const char* dir = std::getenv("STELE_BENCH_DIR");
  k.dir = (dir && *dir) ? dir : (std::filesystem::temp_directory_path() / "stele-workloads");
  std::filesystem::create_directories(k.dir);
  k.self = self;
  return k;
}

Result<std::unique_ptr<Engine>, Error> OpenBenchEngine(const DbTarget& db,
                                                       const std::string& effects_path) {
  EngineOptions options;
  if (db.is_postgres()) {
    STELE_ASSIGN_OR_RETURN(options.pool, pg::OpenPool(db.postgres_conninfo));
  } else {
    options.sqlite_path = db.sqlite_path;
    options.sqlite_synchronous_full = true;  // durability as shipped
  }
  options.max_concurrency = 4096;  // W1 runs all 2,000 at once
  options.batch_size = 256;
  // STELE_BENCH_WORKFLOW_CONCURRENCY: workflow slots other than the default.
  options.max_workflow_concurrency =
      EnvU32("STELE_BENCH_WORKFLOW_CONCURRENCY", options.max_workflow_concurrency);
  STELE_ASSIGN_OR_RETURN(auto engine, Engine::Open(options));
  STELE_TRY(engine->RegisterActivity(
      kStep, [](ActivityContext&, const Json&) -> ActivityResult { return Json(1); }));
  STELE_TRY(engine->RegisterActivity(
      kNow, [](ActivityContext&, const Json&) -> ActivityResult { return Json(NowMicros()); }));
  STELE_TRY(engine->RegisterActivity(
      kEffect, [effects_path](ActivityContext&, const Json& params) -> ActivityResult {
        // O_APPEND keeps concurrent lines whole; a SIGKILL after write()
        // keeps the line (page cache), which is what "ran" means here.
        const std::string line = params.at(0).get<std::string>() + "\n";
        int fd = ::open(effects_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) return Unexpected(Json("cannot open effects file"));
        ssize_t written = ::write(fd, line.data(), line.size());
        ::close(fd);
        if (written != static_cast<ssize_t>(line.size())) return Unexpected(Json("short write"));
        return Json(1);
      }));
  STELE_TRY(engine->RegisterWorkflow(kW1, W1Workflow));
  STELE_TRY(engine->RegisterWorkflow(kW2, W2Workflow));
  STELE_TRY(engine->RegisterWorkflow(kW1Steps, W1StepsWorkflow));
  STELE_TRY(engine->RegisterWorkflow(kW2Steps, W2StepsWorkflow));
  STELE_TRY(engine->RegisterWorkflow(kW3, W3Workflow));
  STELE_TRY(engine->RegisterWorkflow(kW4, W4Workflow));
  STELE_TRY(engine->RegisterWorkflow(kW5, W5Workflow));
  STELE_TRY(engine->Start());
  return engine;
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

uint64_t CurrentRssBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(rank);
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

}  // namespace stele::bench
