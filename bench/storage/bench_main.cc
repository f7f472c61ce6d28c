// stele_storage_bench: throughput and growth of the SQLite storage backend,
// next to a plain-SQLite baseline measured by the same binary on the same
// disk. See BENCHMARKS.md for the figures and how to read them.
//
// Usage: stele_storage_bench [raw] [throughput] [growth]   (default: all)
// Knobs (environment):
//   STELE_BENCH_DIR          where the database files go (default ./bench-tmp)
//   STELE_BENCH_SCALE        multiplies every operation count (default 1)
//   STELE_BENCH_THREADS      concurrent callers of the concurrent runs (default 8)
//   STELE_BENCH_GROWTH_N     finished executions of the growth store (default 1000000)
//   STELE_BENCH_GROWTH_SYNC  normal (default) | full, for the growth latencies
//   STELE_BENCH_FILL_THREADS threads filling the growth store (default 8)
//   STELE_BENCH_KEEP=1       keep (and later reuse) the filled growth store
// Output: one line per figure, `stele <bench> <metric> <value> <unit>`.
#include <set>
#include <string>

#include "bench/storage/bench_main.h"

int main(int argc, char** argv) {
  using namespace stele::bench;  // NOLINT: benchmark driver
  std::set<std::string> groups;
  for (int i = 1; i < argc; ++i) groups.insert(argv[i]);
  auto enabled = [&](const char* group) { return groups.empty() || groups.count(group) > 0; };
  const int threads = static_cast<int>(EnvInt("STELE_BENCH_THREADS", 8));

  if (enabled("raw")) {
    for (Sync sync : {Sync::kFull, Sync::kNormal}) RunRawSqliteBench(sync);
  }
  if (enabled("throughput")) {
    for (Sync sync : {Sync::kFull, Sync::kNormal}) {
      RunThroughputBench(sync, 1);
      RunThroughputBench(sync, threads);
    }
  }
  if (enabled("growth")) RunGrowthBench();
  return 0;
}
