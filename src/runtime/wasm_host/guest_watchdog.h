// GuestWatchdog: interrupts a wasm workflow that computes too long without
// calling the host. A workflow's wall time is mostly spent inside host
// functions (waiting for responses, writing to the database), so a budget on
// the whole WasmInstance::Call would not do; instead each stretch of guest
// code between host calls (a slice) gets its own deadline on the steady
// clock: the guest is interrupted (WasmInstance::Interrupt) when it runs
// past it without entering a host function. The caller picks each
// deadline (WorkflowHost: the slice, bounded by the run's lease).
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
  // The guest (re)starts running: it is interrupted at `deadline` unless
  // it enters a host function first.
  void Resume(uint64_t handle, SteadyTime deadline);
  void Unwatch(uint64_t handle);
  // How many instances it interrupted (tests).
  uint64_t interrupts() const;

 private:
  struct Entry {
    wasm::WasmInstance* instance;
    std::optional<SteadyTime> deadline;  // nullopt while paused
  };
  void Main();

  mutable std::mutex mu_;
  std::condition_variable wakeup_;
  std::map<uint64_t, Entry> entries_;
  uint64_t next_handle_ = 0;
  uint64_t interrupts_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace stele::runtime::wasm_host
