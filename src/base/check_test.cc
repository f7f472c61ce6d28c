#include "base/check.h"

#include <gtest/gtest.h>

#include <string>

namespace stele {
namespace {

TEST(CheckTest, PassingChecksDoNothing) {
  int evaluations = 0;
  STELE_CHECK(++evaluations == 1, "evaluated once");
  EXPECT_EQ(evaluations, 1);
  STELE_ASSERT(true, "never fires");
}

TEST(CheckDeathTest, FailingCheckPrintsLocationConditionAndMessage) {
  const int x = 3;
  EXPECT_DEATH(STELE_CHECK(x == 4, "x must be four"),
               "check_test\\.cc:[0-9]+: check failed: x == 4: x must be four");
  EXPECT_DEATH(STELE_CHECK(x < 0, std::string("built ") + "message"), "built message");
}

TEST(CheckDeathTest, AssertFollowsNdebug) {
#ifdef NDEBUG
  int evaluations = 0;
  STELE_ASSERT(++evaluations < 0, "not evaluated");
  EXPECT_EQ(evaluations, 0);
#else
  EXPECT_DEATH(STELE_ASSERT(1 + 1 == 3, "debug assert"),
               "check failed: 1 \\+ 1 == 3: debug assert");
#endif
}

}  // namespace
}  // namespace stele
