#include "core/retry_config.h"

#include <gtest/gtest.h>

#include <cstdint>

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

}  // namespace
}  // namespace stele::core
