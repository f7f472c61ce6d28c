/* Workflows for the wasm_host effect tests (wasm_host_effects_test.cc):
 * one per host function of the guest ABI that the other guests leave out
 * (schedule, get, submit_delay, named join sets, join_set_close,
 * join_next with an ffqn, stub, empty random ranges, per-child options).
 * Each mirrors a native scenario of
 * src/runtime/workflow/workflow_run_test.cc and returns the statuses it
 * saw as a JSON array, so the test asserts what the guest observed and the
 * history it wrote. Linked into the same component as test_workflows.c. */
#include "stele_workflow.h"

STELE_WORKFLOW("testing:wasm/wf.schedule", schedule_wf, "delay-millis: u64", "string")
STELE_WORKFLOW("testing:wasm/wf.get", get_wf, "", "list<string>")
STELE_WORKFLOW("testing:wasm/wf.delay", delay_wf, "millis: u64", "list<string>")
STELE_WORKFLOW("testing:wasm/wf.named", named_wf, "", "list<string>")
STELE_WORKFLOW("testing:wasm/wf.close", close_wf, "", "string")
STELE_WORKFLOW("testing:wasm/wf.mismatch", mismatch_wf, "", "list<string>")
STELE_WORKFLOW("testing:wasm/wf.stub", stub_wf, "", "list<string>")
STELE_WORKFLOW("testing:wasm/wf.empty-random", empty_random_wf, "which: u64", "string")
STELE_WORKFLOW("testing:wasm/wf.child-options", child_options_wf,
               "options: string, ffqn: string, x: u64", "list<string>")

static int str_equal(stele_str a, stele_str b) {
  if (a.len != b.len) return 0;
  for (uint32_t i = 0; i < a.len; ++i) {
    if (a.ptr[i] != b.ptr[i]) return 0;
  }
  return 1;
}

static void add_sep(stele_buf* b) { stele_buf_addc(b, ","); }
static void add_bool(stele_buf* b, int v) { stele_buf_addc(b, v ? "true" : "false"); }

/* Schedules wf.sleep([1]) as a new top-level execution; returns its id. */
int schedule_wf(stele_str params, stele_buf* result) {
  uint64_t delay = stele_json_u64(stele_json_at(params, 0));
  stele_str id = stele_schedule("testing:wasm/wf.sleep", stele_cstr("[1]"), delay);
  stele_buf_add_json_string(result, id);
  return STELE_OK;
}

/* A named join set with one child awaited by ffqn, a second join_next
 * (all processed), then get: of the awaited child (ok), with another ffqn
 * (mismatch), of a child not awaited yet (not found), of a malformed id
 * (not found). Returns [awaited, next, get, got, wrong, pending, invalid]. */
int get_wf(stele_str params, stele_buf* result) {
  (void)params;
  stele_str batch, later;
  if (stele_join_set_create_named("batch", &batch) != STELE_OK) return STELE_ERR;
  if (stele_join_set_create_named("later", &later) != STELE_OK) return STELE_ERR;
  stele_str child = stele_submit(batch, "testing:wasm/act.square", stele_cstr("[5]"));
  stele_str pending = stele_submit(later, "testing:wasm/act.square", stele_cstr("[6]"));
  stele_str awaited;
  if (stele_join_next_fn(batch, "testing:wasm/act.square", 0, &awaited) != STELE_OK) {
    return STELE_ERR;
  }
  stele_str ignored;
  int next = stele_join_next_fn(batch, "testing:wasm/act.square", 0, &ignored);
  stele_str got, wrong, missing, invalid;
  int get = stele_get("testing:wasm/act.square", child, &got);
  int get_wrong = stele_get("testing:wasm/act.greet", child, &wrong);
  int get_pending = stele_get("testing:wasm/act.square", pending, &missing);
  int get_invalid = stele_get("testing:wasm/act.square", stele_cstr("garbage"), &invalid);
  stele_buf_addc(result, "[");
  stele_buf_add(result, awaited);
  add_sep(result);
  stele_buf_add_u64(result, (uint64_t)next);
  add_sep(result);
  stele_buf_add_u64(result, (uint64_t)get);
  add_sep(result);
  stele_buf_add(result, got);
  add_sep(result);
  stele_buf_add_u64(result, (uint64_t)get_wrong);
  add_sep(result);
  stele_buf_add_u64(result, (uint64_t)get_pending);
  add_sep(result);
  stele_buf_add_u64(result, (uint64_t)get_invalid);
  stele_buf_addc(result, "]");
  return STELE_OK;
}

