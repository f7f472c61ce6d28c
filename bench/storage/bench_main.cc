// stele_storage_bench: throughput and growth of the SQLite storage backend,
// next to a plain-SQLite baseline measured by the same binary on the same
// disk. See BENCHMARKS.md for the figures and how to read them.
//
// Usage: stele_storage_bench [raw] [throughput] [growth] [retention]
//        (default: the first three; retention only when named)
// Knobs (environment):
//   STELE_BENCH_DIR          where the database files go (default ./bench-tmp)
//   STELE_BENCH_SCALE        multiplies every operation count (default 1)
//   STELE_BENCH_THREADS      concurrent callers of the concurrent runs, comma
//                            separated (default 8,64)
//   STELE_BENCH_GROWTH_N     finished executions of the growth store (default 1000000)
//   STELE_BENCH_GROWTH_SYNC  normal (default) | full, for the growth latencies
//   STELE_BENCH_FILL_THREADS threads filling the growth store (default 8)
//   STELE_BENCH_KEEP=1       keep (and later reuse) the filled growth store
//   STELE_BENCH_PRAGMAS      extra PRAGMAs of the stores, "name=value,..."
//   STELE_BENCH_RETENTION_N / _RATE / _SECONDS / _BATCH
//                            the retention bench (retention_bench.cc)
// Output: one line per figure, `stele <bench> <metric> <value> <unit>`.
#include "bench/storage/bench_main.h"

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  using namespace stele::bench;  // NOLINT: benchmark driver
  std::set<std::string> groups;
  for (int i = 1; i < argc; ++i) groups.insert(argv[i]);
  auto enabled = [&](const char* group) { return groups.empty() || groups.count(group) > 0; };
  std::vector<int> threads;
  {
    const char* env = std::getenv("STELE_BENCH_THREADS");
    std::string list = env && *env ? env : "8,64";
    for (size_t pos = 0; pos < list.size();) {
      size_t comma = list.find(',', pos);
      if (comma == std::string::npos) comma = list.size();
      const int n = std::atoi(list.substr(pos, comma - pos).c_str());
      if (n > 1) threads.push_back(n);
      pos = comma + 1;
    }
  }

  if (enabled("raw")) {
    for (Sync sync : {Sync::kFull, Sync::kNormal}) RunRawSqliteBench(sync);
  }
  if (enabled("throughput")) {
    for (Sync sync : {Sync::kFull, Sync::kNormal}) {
      RunThroughputBench(sync, 1);
      for (int n : threads) RunThroughputBench(sync, n);
    }
  }
  if (enabled("growth")) RunGrowthBench();
  if (groups.count("retention") > 0) RunRetentionBench();
  return 0;
}
