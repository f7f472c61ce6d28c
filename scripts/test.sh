#!/usr/bin/env bash
# The whole test suite, as CI runs it (2 cores, a cold compiler cache, a
# 90-minute limit; every configuration is a full compile, so there are
# three):
#   1. ASan+UBSan build with warnings as errors; every ctest label: unit to
#      chaos, the browser tests and the multi-node ones. A separate
#      unsanitized build would run the same tests and catch less;
#      `./scripts/run.sh` and `./scripts/bench.sh` build that configuration.
#   2. TSan build of the threaded modules; their test binaries.
#   3. clang libFuzzer build of tests/fuzz only; each target fuzzes for 20 s
#      (scripts/fuzz.sh, label `fuzz`).
# The benchmarks (compiled, not run), the TSan and the libFuzzer builds
# run at the lowest CPU priority while the ASan tests run: those mostly wait (on fsync, child processes, timers),
# so the compiles take the idle cores instead of following them.
# Installs missing Debian packages first. Prints each step's duration.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install_deps.sh

export CTEST_OUTPUT_ON_FAILURE=1
# CI runs everything: a test that would skip for a missing tool, guest or
# server fails instead (tests/ui, the wasm and e2e tests, the chaos run,
# and the PostgreSQL suites, which run under scripts/with_postgres.sh).
export STELE_REQUIRE_UI_TESTS=1
export STELE_REQUIRE_WASM=1
export STELE_REQUIRE_POSTGRES_TESTS=1
jobs="${STELE_JOBS:-$(nproc)}"
failed=0
started=$SECONDS
step() { echo "=== $1 ($((SECONDS - started)) s since start) ==="; }

# Line tables only (-g1): sanitizer reports and backtraces keep file:line,
# and the builds take a quarter less time than with full debug info.
# Unity builds (cmake/stele.cmake, STELE_UNITY_BUILD): most of a file's
# compile time goes to the templates (gtest, nlohmann/json, the standard
# library) that every file of a target compiles again; batches of 8 files
# compile them once (the executor's tests: 94 -> 50 CPU s).
ci_flags="-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
unity="-DSTELE_UNITY_BUILD=ON"

# TSan covers the code with threads of its own, and their test binaries
# only: storage (SQLite's writer thread and read pool, PostgreSQL's
# listener and notice threads), the executor (lock loop, watchdog, worker
# pool, cancel registry), the replay engine's concurrency tests (warm runs,
# response hand-off) and libstele's engine. V8 is not built with TSan, so
# nothing that loads it runs here. The rest (the replay engine's
# scenarios, conformance, crash and CLI suites) runs under ASan in stage 1:
# compiling all of it a third time does not fit CI's 90 minutes.
tsan_tests="stele_storage_sqlite_tests stele_storage_concurrency_tests stele_storage_postgres_tests
  stele_executor_tests stele_executor_concurrency_tests stele_runtime_workflow_concurrency_tests
  stele_engine_tests"

step "asan+ubsan (-Werror): build"
bash scripts/build.sh build/ci-asan -DSTELE_WERROR=ON -DSTELE_REQUIRE_WASM=ON \
  -DSTELE_SANITIZE=address -DSTELE_BENCH_OUTSIDE_ALL=ON "$unity" "$ci_flags"

step "benchmark, TSan and libFuzzer builds: started in the background (nice 19, log build/ci-background.log)"
(
  # The benchmarks are only compiled (and linked), so that they keep
  # building; scripts/bench.sh runs them in a Release build.
  nice -n 19 ninja -C build/ci-asan -j "$jobs" stele_benchmarks
  STELE_TARGETS="$(echo $tsan_tests)" nice -n 19 bash scripts/build.sh build/ci-tsan \
    -DSTELE_WERROR=ON -DSTELE_SANITIZE=thread -DSTELE_BUILD_BENCH=OFF "$unity" "$ci_flags"
  STELE_FUZZ_BUILD_ONLY=1 nice -n 19 bash scripts/fuzz.sh build/ci-fuzz
) > build/ci-background.log 2>&1 &
background=$!

# The PostgreSQL tests need a server: the ctest runs go under a throw-away
# cluster (scripts/with_postgres.sh sets STELE_TEST_POSTGRES_URL).
# detect_stack_use_after_return is off by default in ASan: a test fixture
# that used a dead stack frame once passed CI that way. It costs little
# (user+system CPU: stele_executor_tests 1.14 -> 1.38 s, stele_engine_tests
# 1.03 -> 1.52 s, of some 16 s each spent mostly waiting), so every ASan
# test, and every process a test starts, runs with it.
step "asan+ubsan: every test"
ASAN_OPTIONS="detect_stack_use_after_return=1" \
  bash scripts/with_postgres.sh ctest --test-dir build/ci-asan -j "$jobs" --timeout 900 || failed=1

step "benchmark, TSan and libFuzzer builds: waiting"
if ! wait "$background"; then
  tail -n 60 build/ci-background.log
  echo "test.sh: a background build failed (build/ci-background.log)" >&2
  exit 1
fi

step "tsan: the threaded modules' tests"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  bash scripts/with_postgres.sh ctest --test-dir build/ci-tsan -j "$jobs" --timeout 900 \
    -R "^($(echo $tsan_tests | tr ' ' '|'))$" || failed=1

step "fuzz: every target"
bash scripts/fuzz.sh build/ci-fuzz || failed=1

step "done"
if [ "$failed" -ne 0 ]; then
  echo "test.sh: FAILED" >&2
  exit 1
fi
echo "test.sh: all stages passed"
