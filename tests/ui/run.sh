#!/usr/bin/env bash
# ctest entry of the web UI browser tests (docs/ui.md):
#   tests/ui/run.sh <path of stele> [wasm examples dir]
# Exit 77 (ctest: skipped, with a message) when node, chromium or
# playwright-core are not available; npm ci installs playwright-core from
# package-lock.json (works offline once the npm cache holds it).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
chromium="${STELE_CHROMIUM:-/usr/bin/chromium}"
if ! command -v node >/dev/null; then echo "SKIP: node is not installed"; exit 77; fi
if [ ! -x "$chromium" ]; then echo "SKIP: no chromium at $chromium (apt-get install chromium)"; exit 77; fi
if [ ! -f "$here/node_modules/playwright-core/package.json" ]; then
  if ! command -v npm >/dev/null; then echo "SKIP: npm is not installed (needed for playwright-core)"; exit 77; fi
  if ! (cd "$here" && npm ci --prefer-offline --no-audit --no-fund >&2); then
    echo "SKIP: npm ci failed in tests/ui (offline and not cached?)"; exit 77
  fi
fi
exec node "$here/ui_e2e.mjs" --stele "$1" ${2:+--wasm-dir "$2"}
