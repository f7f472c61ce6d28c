/* The trivial steps of the HTTP workloads, compiled against wasi-libc:
 *   step() -> 1
 *   now()  -> the realtime clock in µs (W4's t0 and t1) */
#include <time.h>

#include "stele_activity.h"

STELE_ACTIVITY("bench:http/activities.step", step, "", "u64")
STELE_ACTIVITY("bench:http/activities.now", now, "", "u64")

int step(stele_str params, stele_buf* result) {
  (void)params;
  stele_buf_add_u64(result, 1);
  return STELE_OK;
}

int now(stele_str params, stele_buf* result) {
  (void)params;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  stele_buf_add_u64(result, (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u);
  return STELE_OK;
}
