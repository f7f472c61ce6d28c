// Replay cost and memory (issue 3's benchmarks beyond W1–W5), in-process on
// SQLite (synchronous=FULL):
//
// replay: a workflow records N events (N Persist events of ctx.random_u64),
//   then awaits a stub activity with keep-warm off, so it is unloaded. The
//   stub's result is written and the time until the workflow's result is
//   `resume`: the executor's lock (which loads all N events), the replay of
//   N events, the rest of the run and the Finished commit. Reported for
//   each N of REPLAY_SIZES (10,100,1000,10000) with the marginal cost per
//   event; a linear replay keeps that marginal cost flat as N grows.
// memory: RSS of a fresh engine process (a) with MEMORY_SLEEPERS (10,000)
//   workflows blocked on a one-hour sleep — they are unloaded, so they
//   should cost rows, not RAM — and (b) with MEMORY_WARM (1,000) workflows
//   kept warm on a stub call they await (each holds a suspended coroutine
//   and a worker thread). Each runs in its own child process
//   (`--memory-probe sleepers|warm`) so one does not inherit the other's
//   heap.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/workloads/child_process.h"
#include "bench/workloads/workloads.h"

namespace stele::bench {
namespace {

constexpr const char* kApprove = "bench:r/human.approve";      // a stub activity
constexpr const char* kReplay = "bench:r/workflows.replay";    // [n]: n Persists, then the stub
constexpr const char* kSleeper = "bench:r/workflows.sleeper";  // sleeps an hour
constexpr const char* kWarm = "bench:r/workflows.warm";        // awaits the stub

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "workloads: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T Must(Result<T, Error> result, const std::string& what) {
  if (!result) Fail(what + ": " + result.error().ToString());
  return std::move(*result);
}
void Must(Result<void, Error> result, const std::string& what) {
  if (!result) Fail(what + ": " + result.error().ToString());
}

Task<Json> ReplayWorkflow(WorkflowContext& ctx, Json params) {
  const uint64_t n = params.at(0).get<uint64_t>();
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += co_await ctx.random_u64(0, 1000);
  ExecutionResult approved = co_await ctx.call(kApprove, Json::array());
  co_return Json::array({sum, approved.ok()});
}

Task<Json> SleeperWorkflow(WorkflowContext& ctx, Json) {
  (void)co_await ctx.sleep(std::chrono::hours(1));
  co_return Json(true);
}

Task<Json> WarmWorkflow(WorkflowContext& ctx, Json) {
  ExecutionResult approved = co_await ctx.call(kApprove, Json::array());
  co_return Json(approved.ok());
}

std::unique_ptr<Engine> OpenEngine(const DbTarget& db, bool keep_warm,
                                   uint32_t workflow_concurrency) {
  EngineOptions options;
  options.sqlite_path = db.sqlite_path;
  options.sqlite_synchronous_full = true;
  options.max_concurrency = 4096;
  options.max_workflow_concurrency = workflow_concurrency;
  options.batch_size = 256;
  options.workflow_keep_warm = keep_warm;
  // Warm runs must not reach the end of their lease during the probe.
  if (keep_warm) options.workflow_lock_expiry = std::chrono::minutes(10);
  auto engine = Must(Engine::Open(options), "open engine");
  Must(engine->RegisterStub(kApprove), "register");
  Must(engine->RegisterWorkflow(kReplay, ReplayWorkflow), "register");
  Must(engine->RegisterWorkflow(kSleeper, SleeperWorkflow), "register");
  Must(engine->RegisterWorkflow(kWarm, WarmWorkflow), "register");
  Must(engine->Start(), "start");
  return engine;
}

// Waits until `id` is in `state`.
void WaitForState(Engine& engine, const std::string& id, const std::string& state) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (std::chrono::steady_clock::now() < deadline) {
    auto status = engine.GetStatus(id);
    if (status && status->state == state) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  Fail(id + " never reached " + state);
}

std::vector<uint32_t> ReplaySizes() {
  const char* text = std::getenv("REPLAY_SIZES");
  std::string sizes = (text && *text) ? text : "10,100,1000,10000";
  std::vector<uint32_t> out;
  std::stringstream stream(sizes);
  std::string item;
  while (std::getline(stream, item, ',')) out.push_back(static_cast<uint32_t>(std::stoul(item)));
  return out;
}

uint32_t EnvCount(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10)) : fallback;
}

}  // namespace

