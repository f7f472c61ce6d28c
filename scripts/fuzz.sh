#!/usr/bin/env bash
# fuzz.sh [build-dir] [seconds]: builds the libFuzzer targets of tests/fuzz
# with clang (-DSTELE_FUZZ=ON: ASan+UBSan+coverage on the libraries they
# link, nothing else of the tree) and runs each for `seconds` (default 20)
# from its committed corpus, as ctest tests with label `fuzz`. Prints the
# executions and corpus size per target. Exit 1 when a target crashed; the
# crashing input is in <build-dir>/tests/fuzz/<target>/artifacts/.
# scripts/test.sh runs it as its fuzz stage (docs/reliability.md).
# STELE_FUZZ_BUILD_ONLY=1: configure and build, run nothing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
dir="${1:-build/fuzz}"
seconds="${2:-${STELE_FUZZ_SECONDS:-20}}"
jobs="${STELE_JOBS:-$(nproc)}"

# Unity batches for the libraries, as in scripts/test.sh.
STELE_TARGETS=stele_fuzz bash scripts/build.sh "$dir" -DSTELE_FUZZ=ON \
  -DCMAKE_CXX_COMPILER=clang++ -DSTELE_BUILD_BENCH=OFF -DSTELE_FUZZ_SECONDS="$seconds" \
  -DSTELE_UNITY_BUILD=ON
[ "${STELE_FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0
rc=0
ctest --test-dir "$dir" -L fuzz -j "$jobs" --output-on-failure || rc=1
# One line per target from libFuzzer's final stats (-print_final_stats=1).
awk '/^[0-9]+\/[0-9]+ Testing: / { name = $3 }
     /stat::number_of_executed_units:/ { runs[name] = $2 }
     /stat::new_units_added:/ { added[name] = $2 }
     END { for (n in runs) printf "fuzz: %-28s %10d executions, %d new inputs\n", n, runs[n], added[n] }' \
  "$dir/Testing/Temporary/LastTest.log" | sort
exit "$rc"
