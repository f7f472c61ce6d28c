// JsWatchdog: stops JavaScript guests that compute too long without asking
// their host for anything — an infinite loop, or a workflow computing past
// its lock. One process-wide thread polls the watched runs every few
// milliseconds while there are any; a run publishes its current deadlines
// (a budget of its thread's CPU time, and an instant on the steady clock)
// in its Watch entry with atomic stores, so entering and leaving host calls
// costs no lock and no wake-up. Only runs computing now have deadlines, so
// a poll reads the CPU clocks of those threads only.
//
// Threading: thread-safe. The callback of an entry (its Interrupt function)
// runs on the watchdog thread, never after Unwatch of the entry returned,
// and must be cheap (it only asks V8 to terminate).
// Ownership: entries are owned by their runs (shared_ptr, also held by the
// watchdog while watched).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace stele::runtime::js {

class JsWatchdog {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  // How often deadlines are checked: a guest is stopped at most this late.
  static constexpr std::chrono::milliseconds kPollInterval{5};

  class Entry {
   public:
    explicit Entry(std::function<void(const std::string&)> interrupt)
        : interrupt_(std::move(interrupt)) {}
    // The guest runs from now on, on the calling thread, and must stop
    // before it has used `cpu_budget` of that thread's CPU time (then it is
    // interrupted with `cpu_why`) and by `deadline` on the steady clock
    // (then with `deadline_why`). CPU time, not wall time, measures a
    // slice: under load a run that waits for a core has computed nothing,
    // and a correct workflow must not fail for it (BENCHMARKS.md, JS over
    // HTTP). Lock-free; one read of the thread's CPU clock.
    void Arm(std::chrono::nanoseconds cpu_budget, int cpu_why, SteadyTime deadline,
             int deadline_why);
    // The guest waits for its host: no deadline. Lock-free.
    void Pause() {
      cpu_deadline_ns_.store(kNever, std::memory_order_release);
      deadline_ns_.store(kNever, std::memory_order_release);
    }

   private:
    friend class JsWatchdog;
    static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
    std::function<void(const std::string&)> interrupt_;
    std::atomic<int64_t> deadline_ns_{kNever};      // steady clock
    std::atomic<int64_t> cpu_deadline_ns_{kNever};  // on cpu_clock_
    std::atomic<clockid_t> cpu_clock_{CLOCK_THREAD_CPUTIME_ID};
    std::atomic<int> deadline_why_{0};
    std::atomic<int> cpu_why_{0};
  };

  // The process's watchdog (its thread starts with it).
  static JsWatchdog& Process();
  JsWatchdog();
  ~JsWatchdog();
  JsWatchdog(const JsWatchdog&) = delete;
  JsWatchdog& operator=(const JsWatchdog&) = delete;

  // Watches `entry` (paused until armed); at a passed deadline its
  // interrupt function gets describe(why). Returns the id for Unwatch.
  uint64_t Watch(std::shared_ptr<Entry> entry, std::function<std::string(int)> describe);
  // After Unwatch returns, the entry's interrupt function is not running
  // and never will.
  void Unwatch(uint64_t id);
  uint64_t interrupts() const { return interrupts_.load(); }

 private:
  void Loop();

  struct Watched {
    std::shared_ptr<Entry> entry;
    std::function<std::string(int)> describe;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Watched> watched_;
  uint64_t next_id_ = 0;
  bool stop_ = false;
  std::atomic<uint64_t> interrupts_{0};
  std::thread thread_;
};

}  // namespace stele::runtime::js
