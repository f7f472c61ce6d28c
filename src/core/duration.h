// Duration: a non-negative span of time with nanosecond resolution,
// mirroring Rust's std::time::Duration (secs + nanos) so that persisted
// values ({"secs":..,"nanos":..}) round-trip exactly.
//
// Value type; thread-compatible.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>

namespace stele::core {

struct Duration {
  uint64_t secs = 0;
  uint32_t nanos = 0;  // REQUIRES: < 1'000'000'000

  static Duration FromMillis(uint64_t millis);
  static Duration FromMicros(uint64_t micros);
  static Duration FromSecs(uint64_t secs) { return Duration{secs, 0}; }
  static Duration Max() { return Duration{UINT64_MAX, 999'999'999}; }

  // Whole microseconds, or nullopt when the value does not fit in int64.
  std::optional<int64_t> ToMicros() const;
  // Saturating conversion, used for sleeps and timeouts.
  std::chrono::microseconds ToChronoSaturating() const;
  // Saturating multiplication (Rust panics here; a durable engine must not).
  Duration MulSaturating(uint64_t factor) const;
  bool IsZero() const { return secs == 0 && nanos == 0; }
  // Human form, e.g. "1.5s", "100ms".
  std::string ToString() const;

  friend bool operator==(const Duration&, const Duration&) = default;
  friend auto operator<=>(const Duration&, const Duration&) = default;
};

}  // namespace stele::core
