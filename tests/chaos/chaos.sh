#!/usr/bin/env bash
# chaos.sh STELE_BINARY WASM_DIR — the chaos run of docs/reliability.md.
#
# Starts the real `stele server run` on a fresh SQLite database with wasm
# workflows (fan-out to child activities, durable sleep, the order saga) and
# exec activities (tiny scripts that log every successful attempt), submits
# CHAOS_EXECUTIONS executions over the HTTP API (through the CLI, with fixed
# ids so a resubmission after a kill is idempotent) while SIGKILLing the
# server at random moments and restarting it, CHAOS_KILLS times. Then it
# waits for every execution and asserts:
#   - every submitted execution finished with its expected result (none lost);
#   - every activity call ran at least once (the side-effect log; more than
#     once is allowed: at-least-once), none ran that was never requested;
#   - `stele db check` is clean: gap-free versions, no result recorded twice,
#     stored states equal to the logs;
#   - one in ten executions, a year-long sleep, gets a cancel (or terminate)
#     through the CLI while the kills go on: every acknowledged cancel ends
#     it `cancelled`, with one request in its log;
#   - one in ten, a 20 s sleep, gets a pause: every acknowledged pause holds
#     (no Locked event after it, not finished) until the run resumes it once
#     the rest is done; then it finishes with its expected result;
#   - one more per ten is submitted with a deadline (`--timeout`): half are
#     year-long sleeps with 1-5 s, which must end `timed_out` once — one
#     timed-out terminate request, one Finished, the last event, not before
#     the deadline; half are 1 s sleeps with 60 s, which must finish first,
#     with their result (see "deadlines" below).
#   - messages: CHAOS_INBOXES JavaScript workflows each receive
#     CHAOS_INBOX_MESSAGES messages, sent with ids while the kills go on
#     (each retried until acknowledged, then sent once more): every
#     workflow ends with exactly its messages, each once, in send order, and
#     holds exactly that many message_received responses (a duplicate id is
#     delivered once);
#   - cron: a schedule (every 5 s, overlap allow, catch_up all) ticks
#     through the kills: its executions' ids (whose time part is the tick)
#     are exactly every tick from the first to the last, each once, the last
#     is the schedule's last execution, and each finishes.
#
# Environment:
#   CHAOS_KILLS=10        SIGKILL + restart cycles (50 for the long run)
#   CHAOS_EXECUTIONS=200  top-level executions submitted
#   CHAOS_DEADLINES=N     executions with a deadline, submitted on top
#                         (default CHAOS_EXECUTIONS / 10)
#   CHAOS_SEED=N          seeds $RANDOM (kill moments, ids); printed
#   CHAOS_TIME_LIMIT=600  seconds before the run gives up (fails); below
#                         ctest's 900 s timeout
#   CHAOS_MIN_GAP_MS=300 CHAOS_MAX_GAP_MS=2500  time between kills
#   CHAOS_KEEP=1          keep the work directory (logs, database)
#   CHAOS_REPORT=FILE     append the figures line to FILE
#   CHAOS_INBOXES=10 CHAOS_INBOX_MESSAGES=5  the message workflows
#   CHAOS_POSTGRES_URL=URL  run on PostgreSQL instead (a role that may CREATE
#                         DATABASE, e.g. $STELE_TEST_POSTGRES_URL of
#                         scripts/with_postgres.sh): a fresh database, dropped
#                         at the end, and CHAOS_SERVERS servers on it
#   CHAOS_BACKEND=postgres  the same with $STELE_TEST_POSTGRES_URL (skips
#                         without it, or fails under
#                         STELE_REQUIRE_POSTGRES_TESTS=1 as for any missing
#                         prerequisite); how ctest's stele_chaos_postgres runs
#   CHAOS_SERVERS=N       servers sharing the database (default 1 on SQLite,
#                         2 on PostgreSQL; SQLite allows one); each kill picks
#                         one at random
#   STELE_REQUIRE_WASM=1  a missing binary, wasm guest or jq fails the run
#                         instead of skipping it (scripts/test.sh sets it)
#   STELE_REQUIRE_POSTGRES_TESTS=1  so does a missing PostgreSQL server or psql
# Exit: 0 pass, 1 fail, 77 skipped (binary, wasm guests or jq missing).
set -uo pipefail

stele=${1:-}
wasm_dir=${2:-}
if [ -z "$stele" ] || [ -z "$wasm_dir" ]; then
  echo "usage: $0 STELE_BINARY WASM_DIR" >&2
  exit 2
