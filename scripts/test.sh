#!/usr/bin/env bash
# The whole test suite, as CI runs it (2 cores, a cold compiler cache, a
# 90-minute limit: every stage is a full compile, so there are three):
#   1. ASan+UBSan build with warnings as errors, benchmarks included (built,
#      not run); every ctest label: unit to chaos, the browser tests and
#      the multi-node ones. A separate unsanitized build would run the same
#      tests and catch less; `./scripts/run.sh` and `./scripts/bench.sh`
#      build that configuration.
#   2. TSan build of the concurrent parts; their test binaries.
#   3. clang libFuzzer build of tests/fuzz only; each target fuzzes for 20 s
#      (scripts/fuzz.sh, label `fuzz`).
# Installs missing Debian packages first. Prints each stage's duration.
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

run_stage() {
  local name="$1" dir="$2" labels="$3"; shift 3
  local started=$SECONDS
  echo "=== stage: $name ==="
  bash scripts/build.sh "$dir" "$@"
  echo "=== stage: $name: built in $((SECONDS - started)) s ==="
  # `only`: a regex of test names, for stages that build a subset (ctest
  # counts a labelled test whose binary was not built as a failure).
  if ! ${wrap:-} ctest --test-dir "$dir" -j "$jobs" ${labels:+-L "$labels"} ${only:+-R "$only"} --timeout 900; then
    failed=1
  fi
  echo "=== stage: $name: done in $((SECONDS - started)) s ==="
}

# Line tables only (-g1): sanitizer reports and backtraces keep file:line,
# and the builds take a quarter less time than with full debug info.
ci_flags="-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"

# The PostgreSQL tests need a server: these stages run under a throw-away
# cluster (scripts/with_postgres.sh sets STELE_TEST_POSTGRES_URL).
wrap="bash scripts/with_postgres.sh" run_stage "asan+ubsan (-Werror)" build/ci-asan "" -DSTELE_WERROR=ON -DSTELE_REQUIRE_WASM=ON -DSTELE_SANITIZE=address "$ci_flags"
# TSan covers the code with threads of its own, and their test binaries
# only: storage (SQLite's writer thread and read pool, PostgreSQL's
# listener and notice threads), the executor (lock loop, watchdog, worker
# pool, cancel registry), the replay engine's concurrency tests (warm runs,
# response hand-off) and libstele's engine. V8 is not built with TSan, so
# nothing that loads it runs here. The rest (the replay engine's
# scenarios, conformance, crash and CLI suites) runs under ASan in stage 1:
# compiling it a third time cost CI more than its 90 minutes allow.
tsan_tests="stele_storage_sqlite_tests stele_storage_concurrency_tests stele_storage_postgres_tests
  stele_executor_tests stele_executor_concurrency_tests stele_runtime_workflow_concurrency_tests
  stele_runtime_native_tests"
only="^($(echo $tsan_tests | tr ' ' '|'))$" \
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" STELE_TARGETS="$(echo $tsan_tests)" \
wrap="bash scripts/with_postgres.sh" \
  run_stage "tsan" build/ci-tsan "" -DSTELE_WERROR=ON -DSTELE_SANITIZE=thread -DSTELE_BUILD_BENCH=OFF "$ci_flags"
started=$SECONDS
echo "=== stage: fuzz ==="
bash scripts/fuzz.sh build/ci-fuzz || failed=1
echo "=== stage: fuzz: done in $((SECONDS - started)) s ==="

if [ "$failed" -ne 0 ]; then
  echo "test.sh: FAILED" >&2
  exit 1
fi
echo "test.sh: all stages passed"
