// The PRNG is part of the replay contract: these golden values (computed
// independently from the published xoshiro256** and splitmix64
// definitions) must never change, or recorded workflows stop replaying.
#include "runtime/workflow/workflow_prng.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

namespace stele::runtime::workflow {
namespace {

TEST(WorkflowPrngTest, GoldenValuesForSeedZero) {
  WorkflowPrng prng(0);
  EXPECT_EQ(prng.NextU64(), 11091344671253066420ULL);
  EXPECT_EQ(prng.NextU64(), 13793997310169335082ULL);
  EXPECT_EQ(prng.NextU64(), 1900383378846508768ULL);
  EXPECT_EQ(prng.UniformInclusive(10, 19), 12u);
  EXPECT_EQ(prng.UniformInclusive(0, 61), 1u);
}

TEST(WorkflowPrngTest, RangesAreRespected) {
  WorkflowPrng prng(42);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t v = prng.UniformInclusive(5, 7);
    EXPECT_GE(v, 5u);
    EXPECT_LE(v, 7u);
  }
  EXPECT_EQ(prng.UniformInclusive(9, 9), 9u);
  (void)prng.UniformInclusive(0, UINT64_MAX);  // the whole range is allowed
  for (int i = 0; i < 100; ++i) {
    const std::string s = prng.AlphanumericString(2, 5);
    EXPECT_GE(s.size(), 2u);
    EXPECT_LT(s.size(), 5u);
    for (char c : s) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << s;
  }
}

TEST(WorkflowPrngTest, SameSeedSameSequence) {
  WorkflowPrng a(7), b(7), c(8);
  for (int i = 0; i < 10; ++i) {
    const uint64_t x = a.NextU64();
    EXPECT_EQ(x, b.NextU64());
    EXPECT_NE(x, c.NextU64());
  }
}

}  // namespace
}  // namespace stele::runtime::workflow