fi
# skip REQUIRE_VAR REASON: exit 77 (ctest: skipped), or fail when the
# environment says this run must not be skipped.
skip() {
  if [ "${!1:-}" = 1 ]; then echo "chaos: FAILED: $2 (and $1=1)"; exit 1; fi
  echo "chaos: SKIPPED: $2"; exit 77
}
[ -x "$stele" ] || skip STELE_REQUIRE_WASM "no stele binary at $stele"
for guest in fan_out durable_sleep order_saga; do
  [ -f "$wasm_dir/$guest.wasm" ] || skip STELE_REQUIRE_WASM "wasm guest $wasm_dir/$guest.wasm not built"
done
command -v jq >/dev/null || skip STELE_REQUIRE_WASM "jq not installed"
stele=$(cd "$(dirname "$stele")" && pwd)/$(basename "$stele")
wasm_dir=$(cd "$wasm_dir" && pwd)

kills=${CHAOS_KILLS:-10}
total=${CHAOS_EXECUTIONS:-200}
time_limit=${CHAOS_TIME_LIMIT:-600}
min_gap=${CHAOS_MIN_GAP_MS:-300}
max_gap=${CHAOS_MAX_GAP_MS:-2500}
seed=${CHAOS_SEED:-$(( $(date +%s%N) % 1000000 ))}
RANDOM=$seed
src_dir=$(cd "$(dirname "$0")/../.." && pwd)
start_s=$(date +%s)
pg_admin=${CHAOS_POSTGRES_URL:-}
if [ "${CHAOS_BACKEND:-sqlite}" = postgres ] && [ -z "$pg_admin" ]; then
  pg_admin=${STELE_TEST_POSTGRES_URL:-}
  [ -n "$pg_admin" ] || skip STELE_REQUIRE_POSTGRES_TESTS "CHAOS_BACKEND=postgres without CHAOS_POSTGRES_URL or STELE_TEST_POSTGRES_URL"
fi
if [ -n "$pg_admin" ]; then
  command -v psql >/dev/null || skip STELE_REQUIRE_POSTGRES_TESTS "psql not installed"
  servers=${CHAOS_SERVERS:-2}
else
  servers=1
fi

work=$(mktemp -d /tmp/stele-chaos.XXXXXX)
server_pids=()
submitter_pid=""
deadline_submitter_pid=""
controller_pid=""
pg_db=""
cleanup() {
  [ -n "$submitter_pid" ] && kill "$submitter_pid" 2>/dev/null
  [ -n "$deadline_submitter_pid" ] && kill "$deadline_submitter_pid" 2>/dev/null
  [ -n "$controller_pid" ] && kill "$controller_pid" 2>/dev/null
  [ -n "${messenger_pid:-}" ] && kill "$messenger_pid" 2>/dev/null
  local pid
  for pid in "${server_pids[@]}"; do
    [ -n "$pid" ] || continue
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  if [ -n "$pg_db" ]; then
    psql "$pg_admin" -q -c "DROP DATABASE IF EXISTS $pg_db WITH (FORCE)" >/dev/null 2>&1
  fi
  if [ "${CHAOS_KEEP:-0}" = 1 ]; then
    echo "chaos: work directory kept: $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
log() { echo "chaos [$(( $(date +%s) - start_s ))s]: $*"; }
fail() {
  log "FAIL: $*"
  echo "--- last server log lines:"
  tail -n 20 "$work"/server.*.err 2>/dev/null | tail -n 40
  exit 1
}
elapsed() { echo $(( $(date +%s) - start_s )); }

# --- activities: exec scripts that record each successful attempt ---------
effects="$work/side_effects.log"
: >"$effects"
cat >"$work/square.sh" <<SH
#!/bin/sh
# math:squares/api.square(x) -> x*x; logs the execution id first.
x=\$(cat | tr -d '[] ')
echo "\$STELE_EXECUTION_ID" >>"$effects"
printf '{"ok": %d}\n' \$((x * x))
SH
cat >"$work/shop.sh" <<SH
#!/bin/sh
# The demo's shop activities (examples/server/shop.sh), logged.
out=\$("$src_dir/examples/server/shop.sh") || exit \$?
echo "\$STELE_EXECUTION_ID" >>"$effects"
printf '%s\n' "\$out"
SH
chmod +x "$work/square.sh" "$work/shop.sh"

database_section=""
backend=sqlite
if [ -n "$pg_admin" ]; then
  backend=postgres
  pg_db="stele_chaos_$$_$RANDOM"
  psql "$pg_admin" -q -c "CREATE DATABASE $pg_db" >/dev/null || fail "cannot create database $pg_db"
  case "$pg_admin" in
    postgres://* | postgresql://*)  # URI: replace the path (the database name)
      pg_url=$(printf '%s' "$pg_admin" | sed -E "s#^(postgres(ql)?://[^/?]*)(/[^?]*)?#\1/$pg_db#") ;;
    *) pg_url="$pg_admin dbname=$pg_db" ;;  # key=value: the last dbname wins
  esac
  database_section=$(printf '[database]\npostgres = "%s"\n' "$pg_url")
