/* Order saga: charge, reserve, ship; when a step fails, undo the steps
 * already done (refund, release) in reverse order and finish with an error.
 * Every step is a durable child execution.
 * params: [order id, amount in cents, item, address] */
#include "stele_workflow.h"

STELE_WORKFLOW("shop:orders/saga.place-order", place_order,
               "order: string, amount: u64, item: string, address: string",
               "result<string, string>")

/* Builds a JSON array of raw JSON values. */
static stele_str params2(stele_str a, stele_str b) {
  stele_buf p = {0, 0, 0};
  stele_buf_addc(&p, "[");
  stele_buf_add(&p, a);
  if (b.len) {
    stele_buf_addc(&p, ",");
    stele_buf_add(&p, b);
  }
  stele_buf_addc(&p, "]");
  return stele_buf_str(&p);
}

static void fail(stele_buf* result, const char* step) {
  stele_buf_addc(result, "{\"failed_step\":\"");
  stele_buf_addc(result, step);
  stele_buf_addc(result, "\"}");
}

int place_order(stele_str p, stele_buf* result) {
  stele_str order = stele_json_at(p, 0), none = {0, 0};
  stele_str payment, reservation, shipment;

  if (stele_call("shop:payments/card.charge", params2(order, stele_json_at(p, 1)), &payment) !=
      STELE_OK) {
    fail(result, "charge");
    return STELE_ERR;
  }
  stele_str refund = params2(stele_json_get(payment, "payment"), none);

  if (stele_call("shop:stock/items.reserve", params2(order, stele_json_at(p, 2)), &reservation) !=
      STELE_OK) {
    stele_call("shop:payments/card.refund", refund, 0);
    fail(result, "reserve");
    return STELE_ERR;
  }
  stele_str release = params2(stele_json_get(reservation, "reservation"), none);

  if (stele_call("shop:shipping/parcels.ship", params2(order, stele_json_at(p, 3)), &shipment) !=
      STELE_OK) {
    /* compensations in reverse order, each a durable call too */
    stele_call("shop:stock/items.release", release, 0);
    stele_call("shop:payments/card.refund", refund, 0);
    fail(result, "ship");
    return STELE_ERR;
  }
  stele_buf_addc(result, "{\"order\":");
  stele_buf_add(result, order);
  stele_buf_addc(result, ",\"tracking\":");
  stele_buf_add(result, stele_json_get(shipment, "tracking"));
  stele_buf_addc(result, "}");
  return STELE_OK;
}
