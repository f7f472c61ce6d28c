#!/usr/bin/env bash
# bench.sh [raw] [throughput] [growth]   the storage benchmarks (all by default)
# bench.sh workloads [warmup] [W1] ... [W5] [idle]
#                                        the W1–W5 workloads on libstele
# Builds Release in build/bench and runs the chosen benchmark. Figures go to
# stdout as `stele <bench> <metric> <value> <unit>` and to
# build/bench/results-<group>.txt; see BENCHMARKS.md for the knobs
# (STELE_BENCH_*, W1_N, ...) and for how to read them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install_deps.sh
cmake -S "$root" -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTELE_BUILD_BENCH=ON >/dev/null
export STELE_BENCH_DIR="${STELE_BENCH_DIR:-$root/build/bench/tmp}"
mkdir -p "$STELE_BENCH_DIR"

group=storage
binary=build/bench/bench/stele_storage_bench
if [ "${1:-}" = "workloads" ]; then
  shift
  group=workloads
  binary=build/bench/bench/stele_workloads
fi
ninja -C build/bench -j "${STELE_JOBS:-$(nproc)}" "$(basename "$binary")"
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) nproc=$(nproc)" \
       "cpu=\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')\"" \
       "load=\"$(cut -d" " -f1-3 /proc/loadavg)\"" "args=\"$group $*\""
  "$binary" "$@"
} | tee "build/bench/results-$group.txt"
