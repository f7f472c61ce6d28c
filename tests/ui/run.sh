#!/usr/bin/env bash
# ctest entry of the web UI browser tests (docs/ui.md):
#   tests/ui/run.sh <path of stele> [wasm examples dir]
# node, chromium and playwright-core (tests/ui/node_modules, installed from
# package-lock.json by scripts/install_deps.sh) must be present. Without
# them the script exits 77 (ctest: skipped, with the reason), for a
# developer running the tests by hand; with STELE_REQUIRE_UI_TESTS=1 (set by
# scripts/test.sh, i.e. CI) it fails instead, so that a green run always
# means the browser tests ran — the wasm cases included: ui_e2e.mjs fails
# them, rather than skipping, when the wasm examples are missing.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
chromium="${STELE_CHROMIUM:-/usr/bin/chromium}"
missing() {
  if [ "${STELE_REQUIRE_UI_TESTS:-0}" = 1 ]; then
    echo "FAIL: $1; STELE_REQUIRE_UI_TESTS=1 requires the browser tests to run (scripts/install_deps.sh installs it all)" >&2
    exit 1
  fi
  echo "SKIP: $1 (scripts/install_deps.sh installs it)"
  exit 77
}
command -v node >/dev/null || missing "node is not installed"
[ -x "$chromium" ] || missing "no chromium at $chromium"
[ -f "$here/node_modules/playwright-core/package.json" ] ||
  missing "playwright-core is not installed in tests/ui/node_modules"
[ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ] &&
  missing "tests/ui/node_modules is older than package-lock.json"
# The server resolves component paths against its temporary config folder.
wasm_dir="${2:-}"
if [ -d "$wasm_dir" ]; then wasm_dir="$(cd "$wasm_dir" && pwd)"; fi
exec node "$here/ui_e2e.mjs" --stele "$1" ${wasm_dir:+--wasm-dir "$wasm_dir"}
