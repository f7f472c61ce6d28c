#!/usr/bin/env bash
# Stele's main job: build and run the libstele demo on the embedded SQLite
# default — a checkout workflow with a retried payment, a reservation and a
# fan-out of notifications, three orders end to end; it prints each result,
# every execution's final state and "RESULT: N of 3 orders placed".
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install_deps.sh
bash scripts/build.sh build/release -DCMAKE_BUILD_TYPE=Release -DSTELE_BUILD_BENCH=OFF
exec build/release/examples/demo/stele_demo "${STELE_DB:-stele-demo.sqlite}" "$@"
