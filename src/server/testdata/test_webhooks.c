/* A webhook guest for the server's tests (webhook_test.cc), one behaviour
 * per route param `what`: echo (answers 200 with the request it got as the
 * body), trap, spin (never returns: the time limit), big (allocates
 * 4 MiB, then echoes), bad (a malformed
 * response), submit (starts the order saga with params from the body and
 * answers its id without waiting). */
#include "stele_webhook.h"

STELE_WEBHOOK(handle)

void handle(stele_str request, stele_buf* response) {
  stele_str what = stele_json_string(stele_json_get(stele_json_get(request, "params"), "what"));
  if (stele_str_eq(what, "trap")) __builtin_trap();
  if (stele_str_eq(what, "spin")) {
    volatile uint64_t n = 0;
    for (;;) ++n;
  }
  if (stele_str_eq(what, "big")) {
    /* 4 MiB: within the default memory cap, a trap under a smaller one. */
    for (int i = 0; i < 4; ++i) {
      volatile char* p = (volatile char*)stele_malloc(1u << 20);
      if (!p) __builtin_trap();
      p[0] = 1;
    }
  }
  if (stele_str_eq(what, "bad")) {
    stele_buf_addc(response, "this is not JSON");
    return;
  }
  if (stele_str_eq(what, "submit")) {
    stele_str id;
    int status = stele_webhook_submit("shop:orders/saga.place-order",
                                      stele_json_string(stele_json_get(request, "body")), &id);
    stele_buf b = {0, 0, 0};
    stele_buf_addc(&b, status == STELE_OK ? "{\"execution_id\":" : "{\"error\":");
    if (status == STELE_OK)
      stele_buf_add_json_string(&b, id);
    else
      stele_buf_add(&b, id);
    stele_buf_addc(&b, "}");
    stele_webhook_reply(response, status == STELE_OK ? 201 : 400, stele_buf_str(&b));
    return;
  }
  stele_webhook_reply(response, 200, request);
}
