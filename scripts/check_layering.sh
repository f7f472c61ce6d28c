#!/usr/bin/env bash
# Fails when a module includes a module above it, so that the dependency
# direction of docs/architecture.md holds in the source and not only in the
# CMake target graph (a header-only include would slip past the linker).
#
# Usage: scripts/check_layering.sh [project-root]   (default: this script's ..)
#
# Modules, lowest first:
#   base, core, storage (files directly in src/storage/), storage/memory,
#   storage/sqlite, storage/postgres, storage/testing, storage/differential,
#   storage/stress, storage/check, executor, runtime, service, server, cli
# A file may include its own module and modules below it, except:
#   - the storage backends (storage/memory, storage/sqlite, storage/postgres)
#     may include only base, core, storage and themselves, never each other;
#   - storage/testing may include base, core, storage and itself; the backends
#     only from files named *_backends.cc or *_test.cc, which compose the
#     backend matrix of the conformance suite;
#   - storage/differential (every backend against the memory model) and
#     storage/stress (concurrency and crash workloads on every backend) are
#     test compositions above storage/testing: they may include any storage
#     module except each other.
#   - storage/check (the consistency checker of `stele db check`) replays
#     logs through the memory model; its tests use the stress workload.
# examples/ and bench/ may include anything and are not checked.
#
# Only quoted includes whose first path component names a module count
# ("storage/db_connection.h"); <system> and third-party includes are ignored.
# Also rejected: a quoted include containing "../" (it would dodge the module
# path), and a file or include in a folder that is not listed above (a new
# folder must be placed in the order here first).
#
# Output: one "file:line: reason" per offence and exit 1, or
# "layering: OK (N files checked)" and exit 0. Needs only bash, find and awk.

set -euo pipefail

root="${1:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"}"
if [[ ! -d "${root}/src" ]]; then
  echo "layering: no src/ directory under ${root}" >&2
  exit 2
fi
cd "${root}"

find src -type f \( -name '*.h' -o -name '*.cc' \) | LC_ALL=C sort | awk '
BEGIN {
  n = split("base core storage storage/memory storage/sqlite storage/postgres " \
            "storage/testing storage/differential storage/stress storage/check executor " \
            "runtime service " \
            "server cli", \
            order, " ")
  for (i = 1; i <= n; i++) rank[order[i]] = i
  # First path components that make a quoted include a module include.
  top["base"] = top["core"] = top["storage"] = top["executor"] = 1
  top["runtime"] = top["service"] = top["server"] = top["cli"] = 1
  backend["storage/memory"] = backend["storage/sqlite"] = backend["storage/postgres"] = 1
  composition["storage/differential"] = composition["storage/stress"] = 1
  files = 0
  offences = 0
}

# The module of a path relative to src/: "storage/sqlite/pool.h" is
# storage/sqlite, "storage/db_pool.h" is storage, "runtime/workflow/x.h" is
# runtime.
function module_of(path,    parts, k) {
  k = split(path, parts, "/")
  if (k == 1) return ""
  if (parts[1] == "storage" && k > 2) return "storage/" parts[2]
  return parts[1]
}

function may_include(from, to, file) {
  if (from == to) return 1
  if (from in backend) return to == "base" || to == "core" || to == "storage"
  if (from == "storage/testing") {
    if (to == "base" || to == "core" || to == "storage") return 1
    return (to in backend) && file ~ /(_backends|_test)\.cc$/
  }
  if ((from in composition) && (to in composition)) return 0
  return rank[to] < rank[from]
}

function report(file, line, reason) {
  print file ":" line ": " reason
  offences++
}

{
  file = $0
  files++
  from = module_of(substr(file, 5))  # Strip "src/".
  if (!(from in rank)) {
    report(file, 1, "file is in no known module; add its folder to scripts/check_layering.sh")
    next
  }
  line_no = 0
  while ((getline text < file) > 0) {
    line_no++
    if (text !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
    split(text, quoted, "\"")
    path = quoted[2]
    if (path ~ /(^|\/)\.\.\//) {
      report(file, line_no, "relative include \"" path "\"; include by module path from src/")
      continue
    }
    split(path, parts, "/")
    if (!(parts[1] in top)) continue
    to = module_of(path)
    if (!(to in rank)) {
      report(file, line_no, "include \"" path "\" is in no known module")
    } else if (!may_include(from, to, file)) {
      report(file, line_no, from " may not include " to " (\"" path "\")")
    }
  }
  close(file)
}

END {
  if (offences > 0) {
    print "layering: " offences " offence(s) in " files " files checked"
    exit 1
  }
  print "layering: OK (" files " files checked)"
}
'
