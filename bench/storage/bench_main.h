// The benchmark groups of stele_storage_bench (see bench_main.cc).
#pragma once

#include "bench/storage/bench_util.h"

namespace stele::bench {

void RunRawSqliteBench(Sync sync);
void RunThroughputBench(Sync sync, int threads);
void RunGrowthBench();
void RunRetentionBench();

}  // namespace stele::bench
