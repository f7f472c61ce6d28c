#!/usr/bin/env bash
# Fails when a file includes what its module may not, so that the layering
# of docs/architecture.md holds in the source and not only in the CMake
# target graph (a header-only include would slip past the linker).
#
# Usage: scripts/check_layering.sh [project-root]   (default: this script's ..)
#
# Each module (a folder of src/, storage and runtime by subfolder) lists
# the modules it may include, besides itself (the table below, lowest
# first). On top of it:
#   - Concrete storage backends (storage/memory, storage/sqlite,
#     storage/postgres) are named only by the backends themselves, by the
#     composition roots — src/engine/engine.cc (libstele opens SQLite by
#     default), src/server/server.cc, src/server/db_main.cc and
#     src/server/metrics.cc (SQLite writer statistics) — and by test code.
#   - The memory model (storage/memory) is also the oracle of the
#     consistency checker (storage/check), which replays logs through it.
#   - Test code (files named *_test.cc, *_test.h, *_test_util.*,
#     *_fixture.h, *_backends.cc, test_*.h/.cc, files under testdata/, and
#     every file of the test modules storage/testing, storage/differential
#     and storage/stress) may also include every backend and the test
#     support modules (storage/testing, storage/stress, storage/check); it
#     still may not include a module above its own.
#   - Public headers (include/stele) include only the standard library,
#     third-party headers and each other: never a module of src/.
#   - A quoted include containing "../" is rejected (it would dodge the
#     module path), and so is a file in a folder the table does not list (a
#     new folder must be placed here first).
# examples/, bench/ and tests/ are not checked.
#
# Only quoted includes whose first path component names a module count
# ("storage/db_connection.h"); <system> and third-party includes are ignored.
#
# Output: one "file:line: reason" per offence and exit 1, or
# "layering: OK (N files checked)" and exit 0. Needs only bash, find and awk.
# scripts/check_layering_test.sh plants violations in a scratch copy and
# expects this script to catch each.

set -euo pipefail

root="${1:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"}"
if [[ ! -d "${root}/src" ]]; then
  echo "layering: no src/ directory under ${root}" >&2
  exit 2
fi
cd "${root}"

{
  find src -type f \( -name '*.h' -o -name '*.cc' \)
  if [[ -d include ]]; then find include -type f -name '*.h'; fi
} | LC_ALL=C sort | awk '
BEGIN {
  # module: the modules it may include (itself always).
  allow["base"] = ""
  allow["core"] = "base"
  allow["storage"] = "base core"
  allow["storage/memory"] = "base core storage"
  allow["storage/sqlite"] = "base core storage"
  allow["storage/postgres"] = "base core storage"
  allow["storage/testing"] = "base core storage"
  allow["storage/differential"] = "base core storage storage/testing"
  allow["storage/stress"] = "base core storage storage/testing"
  allow["storage/check"] = "base core storage storage/memory"
  allow["executor"] = "base core storage"
  allow["runtime/workflow"] = "base core storage executor"
  allow["runtime/native"] = "base core storage executor runtime/workflow"
  allow["runtime/wasm"] = "base"
  allow["runtime/http"] = "base core"
  allow["runtime/webhook"] = "base core"
  allow["runtime/wasm_host"] = "base core storage executor runtime/workflow runtime/wasm runtime/http runtime/webhook"
  allow["runtime/exec"] = "base core storage executor"
  allow["runtime/js"] = "base core storage executor runtime/workflow runtime/wasm runtime/http runtime/webhook"
  allow["service"] = "base core storage executor runtime/workflow"
  allow["engine"] = "base core storage executor runtime/workflow runtime/native service"
  allow["http"] = "base"
  allow["server"] = "base core storage executor runtime/workflow runtime/native runtime/wasm " \
                    "runtime/wasm_host runtime/exec runtime/js runtime/http runtime/webhook service " \
                    "storage/check http"
  allow["cli"] = "base core server"
  for (m in allow) {
    n = split(allow[m], list, " ")
    for (i = 1; i <= n; i++) may[m, list[i]] = 1
    may[m, m] = 1
  }
  backend["storage/memory"] = backend["storage/sqlite"] = backend["storage/postgres"] = 1
  test_support["storage/testing"] = test_support["storage/stress"] = test_support["storage/check"] = 1
  test_module["storage/testing"] = test_module["storage/differential"] = test_module["storage/stress"] = 1
  # Files that compose the runtime from concrete backends.
  root_file["src/engine/engine.cc"] = 1
  root_file["src/server/server.cc"] = 1
  root_file["src/server/db_main.cc"] = 1
  root_file["src/server/metrics.cc"] = 1
  # First path components that make a quoted include a module include.
  top["base"] = top["core"] = top["storage"] = top["executor"] = top["runtime"] = 1
  top["service"] = top["engine"] = top["server"] = top["cli"] = top["http"] = 1
  files = 0
  offences = 0
}

# The module of a path relative to src/: "storage/sqlite/pool.h" is
# storage/sqlite, "storage/db_pool.h" is storage, "runtime/workflow/x.h" is
# runtime/workflow.
function module_of(path,    parts, k) {
  k = split(path, parts, "/")
  if (k == 1) return ""
  if ((parts[1] == "storage" || parts[1] == "runtime") && k > 2) return parts[1] "/" parts[2]
  return parts[1]
}

function is_test_code(file) {
  return file ~ /(_test\.cc|_test\.h|_test_util\.(h|cc)|_fixture\.h|_backends\.cc)$/ ||
         file ~ /\/test_[^\/]*\.(h|cc)$/ || file ~ /\/testdata\//
}

function report(file, line, reason) {
  print file ":" line ": " reason
  offences++
}

{
  file = $0
  files++
  public_header = file ~ /^include\//
  if (public_header) {
    from = "include"
  } else {
    from = module_of(substr(file, 5))  # Strip "src/".
    if (!(from in allow)) {
      report(file, 1, "file is in no known module; add its folder to scripts/check_layering.sh")
      next
    }
  }
  test_code = is_test_code(file) || (from in test_module)
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
    if (public_header) {
      report(file, line_no, "public header includes src/ module " to " (\"" path "\"); " \
                            "include/stele must stand alone")
      continue
    }
    if (!(to in allow)) {
      report(file, line_no, "include \"" path "\" is in no known module")
    } else if ((to in backend) && to != from && !test_code && !(file in root_file) &&
               !(from == "storage/check" && to == "storage/memory")) {
      report(file, line_no, from " may not name the backend " to " (\"" path "\"); only " \
                            "the composition roots and tests do")
    } else if ((from, to) in may) {
      # allowed
    } else if (test_code && ((to in backend) || (to in test_support))) {
      # test code composes backends
    } else if ((file in root_file) && (to in backend)) {
      # a composition root opens a backend
    } else {
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
