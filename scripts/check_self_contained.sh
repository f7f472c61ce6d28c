#!/usr/bin/env bash
# Fails when a file of the repository points to a document outside it: the
# repository must stand on its own, so code and docs cite only its own
# documents (docs/model.md, docs/storage_contract.md, bench/README.md, ...).
#
# Usage: scripts/check_self_contained.sh [project-root]   (default: this script's ..)
#
# Files: those git tracks when the root is a git checkout (git ls-files),
# otherwise every file under it except .git, build*/ at the top and
# node_modules; binary files are skipped, and so is this script (it holds
# the patterns). A hit is any of
#   - a path into the folder of background material kept beside the
#     checkout, relative or absolute;
#   - the names of the background documents kept there (the execution
#     model's reference, the seed's storage contract, the design notes, the
#     code-style notes), and the workload definitions anywhere but as
#     docs/workloads.md;
#   - a section citation of those documents.
# Citations of the repository's own docs (`docs/guest_abi.md §3`) are fine.
#
# Output: one "file:line: text" per hit and exit 1, or
# "self-contained: OK (N files checked)" and exit 0. Needs bash, git (when
# present), find, grep and awk.

set -euo pipefail

root="${1:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"}"
if [[ ! -d "${root}" ]]; then
  echo "self-contained: no directory ${root}" >&2
  exit 2
fi
cd "${root}"

self="scripts/check_self_contained.sh"
files=()
if command -v git >/dev/null 2>&1 && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  while IFS= read -r -d '' f; do
    [[ "${f}" == "${self}" || ! -f "${f}" ]] && continue
    files+=("${f}")
  done < <(git ls-files -z)
else
  while IFS= read -r -d '' f; do
    f="${f#./}"
    [[ "${f}" == "${self}" ]] && continue
    files+=("${f}")
  done < <(find . \( -path ./.git -o -path './build*' -o -name node_modules \) -prune \
                -o -type f -print0)
fi
if [[ ${#files[@]} -eq 0 ]]; then
  echo "self-contained: no files found under ${root}" >&2
  exit 2
fi

# Each name is written with one letter in brackets, so that this script
# does not itself contain the paths it looks for.
patterns='\.\./shar[e]d|/work/shar[e]d|reference/obelis[k]|obelis[k]\.md|seed/storag[e]\.rs'
patterns+='|DESIG[N]\.md|aesthetic[s]\.md|referenc[e] §|referenc[e] \(§|aesthetic[s] §'

hits="$(
  {
    printf '%s\0' "${files[@]}" | xargs -0 grep -n -I -H -E -- "${patterns}" || true
    # workloads.md is a hit unless it is docs/workloads.md.
    printf '%s\0' "${files[@]}" | xargs -0 grep -n -I -H -F -- 'workloads.md' |
      awk '{
        file = $0; sub(/:.*/, "", file)
        rest = substr($0, length(file) + 2)
        line = rest; sub(/:.*/, "", line)
        text = substr(rest, length(line) + 2)
        gsub(/docs\/workloads\.md/, "", text)
        if (text ~ /workloads\.md/) print $0
      }' || true
  } | sort -t: -k1,1 -k2,2n -u
)"

if [[ -n "${hits}" ]]; then
  while IFS= read -r hit; do
    file="${hit%%:*}"
    rest="${hit#*:}"
    line="${rest%%:*}"
    text="${rest#*:}"
    text="${text#"${text%%[![:space:]]*}"}"
    echo "${file}:${line}: ${text}"
  done <<< "${hits}"
  echo "self-contained: $(wc -l <<< "${hits}") reference(s) to documents outside the repository" >&2
  exit 1
fi
echo "self-contained: OK (${#files[@]} files checked)"
