// Helpers shared by the guest-cost benchmarks (bench/wasm/wasm_bench.cc,
// bench/js/js_bench.cc): failing loudly, the figure format of BENCHMARKS.md
// (`stele <group> <metric> <value> <unit>`), timers and the smoke-run knob.
// Header-only: each benchmark is its own executable.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace stele::bench::guest {

using Clock = std::chrono::steady_clock;

// The program's name for error lines and the group of its figures; each
// benchmark's main sets both.
inline const char* program = "stele_bench";
inline const char* group = "bench";

[[noreturn]] inline void Die(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", program, what.c_str());
  std::exit(1);
}
template <class R>
auto Must(R result, const std::string& what) {
  if (!result) Die(what);
  return std::move(*result);
}

inline void Report(const std::string& metric, double value, const char* unit) {
  std::printf("stele %s %s %.1f %s\n", group, metric.c_str(), value, unit);
  std::fflush(stdout);
}

inline double MicrosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// CPU time of this thread: figures that depend less than wall time on the
// load of a shared machine.
inline double CpuMicros() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

// Iteration counts shrink with STELE_BENCH_QUICK=1 (a smoke run).
inline bool Quick() {
  const char* quick = std::getenv("STELE_BENCH_QUICK");
  return quick != nullptr && std::string(quick) == "1";
}

}  // namespace stele::bench::guest
