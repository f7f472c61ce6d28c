#!/usr/bin/env bash
# test_consumer.sh <stele-build-dir>: installs libstele from the build into
# a scratch prefix, builds examples/consumer against it with CMake
# (find_package(Stele)) and examples/hello/main.cc with pkg-config, and
# runs both: an outside project can use the installed library. Part of the
# test suite (ctest: libstele_consumer).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "$1" && pwd)"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/stele-consumer.XXXXXX")"
trap 'rm -rf "${scratch}"' EXIT

cmake --install "${build}" --prefix "${scratch}/prefix" >/dev/null
if find "${scratch}/prefix/include" -name '*.h' -print0 |
     xargs -0 grep -nE '#include "(base|core|storage|executor|runtime|service|engine|server|cli)/'; then
  echo "test_consumer: an installed header includes a header that is not installed" >&2
  exit 1
fi

expect_hello() {
  local program="$1" out
  out="$("${program}" "${scratch}/$(basename "${program}").sqlite")"
  if [[ "${out}" != '{"ok":"hello, Ada"}' ]]; then
    echo "test_consumer: ${program} printed: ${out}" >&2
    exit 1
  fi
}

# CMake: find_package(Stele) and Stele::stele only.
compiler="$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "${build}/CMakeCache.txt")"
cmake -S "${root}/examples/consumer" -B "${scratch}/cmake-build" -G Ninja \
  -DCMAKE_PREFIX_PATH="${scratch}/prefix" -DCMAKE_CXX_COMPILER="${compiler}" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "${scratch}/cmake-build" >/dev/null
expect_hello "${scratch}/cmake-build/hello"

# pkg-config: the flags of stele.pc only.
export PKG_CONFIG_PATH="${scratch}/prefix/lib/pkgconfig:${scratch}/prefix/lib/x86_64-linux-gnu/pkgconfig"
# shellcheck disable=SC2046
"${compiler}" -O1 -o "${scratch}/hello-pkg-config" "${root}/examples/hello/main.cc" \
  $(pkg-config --cflags --libs stele)
expect_hello "${scratch}/hello-pkg-config"
echo "test_consumer: the installed libstele builds and runs examples/hello (CMake and pkg-config)"
