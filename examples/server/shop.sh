#!/bin/sh
# Exec activities of examples/server/demo.toml (the order saga's steps and
# the expense payment). One script serves several functions: the server sets
# STELE_FFQN to the function being called and writes the params JSON array
# on stdin; the script prints {"ok": v} or {"err": v} on stdout.
params=$(cat)
# The n-th (1-based) element of a flat JSON array of strings and integers,
# without its quotes. Enough for these demo params; real activities should
# use a JSON parser.
arg() {
  printf '%s' "$params" | sed -e 's/^\[//' -e 's/\]$//' | tr ',' '\n' | sed -n "$1p" |
    sed -e 's/^ *"\{0,1\}//' -e 's/"\{0,1\} *$//'
}
case "$(arg 1)$(arg 2)" in
  *[\"\\]*) printf '{"err": "quotes and backslashes are not supported by this demo"}\n'; exit 0 ;;
esac
case "$STELE_FFQN" in
  shop:payments/card.charge) printf '{"ok": {"payment": "P-%s"}}\n' "$(arg 1)" ;;
  shop:payments/card.refund) printf '{"ok": true}\n' ;;
  shop:stock/items.reserve) printf '{"ok": {"reservation": "R-%s"}}\n' "$(arg 1)" ;;
  shop:stock/items.release) printf '{"ok": true}\n' ;;
  shop:shipping/parcels.ship)
    if [ -z "$(arg 2)" ]; then
      printf '{"err": "no shipping address"}\n'
    else
      printf '{"ok": {"tracking": "T-%s"}}\n' "$(arg 1)"
    fi ;;
  demo:expenses/bank.pay) printf '{"ok": "paid %s to %s"}\n' "$(arg 1)" "$(arg 2)" ;;
  *) echo "shop.sh: unknown function $STELE_FFQN" >&2; exit 2 ;;
esac
