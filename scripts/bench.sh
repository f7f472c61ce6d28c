#!/usr/bin/env bash
# bench.sh [raw] [throughput] [growth]: build Release in build/bench and run
# the storage benchmarks (all groups by default). Figures go to stdout as
# `stele <bench> <metric> <value> <unit>` and to build/bench/results.txt;
# see BENCHMARKS.md for the knobs (STELE_BENCH_*) and for how to read them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install_deps.sh
bash scripts/build.sh build/bench -DCMAKE_BUILD_TYPE=Release -DSTELE_BUILD_BENCH=ON
export STELE_BENCH_DIR="${STELE_BENCH_DIR:-$root/build/bench/tmp}"
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) nproc=$(nproc)" \
       "cpu=\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')\"" \
       "args=\"$*\""
  build/bench/bench/stele_storage_bench "$@"
} | tee build/bench/results.txt
