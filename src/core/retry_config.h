// Retry policy of a component and its retry arithmetic (docs/model.md §5.3;
// Obelisk's `ExecutionLog::can_be_retried_after`).
#pragma once

#include <cstdint>
#include <optional>

#include "core/duration.h"

namespace stele::core {

struct ComponentRetryConfig {
  // nullopt: retry forever (workflows).
  std::optional<uint32_t> max_retries;
  Duration retry_exp_backoff;

  static ComponentRetryConfig Zero() { return {0u, Duration{}}; }
  friend bool operator==(const ComponentRetryConfig&, const ComponentRetryConfig&) = default;
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

}  // namespace stele::core