fi

cfg="$work/chaos.toml"
cat >"$cfg" <<TOML
data_dir = "$work/data"

$database_section

[api]
listen = "127.0.0.1:0"

[executor]
tick_sleep = "50ms"
lock_expiry = "2s"

[watcher]
leeway = "200ms"

[[workflow_wasm]]
name = "fan_out"
location = "$wasm_dir/fan_out.wasm"
blocking_strategy = "await"

[[workflow_wasm]]
name = "durable_sleep"
location = "$wasm_dir/durable_sleep.wasm"

[[workflow_wasm]]
name = "order_saga"
location = "$wasm_dir/order_saga.wasm"

[[activity_exec]]
name = "squares"
command = ["$work/square.sh"]
env_allow = ["PATH"]
max_retries = 12
retry_backoff = "20ms"
lock_expiry = "3s"

[[activity_exec.functions]]
ffqn = "math:squares/api.square"
params = [{ name = "x", type = "u64" }]
return_type = "u64"

[[activity_exec]]
name = "shop"
command = ["$work/shop.sh"]
env_allow = ["PATH"]
max_retries = 12
retry_backoff = "20ms"
lock_expiry = "3s"

[[activity_exec.functions]]
ffqn = "shop:payments/card.charge"
params = [{ name = "order", type = "string" }, { name = "amount", type = "u64" }]
return_type = "result<record { payment: string }, string>"

[[activity_exec.functions]]
ffqn = "shop:payments/card.refund"
params = [{ name = "payment", type = "string" }]
return_type = "result<bool, string>"

[[activity_exec.functions]]
ffqn = "shop:stock/items.reserve"
params = [{ name = "order", type = "string" }, { name = "item", type = "string" }]
return_type = "result<record { reservation: string }, string>"

[[activity_exec.functions]]
ffqn = "shop:stock/items.release"
params = [{ name = "reservation", type = "string" }]
return_type = "result<bool, string>"

[[activity_exec.functions]]
ffqn = "shop:shipping/parcels.ship"
params = [{ name = "order", type = "string" }, { name = "address", type = "string" }]
return_type = "result<record { tracking: string }, string>"
TOML

# --- messages and cron: their components ------------------------------------
# A JavaScript workflow that receives `n` messages on channel "inbox" and
# returns their bodies joined with ","; a schedule of its `tick` (no
# activity; its own ffqn, so its executions are told apart) every 5 s.
cat >"$work/inbox.js" <<'JS'
export const functions = {
  "chaos:inbox/wf.collect": {
    params: [["n", "u64"]],
    returns: "string",
    run: async (ctx, n) => {
      const bodies = [];
      for (let i = 0; i < n; i++) bodies.push((await ctx.receive("inbox")).body);
      return bodies.join(",");
    },
  },
  "chaos:inbox/wf.tick": { returns: "string", run: () => "tick" },
};
JS
cat >>"$cfg" <<TOML

[[workflow_js]]
name = "inbox"
location = "$work/inbox.js"

[[cron]]
name = "chaos-tick"
schedule = "*/5 * * * * *"
ffqn = "chaos:inbox/wf.tick"
overlap = "allow"
catch_up = "all"
catch_up_limit = 1000
TOML

