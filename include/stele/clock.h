// stele/clock.h — Clock: the one source of "now" for Stele, public so that
// a program (or its tests) can give libstele its own, e.g. a ManualClock
// (EngineOptions::clock).
//
// Every component that reads the time takes a `const Clock&` instead of
// calling std::chrono directly, so tests can drive time by hand (ManualClock)
// and lock expiry, timers and retries become deterministic.
//
// Threading: Now() may be called from any thread on every implementation.
// ManualClock's setters may also be called concurrently with Now().
// Ownership: a component that keeps a clock beyond the call it was given in
// (executors, the watcher, workers, the Engine, the server) shares it
// through a SharedClock, so a clock can never end before a thread that
// still reads it (a ManualClock in a test body once did, under a running
// executor). Short-lived helpers may take a `const Clock&` for the length
// of a call. SystemClock::Shared() and Instance() live forever.

#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

namespace stele {

// An instant: microseconds since the Unix epoch, UTC (the precision every
// storage backend keeps).
using DateTime = std::chrono::time_point<std::chrono::system_clock, std::chrono::microseconds>;

class Clock {
 public:
  virtual ~Clock();

  // Clocks are shared by reference; copying one through the base would slice.
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;

  // The current instant, in microseconds.
  virtual DateTime Now() const = 0;

 protected:
  Clock() = default;
};

// A clock shared by everything that keeps it (see Ownership above).
using SharedClock = std::shared_ptr<const Clock>;

// Wall-clock time from std::chrono::system_clock, truncated to microseconds.
// It is not monotonic: it follows the system's adjustments.
class SystemClock final : public Clock {
 public:
  SystemClock() = default;

  // A process-wide instance, never destroyed, for composition roots.
  static const SystemClock& Instance();
  // The same instance as a SharedClock (it owns nothing).
  static std::shared_ptr<const Clock> Shared();

  DateTime Now() const override;
};

// A clock that only moves when told to. For tests and simulations.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(DateTime start);

  DateTime Now() const override;

  // Moves the clock to `t`, which may be earlier than Now().
  void Set(DateTime t);
  // Moves the clock by `delta`, which may be negative.
  void Advance(std::chrono::microseconds delta);

 private:
  // Microseconds since the epoch. An atomic integer rather than a mutex:
  // Now() sits on hot paths of the code under test.
  std::atomic<int64_t> micros_;
};

}  // namespace stele
