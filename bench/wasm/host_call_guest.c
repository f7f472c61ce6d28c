/* Guest of stele_wasm_bench's host_call figures: the same loop with and
 * without one call of a cheap host function per iteration, so that the
 * difference is the cost of crossing into the host and back (argument and
 * result marshalling, the engine's wasm-to-C++ wrapper, std::function).
 * Built freestanding (no SDK): it imports only `bench.noop`. */
#include <stdint.h>

__attribute__((import_module("bench"), import_name("noop"))) uint32_t bench_noop(uint32_t x);

/* A mixing step the compiler cannot fold into a closed form. */
static inline uint32_t mix(uint32_t acc, uint32_t x) {
  acc ^= x * 2654435761u;
  return (acc << 5) | (acc >> 27);
}

__attribute__((export_name("loop_host"))) uint32_t loop_host(uint32_t n) {
  uint32_t acc = 0;
#pragma clang loop unroll(disable)
  for (uint32_t i = 0; i < n; ++i) acc = mix(acc, bench_noop(i));
  return acc;
}

__attribute__((export_name("loop_empty"))) uint32_t loop_empty(uint32_t n) {
  uint32_t acc = 0;
  /* Not unrolled, like the loop above: the same work per iteration but the call. */
#pragma clang loop unroll(disable)
  for (uint32_t i = 0; i < n; ++i) acc = mix(acc, i + 1);
  return acc;
}
