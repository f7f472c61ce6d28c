/* Activities for the wasm_host tests, built against wasi-libc. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <wasi/api.h>

#include "stele_activity.h"

STELE_ACTIVITY("testing:wasm/act.greet", greet, "name: string", "string")
STELE_ACTIVITY("testing:wasm/act.square", square, "x: u64", "u64")
STELE_ACTIVITY("testing:wasm/act.trap", trap_act, "", "string")
STELE_ACTIVITY("testing:wasm/act.err", err_act, "", "string")
STELE_ACTIVITY("testing:wasm/act.loop", loop_act, "", "string")
STELE_ACTIVITY("testing:wasm/act.env", env_act, "", "string")
STELE_ACTIVITY("testing:wasm/act.exit", exit_act, "", "string")
STELE_ACTIVITY("testing:wasm/act.fetch", fetch_act, "request: string", "string")
STELE_ACTIVITY("testing:wasm/act.stdio", stdio_act, "text: string", "string")
STELE_ACTIVITY("testing:wasm/act.lines", lines_act, "n: u64", "u64")
STELE_ACTIVITY("testing:wasm/act.clock", clock_act, "", "list<u64>")
STELE_ACTIVITY("testing:wasm/act.random", random_act, "", "tuple<string, string, u32>")
STELE_ACTIVITY("testing:wasm/act.args", args_act, "", "list<string>")

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

/* Writes through stdio as a C program would: two lines to stdout without an
 * explicit flush, one to stderr, then a last partial line flushed by hand. */
int stdio_act(stele_str params, stele_buf* result) {
  stele_str text = stele_json_string(stele_json_at(params, 0));
  printf("out 1: %.*s\n", (int)text.len, text.ptr);
  printf("out 2: %.*s\n", (int)text.len, text.ptr);
  fprintf(stderr, "err: %.*s\n", (int)text.len, text.ptr);
  printf("partial");
  fflush(stdout);
  stele_buf_addc(result, "\"written\"");
  return STELE_OK;
}

/* n lines to stdout with printf and no fflush: a reactor never exits, so
 * only what stdio writes out by itself (line buffering) reaches the host. */
int lines_act(stele_str params, stele_buf* result) {
  uint64_t n = stele_json_u64(stele_json_at(params, 0));
  for (uint64_t i = 1; i <= n; ++i) printf("line %u\n", (unsigned)i);
  stele_buf_add_u64(result, n);
  return STELE_OK;
}

/* [realtime ns, monotonic ns, monotonic ns again, monotonic resolution ns,
 *  errno of clock_time_get on an unknown clock id] */
int clock_act(stele_str params, stele_buf* result) {
  (void)params;
  __wasi_timestamp_t realtime = 0, mono1 = 0, mono2 = 0, res = 0, unused = 0;
  __wasi_errno_t e = __wasi_clock_time_get(__WASI_CLOCKID_REALTIME, 1, &realtime);
  if (e == 0) e = __wasi_clock_time_get(__WASI_CLOCKID_MONOTONIC, 1, &mono1);
  if (e == 0) e = __wasi_clock_time_get(__WASI_CLOCKID_MONOTONIC, 1, &mono2);
  if (e == 0) e = __wasi_clock_res_get(__WASI_CLOCKID_MONOTONIC, &res);
  if (e != 0) {
    stele_buf_addc(result, "\"clock failed\"");
    return STELE_ERR;
  }
  uint64_t values[] = {realtime, mono1, mono2, res, __wasi_clock_time_get(7, 1, &unused)};
  stele_buf_addc(result, "[");
  for (unsigned i = 0; i < sizeof values / sizeof values[0]; ++i) {
    if (i > 0) stele_buf_addc(result, ",");
    stele_buf_add_u64(result, values[i]);
  }
  stele_buf_addc(result, "]");
  return STELE_OK;
}

static void add_hex(stele_buf* result, const uint8_t* bytes, unsigned n) {
  static const char digits[] = "0123456789abcdef";
  char text[2 * 32 + 1];
  for (unsigned i = 0; i < n; ++i) {
    text[2 * i] = digits[bytes[i] >> 4];
    text[2 * i + 1] = digits[bytes[i] & 15];
  }
  text[2 * n] = 0;
  stele_buf_add_json_string(result, stele_cstr(text));
}

/* [32 random bytes as hex, 32 more, errno of random_get above its 1 MiB cap] */
int random_act(stele_str params, stele_buf* result) {
  (void)params;
  uint8_t a[32], b[32];
  if (__wasi_random_get(a, sizeof a) != 0 || __wasi_random_get(b, sizeof b) != 0) {
    stele_buf_addc(result, "\"random_get failed\"");
    return STELE_ERR;
  }
  stele_buf_addc(result, "[");
  add_hex(result, a, sizeof a);
  stele_buf_addc(result, ",");
  add_hex(result, b, sizeof b);
  stele_buf_addc(result, ",");
  stele_buf_add_u64(result, __wasi_random_get(a, (1u << 20) + 1));
  stele_buf_addc(result, "]");
  return STELE_OK;
}

/* The WASI args (argv) as a list of strings. */
int args_act(stele_str params, stele_buf* result) {
  (void)params;
  __wasi_size_t count = 0, size = 0;
  if (__wasi_args_sizes_get(&count, &size) != 0) {
    stele_buf_addc(result, "\"args_sizes_get failed\"");
    return STELE_ERR;
  }
  uint8_t** argv = malloc((count + 1) * sizeof *argv);
  uint8_t* buf = malloc(size + 1);
  if (__wasi_args_get(argv, buf) != 0) {
    stele_buf_addc(result, "\"args_get failed\"");
    return STELE_ERR;
  }
  stele_buf_addc(result, "[");
  for (__wasi_size_t i = 0; i < count; ++i) {
    if (i > 0) stele_buf_addc(result, ",");
    stele_buf_add_json_string(result, stele_cstr((const char*)argv[i]));
  }
  stele_buf_addc(result, "]");
  free(argv);
  free(buf);
  return STELE_OK;
}