Metrics RunReplay(const Knobs& knobs) {
  Metrics metrics;
  double base_ms = 0;
  uint32_t base_n = 0;
  for (uint32_t n : ReplaySizes()) {
    FreshDb db(knobs, "replay" + std::to_string(n));
    auto engine = OpenEngine(db.target(), /*keep_warm=*/false, 256);
    const std::string id = Must(engine->Submit(kReplay, Params(n)), "submit");
    WaitForState(*engine, id, "BlockedByJoinSet");
    const std::string approval = id + ".o:1-approve_1";
    const double start = NowSeconds();
    Must(engine->Stub(approval, ExecutionResult::Ok(Json(true))), "stub " + approval);
    ExecutionResult result = Must(engine->WaitForResult(id, std::chrono::minutes(5)), "wait");
    const double resume_ms = (NowSeconds() - start) * 1000;
    if (!result.ok()) Fail("replay workflow failed: " + result.ToString());
    engine->Stop();
    const std::string suffix = "_n" + std::to_string(n);
    metrics["resume" + suffix] = {resume_ms, "ms"};
    if (base_n == 0) {
      base_n = n;
      base_ms = resume_ms;
    } else {
      // The cost of the extra events over the smallest history.
      metrics["per_event" + suffix] = {(resume_ms - base_ms) * 1000 / (n - base_n), "us"};
    }
  }
  return metrics;
}

int MemoryProbeMain(int argc, char** argv) {
  const Knobs knobs = Knobs::FromEnv(argv[0]);
  const std::string mode = argc >= 3 ? argv[2] : "";
  const bool warm = mode == "warm";
  if (!warm && mode != "sleepers") Fail("--memory-probe sleepers|warm");
  const uint32_t n = warm ? EnvCount("MEMORY_WARM", 1000) : EnvCount("MEMORY_SLEEPERS", 10000);
  FreshDb db(knobs, "memory_" + mode);
  auto engine = OpenEngine(db.target(), /*keep_warm=*/true, warm ? n + 16 : 256);
  // One workflow first, so the baseline holds the engine's fixed costs.
  const std::string first = Must(engine->Submit(warm ? kWarm : kSleeper, Json::array()), "submit");
  WaitForState(*engine, first, "BlockedByJoinSet");
  const uint64_t baseline = CurrentRssBytes();
  // Submitted from several threads so that group commit batches them.
  std::vector<std::string> ids(n - 1);
  std::atomic<uint32_t> next{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < 16; ++t) {
    submitters.emplace_back([&] {
      for (uint32_t i = next++; i < ids.size(); i = next++) {
        ids[i] = Must(engine->Submit(warm ? kWarm : kSleeper, Json::array()), "submit");
      }
    });
  }
  for (auto& thread : submitters) thread.join();
  for (const std::string& id : ids) WaitForState(*engine, id, "BlockedByJoinSet");
  const uint64_t loaded = CurrentRssBytes();
  std::printf("memory rss_mib=%.3f baseline_mib=%.3f per_workflow_kib=%.3f n=%u\n",
              static_cast<double>(loaded) / (1 << 20), static_cast<double>(baseline) / (1 << 20),
              (static_cast<double>(loaded) - static_cast<double>(baseline)) / 1024 /
                  static_cast<double>(n - 1),
              n);
  std::fflush(stdout);
  // Exit without a graceful stop: unlocking 1,000 warm runs is not measured.
  std::_Exit(0);
}

Metrics RunMemory(const Knobs& knobs) {
  Metrics metrics;
  for (const char* mode : {"sleepers", "warm"}) {
    ChildProcess child({knobs.self, "--memory-probe", mode});
    auto line = child.WaitFor("memory");
    if (!line) Fail(std::string("memory probe ") + mode + " printed nothing");
    const std::string m = mode;
    metrics["rss_" + m] = {FieldAfter(*line, "rss_mib"), "MiB"};
    metrics["per_workflow_" + m] = {FieldAfter(*line, "per_workflow_kib"), "KiB"};
    metrics["count_" + m] = {FieldAfter(*line, " n"), "wf"};
  }
  return metrics;
}

}  // namespace stele::bench
