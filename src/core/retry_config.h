// Retry policy of a component (or of one execution) and its retry
// arithmetic (docs/model.md §5.3; Obelisk's `ExecutionLog::can_be_retried_after`).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/duration.h"

namespace stele::core {

struct ComponentRetryConfig {
  // Retries after the first attempt. nullopt: retry forever (only when a
  // configuration asks for it explicitly; both faces default to a limit,
  // docs/config.md "Retries").
  std::optional<uint32_t> max_retries;
  Duration retry_exp_backoff;
  // Longest wait before one retry: the exponential backoff stops growing
  // here. nullopt: no cap (events written before the cap existed).
  std::optional<Duration> max_backoff = std::nullopt;
  // 0..100: each wait is shortened by a pseudo-random share of up to this
  // many percent of it, so that executions failing together do not retry
  // together. The share is a function of (execution id, retry number):
  // replaying an outcome computes the same instant.
  uint32_t jitter_percent = 0;

  static ComponentRetryConfig Zero() { return {0u, Duration{}}; }
  friend bool operator==(const ComponentRetryConfig&, const ComponentRetryConfig&) = default;
};

// The fields of a retry policy one execution overrides (set at submit or
// by the parent's call); unset fields keep the component's.
struct RetryOverride {
  std::optional<uint32_t> max_retries;
  std::optional<Duration> retry_exp_backoff;
  std::optional<Duration> max_backoff;
  std::optional<uint32_t> jitter_percent;

  bool IsEmpty() const {
    return !max_retries && !retry_exp_backoff && !max_backoff && !jitter_percent;
  }
  ComponentRetryConfig ApplyTo(ComponentRetryConfig config) const;
  friend bool operator==(const RetryOverride&, const RetryOverride&) = default;
};

// `temporary_event_count` counts the temporary failures/timeouts including
// the one being handled (callers pass intermittent_event_count + 1).
// Returns backoff * 2^(n-1) (saturating) when n <= max_retries (nullopt =
// forever), otherwise nullopt: give up.
std::optional<Duration> CanBeRetriedAfter(uint32_t temporary_event_count,
                                          std::optional<uint32_t> max_retries,
                                          Duration retry_exp_backoff);
Duration ComputeRetryDurationWhenRetryingForever(uint32_t temporary_event_count,
                                                 Duration retry_exp_backoff);

// The whole policy: CanBeRetriedAfter, capped at max_backoff, then
// shortened by the jitter share of (execution_id, n):
//   d = min(backoff * 2^(n-1), max_backoff);  wait = d - d * jitter% * u,
// u = JitterShare(execution_id, n) in [0, 1). So every wait lies in
// [d * (1 - jitter%), d] and never exceeds max_backoff.
std::optional<Duration> RetryDelay(uint32_t temporary_event_count,
                                   const ComponentRetryConfig& config,
                                   std::string_view execution_id);
// A deterministic pseudo-random number in [0, 1) of (execution_id, n).
double JitterShare(std::string_view execution_id, uint32_t temporary_event_count);

// The attempts of a policy: max_retries + 1 (nullopt: unlimited).
std::optional<uint32_t> MaxAttempts(const ComponentRetryConfig& config);

}  // namespace stele::core
