#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. release-ish build with warnings as errors; every ctest label;
#   2. ASan+UBSan build; every ctest label too (the multi-process, chaos
#      and browser tests included: about 3 minutes more than unit,
#      conformance and crash alone);
#   3. TSan build; the concurrency tests;
#   4. clang libFuzzer build of tests/fuzz only; each target fuzzes for 20 s
#      (scripts/fuzz.sh, label `fuzz`).
# Installs missing Debian packages first.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install_deps.sh

export CTEST_OUTPUT_ON_FAILURE=1
export STELE_REQUIRE_UI_TESTS=1  # tests/ui/run.sh fails, not skips, without node/chromium/playwright-core
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
wrap="bash scripts/with_postgres.sh" run_stage "default (-Werror)" build/ci-default "" -DSTELE_WERROR=ON "$ci_flags"
wrap="bash scripts/with_postgres.sh" run_stage "asan+ubsan" build/ci-asan "" -DSTELE_WERROR=ON -DSTELE_SANITIZE=address -DSTELE_BUILD_BENCH=OFF "$ci_flags"
only="^(stele_storage_concurrency_tests|stele_executor_concurrency_tests|stele_runtime_workflow_concurrency_tests)$" \
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" STELE_TARGETS="stele_storage_concurrency_tests stele_executor_concurrency_tests stele_runtime_workflow_concurrency_tests" \
  run_stage "tsan" build/ci-tsan "concurrency" -DSTELE_WERROR=ON -DSTELE_SANITIZE=thread -DSTELE_BUILD_BENCH=OFF "$ci_flags"
echo "=== stage: fuzz ==="
bash scripts/fuzz.sh build/ci-fuzz || failed=1

if [ "$failed" -ne 0 ]; then
  echo "test.sh: FAILED" >&2
  exit 1
fi
echo "test.sh: all stages passed"
