#!/usr/bin/env bash
# Smoke test of one example program (ctest, examples/CMakeLists.txt): runs
# it in a fresh temporary directory, with `{db}` in its arguments replaced by
# a SQLite file there, and passes when it exits 0 and its output matches
# every --expect pattern (grep -E, one line each).
#
#   smoke_test.sh [--expect REGEX]... [--kill-after REGEX] -- PROGRAM [ARGS...]
#
# --kill-after REGEX: the first run is SIGKILLed as soon as a line of its
# output matches REGEX, and the program is run again on the same database;
# the expectations are checked on that second run. This is the "kill it
# mid-sleep and run it again" promise of examples/durable_sleep.
set -euo pipefail

expects=()
kill_after=""
while [ $# -gt 0 ]; do
  case "$1" in
    --expect) expects+=("$2"); shift 2 ;;
    --kill-after) kill_after="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "smoke_test.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -ge 1 ] || { echo "smoke_test.sh: no program given" >&2; exit 2; }

program="$(command -v "$1" || true)"
case "$program" in
  /*) ;;
  "") echo "smoke_test.sh: no program $1" >&2; exit 2 ;;
  *) program="$PWD/$program" ;;
esac
shift
work="$(mktemp -d "${TMPDIR:-/tmp}/stele_example.XXXXXX")"
child=""
cleanup() {
  if [ -n "$child" ]; then kill -KILL "$child" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

args=()
for arg in "$@"; do args+=("${arg//\{db\}/$work/example.sqlite}"); done

if [ -n "$kill_after" ]; then
  : >first.out
  "$program" "${args[@]}" >first.out 2>&1 &
  child=$!
  # Bounded wait for the line (a generous 60 s: loaded CI machines).
  for _ in $(seq 1 600); do
    grep -Eq -- "$kill_after" first.out && break
    kill -0 "$child" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -Eq -- "$kill_after" first.out; then
    echo "smoke_test.sh: the first run never printed /$kill_after/:" >&2
    cat first.out >&2
    exit 1
  fi
  kill -KILL "$child" 2>/dev/null || true
  wait "$child" 2>/dev/null || true
  child=""
  # A first run that got as far as everything expected was not killed
  # mid-way: the restart would prove nothing.
  finished=1
  for pattern in "${expects[@]}"; do grep -Eq -- "$pattern" first.out || finished=0; done
  if [ "$finished" -eq 1 ]; then
    echo "smoke_test.sh: the first run finished before it was killed:" >&2
    cat first.out >&2
    exit 1
  fi
  echo "--- first run, killed after /$kill_after/:"
  cat first.out
  echo "--- second run:"
fi

status=0
"$program" "${args[@]}" >run.out 2>&1 || status=$?
cat run.out
if [ "$status" -ne 0 ]; then
  echo "smoke_test.sh: $(basename "$program") exited with $status" >&2
  exit 1
fi
for pattern in "${expects[@]}"; do
  if ! grep -Eq -- "$pattern" run.out; then
    echo "smoke_test.sh: no line of the output matches /$pattern/" >&2
    exit 1
  fi
done
echo "smoke_test.sh: $(basename "$program") passed"
