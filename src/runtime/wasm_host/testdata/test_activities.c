/* Activities for the wasm_host tests, built against wasi-libc. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "stele_activity.h"

STELE_ACTIVITY("testing:wasm/act.greet", greet, "name: string", "string")
STELE_ACTIVITY("testing:wasm/act.square", square, "x: u64", "u64")
STELE_ACTIVITY("testing:wasm/act.trap", trap_act, "", "string")
STELE_ACTIVITY("testing:wasm/act.err", err_act, "", "string")
STELE_ACTIVITY("testing:wasm/act.loop", loop_act, "", "string")
STELE_ACTIVITY("testing:wasm/act.env", env_act, "", "string")
STELE_ACTIVITY("testing:wasm/act.exit", exit_act, "", "string")
STELE_ACTIVITY("testing:wasm/act.fetch", fetch_act, "request: string", "string")

/* params: [request JSON as a string]; ok: the response JSON as a string,
 * err: the host's message. */
int fetch_act(stele_str params, stele_buf* result) {
  stele_str request = stele_json_string(stele_json_at(params, 0));
  stele_str response;
  int status = stele_http_request(request, &response);
  stele_buf_add_json_string(result, response);
  return status == STELE_OK ? STELE_OK : STELE_ERR;
}

int greet(stele_str params, stele_buf* result) {
  stele_str name = stele_json_string(stele_json_at(params, 0));
  printf("greeting %.*s\n", (int)name.len, name.ptr);
  stele_buf text = {0, 0, 0};
  stele_buf_addc(&text, "hello, ");
  stele_buf_add(&text, name);
  stele_buf_add_json_string(result, stele_buf_str(&text));
  return STELE_OK;
}

int square(stele_str params, stele_buf* result) {
  uint64_t x = stele_json_u64(stele_json_at(params, 0));
  stele_buf_add_u64(result, x * x);
  return STELE_OK;
}

int trap_act(stele_str params, stele_buf* result) {
  (void)params;
  (void)result;
  __builtin_trap();
}

int err_act(stele_str params, stele_buf* result) {
  (void)params;
  stele_buf_addc(result, "\"no luck\"");
  return STELE_ERR;
}

int loop_act(stele_str params, stele_buf* result) {
  (void)params;
  (void)result;
  volatile uint64_t spins = 0;
  for (;;) ++spins;
}

int env_act(stele_str params, stele_buf* result) {
  (void)params;
  const char* v = getenv("STELE_TEST");
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  stele_buf_add_json_string(result, stele_cstr(v && ts.tv_sec > 0 ? v : "unset"));
  return STELE_OK;
}

int exit_act(stele_str params, stele_buf* result) {
  (void)params;
  (void)result;
  exit(3);
}
