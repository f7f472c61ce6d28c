// Order webhook in JavaScript (docs/js.md, "Webhooks"), the twin of
// examples/wasm/order_webhook.c, with no build step: `POST /orders/:id`
// with a JSON body {"amount": 4999, "item": "teapot", "address": "Baker St"}
// starts the order saga and answers
//   200 {"execution_id": "E_...", "result": {"ok": ...} | {"err": ...}}
//       when the saga finishes within 2 s,
//   202 {"execution_id": "E_..."} (and a Location header) otherwise,
//   400 {"error": {"kind", "message"}} for a body the saga cannot take.
// The saga is durable; this request is not: a client that got no answer
// asks GET /v1/executions/{id} (or posts again, which starts a new saga).
import { Err } from "stele";

const SAGA = "shop:orders/saga.place-order";

function badRequest(kind, message) {
  return { status: 400, body: { error: { kind, message } } };
}

export async function webhook(ctx, request) {
  let order;
  try {
    order = JSON.parse(request.body);
  } catch {
    order = null;
  }
  const { amount, item, address } = order ?? {};
  if (amount === undefined || item === undefined || address === undefined) {
    return badRequest("validation",
                      'expected a JSON body {"amount": 4999, "item": "teapot", "address": "Baker St"}');
  }
  let id;
  try {
    id = ctx.submit(SAGA, [request.params.id, amount, item, address]);
  } catch (e) {
    // The service's error {kind, message}: e.g. "amount": "lots" does not
    // type-check as u64.
    if (e instanceof Err) return { status: 400, body: { error: e.value } };
    throw e;
  }
  const result = await ctx.awaitResult(id, 2000);
  if (result === undefined) {
    return { status: 202, headers: { Location: `/v1/executions/${id}` },
             body: { execution_id: id } };
  }
  if (result.failure !== undefined) {
    return { status: 500, body: { execution_id: id, result: { execution_error: result.failure } } };
  }
  return { status: 200, body: { execution_id: id, result } };
}
