/* stele_activity.h: the C guest SDK for Stele activities compiled to
 * wasm32-wasi (docs/guest_abi.md §5). An activity is a plain C function
 * exported with STELE_ACTIVITY; it may use wasi-libc (printf goes to the
 * execution's log, clock and random work; files and sockets do not). Build
 * it as a WASI reactor (-mexec-model=reactor) so the host can call
 * `_initialize` once and then the export.
 *
 *   #include "stele_activity.h"
 *   STELE_ACTIVITY("demo:hello/api.greet", greet, "name: string", "string")
 *   int greet(stele_str params, stele_buf* result) { ... return STELE_OK; }
 *
 * Returning STELE_ERR produces the `err` value, which is retried per the
 * retry config (retry_on_err) like any activity error; a trap is retried.
 * Returning STELE_ERR_NON_RETRYABLE produces the `err` value as a
 * permanent failure: final at once.
 *
 * Threading: single-threaded. Ownership: buffers come from malloc and live
 * until the instance is dropped after the attempt.
 */
#ifndef STELE_ACTIVITY_H
#define STELE_ACTIVITY_H

#ifndef STELE_USE_MALLOC
#define STELE_USE_MALLOC 1
#endif
#include "stele_guest.h"

#define STELE_ACTIVITY(ffqn, fn, params, ret) STELE__DECLARE("activity", ffqn, fn, params, ret)

#ifdef __cplusplus
extern "C" {
#endif

/* --- HTTP client (import module "stele_http", docs/guest_abi.md §5.1) ------ */
__attribute__((import_module("stele_http"), import_name("request"))) int32_t stele__http_request(
    const char* request, uint32_t request_len, stele_out* out);

/* Sends the request described by `request_json`:
 *   {"method": "GET", "url": "https://...", "headers": {"name": "value"},
 *    "body": "text", "timeout_ms": 5000}     (only "url" is required)
 * STELE_OK: `*response` is {"status": 200, "headers": [["name", "value"]...],
 * "body": "text"} (any HTTP status, redirects not followed).
 * STELE_ERR: `*response` is a message (transport error, host not allowed,
 * malformed request, response too large). Every request is recorded on
 * the attempt's event as an HTTP client trace. */
static inline int stele_http_request(stele_str request_json, stele_str* response) {
  stele_out out = {0, 0};
  int32_t status = stele__http_request(request_json.ptr, request_json.len, &out);
  if (response) *response = stele_out_str(out);
  return status;
}

#ifdef __cplusplus
}
#endif

#endif /* STELE_ACTIVITY_H */
