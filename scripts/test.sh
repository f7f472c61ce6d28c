#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. release-ish build with warnings as errors; every ctest label;
#   2. ASan+UBSan build; every ctest label too (the multi-process, chaos
#      and browser tests included: about 3 minutes more than unit,
#      conformance and crash alone);
#   3. TSan build; every test binary that does not load V8;
#   4. clang libFuzzer build of tests/fuzz only; each target fuzzes for 20 s
#      (scripts/fuzz.sh, label `fuzz`).
# Installs missing Debian packages first.
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
  echo "=== stage: $name ==="
  bash scripts/build.sh "$dir" "$@"
  # `only`: a regex of test names, for stages that build a subset (ctest
  # counts a labelled test whose binary was not built as a failure).
  if ! ${wrap:-} ctest --test-dir "$dir" -j "$jobs" ${labels:+-L "$labels"} ${only:+-R "$only"} --timeout 900; then
    failed=1
  fi
}

# Line tables only (-g1): sanitizer reports and backtraces keep file:line,
# and the builds take a quarter less time than with full debug info.
ci_flags="-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"

# The PostgreSQL tests need a server: these stages run under a throw-away
# cluster (scripts/with_postgres.sh sets STELE_TEST_POSTGRES_URL).
wrap="bash scripts/with_postgres.sh" run_stage "default (-Werror)" build/ci-default "" -DSTELE_WERROR=ON -DSTELE_REQUIRE_WASM=ON "$ci_flags"
wrap="bash scripts/with_postgres.sh" run_stage "asan+ubsan" build/ci-asan "" -DSTELE_WERROR=ON -DSTELE_REQUIRE_WASM=ON -DSTELE_SANITIZE=address -DSTELE_BUILD_BENCH=OFF "$ci_flags"
# TSan runs every test binary that does not load V8 (libnode is not built
# with TSan, so its threads would only produce noise): storage (SQLite's
# writer thread, PostgreSQL's listener and notice threads), executor,
# replay engine, libstele, exec activities, the checker and the CLI's unit
# tests. The server, wasm and end-to-end tests run in the two stages above.
tsan_tests="stele_base_tests stele_core_tests stele_storage_tests stele_storage_sqlite_tests
  stele_storage_conformance_tests stele_storage_concurrency_tests stele_storage_crash_tests
  stele_storage_differential_tests stele_storage_postgres_tests stele_storage_check_tests
  stele_executor_tests stele_executor_concurrency_tests stele_runtime_exec_tests
  stele_runtime_workflow_tests stele_runtime_workflow_concurrency_tests
  stele_runtime_native_tests stele_runtime_native_crash_tests stele_runtime_native_fault_tests
  stele_db_main_tests stele_cli_tests"
only="^($(echo $tsan_tests | tr ' ' '|'))$" \
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" STELE_TARGETS="$(echo $tsan_tests)" \
wrap="bash scripts/with_postgres.sh" \
  run_stage "tsan" build/ci-tsan "" -DSTELE_WERROR=ON -DSTELE_SANITIZE=thread -DSTELE_BUILD_BENCH=OFF "$ci_flags"
echo "=== stage: fuzz ==="
bash scripts/fuzz.sh build/ci-fuzz || failed=1

if [ "$failed" -ne 0 ]; then
  echo "test.sh: FAILED" >&2
  exit 1
fi
echo "test.sh: all stages passed"
