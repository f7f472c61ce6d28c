#!/usr/bin/env bash
# bench.sh [raw] [throughput] [growth]   the storage benchmarks (all by default)
# bench.sh retention                     retention: a backlog of finished
#                                        executions collected under traffic
# bench.sh workloads [warmup] [W1] ... [W5] [idle] [replay] [memory]
#                                        the W1–W5 workloads on libstele
# bench.sh workloads-postgres [warmup] [W1] ... [W5] [idle]
#                                        the same on a throw-away PostgreSQL
#                                        (scripts/with_postgres.sh, fsync on);
#                                        STELE_BENCH_PROCESSES=2: two engine
#                                        processes on one database
# bench.sh http [warmup] [W1] ... [W5] [idle]
#                                        the same through the HTTP API of the
#                                        stele server, with wasm workflows
#                                        (STELE_HTTP_GUESTS=js: JavaScript)
# bench.sh wasm [n...]                   WebAssembly costs (activity attempt,
#                                        fan-out of n, replay per run)
# bench.sh js [n...]                     the same for JavaScript (docs/js.md)
# bench.sh messages                      message round trip p50/p99 on libstele
#                                        (STELE_BENCH_MESSAGES round trips)
# bench.sh cron                          cron tick lateness at 1,000 schedules
#                                        (STELE_BENCH_CRON_SCHEDULES, _SECONDS, _MODE)
# Builds Release in build/bench (or $STELE_BENCH_BUILD_DIR) and runs the chosen benchmark. Figures go to
# stdout as `stele <bench> <metric> <value> <unit>` and to
# build/bench/results-<group>.txt; see BENCHMARKS.md for the knobs
# (STELE_BENCH_*, W1_N, ...) and for how to read them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install_deps.sh
build="${STELE_BENCH_BUILD_DIR:-build/bench}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTELE_BUILD_BENCH=ON >/dev/null
export STELE_BENCH_DIR="${STELE_BENCH_DIR:-$root/$build/tmp}"
mkdir -p "$STELE_BENCH_DIR"

group=storage
binary=$build/bench/stele_storage_bench
wrap=()
if [ "${1:-}" = "workloads" ]; then
  shift
  group=workloads
  binary=$build/bench/stele_workloads
elif [ "${1:-}" = "workloads-postgres" ]; then
  shift
  group=workloads-postgres-p${STELE_BENCH_PROCESSES:-1}
  binary=$build/bench/stele_workloads
  # A durable cluster (fsync, synchronous_commit on) on this disk; each run
  # creates its own database there.
  wrap=(env STELE_POSTGRES_DURABLE=1 bash scripts/with_postgres.sh
        bash -c 'STELE_BENCH_POSTGRES_URL="$STELE_TEST_POSTGRES_URL" exec "$@"' bench)
elif [ "${1:-}" = "http" ]; then
  shift
  group=http
  binary=$build/bench/http/stele_http_bench
elif [ "${1:-}" = "wasm" ]; then
  shift
  group=wasm
  binary=$build/bench/stele_wasm_bench
  set -- "$root/$build/examples/wasm" "$@"
elif [ "${1:-}" = "messages" ]; then
  shift
  group=messages
  binary=$build/bench/stele_messages_bench
elif [ "${1:-}" = "cron" ]; then
  shift
  group=cron
  binary=$build/bench/stele_cron_bench
elif [ "${1:-}" = "js" ]; then
  shift
  group=js
  binary=$build/bench/stele_js_bench
  set -- "$root/$build/examples/js" "$@"
fi
ninja -C "$build" -j "${STELE_JOBS:-$(nproc)}" "$(basename "$binary")"
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) nproc=$(nproc)" \
       "cpu=\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')\"" \
       "load=\"$(cut -d" " -f1-3 /proc/loadavg)\"" "args=\"$group $*\""
  "${wrap[@]}" "$binary" "$@"
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) end load=\"$(cut -d" " -f1-3 /proc/loadavg)\""
} | tee "$build/results-$group.txt"
