/* Activities for the instance-pool tests (instance_pool_test.cc), compiled
 * against wasi-libc: each reports state an earlier run could have left
 * behind, so that a reused instance that was not reset gives itself away. */
#include <stdio.h>
#include <stdlib.h>

#include "stele_activity.h"

STELE_ACTIVITY("test:pool/api.remember", remember, "", "list<u64>")
STELE_ACTIVITY("test:pool/api.crash", crash, "", "u64")
STELE_ACTIVITY("test:pool/api.grow", grow, "", "u64")
STELE_ACTIVITY("test:pool/api.print", print_hello, "", "u64")

static uint64_t calls;         /* .bss */
static uint64_t seeded = 1000; /* .data */
static uint64_t* kept;         /* points into the malloc heap */

/* [calls, seeded, *kept, heap pointer]: [1, 1001, 1, p] in a fresh
 * instance; an instance reused without a reset shows 2, 1002, ... */
int remember(stele_str params, stele_buf* result) {
  (void)params;
  ++calls;
  ++seeded;
  if (kept == NULL) {
    kept = (uint64_t*)malloc(sizeof *kept);
    *kept = 0;
  }
  ++*kept;
  stele_buf_addc(result, "[");
  stele_buf_add_u64(result, calls);
  stele_buf_addc(result, ",");
  stele_buf_add_u64(result, seeded);
  stele_buf_addc(result, ",");
  stele_buf_add_u64(result, *kept);
  stele_buf_addc(result, ",");
  stele_buf_add_u64(result, (uint64_t)(uintptr_t)kept);
  stele_buf_addc(result, "]");
  return STELE_OK;
}

/* Leaves state behind, then traps. */
int crash(stele_str params, stele_buf* result) {
  (void)params;
  (void)result;
  calls += 100;
  __builtin_trap();
}

/* Grows linear memory by one page (which no reset can undo). */
int grow(stele_str params, stele_buf* result) {
  (void)params;
  ++calls;
  stele_buf_add_u64(result, (uint64_t)__builtin_wasm_memory_grow(0, 1));
  return STELE_OK;
}

/* Writes a line to stdout (through the host's fd_write). */
int print_hello(stele_str params, stele_buf* result) {
  (void)params;
  printf("hello from the pool\n");
  fflush(stdout);
  stele_buf_add_u64(result, 1);
  return STELE_OK;
}
