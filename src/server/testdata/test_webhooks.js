// A JavaScript webhook for the server's tests (webhook_js_test.cc), the
// twin of test_webhooks.c, one behaviour per route param `what`: echo
// (answers 200 with the request it got as the body), throw, spin (never
// returns: the time limit), big (keeps ~24 MiB of heap, then echoes), bad (a
// malformed response), pending (awaits a promise nothing settles), submit
// (starts the order saga with params from the body and answers its id
// without waiting), await (submits, then waits 100 ms for the saga).
export async function webhook(ctx, request) {
  const what = request.params.what;
  if (what === "throw") throw new TypeError("no such order");
  if (what === "spin") for (;;) {}
  if (what === "big") {
    // ~24 MiB on the heap (arrays of numbers; ArrayBuffer contents would
    // live outside it).
    const keep = [];
    for (let i = 0; i < 3; ++i) keep.push(new Array(1 << 20).fill(i + 0.5));
    ctx.log("kept", keep.length, "arrays");
  }
  if (what === "bad") return { status: 99 };
  if (what === "pending") await new Promise(() => {});
  if (what === "submit" || what === "await") {
    let id;
    try {
      id = ctx.submit("shop:orders/saga.place-order", JSON.parse(request.body));
    } catch (e) {
      return { status: 400, body: { error: e.value } };
    }
    if (what === "submit") return { status: 201, body: { execution_id: id } };
    const result = await ctx.awaitResult(id, 100);
    return { status: 200, body: { execution_id: id, pending: result === undefined } };
  }
  return { status: 200, body: request };
}