# --- the load: ids, functions, params and expected results -----------------
crockford=0123456789ABCDEFGHJKMNPQRSTVWXYZ
new_id() {
  local t s="" i
  t=$(date +%s%3N)
  for ((i = 0; i < 10; i++)); do s=${crockford:$((t % 32)):1}$s; t=$((t / 32)); done
  for ((i = 0; i < 16; i++)); do s+=${crockford:$((RANDOM % 32)):1}; done
  echo "E_$s"
}
load="$work/load.tsv"   # id \t ffqn \t params \t expected result (jq -cS) \t control
expected_activities=0
for ((i = 0; i < total; i++)); do
  id=$(new_id)
  case $((i % 10)) in
    8)
      printf '%s\t%s\t%s\t%s\tpause\n' "$id" demo:reminder/api.remind "[20,\"p$i\"]" \
        "{\"ok\":\"time to stretch, p$i\"}"
      continue ;;
    9)
      printf '%s\t%s\t%s\t%s\tcancel\n' "$id" demo:reminder/api.remind \
        "[31536000,\"c$i\"]" cancelled
      continue ;;
  esac
  case $((i % 4)) in
    0 | 1)
      n=$((1 + i % 5))
      sum=$((n * (n + 1) * (2 * n + 1) / 6))
      expected_activities=$((expected_activities + n))
      printf '%s\t%s\t%s\t%s\t-\n' "$id" math:squares/api.sum-of-squares "[$n]" \
        "{\"ok\":{\"n\":$n,\"sum_of_squares\":$sum}}" ;;
    2)
      printf '%s\t%s\t%s\t%s\t-\n' "$id" demo:reminder/api.remind "[1,\"c$i\"]" \
        "{\"ok\":\"time to stretch, c$i\"}" ;;
    3)
      expected_activities=$((expected_activities + 3))
      printf '%s\t%s\t%s\t%s\t-\n' "$id" shop:orders/saga.place-order \
        "[\"o$i\",$((10 + i)),\"item$i\",\"addr$i\"]" \
        "{\"ok\":{\"order\":\"o$i\",\"tracking\":\"T-o$i\"}}" ;;
  esac
done >"$load"

# --- deadlines: executions submitted with `--timeout` ----------------------
# Appended to the load with the control `deadline:DURATION`, submitted by
# their own submitter (submit_deadlines) and checked by check_deadline.
deadline_total=${CHAOS_DEADLINES:-$((total / 10))}
deadline_timed_out=0
deadline_broken=0
add_deadline_load() {
  local i id
  for ((i = 0; i < deadline_total; i++)); do
    id=$(new_id)
    if ((i % 2 == 0)); then
      # Only its deadline can end it.
      printf '%s\t%s\t%s\t%s\tdeadline:%ss\n' "$id" demo:reminder/api.remind \
        "[31536000,\"d$i\"]" timed_out $((1 + RANDOM % 5))
    else
      # Finishes long before its deadline.
      printf '%s\t%s\t%s\t%s\tdeadline:60s\n' "$id" demo:reminder/api.remind "[1,\"d$i\"]" \
        "{\"ok\":\"time to stretch, d$i\"}"
    fi
  done
}
add_deadline_load >>"$load"

# --- the server ------------------------------------------------------------
# Server i listens on a free port, published in $work/url.i; clients pick
# any published server (a stale one answers exit 4 and is retried).
starts=0
start_server() {
  local index=$1
  starts=$((starts + 1))
  local err="$work/server.$starts.err" port="" i pid
  "$stele" server run --config "$cfg" >/dev/null 2>"$err" &
  pid=$!
  server_pids[index]=$pid
  for ((i = 0; i < 600; i++)); do
    port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$err" | head -n 1)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "server start $starts exited: $(tail -n 5 "$err")"
    sleep 0.05
  done
  [ -n "$port" ] || fail "server start $starts: no port after 30 s"
  echo "http://127.0.0.1:$port" >"$work/url.$index.tmp" && mv "$work/url.$index.tmp" "$work/url.$index"
}
kill_server() {
  local index=$1
  kill -9 "${server_pids[index]}" 2>/dev/null
  wait "${server_pids[index]}" 2>/dev/null
  server_pids[index]=""
}
cli() { "$stele" --api-url "$(cat "$work/url.$((RANDOM % servers))")" "$@"; }

for ((s = 0; s < servers; s++)); do start_server "$s"; done
log "seed $seed; $backend, $servers server(s); $total executions, $kills kills"

# Submitter: every execution until the server acknowledged it; a kill
# mid-request is retried with the same id (idempotent).
submit_all() {
  local id ffqn params expected control rc tries
  while IFS=$'\t' read -r id ffqn params expected control; do
    case $control in deadline:*) continue ;; esac  # submit_deadlines
    tries=0
    while :; do
      cli execution submit "$ffqn" "$params" --id "$id" >/dev/null 2>>"$work/submit.err"
      rc=$?
      [ $rc -eq 0 ] && break
      [ $rc -eq 4 ] || { echo "submit $id: exit $rc" >>"$work/submit.fatal"; break; }
      tries=$((tries + 1))
      [ $tries -lt 600 ] || { echo "submit $id: gave up" >>"$work/submit.fatal"; break; }
      sleep 0.05
    done
  done <"$load"
}
submit_all &
submitter_pid=$!

