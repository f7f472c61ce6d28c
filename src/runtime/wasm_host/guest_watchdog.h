// GuestWatchdog: interrupts a wasm workflow that computes too long without
// calling the host. A workflow's wall time is mostly spent inside host
// functions (waiting for responses, writing to the database), so a budget on
// the whole WasmInstance::Call would not do; instead each stretch of guest
// code between host calls (a slice) gets its own budget: CPU time of the
// guest's thread (a run that waits for a core under load has computed
// nothing) and a deadline on the steady clock (the run's lease). The guest
// is interrupted (WasmInstance::Interrupt) when it passes either without
// entering a host function. While a stretch is armed the watchdog reads its
// thread's CPU clock every kPollInterval.
//
// Threading: one watchdog thread per GuestWatchdog, started on first use;
// Watch/Pause/Resume/Unwatch are thread-safe. Ownership: the watchdog does
// not own instances; Unwatch must be called before an instance dies.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "runtime/wasm/wasm_engine.h"

namespace stele::runtime::wasm_host {

class GuestWatchdog {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  GuestWatchdog() = default;
  ~GuestWatchdog();
  GuestWatchdog(const GuestWatchdog&) = delete;
  GuestWatchdog& operator=(const GuestWatchdog&) = delete;

  // Starts watching `instance`, paused (not running guest code yet).
  // Returns a handle for the calls below.
  uint64_t Watch(wasm::WasmInstance* instance);
  // The guest entered a host function: its clock stops.
  void Pause(uint64_t handle);
  // The guest (re)starts running on the calling thread: it is interrupted
  // once that thread has used `cpu_budget` of CPU time or at `deadline`,
  // unless it enters a host function first.
  void Resume(uint64_t handle, std::chrono::nanoseconds cpu_budget, SteadyTime deadline);
  void Unwatch(uint64_t handle);
  // How many instances it interrupted (tests).
  uint64_t interrupts() const;

  // How late a CPU budget may be noticed.
  static constexpr std::chrono::milliseconds kPollInterval{5};

 private:
  struct Entry {
    wasm::WasmInstance* instance;
    std::optional<SteadyTime> deadline;  // nullopt while paused
    clockid_t cpu_clock = CLOCK_THREAD_CPUTIME_ID;
    std::optional<int64_t> cpu_deadline_ns;  // on cpu_clock; nullopt while paused
  };
  void Main();

  mutable std::mutex mu_;
  std::condition_variable wakeup_;
  std::map<uint64_t, Entry> entries_;
  uint64_t next_handle_ = 0;
  uint64_t interrupts_ = 0;
  // When the watchdog thread wakes by itself (nullopt: only when notified).
  std::optional<SteadyTime> wakes_at_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace stele::runtime::wasm_host
