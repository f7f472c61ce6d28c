#!/usr/bin/env bash
# compile_time.sh COMPILER ARGS...: a compiler launcher that appends one
# line per compile to $STELE_COMPILE_TIMES (default /tmp/stele-compile-times):
# user and system CPU seconds, wall seconds, output file. CPU time does not
# grow when other processes share the cores, so two builds can be compared
# on a busy machine. Configure a build folder with it (in place of ccache):
#   cmake ... -DCMAKE_CXX_COMPILER_LAUNCHER=$PWD/scripts/compile_time.sh
# and read the result with
#   awk '{ s += $1 + $2 } END { print s " CPU s" }' /tmp/stele-compile-times
#   awk '{ print $1 + $2, $4 }' /tmp/stele-compile-times | sort -rn | head -30
set -euo pipefail
log="${STELE_COMPILE_TIMES:-/tmp/stele-compile-times}"
out=-
args=("$@")
for ((i = 0; i < ${#args[@]} - 1; i++)); do
  if [ "${args[i]}" = -o ]; then out="${args[i + 1]}"; fi
done
exec /usr/bin/time -a -o "$log" -f "%U %S %e $out" "$@"
