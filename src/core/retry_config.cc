#include "core/retry_config.h"

#include <cstdint>

namespace stele::core {

std::optional<Duration> CanBeRetriedAfter(uint32_t temporary_event_count,
                                          std::optional<uint32_t> max_retries,
                                          Duration retry_exp_backoff) {
  if (temporary_event_count > max_retries.value_or(UINT32_MAX)) return std::nullopt;
  // Obelisk computes `2_u32.saturating_pow(n - 1)`: a u32 factor that sticks
  // at u32::MAX from n = 33 on. n = 0 would underflow in Obelisk; callers
  // always pass n >= 1, and 0 is treated as exponent 0.
  const uint32_t exponent = temporary_event_count == 0 ? 0 : temporary_event_count - 1;
  const uint32_t factor = exponent >= 32 ? UINT32_MAX : uint32_t{1} << exponent;
  // Rust panics when `Duration * u32` overflows; a durable engine must not.
  return retry_exp_backoff.MulSaturating(factor);
}

Duration ComputeRetryDurationWhenRetryingForever(uint32_t temporary_event_count,
                                                 Duration retry_exp_backoff) {
  // With no cap every count is retriable, so the optional always holds.
  return *CanBeRetriedAfter(temporary_event_count, std::nullopt, retry_exp_backoff);
}

}  // namespace stele::core
