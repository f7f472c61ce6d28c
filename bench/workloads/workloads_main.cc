// stele_workloads [warmup] [W1] [W2] [W3] [W4] [W5] [idle] [replay] [memory]: the benchmark
// workloads of bench/README.md (all by default). Knobs are the environment
// variables named there, plus STELE_BENCH_REPEAT (3),
// STELE_BENCH_DIR (scratch directory), STELE_BENCH_POSTGRES_URL (run on
// PostgreSQL: a fresh database per run on that server), STELE_BENCH_PROCESSES
// (1 or 2 engine processes) and STELE_BENCH_PG_CONNECTIONS (pool size per
// process, 16). Run through scripts/bench.sh.
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench/workloads/workloads.h"

namespace {

using stele::bench::Knobs;
using stele::bench::Metrics;

void Report(const std::string& workload, const std::vector<Metrics>& runs) {
  if (runs.empty()) return;
  for (const auto& [name, first] : runs.front()) {
    std::vector<double> values;
    for (const auto& run : runs) values.push_back(run.at(name).value);
    const double median = stele::bench::Percentile(values, 50);
    const double lo = stele::bench::Percentile(values, 0);
    const double hi = stele::bench::Percentile(values, 100);
    std::printf("stele %s %s %.3f %s\n", workload.c_str(), name.c_str(), median,
                first.unit.c_str());
    if (runs.size() > 1) {
      std::printf("stele %s %s_range %.3f-%.3f %s\n", workload.c_str(), name.c_str(), lo, hi,
                  first.unit.c_str());
    }
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--w5-engine") == 0) {
    return stele::bench::W5EngineMain(argc, argv);
  }
  if (argc >= 2 && std::strcmp(argv[1], "--memory-probe") == 0) {
    return stele::bench::MemoryProbeMain(argc, argv);
  }
  if (argc >= 2 && std::strcmp(argv[1], "--engine-only") == 0) {
    return stele::bench::EngineOnlyMain(argc, argv);
  }
  const Knobs knobs = Knobs::FromEnv(argv[0]);
  if (argc >= 2 && std::strcmp(argv[1], "--idle-probe") == 0) {
    auto metrics = stele::bench::RunIdle(knobs);
    std::printf("rss mib=%.3f\n", metrics.at("rss").value);
    return 0;
  }
  const std::map<std::string, std::function<Metrics(const Knobs&)>> workloads = {
      {"W1", stele::bench::RunW1},
      {"W2", stele::bench::RunW2},
      {"W1-steps", stele::bench::RunW1Steps},
      {"W2-steps", stele::bench::RunW2Steps},
      {"W3", stele::bench::RunW3},
      {"W4", stele::bench::RunW4},
      {"W5", stele::bench::RunW5},
      {"idle", stele::bench::RunIdleInFreshProcess},
      {"replay", stele::bench::RunReplay},
      {"memory", stele::bench::RunMemory},
  };
  if (knobs.postgres_url.empty() && knobs.processes > 1) {
    std::fprintf(stderr,
                 "STELE_BENCH_PROCESSES=2 needs STELE_BENCH_POSTGRES_URL (one SQLite "
                 "file serves one process)\n");
    return 2;
  }
  if (knobs.postgres_url.empty()) {
    std::printf("# backend=sqlite processes=%u\n", knobs.processes);
  } else {
    std::printf("# backend=postgres processes=%u %s\n", knobs.processes,
                stele::bench::pg::ServerSettings(knobs.postgres_url).c_str());
  }
  std::fflush(stdout);
  std::vector<std::string> selected;
  for (int i = 1; i < argc; ++i) selected.emplace_back(argv[i]);
  if (selected.empty()) {
    selected = {"warmup", "W1", "W1-steps", "W2", "W2-steps", "W3", "W4", "W5", "idle"};
    if (knobs.postgres_url.empty()) {
      selected.insert(selected.end(), {"replay", "memory"});
    }
  }
  for (const auto& name : selected) {
    if (name == "warmup") {
      stele::bench::RunWarmup(knobs);  // not reported
      continue;
    }
    auto it = workloads.find(name);
    if (it == workloads.end()) {
      std::fprintf(stderr,
                   "unknown workload `%s` (warmup W1 W1-steps W2 W2-steps W3 W4 W5 idle "
                   "replay memory)\n",
                   name.c_str());
      return 2;
    }
    std::vector<Metrics> runs;
    for (uint32_t r = 0; r < knobs.repeat; ++r) runs.push_back(it->second(knobs));
    Report(name, runs);
  }
  return 0;
}
