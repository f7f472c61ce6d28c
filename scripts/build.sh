#!/usr/bin/env bash
# build.sh <build-dir> [extra cmake args...]: configure (once) and build with Ninja.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$1"; shift
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="${STELE_BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null
jobs="${STELE_JOBS:-$(nproc)}"
# STELE_TARGETS limits the build to some targets (e.g. the TSan stage).
ninja -C "$dir" -j "$jobs" ${STELE_TARGETS:-}