# The executions with a deadline, retried like submit_all: a resubmission
# after a kill is the same execution, its deadline the first one stored.
submit_deadlines() {
  local id ffqn params expected control rc tries
  while IFS=$'\t' read -r id ffqn params expected control; do
    case $control in deadline:*) ;; *) continue ;; esac
    tries=0
    while :; do
      cli execution submit "$ffqn" "$params" --id "$id" --timeout "${control#deadline:}" \
        >/dev/null 2>>"$work/submit.err"
      rc=$?
      [ $rc -eq 0 ] && break
      [ $rc -eq 4 ] || { echo "submit $id: exit $rc" >>"$work/submit.fatal"; break; }
      tries=$((tries + 1))
      [ $tries -lt 600 ] || { echo "submit $id: gave up" >>"$work/submit.fatal"; break; }
      sleep 0.05
    done
  done <"$load"
}
submit_deadlines &
deadline_submitter_pid=$!

# Controller: cancels (every other one a terminate) and pauses while the
# kills go on, each retried until acknowledged; an unknown id (not
# submitted yet) is retried too. Acknowledged ones go to $work/acked.
: >"$work/acked"
control_all() {
  local id ffqn params expected control rc tries verb n=0
  while IFS=$'\t' read -r id ffqn params expected control; do
    case $control in - | deadline:*) continue ;; esac
    n=$((n + 1))
    verb=$control
    [ "$control" = cancel ] && [ $((n % 2)) -eq 0 ] && verb=terminate
    tries=0
    while :; do
      cli execution "$verb" "$id" --reason chaos >/dev/null 2>>"$work/control.err"
      rc=$?
      [ $rc -eq 0 ] && { echo "$id $control" >>"$work/acked"; break; }
      # A 20 s sleep may end before its pause comes (a slow start): then
      # there is nothing to pause (exit 5, already finished).
      [ $rc -eq 5 ] && [ "$control" = pause ] && break
      [ $rc -eq 4 ] || [ $rc -eq 3 ] || { echo "$verb $id: exit $rc" >>"$work/control.fatal"; break; }
      tries=$((tries + 1))
      [ $tries -lt 1200 ] || { echo "$verb $id: gave up" >>"$work/control.fatal"; break; }
      sleep 0.05
    done
  done <"$load"
}
control_all &
controller_pid=$!

# Messages: each inbox workflow is submitted, then sent its messages with
# ids, each retried until acknowledged (a kill mid-request is retried with
# the same id) and then sent again: a duplicate, which must answer 0 and
# deliver nothing. An unknown id (exit 3) cannot happen: the submission
# was acknowledged first.
inboxes=${CHAOS_INBOXES:-10}
inbox_messages=${CHAOS_INBOX_MESSAGES:-5}
inbox_load="$work/inbox.tsv"  # id \t expected result
for ((i = 0; i < inboxes; i++)); do
  want=""
  for ((j = 1; j <= inbox_messages; j++)); do want+="${want:+,}b$i-$j"; done
  printf '%s\t%s\n' "$(new_id)" "$want"
done >"$inbox_load"
: >"$work/messages.acked"
inbox_retry() {  # inbox_retry WHAT CMD...: until exit 0; exit 4 is retried
  local what=$1 rc tries=0
  shift
  while :; do
    cli "$@" >/dev/null 2>>"$work/messages.err"
    rc=$?
    [ $rc -eq 0 ] && return 0
    [ $rc -eq 4 ] || { echo "$what: exit $rc" >>"$work/messages.fatal"; return 1; }
    tries=$((tries + 1))
    [ $tries -lt 1200 ] || { echo "$what: gave up" >>"$work/messages.fatal"; return 1; }
    sleep 0.05
  done
}
send_messages_all() {
  local id want j copy bodies
  while IFS=$'\t' read -r id want; do
    inbox_retry "submit $id" execution submit chaos:inbox/wf.collect "[$inbox_messages]" --id "$id" ||
      continue
    IFS=, read -ra bodies <<<"$want"
    for ((j = 1; j <= inbox_messages; j++)); do
      for copy in 1 2; do
        inbox_retry "send $id m$j" execution send "$id" inbox "\"${bodies[j - 1]}\"" \
          --message-id "m$j" && echo "$id m$j $copy" >>"$work/messages.acked"
      done
    done
  done <"$inbox_load"
}
send_messages_all &
messenger_pid=$!

