/* stele_workflow.h: the C guest SDK for Stele workflows compiled to wasm32
 * (docs/guest_abi.md). A workflow is a plain C function; every effect
 * (calling an activity, sleeping, join sets, randomness) goes through a host
 * function of the "stele" import module, which the replay engine records
 * once and replays afterwards. Workflows import nothing else (no WASI): a
 * module importing anything outside "stele" is rejected at load.
 *
 *   #include "stele_workflow.h"
 *   STELE_WORKFLOW("demo:hello/api.welcome", welcome, "name: string", "string")
 *   int welcome(stele_str params, stele_buf* result) {
 *     stele_str greeting;
 *     if (stele_call("demo:hello/api.greet", params, &greeting) != STELE_OK) return STELE_ERR;
 *     stele_sleep_ms(1000);
 *     stele_buf_add(result, greeting);
 *     return STELE_OK;
 *   }
 *
 * When the host must stop the workflow (it blocked on a join set and is
 * unloaded, replay diverged, ...) the host function does not return: the
 * guest is aborted and later replayed from the start in a fresh instance.
 * Guest code therefore needs no error paths for interruptions.
 *
 * Threading: single-threaded. Ownership: every buffer the SDK returns lives
 * until the end of the run (bump allocator, never freed).
 */
#ifndef STELE_WORKFLOW_H
#define STELE_WORKFLOW_H

#include "stele_guest.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- Raw imports (module "stele"); pointers/lengths are i32, out = stele_out* --- */
STELE_IMPORT("call")
int32_t stele__call(const char* ffqn, uint32_t ffqn_len, const char* params, uint32_t params_len,
                    stele_out* out);
STELE_IMPORT("call_with_options")
int32_t stele__call_with_options(const char* ffqn, uint32_t ffqn_len, const char* params,
                                 uint32_t params_len, const char* options, uint32_t options_len,
                                 stele_out* out);
STELE_IMPORT("join_set_create") int32_t stele__join_set_create(stele_out* out);
STELE_IMPORT("join_set_create_named")
int32_t stele__join_set_create_named(const char* name, uint32_t name_len, stele_out* out);
STELE_IMPORT("submit")
int32_t stele__submit(const char* js, uint32_t js_len, const char* ffqn, uint32_t ffqn_len,
                      const char* params, uint32_t params_len, stele_out* out);
STELE_IMPORT("submit_with_options")
int32_t stele__submit_with_options(const char* js, uint32_t js_len, const char* ffqn,
                                   uint32_t ffqn_len, const char* params, uint32_t params_len,
                                   const char* options, uint32_t options_len, stele_out* out);
STELE_IMPORT("submit_delay")
int32_t stele__submit_delay(const char* js, uint32_t js_len, uint64_t millis, stele_out* out);
STELE_IMPORT("join_next")
int32_t stele__join_next(const char* js, uint32_t js_len, const char* ffqn, uint32_t ffqn_len,
                         stele_out* id_out, stele_out* out);
STELE_IMPORT("join_next_try")
int32_t stele__join_next_try(const char* js, uint32_t js_len, const char* ffqn, uint32_t ffqn_len,
                             stele_out* id_out, stele_out* out);
STELE_IMPORT("join_set_close") int32_t stele__join_set_close(const char* js, uint32_t js_len);
STELE_IMPORT("get")
int32_t stele__get(const char* ffqn, uint32_t ffqn_len, const char* id, uint32_t id_len,
                   stele_out* out);
STELE_IMPORT("sleep") int32_t stele__sleep(uint64_t millis);
STELE_IMPORT("schedule")
int32_t stele__schedule(const char* ffqn, uint32_t ffqn_len, const char* params,
                        uint32_t params_len, uint64_t delay_millis, stele_out* out);
STELE_IMPORT("stub")
int32_t stele__stub(const char* ffqn, uint32_t ffqn_len, const char* id, uint32_t id_len,
                    int32_t status, const char* value, uint32_t value_len);
STELE_IMPORT("receive")
int32_t stele__receive(const char* channel, uint32_t channel_len, uint64_t timeout_millis,
                       stele_out* id_out, stele_out* out);
STELE_IMPORT("receive_try")
int32_t stele__receive_try(const char* channel, uint32_t channel_len, stele_out* id_out,
                           stele_out* out);
STELE_IMPORT("publish")
int32_t stele__publish(const char* key, uint32_t key_len, const char* value, uint32_t value_len);
STELE_IMPORT("send")
int32_t stele__send(const char* id, uint32_t id_len, const char* channel, uint32_t channel_len,
                    const char* body, uint32_t body_len);
STELE_IMPORT("random_u64") uint64_t stele__random_u64(uint64_t min, uint64_t max_exclusive);
STELE_IMPORT("random_u64_inclusive")
uint64_t stele__random_u64_inclusive(uint64_t min, uint64_t max_inclusive);
STELE_IMPORT("random_string")
int32_t stele__random_string(uint32_t min_len, uint32_t max_len_exclusive, stele_out* out);
STELE_IMPORT("log") void stele__log(int32_t level, const char* msg, uint32_t msg_len);

