#include "base/clock.h"

#include "base/check.h"

namespace stele {

Clock::~Clock() = default;

const SystemClock& SystemClock::Instance() {
  // Never destroyed, so that threads still running during static destruction
  // can keep reading the time.
  static const SystemClock* const instance = new SystemClock();
  return *instance;
}

SharedClock CheckedClock(SharedClock clock, const char* what) {
  STELE_CHECK(clock != nullptr, what);
  return clock;
}

std::shared_ptr<const Clock> SystemClock::Shared() {
  // Aliasing constructor: shares no control block, deletes nothing.
  static const std::shared_ptr<const Clock> shared(std::shared_ptr<const Clock>(), &Instance());
  return shared;
}

DateTime SystemClock::Now() const {
  return std::chrono::floor<std::chrono::microseconds>(std::chrono::system_clock::now());
}

ManualClock::ManualClock(DateTime start) : micros_(ToMicros(start)) {}

DateTime ManualClock::Now() const {
  return DateTimeFromMicros(micros_.load(std::memory_order_acquire));
}

void ManualClock::Set(DateTime t) { micros_.store(ToMicros(t), std::memory_order_release); }

void ManualClock::Advance(std::chrono::microseconds delta) {
  micros_.fetch_add(delta.count(), std::memory_order_acq_rel);
}

}  // namespace stele