# Killer: SIGKILL at random moments while the load is submitted and runs.
for ((k = 1; k <= kills; k++)); do
  gap=$((min_gap + RANDOM % (max_gap - min_gap + 1)))
  sleep "$((gap / 1000)).$(printf '%03d' $((gap % 1000)))"
  victim=$((RANDOM % servers))
  kill_server "$victim"
  echo "kill $k: server $victim after ${gap}ms" >>"$work/kills.log"
  start_server "$victim"
  [ "$(elapsed)" -lt "$time_limit" ] || fail "time limit reached during the kills"
done
log "$kills kills done"
wait "$submitter_pid"
submitter_pid=""
wait "$deadline_submitter_pid"
deadline_submitter_pid=""
[ -s "$work/submit.fatal" ] && fail "submission failed: $(head -n 3 "$work/submit.fatal")"
log "all $total submitted"
wait "$controller_pid"
[ -s "$work/control.fatal" ] && fail "cancel/pause failed: $(head -n 3 "$work/control.fatal")"
log "$(wc -l <"$work/acked") cancels and pauses acknowledged"
wait "$messenger_pid"
messenger_pid=""
[ -s "$work/messages.fatal" ] && fail "messages failed: $(head -n 3 "$work/messages.fatal")"
log "$(wc -l <"$work/messages.acked") message sends acknowledged (each message twice)"

# A check beside the live servers while the load still runs: reported, not
# asserted (an execution that keeps changing for three reads in a row is
# reported even though nothing is wrong).
"$stele" db check --config "$cfg" >"$work/db_check_live.out" 2>&1
live_rc=$?
[ $live_rc -eq 0 ] || { log "live db check exit $live_rc:"; head -n 5 "$work/db_check_live.out"; }