/* One delay in a generated join set, awaited with join_next. Returns
 * [status, responder is the delay, value]: 0 when it expired, 2 with a
 * failure object when it was cancelled. */
int delay_wf(stele_str params, stele_buf* result) {
  uint64_t millis = stele_json_u64(stele_json_at(params, 0));
  stele_str js = stele_join_set_create();
  stele_str delay = stele_submit_delay(js, millis);
  stele_str id, value;
  int status = stele_join_next(js, &id, &value);
  stele_buf_addc(result, "[");
  stele_buf_add_u64(result, (uint64_t)status);
  add_sep(result);
  add_bool(result, str_equal(id, delay));
  add_sep(result);
  stele_buf_add(result, value);
  stele_buf_addc(result, "]");
  return STELE_OK;
}

/* A named join set, the same name again (taken), an invalid name. Returns
 * [status, handle, status, message, status, message]. */
int named_wf(stele_str params, stele_buf* result) {
  (void)params;
  stele_str first, again, bad;
  int s1 = stele_join_set_create_named("orders", &first);
  int s2 = stele_join_set_create_named("orders", &again);
  int s3 = stele_join_set_create_named("no spaces", &bad);
  stele_buf_addc(result, "[");
  stele_buf_add_u64(result, (uint64_t)s1);
  add_sep(result);
  stele_buf_add_json_string(result, first);
  add_sep(result);
  stele_buf_add_u64(result, (uint64_t)s2);
  add_sep(result);
  stele_buf_add_json_string(result, again);
  add_sep(result);
  stele_buf_add_u64(result, (uint64_t)s3);
  add_sep(result);
  stele_buf_add_json_string(result, bad);
  stele_buf_addc(result, "]");
  return STELE_OK;
}

/* Closes join sets with pending submissions: `second` (a child workflow,
 * awaited; a stub activity, cancelled) explicitly, then `first` (a long
 * delay, cancelled) explicitly too. */
int close_wf(stele_str params, stele_buf* result) {
  (void)params;
  stele_str first, second;
  if (stele_join_set_create_named("first", &first) != STELE_OK) return STELE_ERR;
  if (stele_join_set_create_named("second", &second) != STELE_OK) return STELE_ERR;
  stele_submit_delay(first, 100000000);
  stele_submit(second, "testing:wasm/wf.sleep", stele_cstr("[20]"));
  stele_submit(second, "testing:wasm/stub.approve", stele_cstr("[]"));
  stele_join_set_close(second);
  stele_join_set_close(first);
  stele_buf_addc(result, "\"parent done\"");
  return STELE_OK;
}

/* join_next with an ffqn that does not match the responder: a delay, then
 * a child of another function. The response is consumed either way.
 * Returns [status, responder is the delay, status, responder is the child,
 * the child's value, status of a last join_next]. */
int mismatch_wf(stele_str params, stele_buf* result) {
  (void)params;
  stele_str js = stele_join_set_create();
  stele_str delay = stele_submit_delay(js, 0);
  stele_str id1, v1;
  int s1 = stele_join_next_fn(js, "testing:wasm/act.square", &id1, &v1);
  stele_str child = stele_submit(js, "testing:wasm/act.square", stele_cstr("[3]"));
  stele_str id2, v2;
  int s2 = stele_join_next_fn(js, "testing:wasm/act.greet", &id2, &v2);
  stele_str v3;
  int s3 = stele_join_next(js, 0, &v3);
  stele_buf_addc(result, "[");
  stele_buf_add_u64(result, (uint64_t)s1);
  add_sep(result);
  add_bool(result, str_equal(id1, delay));
  add_sep(result);
  stele_buf_add_u64(result, (uint64_t)s2);
  add_sep(result);
  add_bool(result, str_equal(id2, child));
  add_sep(result);
  stele_buf_add(result, v2);
  add_sep(result);
  stele_buf_add_u64(result, (uint64_t)s3);
  stele_buf_addc(result, "]");
  return STELE_OK;
}

