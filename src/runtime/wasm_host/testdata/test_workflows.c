/* Workflows for the wasm_host tests. Compiled three times: VARIANT=1
 * (default); VARIANT=2 changes `two-calls` inside its recorded prefix (the
 * nondeterminism test); VARIANT=3 changes it only after the prefix (an
 * upgrade that replays and continues). */
#include "stele_workflow.h"

#ifndef VARIANT
#define VARIANT 1
#endif

STELE_WORKFLOW("testing:wasm/wf.hello", hello, "name: string", "string")
STELE_WORKFLOW("testing:wasm/wf.fan-out", fan_out, "n: u64", "u64")
STELE_WORKFLOW("testing:wasm/wf.sleep", sleep_wf, "millis: u64", "string")
STELE_WORKFLOW("testing:wasm/wf.loop", loop_wf, "", "string")
STELE_WORKFLOW("testing:wasm/wf.loop-after-call", loop_after_call_wf, "", "string")
STELE_WORKFLOW("testing:wasm/wf.trap", trap_wf, "", "string")
STELE_WORKFLOW("testing:wasm/wf.memory", memory_wf, "", "string")
STELE_WORKFLOW("testing:wasm/wf.two-calls", two_calls, "", "list<string>")
STELE_WORKFLOW("testing:wasm/wf.approval", approval, "amount: u64", "string")
STELE_WORKFLOW("testing:wasm/wf.random", random_wf, "", "string")
STELE_WORKFLOW("testing:wasm/wf.bad-ffqn", bad_ffqn, "", "string")
STELE_WORKFLOW("testing:wasm/wf.bad-result", bad_result, "", "string")

int hello(stele_str params, stele_buf* result) {
  stele_str greeting;
  if (stele_call("testing:wasm/act.greet", params, &greeting) != STELE_OK) {
    stele_buf_add(result, greeting);
    return STELE_ERR;
  }
  stele_sleep_ms(1);
  stele_buf_add(result, greeting);
  return STELE_OK;
}

int fan_out(stele_str params, stele_buf* result) {
  uint64_t n = stele_json_u64(stele_json_at(params, 0));
  stele_str js = stele_join_set_create();
  for (uint64_t i = 1; i <= n; ++i) {
    stele_buf args = {0, 0, 0};
    stele_buf_addc(&args, "[");
    stele_buf_add_u64(&args, i);
    stele_buf_addc(&args, "]");
    stele_submit(js, "testing:wasm/act.square", stele_buf_str(&args));
  }
  uint64_t sum = 0;
  for (uint64_t i = 1; i <= n; ++i) {
    stele_str value;
    if (stele_join_next(js, 0, &value) != STELE_OK) return STELE_ERR;
    sum += stele_json_u64(value);
  }
  stele_str value;
  if (stele_join_next(js, 0, &value) != STELE_ALL_PROCESSED) return STELE_ERR;
  stele_buf_add_u64(result, sum);
  return STELE_OK;
}

int sleep_wf(stele_str params, stele_buf* result) {
  stele_sleep_ms(stele_json_u64(stele_json_at(params, 0)));
  stele_buf_addc(result, "\"slept\"");
  return STELE_OK;
}

int loop_wf(stele_str params, stele_buf* result) {
  (void)params;
  (void)result;
  volatile uint64_t spins = 0;
  for (;;) ++spins;
}

/* Spins after a host call: the slice that ends it starts when the call
 * returns to the guest. */
int loop_after_call_wf(stele_str params, stele_buf* result) {
  (void)params;
  (void)result;
  stele_log_c(2, "about to spin");
  volatile uint64_t spins = 0;
  for (;;) ++spins;
}

__attribute__((noinline)) static int deep_trap(int depth) {
  if (depth == 0) __builtin_trap();
  return deep_trap(depth - 1) + 1;
}

int trap_wf(stele_str params, stele_buf* result) {
  (void)params;
  stele_buf_add_u64(result, (uint64_t)deep_trap(2));
  return STELE_OK;
}

