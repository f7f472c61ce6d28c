// GuestWatchdog: interrupts a wasm workflow that computes too long without
// calling the host. A workflow's wall time is mostly spent inside host
// functions (waiting for responses, writing to the database), so a budget on
// the whole WasmInstance::Call would not do; instead each run's guest time
// is measured between host calls, on the steady clock: when a guest runs
// `slice` without entering a host function, its instance is interrupted
// (WasmInstance::Interrupt) and the run is retried later, never finished.
//
// Threading: one watchdog thread per GuestWatchdog, started on first use;
// Watch/Pause/Resume/Unwatch are thread-safe. Ownership: the watchdog does
// not own instances; Unwatch must be called before an instance dies.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "runtime/wasm/wasm_engine.h"

namespace stele::runtime::wasm_host {

class GuestWatchdog {
 public:
  explicit GuestWatchdog(std::chrono::milliseconds slice) : slice_(slice) {}
  ~GuestWatchdog();
  GuestWatchdog(const GuestWatchdog&) = delete;
  GuestWatchdog& operator=(const GuestWatchdog&) = delete;

  // Starts watching `instance`, running now. Returns a handle for the calls below.
  uint64_t Watch(wasm::WasmInstance* instance);
  // The guest entered a host function: its clock stops.
  void Pause(uint64_t handle);
  // The host function returned to the guest: a new slice starts.
  void Resume(uint64_t handle);
  void Unwatch(uint64_t handle);
  // How many instances it interrupted (tests).
  uint64_t interrupts() const;

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  struct Entry {
    wasm::WasmInstance* instance;
    std::optional<SteadyTime> deadline;  // nullopt while paused
  };
  void Main();

  const std::chrono::milliseconds slice_;
  mutable std::mutex mu_;
  std::condition_variable wakeup_;
  std::map<uint64_t, Entry> entries_;
  uint64_t next_handle_ = 0;
  uint64_t interrupts_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace stele::runtime::wasm_host
