#include "core/retry_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace stele::core {
namespace {

TEST(RetryConfigTest, ExponentialBackoffUntilMaxRetries) {
  const Duration backoff = Duration::FromMillis(100);
  // 5 retries = 6 attempts: failures 1..5 are retried, the 6th is final.
  EXPECT_EQ(CanBeRetriedAfter(1, 5, backoff), Duration::FromMillis(100));
  EXPECT_EQ(CanBeRetriedAfter(2, 5, backoff), Duration::FromMillis(200));
  EXPECT_EQ(CanBeRetriedAfter(3, 5, backoff), Duration::FromMillis(400));
  EXPECT_EQ(CanBeRetriedAfter(4, 5, backoff), Duration::FromMillis(800));
  EXPECT_EQ(CanBeRetriedAfter(5, 5, backoff), Duration::FromMillis(1600));
  EXPECT_EQ(CanBeRetriedAfter(6, 5, backoff), std::nullopt);
  EXPECT_EQ(CanBeRetriedAfter(UINT32_MAX, 5, backoff), std::nullopt);
}

TEST(RetryConfigTest, ZeroMaxRetriesMakesTheFirstFailureFinal) {
  EXPECT_EQ(CanBeRetriedAfter(1, 0, Duration::FromMillis(100)), std::nullopt);
  EXPECT_EQ(CanBeRetriedAfter(1, ComponentRetryConfig::Zero().max_retries,
                              ComponentRetryConfig::Zero().retry_exp_backoff),
            std::nullopt);
}

TEST(RetryConfigTest, ZeroCountIsExponentZero) {
  EXPECT_EQ(CanBeRetriedAfter(0, 5, Duration::FromMillis(100)), Duration::FromMillis(100));
  EXPECT_EQ(CanBeRetriedAfter(0, 0, Duration::FromMillis(100)), Duration::FromMillis(100));
}

TEST(RetryConfigTest, NoLimitRetriesForeverAndSaturates) {
  const Duration backoff = Duration::FromMillis(100);
  EXPECT_EQ(CanBeRetriedAfter(1, std::nullopt, backoff), Duration::FromMillis(100));
  EXPECT_EQ(CanBeRetriedAfter(11, std::nullopt, backoff), Duration::FromMillis(102'400));
  // 2^31 is the largest exact power; from n = 33 the u32 factor sticks at
  // u32::MAX, like Obelisk's saturating_pow.
  EXPECT_EQ(CanBeRetriedAfter(32, std::nullopt, backoff),
            Duration::FromMillis(uint64_t{100} << 31));
  EXPECT_EQ(CanBeRetriedAfter(33, std::nullopt, backoff),
            Duration::FromMillis(uint64_t{100} * UINT32_MAX));
  EXPECT_EQ(CanBeRetriedAfter(UINT32_MAX, std::nullopt, backoff),
            Duration::FromMillis(uint64_t{100} * UINT32_MAX));
  EXPECT_EQ(CanBeRetriedAfter(UINT32_MAX, UINT32_MAX, backoff),
            Duration::FromMillis(uint64_t{100} * UINT32_MAX));
  // The multiplication saturates instead of overflowing.
  EXPECT_EQ(CanBeRetriedAfter(UINT32_MAX, std::nullopt, Duration::Max()), Duration::Max());
  EXPECT_EQ(CanBeRetriedAfter(40, std::nullopt, Duration::FromSecs(UINT64_MAX / 2)),
            Duration::Max());
}

TEST(RetryConfigTest, RetryingForever) {
  EXPECT_EQ(ComputeRetryDurationWhenRetryingForever(3, Duration::FromMillis(10)),
            Duration::FromMillis(40));
  EXPECT_EQ(ComputeRetryDurationWhenRetryingForever(UINT32_MAX, Duration::Max()), Duration::Max());
}

// max_backoff caps the exponential growth; jitter only shortens a wait, by
// at most its share, and is the same for the same (execution, retry).
TEST(RetryConfigTest, RetryDelayIsCappedAndJitteredWithinBounds) {
  const ComponentRetryConfig capped{20u, Duration::FromMillis(100), Duration::FromSecs(1), 0};
  EXPECT_EQ(RetryDelay(1, capped, "E_a"), Duration::FromMillis(100));
  EXPECT_EQ(RetryDelay(4, capped, "E_a"), Duration::FromMillis(800));
  EXPECT_EQ(RetryDelay(5, capped, "E_a"), Duration::FromSecs(1));  // 1.6 s capped
  EXPECT_EQ(RetryDelay(20, capped, "E_a"), Duration::FromSecs(1));
  EXPECT_EQ(RetryDelay(21, capped, "E_a"), std::nullopt);  // retries spent

  ComponentRetryConfig jittered = capped;
  jittered.jitter_percent = 30;
  bool shortened = false;
  for (int e = 0; e < 200; ++e) {
    const std::string id = "E_" + std::to_string(e);
    for (uint32_t n = 1; n <= 20; ++n) {
      const Duration full = *RetryDelay(n, capped, id);
      const Duration d = *RetryDelay(n, jittered, id);
      EXPECT_LE(d, full);
      EXPECT_LE(d, Duration::FromSecs(1));
      // At least 70 % of the unjittered wait (to the microsecond).
      EXPECT_GE(*d.ToMicros() * 10 + 10, *full.ToMicros() * 7) << id << " n=" << n;
      EXPECT_EQ(d, *RetryDelay(n, jittered, id));  // deterministic
      shortened = shortened || d < full;
    }
  }
  EXPECT_TRUE(shortened);
  // Shares spread over [0, 1).
  double lo = 1, hi = 0;
  for (int i = 0; i < 1000; ++i) {
    const double u = JitterShare("E_x", static_cast<uint32_t>(i));
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  EXPECT_LT(lo, 0.05);
  EXPECT_GT(hi, 0.95);
}

TEST(RetryConfigTest, OverrideReplacesOnlyItsFields) {
  const ComponentRetryConfig base{5u, Duration::FromMillis(100), Duration::FromSecs(300), 10};
  EXPECT_EQ(RetryOverride{}.ApplyTo(base), base);
  RetryOverride o;
  o.max_retries = 0;
  o.jitter_percent = 0;
  const ComponentRetryConfig merged = o.ApplyTo(base);
  EXPECT_EQ(merged.max_retries, 0u);
  EXPECT_EQ(merged.jitter_percent, 0u);
  EXPECT_EQ(merged.retry_exp_backoff, Duration::FromMillis(100));
  EXPECT_EQ(merged.max_backoff, Duration::FromSecs(300));
  EXPECT_EQ(MaxAttempts(merged), 1u);
  EXPECT_EQ(MaxAttempts(ComponentRetryConfig{std::nullopt, Duration{}}), std::nullopt);
}

}  // namespace
}  // namespace stele::core