/* --- Friendly wrappers -------------------------------------------------------------- */
#define STELE_WORKFLOW(ffqn, fn, params, ret) STELE__DECLARE("workflow", ffqn, fn, params, ret)

/* A durable call of `ffqn` with `params_json` (a JSON array). Returns
 * STELE_OK / STELE_ERR / STELE_FAILED; `result` gets the ok value, the err
 * value or the failure object (JSON). */
static inline int stele_call(const char* ffqn, stele_str params_json, stele_str* result) {
  stele_out out = {0, 0};
  int status = stele__call(ffqn, stele_strlen(ffqn), params_json.ptr, params_json.len, &out);
  if (result) *result = stele_out_str(out);
  return status;
}
/* stele_call with the child's own deadline and retry policy: `options_json`
 * is a JSON object with any of "timeout_ms" (from the workflow's current
 * time; clamped to this workflow's own deadline), "max_retries",
 * "backoff_ms", "max_backoff_ms", "jitter_percent" (docs/guest_abi.md §3).
 * Malformed options, a timeout that is not positive or a jitter over 100
 * end the workflow. */
static inline int stele_call_with_options(const char* ffqn, stele_str params_json,
                                          stele_str options_json, stele_str* result) {
  stele_out out = {0, 0};
  int status = stele__call_with_options(ffqn, stele_strlen(ffqn), params_json.ptr, params_json.len,
                                        options_json.ptr, options_json.len, &out);
  if (result) *result = stele_out_str(out);
  return status;
}
/* A generated join set; the returned handle (e.g. "g:1") is passed back. */
static inline stele_str stele_join_set_create(void) {
  stele_out out = {0, 0};
  stele__join_set_create(&out);
  return stele_out_str(out);
}
/* A named join set ("n:<name>"); STELE_ERR (message in *js) when the name is
 * invalid or taken. */
static inline int stele_join_set_create_named(const char* name, stele_str* js) {
  stele_out out = {0, 0};
  int status = stele__join_set_create_named(name, stele_strlen(name), &out);
  *js = stele_out_str(out);
  return status;
}
/* Submits a child execution into `js`; returns its execution id. */
static inline stele_str stele_submit(stele_str js, const char* ffqn, stele_str params_json) {
  stele_out out = {0, 0};
  stele__submit(js.ptr, js.len, ffqn, stele_strlen(ffqn), params_json.ptr, params_json.len, &out);
  return stele_out_str(out);
}
/* stele_submit with the child's own deadline and retry policy
 * (`options_json` as for stele_call_with_options). */
static inline stele_str stele_submit_with_options(stele_str js, const char* ffqn,
                                                  stele_str params_json, stele_str options_json) {
  stele_out out = {0, 0};
  stele__submit_with_options(js.ptr, js.len, ffqn, stele_strlen(ffqn), params_json.ptr,
                             params_json.len, options_json.ptr, options_json.len, &out);
  return stele_out_str(out);
}
/* Submits a durable timer into `js`; returns its delay id. */
static inline stele_str stele_submit_delay(stele_str js, uint64_t millis) {
  stele_out out = {0, 0};
  stele__submit_delay(js.ptr, js.len, millis, &out);
  return stele_out_str(out);
}
/* Awaits the next response of `js` (arrival order). Returns STELE_OK /
 * STELE_ERR / STELE_FAILED with the child's value in *result (a delay:
 * STELE_OK when it expired, STELE_FAILED when cancelled) and the responding
 * child or delay id in *id; STELE_ALL_PROCESSED when nothing is left;
 * STELE_CANCELLED, once, when the workflow is being cancelled: it may clean
 * up (call activities) and return; it finishes `cancelled` (docs/model.md
 * §9.5). A call (stele_call) answers STELE_FAILED {"kind":"cancelled"}. */
static inline int stele_join_next(stele_str js, stele_str* id, stele_str* result) {
  stele_out id_out = {0, 0}, out = {0, 0};
  int status = stele__join_next(js.ptr, js.len, 0, 0, &id_out, &out);
  if (id) *id = stele_out_str(id_out);
  if (result) *result = stele_out_str(out);
  return status;
}
/* Like stele_join_next, but the response must come from `ffqn`
 * (STELE_MISMATCH otherwise; the response is consumed). */
static inline int stele_join_next_fn(stele_str js, const char* ffqn, stele_str* id,
                                     stele_str* result) {
  stele_out id_out = {0, 0}, out = {0, 0};
  int status = stele__join_next(js.ptr, js.len, ffqn, stele_strlen(ffqn), &id_out, &out);
  if (id) *id = stele_out_str(id_out);
  if (result) *result = stele_out_str(out);
  return status;
}
/* Closes `js`: cancels unawaited activities and delays, awaits the rest. */
static inline void stele_join_set_close(stele_str js) { stele__join_set_close(js.ptr, js.len); }
/* stele_join_next without waiting: STELE_PENDING (and no response) when
 * nothing has arrived yet; the answer is recorded, so a replay gives it
 * again. Otherwise as stele_join_next. */
