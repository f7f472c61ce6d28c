// Clock: the one source of "now" for Stele.
//
// Every component that reads the time takes a `const Clock&` instead of
// calling std::chrono directly, so tests can drive time by hand (ManualClock)
// and lock expiry, timers and retries become deterministic.
//
// Threading: Now() may be called from any thread on every implementation.
// ManualClock's setters may also be called concurrently with Now().
// Ownership: components hold a Clock by reference and do not own it; the
// clock must outlive them. SystemClock::Instance() lives forever.

#ifndef STELE_BASE_CLOCK_H_
#define STELE_BASE_CLOCK_H_

#include <atomic>
#include <chrono>
#include <cstdint>

#include "base/time.h"

namespace stele {

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

// Wall-clock time from std::chrono::system_clock, truncated to microseconds.
// It is not monotonic: it follows the system's adjustments.
class SystemClock final : public Clock {
 public:
  SystemClock() = default;

  // A process-wide instance, never destroyed, for composition roots.
  static const SystemClock& Instance();

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

#endif  // STELE_BASE_CLOCK_H_
