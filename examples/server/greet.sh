#!/bin/sh
# Exec activity of examples/server/stele.toml: reads the params JSON array
# on stdin (["world"]) and prints {"ok": "Hello, world!"}.
# STELE_FFQN, STELE_EXECUTION_ID and STELE_ATTEMPT are set by the server.
params=$(cat)
who=$(printf '%s' "$params" | sed -e 's/^\[ *"//' -e 's/" *\]$//')
case "$who" in
  *[\"\\]*) printf '{"err": "name must not contain quotes or backslashes"}\n'; exit 0 ;;
esac
printf '{"ok": "%s, %s!"}\n' "${GREETING:-Hello}" "$who"