int memory_wf(stele_str params, stele_buf* result) {
  (void)params;
  /* Grows the buffer until the memory cap: the SDK allocator traps. */
  stele_buf big = {0, 0, 0};
  for (;;) {
    stele_buf_reserve(&big, big.cap + 1);
    big.len = big.cap;
  }
  stele_buf_addc(result, "\"unreachable\"");
  return STELE_OK;
}

__attribute__((noinline)) int place_the_call(const char* ffqn, stele_str* out) {
  stele_str params = stele_cstr("[\"x\"]");
  return stele_call(ffqn, params, out);
}

int two_calls(stele_str params, stele_buf* result) {
  (void)params;
  stele_str a, b;
  place_the_call("testing:wasm/act.greet", &a);
#if VARIANT == 2
  place_the_call("testing:wasm/act.square", &b); /* code changed inside the prefix */
#else
  place_the_call("testing:wasm/stub.approve", &b); /* the recorded prefix ends here */
#endif
  place_the_call("testing:wasm/act.greet", &b);
  stele_buf_addc(result, "[");
  stele_buf_add(result, a);
  stele_buf_addc(result, ",");
  stele_buf_add(result, b);
#if VARIANT == 3
  stele_buf_addc(result, ",\"v3\"");
#endif
  stele_buf_addc(result, "]");
  return STELE_OK;
}

int approval(stele_str params, stele_buf* result) {
  stele_str decision;
  if (stele_call("testing:wasm/stub.approve", params, &decision) != STELE_OK ||
      !stele_str_eq(decision, "true")) {
    stele_buf_addc(result, "\"rejected\"");
    return STELE_OK;
  }
  stele_buf_addc(result, "\"approved\"");
  return STELE_OK;
}

int random_wf(stele_str params, stele_buf* result) {
  (void)params;
  uint64_t a = stele_random_u64(0, 1000000);
  uint64_t b = stele_random_u64_inclusive(5, 5);
  stele_str s = stele_random_string(8, 9);
  stele_buf_addc(result, "[");
  stele_buf_add_u64(result, a);
  stele_buf_addc(result, ",");
  stele_buf_add_u64(result, b);
  stele_buf_addc(result, ",");
  stele_buf_add_json_string(result, s);
  stele_buf_addc(result, "]");
  return STELE_OK;
}

int bad_ffqn(stele_str params, stele_buf* result) {
  stele_str out;
  (void)result;
  return stele_call("not an ffqn", params, &out);
}

/* Returns an ok value that is not JSON: a result parsing error. */
int bad_result(stele_str params, stele_buf* result) {
  (void)params;
  stele_buf_addc(result, "{broken");
  return STELE_OK;
}

/* Recurses `depth` levels through an indirect call (no tail call to turn
 * into a loop, no locals in linear memory: only the engine's stack grows).
 * Where the engine's stack runs out depends on the JIT tier and on the
 * stack the worker thread has left: never a deterministic outcome. */
STELE_WORKFLOW("testing:wasm/wf.recurse", recurse_wf, "depth: u64", "u64")
static uint64_t recurse(uint64_t depth);
static uint64_t (*volatile recurse_indirect)(uint64_t) = recurse;
__attribute__((noinline)) static uint64_t recurse(uint64_t depth) {
  if (depth == 0) return 0;
  return recurse_indirect(depth - 1) + 1;
}
int recurse_wf(stele_str params, stele_buf* result) {
  stele_buf_add_u64(result, recurse(stele_json_u64(stele_json_at(params, 0))));
  return STELE_OK;
}

/* Hostile: hands the host a string outside linear memory. */
STELE_WORKFLOW("testing:wasm/wf.oob", oob, "", "string")
int oob(stele_str params, stele_buf* result) {
  stele_out out = {0, 0};
  (void)result;
  return stele__call((const char*)(uintptr_t)0xfffffff0u, 64, params.ptr, params.len, &out);
}
