#!/usr/bin/env bash
# Installs the Debian 12 packages Stele needs to build and test, only when
# some are missing (idempotent; safe to run on every invocation).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config ccache       # toolchain
  libsqlite3-dev                                 # embedded storage backend
  libpq-dev                                      # PostgreSQL storage backend (libpq)
  postgresql-15                                  # throw-away test clusters (scripts/with_postgres.sh)
  nlohmann-json3-dev                             # JSON encoding of events, params, API
  libgtest-dev libgmock-dev                      # unit, conformance and crash tests
  libbenchmark-dev                               # bench/
  sqlite3                                        # inspecting databases in docs and tests
  jq                                             # the chaos run (tests/chaos) reads API responses
  libcpp-httplib-dev libssl-dev                  # HTTP/JSON API server and CLI client
  libtomlplusplus-dev                            # stele.toml config
  libcurl4-openssl-dev                           # HTTP client host function of wasm activities
  clang lld wasi-libc libclang-rt-14-dev-wasm32  # building wasm guests (sdk/, examples/wasm)
  libclang-rt-14-dev                             # libFuzzer and the sanitizer runtimes of clang (tests/fuzz)
  chromium                                       # web UI browser tests (tests/ui; node/npm come with Node.js)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -ne 0 ]; then
  echo "install_deps: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -q
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"
fi
"$(dirname "${BASH_SOURCE[0]}")/setup_v8.sh"  # V8 10.2 (libnode108) for src/runtime/wasm
