// The benchmark workloads W1–W5 (../shared/reference/workloads.md) on
// libstele in-process, SQLite with synchronous=FULL as shipped.
//
// Every figure is printed as `stele <workload> <metric> <value> <unit>`.
// A workload runs `STELE_BENCH_REPEAT` times (default 3) on a fresh
// database each time; the median is printed in that exact form and the
// range as `<metric>_range <min>-<max>`.
//
// Threading: the drivers are called from main only; each opens its own
// engine and stops it before returning.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stele/engine.h"

namespace stele::bench {

// The knobs of workloads.md, read from the environment.
struct Knobs {
  uint32_t warmup_n = 50;
  uint32_t w1_n = 2000;
  uint32_t w1_conc = 2000;
  uint32_t w2_steps = 200;
  uint32_t w3_children = 200;
  uint32_t w4_n = 1000;
  uint32_t w4_sleep_ms = 2000;
  uint32_t w5_n = 500;
  uint32_t w5_sleep_ms = 3000;
  uint32_t w5_kill_after_ms = 1500;
  uint32_t w5_down_ms = 500;
  uint32_t repeat = 3;
  std::string dir;   // scratch directory for databases
  std::string self;  // this binary (W5 re-executes it as the engine process)

  static Knobs FromEnv(const std::string& self);
};

// One run's metrics: name → (value, unit).
struct Metric {
  double value = 0;
  std::string unit;
};
using Metrics = std::map<std::string, Metric>;

// The ffqns of the workloads' functions.
inline constexpr const char* kStep = "bench:w/activities.step";        // returns 1
inline constexpr const char* kNow = "bench:w/activities.now";          // returns now in µs
inline constexpr const char* kEffect = "bench:w/activities.effect";    // appends to a file
inline constexpr const char* kW1 = "bench:w/workflows.w1";             // one step
inline constexpr const char* kW2 = "bench:w/workflows.w2";             // [steps] sequential steps
inline constexpr const char* kW3 = "bench:w/workflows.w3";             // [children] W1 children
inline constexpr const char* kW4 = "bench:w/workflows.w4";             // [sleep_ms] lateness in µs
inline constexpr const char* kW5 = "bench:w/workflows.w5";             // [sleep_ms, id] sleep, effect

// Opens an engine on `sqlite_path` with every workload function registered
// and starts it. `effects_path` is the file kEffect appends to.
Result<std::unique_ptr<Engine>, Error> OpenBenchEngine(const std::string& sqlite_path,
                                                       const std::string& effects_path = "");

Metrics RunWarmup(const Knobs& knobs);
Metrics RunW1(const Knobs& knobs);
Metrics RunW2(const Knobs& knobs);
Metrics RunW3(const Knobs& knobs);
Metrics RunW4(const Knobs& knobs);
Metrics RunW5(const Knobs& knobs);
// In this process (the --idle-probe child) / in a fresh child process.
Metrics RunIdle(const Knobs& knobs);
Metrics RunIdleInFreshProcess(const Knobs& knobs);

// The W5 engine process: `<self> --w5-engine <db> <effects> <ids-file> <n>
// <sleep_ms>`. With n > 0 it submits n W5 workflows, writes their ids to
// ids-file and prints "submitted" once all are acknowledged; then it runs
// until killed, printing "done" when every id in ids-file has finished.
int W5EngineMain(int argc, char** argv);

// Helpers shared by the drivers.
double NowSeconds();
uint64_t PeakRssBytes();
uint64_t CurrentRssBytes();
uint64_t FileBytes(const std::string& sqlite_path);  // db + -wal + -shm
std::string FreshPath(const Knobs& knobs, const std::string& name);
double Percentile(std::vector<double> values, double p);  // p in [0, 100]

}  // namespace stele::bench
