#include "core/retry_config.h"

#include <algorithm>
#include <cstdint>

namespace stele::core {

ComponentRetryConfig RetryOverride::ApplyTo(ComponentRetryConfig config) const {
  if (max_retries) config.max_retries = *max_retries;
  if (retry_exp_backoff) config.retry_exp_backoff = *retry_exp_backoff;
  if (max_backoff) config.max_backoff = *max_backoff;
  if (jitter_percent) config.jitter_percent = *jitter_percent;
  return config;
}

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

double JitterShare(std::string_view execution_id, uint32_t temporary_event_count) {
  // FNV-1a over the id and the count, then a splitmix64 finaliser: stable
  // across processes and platforms (std::hash is neither).
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](uint8_t byte) {
    h ^= byte;
    h *= 1099511628211ull;
  };
  for (char c : execution_id) mix(static_cast<uint8_t>(c));
  for (int i = 0; i < 4; ++i) mix(static_cast<uint8_t>(temporary_event_count >> (8 * i)));
  h += 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  h ^= h >> 31;
  return static_cast<double>(h >> 11) / static_cast<double>(uint64_t{1} << 53);
}

std::optional<Duration> RetryDelay(uint32_t temporary_event_count,
                                   const ComponentRetryConfig& config,
                                   std::string_view execution_id) {
  std::optional<Duration> d =
      CanBeRetriedAfter(temporary_event_count, config.max_retries, config.retry_exp_backoff);
  if (!d) return std::nullopt;
  if (config.max_backoff && *config.max_backoff < *d) d = *config.max_backoff;
  const uint32_t percent = std::min<uint32_t>(config.jitter_percent, 100);
  if (percent == 0) return d;
  const std::optional<int64_t> micros = d->ToMicros();
  if (!micros) return d;  // beyond any representable instant: jitter is moot
  const double share = JitterShare(execution_id, temporary_event_count) * percent / 100.0;
  const auto cut = static_cast<int64_t>(static_cast<double>(*micros) * share);
  return Duration::FromMicros(
      static_cast<uint64_t>(std::clamp<int64_t>(*micros - cut, 0, *micros)));
}

std::optional<uint32_t> MaxAttempts(const ComponentRetryConfig& config) {
  if (!config.max_retries || *config.max_retries == UINT32_MAX) return std::nullopt;
  return *config.max_retries + 1;
}

}  // namespace stele::core
