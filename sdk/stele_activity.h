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

#endif /* STELE_ACTIVITY_H */
