#!/usr/bin/env bash
# with_postgres.sh CMD...: runs CMD against a throw-away PostgreSQL 15 cluster.
#
#   - installs postgresql-15 when missing (apt-get, idempotent);
#   - initdb in a fresh temp dir, started on a free port on 127.0.0.1 only
#     (its unix socket stays inside the temp dir), tuned for tests
#     (fsync off: the cluster is thrown away; STELE_POSTGRES_DURABLE=1 keeps
#     PostgreSQL's durable defaults instead, for benchmarks);
#   - exports STELE_TEST_POSTGRES_URL (a libpq connection string of the
#     superuser `postgres`, trust auth), which the PostgreSQL tests use to
#     create a fresh database per test, and STELE_TEST_POSTGRES_DATADIR /
#     STELE_TEST_POSTGRES_RESTART (a command restarting the cluster);
#   - runs CMD and returns its exit status; the cluster is stopped and its
#     directory removed on every exit path (trap), failures included, and
#     when this script gets TERM or INT (passed on to CMD first; 143/130).
# PostgreSQL refuses to run as root: as root, the server runs as the
# `postgres` system user (created if needed).
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: $0 CMD [ARGS...]" >&2
  exit 2
fi

pgbin=/usr/lib/postgresql/15/bin
if [ ! -x "$pgbin/initdb" ] || [ ! -x "$pgbin/pg_ctl" ]; then
  echo "with_postgres: installing postgresql-15" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -q
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends postgresql-15
fi

as_pg=()
if [ "$(id -u)" -eq 0 ]; then
  if ! id postgres >/dev/null 2>&1; then
    useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
  fi
  as_pg=(runuser -u postgres --)
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/stele-pg.XXXXXX")"
chmod 700 "$tmp"
if [ "$(id -u)" -eq 0 ]; then chown postgres: "$tmp"; fi
started=0

cleanup() {
  local status=$?
  if [ "$started" -eq 1 ]; then
    "${as_pg[@]}" "$pgbin/pg_ctl" -D "$tmp/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"${as_pg[@]}" "$pgbin/initdb" -D "$tmp/data" -U postgres --auth=trust -E UTF8 --locale=C \
  --no-sync >"$tmp/initdb.log" 2>&1 || { cat "$tmp/initdb.log" >&2; exit 1; }

# A free port: ask the kernel for one, then let the server take it (a
# retry covers the small window in which someone else could grab it).
free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  else
    echo $((20000 + RANDOM % 40000))  # a taken port fails the start; the loop retries
  fi
}
durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
if [ "${STELE_POSTGRES_DURABLE:-0}" = 1 ]; then durability=""; fi
for attempt in 1 2 3 4 5; do
  port="$(free_port)"
  if "${as_pg[@]}" "$pgbin/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $tmp $durability -c max_connections=400 -c shared_buffers=64MB" \
      start >/dev/null 2>&1; then
    started=1
    break
  fi
done
if [ "$started" -ne 1 ]; then
  echo "with_postgres: the server did not start; its log:" >&2
  cat "$tmp/server.log" >&2 || true
  exit 1
fi

export STELE_TEST_POSTGRES_URL="host=127.0.0.1 port=$port user=postgres dbname=postgres"
# For tests that restart the server under load (tests/multinode): its data
# dir and a shell command restarting it (fast shutdown, same options).
export STELE_TEST_POSTGRES_DATADIR="$tmp/data"
STELE_TEST_POSTGRES_RESTART="$(printf '%q ' "${as_pg[@]}" "$pgbin/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -m fast -w -t 60 restart) >/dev/null"
export STELE_TEST_POSTGRES_RESTART
echo "with_postgres: PostgreSQL 15 on 127.0.0.1:$port (data in $tmp)" >&2
# CMD runs in the background and is waited for, so that a TERM or INT sent
# to this script is handled at once (bash runs traps only between foreground
# commands): CMD gets TERM (also for an INT: a background job ignores INT),
# and once it has ended the EXIT trap stops the cluster. `<&0` keeps CMD's
# stdin (a background job's would be /dev/null).
set +e
"$@" <&0 &
child=$!
signalled=""
trap 'signalled=143; kill -TERM "$child" 2>/dev/null' TERM
trap 'signalled=130; kill -TERM "$child" 2>/dev/null' INT
while true; do
  wait "$child"
  status=$?
  kill -0 "$child" 2>/dev/null || break  # wait was cut short by a signal
done
set -e
if [ -n "$signalled" ]; then status=$signalled; fi
exit "$status"
