/* fan_out's activity, compiled against wasi-libc: square(x) -> x*x. */
#include <stdio.h>

#include "stele_activity.h"

STELE_ACTIVITY("math:squares/api.square", square, "x: u64", "u64")

int square(stele_str params, stele_buf* result) {
  uint64_t x = stele_json_u64(stele_json_at(params, 0));
  printf("square(%llu)\n", (unsigned long long)x);
  stele_buf_add_u64(result, x * x);
  return STELE_OK;
}