# --- wait for every execution and compare its result -----------------------
# The paused ones last: first everything else, then the pauses are checked
# (held: not finished, nothing locked it after the pause), then resumed.
lost=0
wrong=0
finished=0
pause_broken=0
paused_held=0
check_paused() {
  local id=$1 out rc events
  out=$(cli --json execution result "$id" 2>/dev/null)
  rc=$?
  if [ $rc -ne 7 ]; then
    echo "paused but finished (exit $rc): $id $out" >>"$work/problems.log"
    return 1
  fi
  events=$(cli --json execution events "$id" --length 1000) || return 1
  # After the last `paused`: no `locked` (an executor took it) at all.
  if ! printf '%s' "$events" | jq -e '[.events[].event | keys[0]] |
      (rindex("paused") // -1) as $p | $p >= 0 and (.[$p + 1:] | index("locked") == null)' \
      >/dev/null; then
    echo "paused but locked afterwards: $id" >>"$work/problems.log"
    return 1
  fi
}
# check_deadline ID EXPECTED OUT: an execution submitted with a deadline.
# Ended `timed_out`: not before its deadline, by exactly one timed-out
# terminate request, finished once and nothing after (its sleep's delay
# and the rest of its subtree are cancelled by that one run). Otherwise it
# must have finished first, with its expected result.
check_deadline() {
  local id=$1 expected=$2 out=$3 events kind
  kind=$(printf '%s' "$out" | jq -r '.execution_error.kind // "none"' 2>/dev/null)
  events=$(cli --json execution events "$id" --length 1000) || {
    echo "deadline: cannot read the events of $id" >>"$work/problems.log"
    return 1
  }
  if [ "$kind" = timed_out ]; then
    deadline_timed_out=$((deadline_timed_out + 1))
    local verdict
    verdict=$(printf '%s' "$events" | jq -c '
      def t: capture("^(?<s>[^.Z]+)(?<f>\\.[0-9]+)?Z$")
        | ((.s + "Z") | fromdateiso8601) + (("0" + (.f // ".0")) | tonumber);
      .events as $e
      | [$e[] | select(.event | has("finished"))] as $fin
      | [$e[] | select(.event.history_event.event.type == "cancel_request")] as $req
      | {finished: ($fin | length), last_is_finished: ($e[-1].event | has("finished")),
         requests: ($req | length), timed_out: ($req[0].event.history_event.event.timed_out // false),
         deadline: $e[0].event.created.policy.deadline, finished_at: $fin[0].created_at,
         not_early: (($fin[0].created_at | t) >= ($e[0].event.created.policy.deadline | t))}
      | . + {ok: (.finished == 1 and .last_is_finished and .requests == 1 and .timed_out
                  and .not_early)}')
    case $verdict in *'"ok":true'*) return 0 ;; esac
    echo "deadline: timed out wrongly: $id $verdict" >>"$work/problems.log"
    return 1
  fi
  if [ "$expected" = timed_out ] ||
    [ "$(printf '%s' "$out" | jq -cS .)" != "$(printf '%s' "$expected" | jq -cS .)" ]; then
    echo "deadline: wrong result: $id: got $out, want $expected" >>"$work/problems.log"
    return 1
  fi
}

sorted_load="$work/load.sorted.tsv"
{ grep -v $'\tpause$' "$load"; grep $'\tpause$' "$load"; } >"$sorted_load"
resumed_pauses=0
while IFS=$'\t' read -r id ffqn params expected control; do
  if [ "$control" = pause ] && [ $resumed_pauses -eq 0 ]; then
    # Everything else is done: the acknowledged pauses must all hold.
    while read -r pid kind; do
      [ "$kind" = pause ] || continue
      if check_paused "$pid"; then paused_held=$((paused_held + 1)); else pause_broken=$((pause_broken + 1)); fi
    done <"$work/acked"
    while read -r pid kind; do
      [ "$kind" = pause ] || continue
      until cli execution resume "$pid" >/dev/null 2>>"$work/control.err"; do sleep 0.1; done
    done <"$work/acked"
    resumed_pauses=1
  fi
  while :; do
    out=$(cli --json execution result "$id" --timeout 10 2>>"$work/result.err")
    rc=$?
    if [ $rc -eq 0 ] || [ $rc -eq 1 ]; then break; fi
    if [ "$(elapsed)" -ge "$time_limit" ]; then rc=-1; break; fi
    sleep 0.1
  done
  if [ $rc -eq -1 ]; then
    lost=$((lost + 1))
    echo "lost (not finished): $id $ffqn $params" >>"$work/problems.log"
    continue
  fi
  finished=$((finished + 1))
  case $control in
    deadline:*)
      check_deadline "$id" "$expected" "$out" || deadline_broken=$((deadline_broken + 1))
      continue ;;
  esac
  if [ "$control" = cancel ]; then
    got=$(printf '%s' "$out" | jq -r '.execution_error.kind // "not an execution error"' 2>/dev/null)
    requests=$(cli --json execution events "$id" --length 1000 |
      jq '[.events[] | select(.event.history_event.event.type == "cancel_request")] | length')
    if [ "$requests" != 1 ]; then
      wrong=$((wrong + 1))
      echo "cancelled with $requests requests in its log: $id" >>"$work/problems.log"
    fi
  else
    got=$(printf '%s' "$out" | jq -cS . 2>/dev/null)
  fi
  want=$(printf '%s' "$expected" | jq -cS . 2>/dev/null || printf '%s' "$expected")
  [ "$control" = cancel ] && want=$expected
  if [ "$got" != "$want" ]; then
    wrong=$((wrong + 1))
    echo "wrong result: $id $ffqn $params: got $out, want $expected" >>"$work/problems.log"
  fi
done <"$sorted_load"
log "finished $finished, lost $lost, wrong $wrong; pauses held $paused_held, broken $pause_broken"
log "deadlines: $deadline_total submitted, $deadline_timed_out timed out, $deadline_broken broken"

# --- messages: each consumed exactly once, none lost -------------------------
inbox_wrong=0
while IFS=$'\t' read -r id want; do
  got=""
  while :; do
    out=$(cli --json execution result "$id" --timeout 10 2>>"$work/result.err")
    rc=$?
    [ $rc -eq 0 ] && { got=$(printf '%s' "$out" | jq -r '.ok'); break; }
    [ $rc -eq 1 ] && { got="error: $out"; break; }
    [ "$(elapsed)" -ge "$time_limit" ] && { got="not finished"; break; }
    sleep 0.1
  done
  received=$(cli --json execution responses "$id" --length 1000 |
    jq '[.responses[] | select(.response.event.event.type == "message_received")] | length')
  if [ "$got" != "$want" ] || [ "$received" != "$inbox_messages" ]; then
    inbox_wrong=$((inbox_wrong + 1))
    echo "inbox $id: got $got ($received messages), want $want" >>"$work/problems.log"
  fi
done <"$inbox_load"
log "inboxes $inboxes x $inbox_messages messages: wrong $inbox_wrong"

# --- cron: every tick from the first to the last, each once ------------------
until cli schedule pause chaos-tick >/dev/null 2>>"$work/control.err"; do sleep 0.1; done
tick_ids="$work/ticks.txt"
cli --json execution list --ffqn-prefix chaos:inbox/wf.tick --length 1000 |
  jq -r '.executions[].execution_id' | sort >"$tick_ids"
ticks=$(wc -l <"$tick_ids")
cron_wrong=0
# The time part of an E_<ULID>: its first 10 Crockford characters, in ms.
tick_ms() {
  local s=${1:2:10} t=0 i before
  for ((i = 0; i < 10; i++)); do
    before=${crockford%%"${s:i:1}"*}
    t=$((t * 32 + ${#before}))
  done
  echo $t
}
prev=""
while read -r id; do
  ms=$(tick_ms "$id")
  if [ $((ms % 5000)) -ne 0 ] || { [ -n "$prev" ] && [ "$ms" -ne $((prev + 5000)) ]; }; then
    cron_wrong=$((cron_wrong + 1))
    echo "cron: tick $id at $ms ms after $prev" >>"$work/problems.log"
  fi
  prev=$ms
  while :; do
    out=$(cli --json execution result "$id" --timeout 10 2>>"$work/result.err")
    rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 1 ] || [ "$(elapsed)" -ge "$time_limit" ] && break
    sleep 0.1
  done
  [ "$(printf '%s' "$out" | jq -r '.ok' 2>/dev/null)" = tick ] || {
    cron_wrong=$((cron_wrong + 1))
    echo "cron: $id ended $out" >>"$work/problems.log"
  }
done <"$tick_ids"
last_fired=$(cli --json schedule get chaos-tick | jq -r '.last_execution_id')
if [ "$ticks" -eq 0 ] || [ "$last_fired" != "$(tail -n 1 "$tick_ids")" ]; then
  cron_wrong=$((cron_wrong + 1))
  echo "cron: $ticks ticks, the last $(tail -n 1 "$tick_ids"), the schedule's last $last_fired" \
    >>"$work/problems.log"
fi
log "cron: $ticks ticks, wrong $cron_wrong"

# Every top-level execution the server knows is one we submitted (or a tick).
listed=$(cli --json execution list --length 1000 | jq '.executions | length')
listed=$((listed - inboxes - ticks))

for ((s = 0; s < servers; s++)); do
  kill -TERM "${server_pids[s]}"
  wait "${server_pids[s]}" 2>/dev/null
  server_pids[s]=""
done

# --- side effects: at least once, never for an unknown execution -----------
runs=$(wc -l <"$effects")
unique=$(sort -u "$effects" | wc -l)
reruns=$((runs - unique))

# --- the consistency checker ------------------------------------------------
"$stele" db check --config "$cfg" >"$work/db_check.out" 2>&1
check_rc=$?
check_summary=$(tail -n 1 "$work/db_check.out")

controls=$(wc -l <"$work/acked")
figures="chaos: backend=$backend servers=$servers seed=$seed kills=$kills server_starts=$starts executions=$total finished=$finished lost=$lost wrong=$wrong cancels_and_pauses=$controls pauses_held=$paused_held pauses_broken=$pause_broken inboxes=$inboxes inbox_messages=$inbox_messages inbox_wrong=$inbox_wrong cron_ticks=$ticks cron_wrong=$cron_wrong listed=$listed activity_calls=$expected_activities activity_runs=$runs unique=$unique reruns=$reruns db_check_exit=$check_rc ($check_summary) live_db_check_exit=$live_rc deadlines=$deadline_total deadlines_timed_out=$deadline_timed_out deadlines_broken=$deadline_broken seconds=$(elapsed)"
echo "$figures"
[ -n "${CHAOS_REPORT:-}" ] && echo "$figures" >>"$CHAOS_REPORT"

status=0
if [ $lost -ne 0 ] || [ $wrong -ne 0 ] || [ $pause_broken -ne 0 ] || [ $deadline_broken -ne 0 ] ||
  [ $inbox_wrong -ne 0 ] || [ $cron_wrong -ne 0 ]; then
  head -n 10 "$work/problems.log"
  status=1
fi
if [ "$listed" != "$((total + deadline_total))" ]; then
  echo "chaos: the server lists $listed top-level executions, $((total + deadline_total)) were submitted"
  status=1
fi
if [ "$unique" -ne "$expected_activities" ]; then
  echo "chaos: $unique distinct activity executions ran, $expected_activities expected"
  status=1
fi
if [ $check_rc -ne 0 ]; then
  echo "chaos: stele db check failed:"
  head -n 20 "$work/db_check.out"
  status=1
fi
[ $status -eq 0 ] && log "PASS" || log "FAIL"
exit $status
