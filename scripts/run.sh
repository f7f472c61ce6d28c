#!/usr/bin/env bash
# Stele's main job: build the `stele` binary, the example wasm guests and
# the JavaScript examples, start `stele server run` with
# examples/server/demo.toml (wasm and JS workflows and activities, exec and
# stub activities) on the embedded SQLite default,
# submit the example executions through the CLI and print how each ends,
# then keep serving on http://127.0.0.1:5005 until Ctrl-C.
#
#   ./scripts/run.sh                 # data in .stele-demo/ (kept across runs)
#   STELE_DATA_DIR=/tmp/s ./scripts/run.sh
#   STELE_DEMO_EXIT=1 ./scripts/run.sh   # stop after the demo executions
#   STELE_BUILD_DIR=build/x ./scripts/run.sh  # another build folder
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install_deps.sh
build="${STELE_BUILD_DIR:-build/release}"
STELE_TARGETS="stele stele_wasm_hello_workflow stele_wasm_hello_activity stele_wasm_order_saga \
stele_wasm_fan_out stele_wasm_square_activity stele_wasm_durable_sleep stele_wasm_human_approval \
stele_wasm_order_webhook stele_wasm_await_approval stele_js_examples" \
  bash scripts/build.sh "$build" -DCMAKE_BUILD_TYPE=Release -DSTELE_BUILD_BENCH=OFF

export STELE_WASM_DIR="$root/$build/examples/wasm"
export STELE_JS_DIR="$root/$build/examples/js"
export STELE_DATA_DIR="${STELE_DATA_DIR:-$root/.stele-demo}"
stele="$root/$build/src/cli/stele"
config="$root/examples/server/demo.toml"

"$stele" server verify --config "$config"
"$stele" server run --config "$config" &
server=$!
trap 'kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM

for _ in $(seq 1 100); do
  kill -0 "$server" 2>/dev/null || { echo "run.sh: the server exited (see above)" >&2; exit 1; }
  "$stele" component list >/dev/null 2>&1 && break
  sleep 0.2
done

demo() {  # demo TITLE FFQN PARAMS: submit, follow to the end, never stop the script
  echo
  echo "--- $1: stele execution submit $2 '$3' --follow"
  "$stele" execution submit "$2" "$3" --follow || true
}
echo
"$stele" component list
demo "a workflow calling a wasm activity" demo:hello/api.welcome '["world"]'
demo "an order saga (charge, reserve, ship)" shop:orders/saga.place-order '["A-1", 4999, "teapot", "Baker St"]'
demo "a saga whose shipment fails: compensated" shop:orders/saga.place-order '["A-2", 4999, "teapot", ""]'
demo "fan-out / fan-in over 10 child activities" math:squares/api.sum-of-squares '[10]'
demo "a durable sleep of 2 seconds" demo:reminder/api.remind '[2, "Ada"]'
demo "a TypeScript workflow calling a JS activity" demo:hello-js/api.welcome '["world"]'
demo "a TypeScript fan-out over 10 JS activities" demo:hello-js/api.sum-of-squares '[10]'
demo "a plain JS workflow calling the wasm activity" demo:reminder-js/api.remind '[1, "Ada"]'

echo
echo "--- a human approval: the workflow waits for a stub activity"
expense=$("$stele" execution submit demo:expenses/flow.expense '[120, "Ada"]')
approval=""
for _ in $(seq 1 50); do
  approval=$("$stele" execution list --show-derived --id-prefix "$expense." \
               --ffqn-prefix demo:expenses/manager | grep -o "^$expense\.[^ ]*" || true)
  [ -n "$approval" ] && break
  sleep 0.2
done
echo "$expense waits for the manager's approval ($approval). Approve it and see the result:"
echo "  $stele execution stub '$approval' '{\"ok\": true}'"
echo "  $stele execution result $expense --timeout 10"
if [ -n "${STELE_DEMO_EXIT:-}" ] && [ -n "$approval" ]; then
  "$stele" execution stub "$approval" '{"ok": true}'
  "$stele" execution result "$expense" --timeout 10 || true
fi
echo
echo "--- messages in, values out: the workflow waits up to an hour for a message"
waiting=$("$stele" execution submit demo:approvals/api.await-approval '[3600000]')
"$stele" execution value "$waiting" stage --timeout 10 || true
echo "$waiting waits for a message on channel \"approvals\". Send it and see the result:"
echo "  $stele execution send $waiting approvals '{\"by\": \"ann\"}'"
echo "  $stele execution result $waiting --timeout 10"
if [ -n "${STELE_DEMO_EXIT:-}" ]; then
  "$stele" execution send "$waiting" approvals '{"by": "ann"}'
  "$stele" execution result "$waiting" --timeout 10 || true
fi
echo
echo "--- a webhook (examples/wasm/order_webhook.c): POST /orders/:id starts the saga"
webhook_call="curl -s -X POST http://127.0.0.1:5005/orders/A-3 -d '{\"amount\": 4999, \"item\": \"teapot\", \"address\": \"Baker St\"}'"
echo "  $webhook_call"
if command -v curl >/dev/null; then
  eval "$webhook_call" || true
  echo
fi
echo "--- the same in JavaScript (examples/js/plain/order_webhook.js): POST /js-orders/:id"
js_webhook_call="curl -s -X POST http://127.0.0.1:5005/js-orders/A-4 -d '{\"amount\": 4999, \"item\": \"teapot\", \"address\": \"Baker St\"}'"
echo "  $js_webhook_call"
if command -v curl >/dev/null; then
  eval "$js_webhook_call" || true
  echo
fi
echo
echo "The server is at http://127.0.0.1:5005: web UI at http://127.0.0.1:5005/ui/,"
echo "API in docs/api.md, CLI in docs/cli.md, database $STELE_DATA_DIR/stele.sqlite."
echo "Ctrl-C stops it."
if [ -n "${STELE_DEMO_EXIT:-}" ]; then exit 0; fi
wait "$server"
