#!/usr/bin/env bash
# Installs the Debian 12 packages Stele needs to build and test, only when
# some are missing (idempotent; safe to run on every invocation).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config ccache       # toolchain
  libsqlite3-dev                                 # embedded storage backend
  zlib1g-dev                                     # compressed event rows of the SQLite backend
  libpq-dev                                      # PostgreSQL storage backend (libpq)
  postgresql-15                                  # throw-away test clusters (scripts/with_postgres.sh)
  nlohmann-json3-dev                             # JSON encoding of events, params, API
  libgtest-dev libgmock-dev                      # unit, conformance and crash tests
  libbenchmark-dev                               # bench/
  sqlite3                                        # inspecting databases in docs and tests
  jq                                             # the chaos run (tests/chaos) reads API responses
  libcpp-httplib-dev libssl-dev                  # HTTP client of the CLI, tests and bench; token hashes
  libboost1.81-dev                               # the server's HTTP layer (Boost.Beast/Asio, header only; src/http)
  libtomlplusplus-dev                            # stele.toml config
  libhowardhinnant-date-dev                      # time zones of cron schedules (date/tz on the OS tzdata; src/service/cron)
  tzdata                                         # the OS time zone database it reads
  libcurl4-openssl-dev                           # HTTP client host function of wasm activities
  clang lld wasi-libc libclang-rt-14-dev-wasm32  # building wasm guests (sdk/, examples/wasm)
  libclang-rt-14-dev                             # libFuzzer and the sanitizer runtimes of clang (tests/fuzz)
  clang-format                                   # the format check of the test command (scripts/check_format.sh)
  chromium                                       # web UI browser tests (tests/ui)
)
# Node.js and npm for the browser tests' playwright-core (tests/ui), from
# Debian only when no `node` is installed: a preinstalled Node.js (e.g. 20
# from NodeSource, which brings its own npm) conflicts with Debian's npm.
if ! command -v node >/dev/null; then packages+=(nodejs npm); fi

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

# npm packages for build and test tooling, exactly as pinned in each
# folder's package-lock.json: playwright-core for the browser tests
# (tests/ui), and the TypeScript compiler and esbuild that build the
# JavaScript examples (examples/js, docs/js.md). npm writes
# node_modules/.package-lock.json on every install: when it is newer than
# the lock file there is nothing to do. --prefer-offline takes a package
# from npm's cache when it holds it, so this works offline once it has run
# here.
npm_ci() {  # npm_ci FOLDER PACKAGE-THAT-MUST-BE-THERE
  local dir="$1" marker="$2"
  if [ ! -f "$dir/node_modules/.package-lock.json" ] ||
     [ ! -f "$dir/node_modules/$marker/package.json" ] ||
     [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    if ! command -v npm >/dev/null; then
      echo "install_deps: npm is missing (needed by $dir); install npm for your node" >&2
      exit 1
    fi
    echo "install_deps: npm ci in $dir (from package-lock.json)" >&2
    if ! (cd "$dir" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error >&2); then
      echo "install_deps: npm ci failed in $dir (offline with an empty npm cache?)" >&2
      exit 1
    fi
  fi
}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
npm_ci "$root/tests/ui" playwright-core
npm_ci "$root/examples/js" esbuild
