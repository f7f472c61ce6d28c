/* stele_webhook.h: the C guest SDK for webhook endpoints compiled to
 * wasm32-wasi (docs/guest_abi.md §6). A webhook answers one HTTP request
 * of its [[webhook_wasm]] route (docs/config.md): it reads the request,
 * may start executions and wait for them (bounded), and returns the
 * response. Its own work is not durable (a fresh instance per request,
 * never replayed); the executions it starts are.
 *
 *   #include "stele_webhook.h"
 *   STELE_WEBHOOK(handle)
 *   void handle(stele_str request, stele_buf* response) {
 *     stele_str id = stele_json_string(stele_json_get(stele_json_get(request, "params"), "id"));
 *     ...
 *     stele_webhook_reply(response, 200, stele_cstr("{\"ok\": true}"));
 *   }
 *
 * `request` is {"method", "path", "params": {route params}, "query": {...},
 * "headers": {lowercase name: value}, "body": "the body as text"}. The
 * response is {"status": 200, "headers": {"name": "value"}, "body": text or
 * any JSON value (sent as application/json)}; stele_webhook_reply writes
 * the common case. Build it like an activity (KIND activity of
 * sdk/stele_wasm_guest.cmake: a WASI reactor); printf goes to the server's
 * log.
 *
 * Threading: single-threaded. Ownership: buffers come from malloc and live
 * until the instance is dropped after the request.
 */
#ifndef STELE_WEBHOOK_H
#define STELE_WEBHOOK_H

#ifndef STELE_USE_MALLOC
#define STELE_USE_MALLOC 1
#endif
#include "stele_guest.h"

#ifdef __cplusplus
extern "C" {
#endif

__attribute__((import_module("stele_webhook"), import_name("submit"))) int32_t
stele__webhook_submit(const char* ffqn, uint32_t ffqn_len, const char* params, uint32_t params_len,
                      stele_out* out);
__attribute__((import_module("stele_webhook"), import_name("await_result"))) int32_t
stele__webhook_await_result(const char* id, uint32_t id_len, uint32_t timeout_ms, stele_out* out);

/* Starts a new execution of `ffqn` with `params_json` (a JSON array, typed
 * as the API types it). STELE_OK: `*out` is the execution id (text).
 * STELE_ERR: `*out` is {"kind": "validation" | "not_found" | ...,
 * "message": "..."} (docs/api.md, "Errors"). */
static inline int stele_webhook_submit(const char* ffqn, stele_str params_json, stele_str* out) {
  stele_out o = {0, 0};
  int32_t status =
      stele__webhook_submit(ffqn, stele_strlen(ffqn), params_json.ptr, params_json.len, &o);
  if (out) *out = stele_out_str(o);
  return status;
}

/* Waits at most `timeout_ms` (and never past the webhook's time limit) for
 * the execution to finish. STELE_OK / STELE_ERR: `*out` is its ok / err
 * value (JSON); STELE_FAILED: {"kind", "reason", "detail"}; STELE_PENDING:
 * not finished yet (`*out` empty); STELE_NOT_FOUND: `*out` is the error
 * {"kind", "message"}. */
static inline int stele_webhook_await(stele_str execution_id, uint32_t timeout_ms, stele_str* out) {
  stele_out o = {0, 0};
  int32_t status = stele__webhook_await_result(execution_id.ptr, execution_id.len, timeout_ms, &o);
  if (out) *out = stele_out_str(o);
  return status;
}

/* Writes the response {"status": status, "body": body_json} (the body a
 * JSON value, sent as application/json). */
static inline void stele_webhook_reply(stele_buf* response, uint32_t status, stele_str body_json) {
  stele_buf_addc(response, "{\"status\":");
  stele_buf_add_u64(response, status);
  stele_buf_addc(response, ",\"body\":");
  if (body_json.len)
    stele_buf_add(response, body_json);
  else
    stele_buf_addc(response, "null");
  stele_buf_addc(response, "}");
}

/* Exports `fn` as the webhook's handler: void fn(stele_str request_json,
 * stele_buf* response_json). */
#define STELE_WEBHOOK(fn)                                                                    \
  void fn(stele_str request_json, stele_buf* response_json);                                 \
  STELE_EXPORT("stele_webhook") uint64_t stele__webhook_export(uint32_t ptr, uint32_t len) { \
    stele_str request = {(const char*)(uintptr_t)ptr, len};                                  \
    stele_buf out = {0, 0, 0};                                                               \
    fn(request, &out);                                                                       \
    return ((uint64_t)(uintptr_t)out.ptr << 32) | out.len;                                   \
  }

#ifdef __cplusplus
}
#endif

#endif /* STELE_WEBHOOK_H */