static inline int stele_join_next_try(stele_str js, stele_str* id, stele_str* result) {
  stele_out id_out = {0, 0}, out = {0, 0};
  int status = stele__join_next_try(js.ptr, js.len, 0, 0, &id_out, &out);
  if (id) *id = stele_out_str(id_out);
  if (result) *result = stele_out_str(out);
  return status;
}
/* --- Messages and published values (docs/guest_abi.md §3) --- */
/* The next message of `channel` (arrival order), waiting for it: STELE_OK
 * with its id and JSON body; STELE_CANCELLED when the workflow is being
 * cancelled. */
static inline int stele_receive(const char* channel, stele_str* id, stele_str* body) {
  stele_out id_out = {0, 0}, out = {0, 0};
  int status = stele__receive(channel, stele_strlen(channel), UINT64_MAX, &id_out, &out);
  if (id) *id = stele_out_str(id_out);
  if (body) *body = stele_out_str(out);
  return status;
}
/* stele_receive waiting at most `millis`: STELE_FAILED when no message
 * came first. */
static inline int stele_receive_ms(const char* channel, uint64_t millis, stele_str* id,
                                   stele_str* body) {
  stele_out id_out = {0, 0}, out = {0, 0};
  int status = stele__receive(channel, stele_strlen(channel), millis, &id_out, &out);
  if (id) *id = stele_out_str(id_out);
  if (body) *body = stele_out_str(out);
  return status;
}
/* stele_receive without waiting: STELE_PENDING when nothing has arrived. */
static inline int stele_receive_try(const char* channel, stele_str* id, stele_str* body) {
  stele_out id_out = {0, 0}, out = {0, 0};
  int status = stele__receive_try(channel, stele_strlen(channel), &id_out, &out);
  if (id) *id = stele_out_str(id_out);
  if (body) *body = stele_out_str(out);
  return status;
}
/* Publishes `value_json` under `key` for readers outside (last write wins). */
static inline void stele_publish(const char* key, stele_str value_json) {
  stele__publish(key, stele_strlen(key), value_json.ptr, value_json.len);
}
/* Sends `body_json` to `channel` of execution `id`, once: STELE_OK,
 * STELE_NOT_FOUND, or STELE_FAILED when it has finished. */
static inline int stele_send(stele_str id, const char* channel, stele_str body_json) {
  return stele__send(id.ptr, id.len, channel, stele_strlen(channel), body_json.ptr, body_json.len);
}
/* The result of a child a join_next already consumed. */
static inline int stele_get(const char* ffqn, stele_str child_id, stele_str* result) {
  stele_out out = {0, 0};
  int status = stele__get(ffqn, stele_strlen(ffqn), child_id.ptr, child_id.len, &out);
  if (result) *result = stele_out_str(out);
  return status;
}
/* A durable sleep; returns 1 when it expired, 0 when the delay was cancelled. */
static inline int stele_sleep_ms(uint64_t millis) { return stele__sleep(millis) == STELE_OK; }
/* Schedules a new top-level execution; returns its id. */
static inline stele_str stele_schedule(const char* ffqn, stele_str params_json,
                                       uint64_t delay_millis) {
  stele_out out = {0, 0};
  stele__schedule(ffqn, stele_strlen(ffqn), params_json.ptr, params_json.len, delay_millis, &out);
  return stele_out_str(out);
}
/* Completes stub activity `child_id` (of `ffqn`) with an ok (STELE_OK) or err
 * (STELE_ERR) value; STELE_ERR when it holds a different result already. */
static inline int stele_stub(const char* ffqn, stele_str child_id, int status, stele_str value) {
  return stele__stub(ffqn, stele_strlen(ffqn), child_id.ptr, child_id.len, status, value.ptr,
                     value.len);
}
static inline uint64_t stele_random_u64(uint64_t min, uint64_t max_exclusive) {
  return stele__random_u64(min, max_exclusive);
}
static inline uint64_t stele_random_u64_inclusive(uint64_t min, uint64_t max_inclusive) {
  return stele__random_u64_inclusive(min, max_inclusive);
}
static inline stele_str stele_random_string(uint32_t min_len, uint32_t max_len_exclusive) {
  stele_out out = {0, 0};
  stele__random_string(min_len, max_len_exclusive, &out);
  return stele_out_str(out);
}
enum {
  STELE_LOG_TRACE = 0,
  STELE_LOG_DEBUG = 1,
  STELE_LOG_INFO = 2,
  STELE_LOG_WARN = 3,
  STELE_LOG_ERROR = 4
};
/* A log line tagged with the execution id; dropped while replaying. */
static inline void stele_log(int level, stele_str message) {
  stele__log(level, message.ptr, message.len);
}
static inline void stele_log_c(int level, const char* message) {
  stele__log(level, message, stele_strlen(message));
}

#ifdef __cplusplus
}
#endif

#endif /* STELE_WORKFLOW_H */
