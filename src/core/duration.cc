#include "core/duration.h"

#include <cstdint>
#include <string>

namespace stele::core {
namespace {

constexpr uint64_t kNanosPerSec = 1'000'000'000;
constexpr uint64_t kMicrosPerSec = 1'000'000;

// "<integer>[.<fraction without trailing zeros>]<unit>", where `fraction`
// has `digits` decimal places; the shape of Rust's Debug for Duration.
std::string FormatDecimal(uint64_t integer, uint64_t fraction, int digits, std::string_view unit) {
  std::string out = std::to_string(integer);
  if (fraction != 0) {
    std::string frac = std::to_string(fraction);
    frac.insert(0, static_cast<size_t>(digits) - frac.size(), '0');
    while (!frac.empty() && frac.back() == '0') frac.pop_back();
    out.push_back('.');
    out += frac;
  }
  out += unit;
  return out;
}

}  // namespace

Duration Duration::FromMillis(uint64_t millis) {
  return Duration{millis / 1000, static_cast<uint32_t>((millis % 1000) * 1'000'000)};
}

Duration Duration::FromMicros(uint64_t micros) {
  return Duration{micros / kMicrosPerSec, static_cast<uint32_t>((micros % kMicrosPerSec) * 1000)};
}

std::optional<int64_t> Duration::ToMicros() const {
  // Sub-microsecond nanos are truncated, as DateTime has microseconds only.
  constexpr uint64_t kMaxSecs = static_cast<uint64_t>(INT64_MAX) / kMicrosPerSec;
  if (secs > kMaxSecs) return std::nullopt;
  const uint64_t micros = secs * kMicrosPerSec + nanos / 1000;
  if (micros > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(micros);
}

std::chrono::microseconds Duration::ToChronoSaturating() const {
  const std::optional<int64_t> micros = ToMicros();
  return micros ? std::chrono::microseconds(*micros) : std::chrono::microseconds::max();
}

Duration Duration::MulSaturating(uint64_t factor) const {
  // nanos * factor is split as nanos * (q * 1e9 + r): the q part is whole
  // seconds and fits in u64 (nanos < 1e9, q <= UINT64_MAX / 1e9), the r part
  // is below 1e18.
  const uint64_t q = factor / kNanosPerSec;
  const uint64_t r = factor % kNanosPerSec;
  const uint64_t nanos_r = uint64_t{nanos} * r;
  uint64_t carry_secs = uint64_t{nanos} * q;
  uint64_t total_secs = 0;
  if (__builtin_add_overflow(carry_secs, nanos_r / kNanosPerSec, &carry_secs) ||
      __builtin_mul_overflow(secs, factor, &total_secs) ||
      __builtin_add_overflow(total_secs, carry_secs, &total_secs)) {
    return Max();
  }
  return Duration{total_secs, static_cast<uint32_t>(nanos_r % kNanosPerSec)};
}

std::string Duration::ToString() const {
  if (secs > 0) return FormatDecimal(secs, nanos, 9, "s");
  if (nanos >= 1'000'000) return FormatDecimal(nanos / 1'000'000, nanos % 1'000'000, 6, "ms");
  if (nanos >= 1'000) return FormatDecimal(nanos / 1'000, nanos % 1'000, 3, "\u00b5s");
  return std::to_string(nanos) + "ns";
}

}  // namespace stele::core
