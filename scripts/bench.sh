#!/usr/bin/env bash
# bench.sh [raw] [throughput] [growth]: build Release in build/bench and run
# the storage benchmarks (all groups by default). Figures go to stdout as
# `stele <bench> <metric> <value> <unit>` and to build/bench/results.txt;
# see BENCHMARKS.md for the knobs (STELE_BENCH_*) and for how to read them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install_deps.sh
cmake -S "$root" -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTELE_BUILD_BENCH=ON >/dev/null
ninja -C build/bench -j "${STELE_JOBS:-$(nproc)}" stele_storage_bench
export STELE_BENCH_DIR="${STELE_BENCH_DIR:-$root/build/bench/tmp}"
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) nproc=$(nproc)" \
       "cpu=\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')\"" \
       "load=\"$(cut -d" " -f1-3 /proc/loadavg)\"" "args=\"$*\""
  build/bench/bench/stele_storage_bench "$@"
} | tee build/bench/results.txt
