#include "base/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace stele {
namespace {

using std::chrono::microseconds;

TEST(ManualClockTest, StartsAtGivenInstantAndOnlyMovesWhenTold) {
  const DateTime start = DateTimeFromMillis(1'700'000'000'000);
  ManualClock clock(start);
  EXPECT_EQ(clock.Now(), start);
  EXPECT_EQ(clock.Now(), start);

  clock.Advance(microseconds{1'500});
  EXPECT_EQ(clock.Now(), start + microseconds{1'500});

  clock.Advance(microseconds{-500});
  EXPECT_EQ(clock.Now(), start + microseconds{1'000});

  const DateTime earlier = DateTimeFromMicros(-5);
  clock.Set(earlier);
  EXPECT_EQ(clock.Now(), earlier);
}

TEST(ManualClockTest, WorksThroughTheInterface) {
  ManualClock manual(DateTimeFromMicros(10));
  const Clock& clock = manual;
  manual.Advance(microseconds{5});
  EXPECT_EQ(clock.Now(), DateTimeFromMicros(15));
}

TEST(ManualClockTest, ConcurrentAdvancesAreNotLost) {
  ManualClock clock(DateTimeFromMicros(0));
  constexpr int kThreads = 4;
  constexpr int kAdvancesPerThread = 10'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&clock] {
      for (int i = 0; i < kAdvancesPerThread; ++i) {
        clock.Advance(microseconds{1});
        static_cast<void>(clock.Now());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ToMicros(clock.Now()), kThreads * kAdvancesPerThread);
}

TEST(SystemClockTest, TracksSystemClock) {
  const auto before = std::chrono::floor<microseconds>(std::chrono::system_clock::now());
  const DateTime now = SystemClock::Instance().Now();
  const auto after = std::chrono::system_clock::now();
  EXPECT_LE(before, now);
  EXPECT_LE(now, after);
  EXPECT_EQ(&SystemClock::Instance(), &SystemClock::Instance());
}

}  // namespace
}  // namespace stele
