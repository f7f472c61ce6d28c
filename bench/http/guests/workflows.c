/* The W1–W5 workflows of bench/README.md as one wasm guest
 * (docs/guest_abi.md), driven through the server's HTTP API by
 * stele_http_bench. Every workflow returns a value the driver checks:
 *   w1 []            one trivial step                      -> 1
 *   w2 [steps]       `steps` sequential trivial steps      -> steps
 *   w3 [children]    `children` w1 children in a join set  -> children
 *   w4 [sleep_ms]    t0 = now; sleep; t1 = now             -> t1 - t0 - sleep (µs)
 *   w5 [sleep_ms]    sleep; append the id to the effects   -> 1
 * A workflow has no clock (guest_abi.md §3, Determinism): "now" is the
 * activity bench:http/activities.now, as in the in-process W4. */
#include "stele_workflow.h"

#define STEP "bench:http/activities.step"
#define NOW "bench:http/activities.now"
#define EFFECT "bench:http/effects.append"
#define W1 "bench:http/workflows.w1"

STELE_WORKFLOW("bench:http/workflows.w1", w1, "", "u64")
STELE_WORKFLOW("bench:http/workflows.w2", w2, "steps: u64", "u64")
STELE_WORKFLOW("bench:http/workflows.w3", w3, "children: u64", "u64")
STELE_WORKFLOW("bench:http/workflows.w4", w4, "sleep-ms: u64", "s64")
STELE_WORKFLOW("bench:http/workflows.w5", w5, "sleep-ms: u64", "u64")

static const stele_str kNoParams = {"[]", 2};

/* Calls `ffqn` with no params; its u64 value, or returns STELE_ERR with the
 * failure as the workflow's err value. */
#define CALL_U64(ffqn, out)                                 \
  do {                                                      \
    stele_str value_;                                       \
    if (stele_call(ffqn, kNoParams, &value_) != STELE_OK) { \
      stele_buf_add(result, value_);                        \
      return STELE_ERR;                                     \
    }                                                       \
    (out) = stele_json_u64(value_);                         \
  } while (0)

int w1(stele_str params, stele_buf* result) {
  (void)params;
  uint64_t one;
  CALL_U64(STEP, one);
  stele_buf_add_u64(result, one);
  return STELE_OK;
}

int w2(stele_str params, stele_buf* result) {
  uint64_t steps = stele_json_u64(stele_json_at(params, 0));
  uint64_t sum = 0;
  for (uint64_t i = 0; i < steps; ++i) {
    uint64_t one;
    CALL_U64(STEP, one);
    sum += one;
  }
  stele_buf_add_u64(result, sum);
  return STELE_OK;
}

int w3(stele_str params, stele_buf* result) {
  uint64_t children = stele_json_u64(stele_json_at(params, 0));
  stele_str js = stele_join_set_create();
  for (uint64_t i = 0; i < children; ++i) stele_submit(js, W1, kNoParams);
  uint64_t sum = 0;
  for (uint64_t i = 0; i < children; ++i) {
    stele_str value;
    if (stele_join_next(js, 0, &value) != STELE_OK) {
      stele_buf_addc(result, "\"a child failed\"");
      return STELE_ERR;
    }
    sum += stele_json_u64(value);
  }
  stele_buf_add_u64(result, sum);
  return STELE_OK;
}

int w4(stele_str params, stele_buf* result) {
  uint64_t sleep_ms = stele_json_u64(stele_json_at(params, 0));
  uint64_t t0, t1;
  CALL_U64(NOW, t0);
  stele_sleep_ms(sleep_ms);
  CALL_U64(NOW, t1);
  int64_t lateness = (int64_t)(t1 - t0) - (int64_t)(sleep_ms * 1000);
  if (lateness < 0) {
    stele_buf_addc(result, "-");
    stele_buf_add_u64(result, (uint64_t)(-lateness));
  } else {
    stele_buf_add_u64(result, (uint64_t)lateness);
  }
  return STELE_OK;
}

int w5(stele_str params, stele_buf* result) {
  uint64_t sleep_ms = stele_json_u64(stele_json_at(params, 0));
  stele_sleep_ms(sleep_ms);
  uint64_t one;
  CALL_U64(EFFECT, one);
  stele_buf_add_u64(result, one);
  return STELE_OK;
}