/* Stubs its own stub-activity child: a value, the same value again
 * (idempotent), another value (conflict); then awaits it. Returns
 * [status, status, status, join_next status, value]. */
int stub_wf(stele_str params, stele_buf* result) {
  (void)params;
  const char* ffqn = "testing:wasm/stub.approve";
  stele_str js = stele_join_set_create();
  stele_str child = stele_submit(js, ffqn, stele_cstr("[]"));
  int first = stele_stub(ffqn, child, STELE_OK, stele_cstr("\"approved\""));
  int same = stele_stub(ffqn, child, STELE_OK, stele_cstr("\"approved\""));
  int other = stele_stub(ffqn, child, STELE_OK, stele_cstr("\"rejected\""));
  stele_str value;
  int next = stele_join_next_fn(js, ffqn, 0, &value);
  stele_buf_addc(result, "[");
  stele_buf_add_u64(result, (uint64_t)first);
  add_sep(result);
  stele_buf_add_u64(result, (uint64_t)same);
  add_sep(result);
  stele_buf_add_u64(result, (uint64_t)other);
  add_sep(result);
  stele_buf_add_u64(result, (uint64_t)next);
  add_sep(result);
  stele_buf_add(result, value);
  stele_buf_addc(result, "]");
  return STELE_OK;
}

/* An empty range: random_u64 (which 0), random_u64_inclusive (1),
 * random_string (2), after a sleep (so the trap comes in new territory
 * after a replay). The host ends the workflow; nothing returns. */
int empty_random_wf(stele_str params, stele_buf* result) {
  uint64_t which = stele_json_u64(stele_json_at(params, 0));
  stele_sleep_ms(1);
  if (which == 0) stele_random_u64(5, 5);
  if (which == 1) stele_random_u64_inclusive(6, 5);
  if (which == 2) stele_random_string(3, 3);
  stele_buf_addc(result, "\"a value from an empty range\"");
  return STELE_OK;
}

/* call_with_options and submit_with_options (docs/guest_abi.md §3): calls
 * `ffqn([x])`, then submits it into a generated join set and awaits it,
 * both children with `options` (JSON text). Returns [call status, call
 * value, join_next status, join_next value]. */
int child_options_wf(stele_str params, stele_buf* result) {
  stele_str options = stele_json_string(stele_json_at(params, 0));
  stele_str ffqn_text = stele_json_string(stele_json_at(params, 1));
  stele_buf ffqn = {0, 0, 0};
  stele_buf_add(&ffqn, ffqn_text);
  stele_buf_reserve(&ffqn, 1);
  ffqn.ptr[ffqn.len] = '\0'; /* the wrappers take a C string */
  stele_buf child_params = {0, 0, 0};
  stele_buf_addc(&child_params, "[");
  stele_buf_add_u64(&child_params, stele_json_u64(stele_json_at(params, 2)));
  stele_buf_addc(&child_params, "]");
  stele_str called;
  int call = stele_call_with_options(ffqn.ptr, stele_buf_str(&child_params), options, &called);
  stele_str js = stele_join_set_create();
  stele_submit_with_options(js, ffqn.ptr, stele_buf_str(&child_params), options);
  stele_str child, submitted;
  int next = stele_join_next(js, &child, &submitted);
  stele_buf_addc(result, "[");
  stele_buf_add_u64(result, (uint64_t)call);
  add_sep(result);
  stele_buf_add(result, called);
  add_sep(result);
  stele_buf_add_u64(result, (uint64_t)next);
  add_sep(result);
  stele_buf_add(result, submitted);
  stele_buf_addc(result, "]");
  return STELE_OK;
}
