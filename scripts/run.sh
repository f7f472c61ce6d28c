#!/usr/bin/env bash
# Stele's main job: build and run the demo on the embedded SQLite default.
# (Until the server lands, the demo creates executions and prints their logs.)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install_deps.sh
bash scripts/build.sh build/release -DCMAKE_BUILD_TYPE=Release -DSTELE_BUILD_BENCH=OFF
exec build/release/examples/demo/stele_demo "${STELE_DB:-stele-demo.sqlite}" "$@"
