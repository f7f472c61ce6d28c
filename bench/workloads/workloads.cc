// W1–W4, warm-up and idle: one engine per run, on a fresh database (plus
// the second engine process when STELE_BENCH_PROCESSES=2).
#include "bench/workloads/workloads.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace stele::bench {
namespace {

constexpr auto kResultTimeout = std::chrono::minutes(10);

[[noreturn]] void Die(const std::string& what, const Error& error) {
  std::fprintf(stderr, "workloads: %s: %s\n", what.c_str(), error.ToString().c_str());
  std::exit(1);
}

std::unique_ptr<Engine> MustOpen(const DbTarget& db, const std::string& effects = "") {
  auto engine = OpenBenchEngine(db, effects);
  if (!engine) Die("cannot open engine", engine.error());
  return std::move(*engine);
}

ExecutionResult MustWait(Engine& engine, const std::string& id) {
  auto result = engine.WaitForResult(id, kResultTimeout);
  if (!result) Die("waiting for " + id, result.error());
  return std::move(*result);
}

// Submits `n` executions of `ffqn(params)` from `concurrency` threads at
// once (group commit batches their transactions) and waits for every
// result. Returns the seconds from the first submit to the last result.
struct FanResult {
  double elapsed = 0;
  uint32_t failed = 0;
};
FanResult SubmitAndWaitAll(Engine& engine, const char* ffqn, const Json& params, uint32_t n,
                           uint32_t concurrency) {
  const uint32_t threads = std::clamp<uint32_t>(concurrency, 1, 128);
  std::atomic<uint32_t> next{0};
  std::atomic<uint32_t> failed{0};
  std::mutex mu;
  double last_result = 0;
  const double start = NowSeconds();
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (uint32_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      std::vector<std::string> mine;
      for (uint32_t i = next++; i < n; i = next++) {
        auto id = engine.Submit(ffqn, params);
        if (!id) Die("submit", id.error());
        mine.push_back(std::move(*id));
      }
      double local_last = 0;
      for (const auto& id : mine) {
        if (!MustWait(engine, id).ok()) ++failed;
        local_last = NowSeconds();
      }
      std::lock_guard lock(mu);
      last_result = std::max(last_result, local_last);
    });
  }
  for (auto& thread : pool) thread.join();
  return {last_result - start, failed.load()};
}

}  // namespace

Metrics RunWarmup(const Knobs& knobs) {
  FreshDb db(knobs, "warmup");
  SecondEngine second(knobs, db.target());
  auto engine = MustOpen(db.target());
  auto fan = SubmitAndWaitAll(*engine, kW1, Json::array(), knobs.warmup_n, knobs.warmup_n);
  engine->Stop();
  return {{"elapsed", {fan.elapsed, "s"}}};
}

namespace {

Metrics RunW1Of(const Knobs& knobs, const char* workflow) {
  FreshDb db(knobs, "w1");
  SecondEngine second(knobs, db.target());
  auto engine = MustOpen(db.target());
  auto fan = SubmitAndWaitAll(*engine, workflow, Json::array(), knobs.w1_n, knobs.w1_conc);
  engine->Stop();
  // On SQLite the WAL's size is a high-water mark of the run's commit bursts
  // (the file is reused, not shrunk, up to journal_size_limit), not a cost
  // per workflow: it is reported apart, and disk per workflow is the
  // database file once closing the engine has checkpointed and truncated it.
  const uint64_t wal = db.WalBytes();
  engine.reset();
  return {
      {"throughput", {static_cast<double>(knobs.w1_n - fan.failed) / fan.elapsed, "wf/s"}},
      {"elapsed", {fan.elapsed, "s"}},
      {"failed", {static_cast<double>(fan.failed), "wf"}},
      {"peak_rss", {static_cast<double>(PeakRssBytes()) / (1 << 20), "MiB"}},
      {"disk_per_workflow", {static_cast<double>(db.Bytes()) / knobs.w1_n, "B"}},
      {"wal_at_end", {static_cast<double>(wal) / (1 << 20), "MiB"}},
  };
}

Metrics RunW2Of(const Knobs& knobs, const char* workflow) {
  FreshDb db(knobs, "w2");
  SecondEngine second(knobs, db.target());
  auto engine = MustOpen(db.target());
  const double start = NowSeconds();
  auto id = engine->Submit(workflow, Json::array({knobs.w2_steps}));
  if (!id) Die("submit", id.error());
  ExecutionResult result = MustWait(*engine, *id);
  const double total_ms = (NowSeconds() - start) * 1000;
  engine->Stop();
  if (!result.ok()) std::fprintf(stderr, "W2 failed: %s\n", result.ToString().c_str());
  return {{"total", {total_ms, "ms"}}, {"per_step", {total_ms / knobs.w2_steps, "ms"}}};
}

}  // namespace

Metrics RunW1(const Knobs& knobs) { return RunW1Of(knobs, kW1); }
Metrics RunW2(const Knobs& knobs) { return RunW2Of(knobs, kW2); }
Metrics RunW1Steps(const Knobs& knobs) { return RunW1Of(knobs, kW1Steps); }
Metrics RunW2Steps(const Knobs& knobs) { return RunW2Of(knobs, kW2Steps); }

Metrics RunW3(const Knobs& knobs) {
  FreshDb db(knobs, "w3");
  SecondEngine second(knobs, db.target());
  auto engine = MustOpen(db.target());
  const double start = NowSeconds();
  auto id = engine->Submit(kW3, Json::array({knobs.w3_children}));
  if (!id) Die("submit", id.error());
  ExecutionResult result = MustWait(*engine, *id);
  const double total_ms = (NowSeconds() - start) * 1000;
  engine->Stop();
  if (!result.ok()) std::fprintf(stderr, "W3 failed: %s\n", result.ToString().c_str());
  return {{"total", {total_ms, "ms"}}, {"per_child", {total_ms / knobs.w3_children, "ms"}}};
}

Metrics RunW4(const Knobs& knobs) {
  FreshDb db(knobs, "w4");
  SecondEngine second(knobs, db.target());
  auto engine = MustOpen(db.target());
  const double start = NowSeconds();
  std::vector<std::string> ids;
  ids.reserve(knobs.w4_n);
  for (uint32_t i = 0; i < knobs.w4_n; ++i) {
    auto id = engine->Submit(kW4, Json::array({knobs.w4_sleep_ms}));
    if (!id) Die("submit", id.error());
    ids.push_back(std::move(*id));
  }
  std::vector<double> lateness_ms;
  lateness_ms.reserve(ids.size());
  for (const auto& id : ids) {
    ExecutionResult result = MustWait(*engine, id);
    if (result.ok()) lateness_ms.push_back(result.value.get<double>() / 1000.0);
  }
  const double elapsed = NowSeconds() - start;
  engine->Stop();
  return {
      {"p50", {Percentile(lateness_ms, 50), "ms"}},
      {"p99", {Percentile(lateness_ms, 99), "ms"}},
      {"max", {Percentile(lateness_ms, 100), "ms"}},
      {"elapsed", {elapsed, "s"}},
      {"failed", {static_cast<double>(ids.size() - lateness_ms.size()), "wf"}},
  };
}

Metrics RunIdle(const Knobs& knobs) {
  FreshDb db(knobs, "idle");
  auto engine = MustOpen(db.target());
  auto id = engine->Submit(kW1, Json::array());
  if (!id) Die("submit", id.error());
  MustWait(*engine, *id);
  const double rss = static_cast<double>(CurrentRssBytes()) / (1 << 20);
  engine->Stop();
  return {{"rss", {rss, "MiB"}}};
}

}  // namespace stele::bench
