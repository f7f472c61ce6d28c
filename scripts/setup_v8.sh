#!/usr/bin/env bash
# Provides V8 10.2 (Debian 12's libnode108 + libnode-dev) for src/runtime/wasm.
#
# Stele embeds V8 through its own API only (v8.h, libplatform); libnode.so.108
# is simply the Debian package that ships it. Two ways, tried in order:
#   1. libnode-dev is already installed, or apt can install it: use /usr.
#   2. apt cannot (a preinstalled Node.js from another source conflicts with
#      libnode108): `apt-get download` both packages and unpack them with
#      dpkg-deb -x into <repo>/build/third_party/libnode. cmake/FindV8.cmake
#      looks there first and the binaries get an RPATH to its lib dir.
# Never mix headers and library: another Node's /usr/include/node holds a
# different V8; FindV8 checks that v8-version.h says 10.2.
#
# Idempotent: does nothing when the local prefix or the package is present.
# Usage: scripts/setup_v8.sh [prefix]   (default: <repo>/build/third_party/libnode)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${1:-${root}/build/third_party/libnode}"
stamp="${prefix}/.stele-libnode-18.20"

if [ -f "${stamp}" ]; then exit 0; fi
if dpkg-query -W -f='${Status}' libnode-dev 2>/dev/null | grep -q "install ok installed"; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

# libnode108's shared-library dependencies (its JavaScript dependencies such
# as node-acorn only matter to Node itself). Install those that are missing.
runtime_deps=(libbrotli1 libc-ares2 libicu72 libnghttp2-14 libssl3 libuv1 zlib1g)
missing=()
for p in "${runtime_deps[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# --no-remove: apt must never uninstall a package (a preinstalled Node.js
# conflicts with libnode108) to satisfy these installs; when it would have
# to, the simulation fails and the package is unpacked instead (below).
if $SUDO apt-get -o DPkg::Lock::Timeout=600 install --no-remove -s -q libnode-dev >/dev/null 2>&1; then
  echo "setup_v8: installing libnode-dev with apt" >&2
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install --no-remove -y -q --no-install-recommends libnode-dev
  exit 0
fi

if [ ${#missing[@]} -ne 0 ]; then
  echo "setup_v8: installing libnode108 runtime dependencies ${missing[*]}" >&2
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install --no-remove -y -q --no-install-recommends "${missing[@]}"
fi

echo "setup_v8: apt cannot install libnode-dev here; unpacking it into ${prefix}" >&2
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
chmod 755 "${tmp}"   # apt's _apt user downloads into it
(cd "${tmp}" && apt-get download -q libnode108 libnode-dev)
rm -rf "${prefix}"
mkdir -p "${prefix}"
for deb in "${tmp}"/*.deb; do dpkg-deb -x "${deb}" "${prefix}"; done
test -f "${prefix}/usr/include/node/v8-version.h"
test -f "${prefix}/usr/lib/x86_64-linux-gnu/libnode.so.108"
touch "${stamp}"
