#!/usr/bin/env bash
# Runs the suites whose failures depend on thread timing (the engine's and
# the executors') many times under ASan with stack-use-after-return
# detection, stopping at the first failure. A single green run can hide a
# race that fails one run in five (docs/reliability.md, "Repeated runs"); this is
# part of the fresh-clone check before each stop.
#
# Usage: scripts/repeat_suites.sh [build-dir] [repeat]
#   build-dir defaults to build/ci-asan (an ASan build of scripts/test.sh),
#   repeat to 20.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${root}/build/ci-asan}"
repeat="${2:-20}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_stack_use_after_return=1}"

suites=(
  src/engine/stele_engine_tests
  src/executor/stele_executor_tests
  src/executor/stele_executor_concurrency_tests
)
for suite in "${suites[@]}"; do
  binary="${build}/${suite}"
  if [[ ! -x "${binary}" ]]; then
    echo "repeat_suites: ${binary} is not built (run scripts/test.sh first)" >&2
    exit 2
  fi
  start=$(date +%s)
  # --gtest_shuffle varies the order (and so the timing) between rounds.
  if ! "${binary}" --gtest_repeat="${repeat}" --gtest_shuffle --gtest_break_on_failure \
       --gtest_brief=1 >"${build}/repeat-$(basename "${suite}").log" 2>&1; then
    echo "repeat_suites: ${suite} failed; see ${build}/repeat-$(basename "${suite}").log" >&2
    tail -40 "${build}/repeat-$(basename "${suite}").log" >&2
    exit 1
  fi
  echo "repeat_suites: ${suite} passed ${repeat} rounds in $(( $(date +%s) - start )) s"
done
