#include "core/duration.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace stele::core {
namespace {

TEST(DurationTest, Constructors) {
  EXPECT_EQ(Duration::FromMillis(1500), (Duration{1, 500'000'000}));
  EXPECT_EQ(Duration::FromMicros(2'000'003), (Duration{2, 3'000}));
  EXPECT_EQ(Duration::FromSecs(7), (Duration{7, 0}));
  EXPECT_TRUE(Duration{}.IsZero());
  EXPECT_LT(Duration::FromMillis(999), Duration::FromSecs(1));
}

TEST(DurationTest, ToMicros) {
  EXPECT_EQ(Duration::FromMillis(1500).ToMicros(), 1'500'000);
  EXPECT_EQ((Duration{0, 1'999}).ToMicros(), 1);  // truncated
  constexpr uint64_t kMaxSecs = INT64_MAX / 1'000'000;
  EXPECT_EQ((Duration{kMaxSecs, 0}).ToMicros(), int64_t{kMaxSecs} * 1'000'000);
  EXPECT_EQ((Duration{kMaxSecs, 775'807'000}).ToMicros(), INT64_MAX);
  EXPECT_FALSE((Duration{kMaxSecs, 775'808'000}).ToMicros().has_value());
  EXPECT_FALSE((Duration{kMaxSecs + 1, 0}).ToMicros().has_value());
  EXPECT_FALSE(Duration::Max().ToMicros().has_value());
  EXPECT_EQ(Duration::Max().ToChronoSaturating(), std::chrono::microseconds::max());
  EXPECT_EQ(Duration::FromMillis(3).ToChronoSaturating(), std::chrono::microseconds(3000));
}

TEST(DurationTest, MulSaturating) {
  EXPECT_EQ(Duration::FromMillis(100).MulSaturating(16), Duration::FromMillis(1600));
  EXPECT_EQ((Duration{1, 600'000'000}).MulSaturating(3), (Duration{4, 800'000'000}));
  EXPECT_EQ((Duration{0, 999'999'999}).MulSaturating(UINT64_MAX),
            (Duration{18'446'744'055'262'807'541ULL, 290'448'385}));
  EXPECT_EQ(Duration::FromMillis(1).MulSaturating(0), Duration{});
  EXPECT_EQ(Duration::FromSecs(UINT64_MAX / 2 + 1).MulSaturating(2), Duration::Max());
  EXPECT_EQ(Duration::Max().MulSaturating(2), Duration::Max());
  EXPECT_EQ(Duration::Max().MulSaturating(1), Duration::Max());
}

TEST(DurationTest, ToStringLikeRustDebug) {
  EXPECT_EQ(Duration::FromMillis(1500).ToString(), "1.5s");
  EXPECT_EQ(Duration::FromMillis(100).ToString(), "100ms");
  EXPECT_EQ(Duration::FromSecs(3).ToString(), "3s");
  EXPECT_EQ((Duration{1, 1}).ToString(), "1.000000001s");
  EXPECT_EQ((Duration{0, 1'500'000}).ToString(), "1.5ms");
  EXPECT_EQ((Duration{0, 2'000}).ToString(), "2\u00b5s");
  EXPECT_EQ((Duration{0, 7}).ToString(), "7ns");
  EXPECT_EQ(Duration{}.ToString(), "0ns");
}

}  // namespace
}  // namespace stele::core
