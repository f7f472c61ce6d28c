#!/usr/bin/env bash
# Plants forbidden includes in a scratch copy of src/ and include/ and
# expects scripts/check_layering.sh to report each (and to pass on the
# untouched copy), so that the layering check cannot silently stop working.
#
# Usage: scripts/check_layering_test.sh [project-root]
set -euo pipefail

root="${1:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"}"
check="${root}/scripts/check_layering.sh"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/stele-layering.XXXXXX")"
trap 'rm -rf "${scratch}"' EXIT

fresh_copy() {
  rm -rf "${scratch}/tree"
  mkdir -p "${scratch}/tree"
  cp -r "${root}/src" "${root}/include" "${scratch}/tree/"
}

failures=0
fresh_copy
if ! out="$(bash "${check}" "${scratch}/tree" 2>&1)"; then
  echo "FAIL: the untouched copy does not pass:"; echo "${out}"
  exit 1
fi

# expect_caught <file> <include line> <expected text in the report>
expect_caught() {
  local file="$1" line="$2" expected="$3"
  fresh_copy
  mkdir -p "$(dirname "${scratch}/tree/${file}")"
  printf '%s\n' "${line}" >> "${scratch}/tree/${file}"
  if out="$(bash "${check}" "${scratch}/tree" 2>&1)"; then
    echo "FAIL: ${file} with ${line} passed the check"
    failures=$((failures + 1))
  elif ! grep -qF -- "${expected}" <<<"${out}"; then
    echo "FAIL: ${file} with ${line}: expected \"${expected}\" in:"; echo "${out}"
    failures=$((failures + 1))
  else
    echo "ok: ${file}: ${expected}"
  fi
}

expect_caught src/executor/exec_task.cc '#include "storage/sqlite/sqlite_pool.h"' \
  "executor may not name the backend storage/sqlite"
expect_caught src/runtime/workflow/workflow_run.cc '#include "runtime/wasm/wasm_engine.h"' \
  "runtime/workflow may not include runtime/wasm"
expect_caught src/cli/commands.cc '#include "storage/db_pool.h"' "cli may not include storage"
expect_caught src/executor/worker.h '#include "server/server.h"' "executor may not include server"
expect_caught src/runtime/native/workflow_worker.cc '#include "service/execution_service.h"' \
  "runtime/native may not include service"
expect_caught src/service/submit.cc '#include "storage/postgres/postgres_pool.h"' \
  "service may not name the backend storage/postgres"
expect_caught src/server/api.cc '#include "engine/sdk_test_util.h"' "server may not include engine"
expect_caught include/stele/engine.h '#include "base/log.h"' "public header includes src/ module base"
expect_caught src/storage/sqlite/append.cc '#include "storage/memory/memory_pool.h"' \
  "storage/sqlite may not name the backend storage/memory"
expect_caught src/core/ids.cc '#include "../storage/db_pool.h"' "relative include"
expect_caught src/newmodule/thing.cc '#include "base/result.h"' "file is in no known module"

if [[ ${failures} -ne 0 ]]; then
  echo "check_layering_test: ${failures} planted violation(s) not caught"
  exit 1
fi
echo "check_layering_test: every planted violation was caught"
