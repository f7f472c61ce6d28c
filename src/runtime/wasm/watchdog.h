// Watchdog: one background thread that runs a callback when a deadline
// passes, for the wall-clock budget of WasmInstance::Call.
//
// Threading: Arm and Disarm may be called from any thread. A callback runs on
// the watchdog thread, never after Disarm of its id has returned, and must be
// cheap (it only asks an engine to interrupt). The process-wide instance is
// created on first use and lives until exit.
// Ownership: the watchdog owns the armed callbacks until they run or are
// disarmed.

#ifndef STELE_RUNTIME_WASM_WATCHDOG_H_
#define STELE_RUNTIME_WASM_WATCHDOG_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

namespace stele::wasm {

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;

  static Watchdog& Process();

  Watchdog();
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Returns an id for Disarm (never 0).
  uint64_t Arm(Clock::time_point deadline, std::function<void()> callback);
  // After Disarm returns, the callback is not running and never will.
  void Disarm(uint64_t id);

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  bool stop_ = false;
  uint64_t next_id_ = 0;
  uint64_t running_id_ = 0;  // the id whose callback runs now, 0 when none
  std::set<std::pair<Clock::time_point, uint64_t>> deadlines_;
  std::map<uint64_t, std::pair<Clock::time_point, std::function<void()>>> entries_;
  std::thread thread_;
};

}  // namespace stele::wasm

#endif  // STELE_RUNTIME_WASM_WATCHDOG_H_
