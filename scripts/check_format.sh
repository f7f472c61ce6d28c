#!/usr/bin/env bash
# Fails when a C or C++ source of the repository is not formatted as
# .clang-format says (clang-format 14, Debian's clang-format package), and
# names each such file. `scripts/check_format.sh --fix` formats them.
#
# Usage: scripts/check_format.sh [--fix] [project-root]
set -euo pipefail

fix=0
if [[ "${1:-}" == "--fix" ]]; then fix=1; shift; fi
root="${1:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"}"
cd "${root}"
if ! command -v clang-format >/dev/null; then
  echo "format: clang-format is not installed (scripts/install_deps.sh installs it)" >&2
  exit 2
fi

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h' '*.c' '*.cpp' | grep -v '^build/')
else
  mapfile -t files < <(find src include tests bench examples sdk -type f \
                         \( -name '*.cc' -o -name '*.h' -o -name '*.c' -o -name '*.cpp' \) | sort)
fi

if [[ ${fix} -eq 1 ]]; then
  clang-format -i "${files[@]}"
  echo "format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! clang-format --dry-run -Werror "${f}" >/dev/null 2>&1; then bad+=("${f}"); fi
done
if [[ ${#bad[@]} -ne 0 ]]; then
  printf '%s: not formatted as .clang-format says\n' "${bad[@]}"
  echo "format: ${#bad[@]} of ${#files[@]} files differ; run scripts/check_format.sh --fix"
  exit 1
fi
echo "format: OK (${#files[@]} files checked)"
