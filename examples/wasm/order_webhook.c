/* Order webhook (docs/guest_abi.md §6): `POST /orders/:id` with a JSON body
 * {"amount": 4999, "item": "teapot", "address": "Baker St"} starts the
 * order saga (order_saga.c) and answers
 *   200 {"execution_id": "E_...", "result": {"ok": ...} | {"err": ...}}
 *       when the saga finishes within 2 s,
 *   202 {"execution_id": "E_..."} (and a Location header) otherwise,
 *   400 {"error": {"kind", "message"}} for a body the saga cannot take.
 * The saga is durable; this request is not: a client that got no answer
 * asks GET /v1/executions/{id} (or posts again, which starts a new saga). */
#include "stele_webhook.h"

STELE_WEBHOOK(handle)

static stele_str error_body(const char* kind, stele_str message_json) {
  stele_buf b = {0, 0, 0};
  stele_buf_addc(&b, "{\"error\":{\"kind\":\"");
  stele_buf_addc(&b, kind);
  stele_buf_addc(&b, "\",\"message\":");
  stele_buf_add(&b, message_json);
  stele_buf_addc(&b, "}}");
  return stele_buf_str(&b);
}

void handle(stele_str request, stele_buf* response) {
  stele_str order = stele_json_get(stele_json_get(request, "params"), "id");
  stele_str body = stele_json_string(stele_json_get(request, "body"));
  stele_str amount = stele_json_get(body, "amount");
  stele_str item = stele_json_get(body, "item");
  stele_str address = stele_json_get(body, "address");
  if (!amount.len || !item.len || !address.len) {
    stele_webhook_reply(
        response, 400,
        error_body("validation", stele_cstr("\"expected a JSON body {\\\"amount\\\": 4999, "
                                            "\\\"item\\\": \\\"teapot\\\", \\\"address\\\": "
                                            "\\\"Baker St\\\"}\"")));
    return;
  }
  stele_buf params = {0, 0, 0};
  stele_buf_addc(&params, "[");
  stele_buf_add(&params, order);
  stele_buf_addc(&params, ",");
  stele_buf_add(&params, amount);
  stele_buf_addc(&params, ",");
  stele_buf_add(&params, item);
  stele_buf_addc(&params, ",");
  stele_buf_add(&params, address);
  stele_buf_addc(&params, "]");

  stele_str id;
  const char* saga = "shop:orders/saga.place-order";
  if (stele_webhook_submit(saga, stele_buf_str(&params), &id) != STELE_OK) {
    /* `id` holds the service's error {"kind", "message"}: the params did
     * not type-check (e.g. "amount": "lots"). */
    stele_buf b = {0, 0, 0};
    stele_buf_addc(&b, "{\"error\":");
    stele_buf_add(&b, id);
    stele_buf_addc(&b, "}");
    stele_webhook_reply(response, 400, stele_buf_str(&b));
    return;
  }
  stele_buf answer = {0, 0, 0};
  stele_buf_addc(&answer, "{\"execution_id\":");
  stele_buf_add_json_string(&answer, id);
  stele_str value;
  int status = stele_webhook_await(id, 2000, &value);
  if (status == STELE_PENDING) {
    stele_buf_addc(&answer, "}");
    stele_buf_addc(response, "{\"status\":202,\"headers\":{\"Location\":\"/v1/executions/");
    stele_buf_add(response, id);
    stele_buf_addc(response, "\"},\"body\":");
    stele_buf_add(response, stele_buf_str(&answer));
    stele_buf_addc(response, "}");
    return;
  }
  stele_buf_addc(&answer, status == STELE_OK    ? ",\"result\":{\"ok\":"
                          : status == STELE_ERR ? ",\"result\":{\"err\":"
                                                : ",\"result\":{\"execution_error\":");
  stele_buf_add(&answer, value.len ? value : stele_cstr("null"));
  stele_buf_addc(&answer, "}}");
  stele_webhook_reply(response, status == STELE_OK || status == STELE_ERR ? 200 : 500,
                      stele_buf_str(&answer));
}
