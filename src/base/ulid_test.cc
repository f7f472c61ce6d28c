#include "base/ulid.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"

namespace stele {
namespace {

constexpr uint64_t kMax = ~uint64_t{0};

TEST(UlidTest, FormatsKnownValues) {
  EXPECT_EQ(Ulid(0, 0).ToString(), "00000000000000000000000000");
  EXPECT_EQ(Ulid(0, 1).ToString(), "00000000000000000000000001");
  EXPECT_EQ(Ulid(0, 31).ToString(), "0000000000000000000000000Z");
  EXPECT_EQ(Ulid(kMax, kMax).ToString(), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
  // The 5-bit group at bits 60..64 straddles lo and hi.
  EXPECT_EQ(Ulid(1, 0).ToString(), "0000000000000G000000000000");
  EXPECT_EQ(Ulid(0, uint64_t{1} << 63).ToString(), "00000000000008000000000000");
}

TEST(UlidTest, TimestampIsTheTop48Bits) {
  // From the ULID spec: timestamp 1469918176385 encodes as 01ARYZ6S41.
  const std::optional<Ulid> ulid = Ulid::Parse("01ARYZ6S41TSV4RRFFQ69G5FAV");
  ASSERT_TRUE(ulid.has_value());
  EXPECT_EQ(ulid->TimestampMs(), 1'469'918'176'385u);
  EXPECT_EQ(Ulid((uint64_t{0xABCDEF012345} << 16) | 0xFFFF, kMax).TimestampMs(), 0xABCDEF012345u);
}

TEST(UlidTest, ParseAndToStringRoundTrip) {
  const Ulid values[] = {Ulid(0, 0), Ulid(kMax, kMax), Ulid(1, 0),
                         Ulid(0x0123456789ABCDEF, 0xFEDCBA9876543210), Ulid(uint64_t{1} << 63, 1)};
  for (const Ulid& u : values) {
    const std::string text = u.ToString();
    ASSERT_EQ(text.size(), 26u);
    const std::optional<Ulid> parsed = Ulid::Parse(text);
    ASSERT_TRUE(parsed.has_value()) << text;
    EXPECT_EQ(*parsed, u) << text;
    EXPECT_EQ(parsed->hi(), u.hi());
    EXPECT_EQ(parsed->lo(), u.lo());
  }
  const std::string canonical = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
  EXPECT_EQ(Ulid::Parse(canonical)->ToString(), canonical);
}

TEST(UlidTest, ParseIsCaseInsensitiveAndDecodesLookAlikes) {
  const std::optional<Ulid> upper = Ulid::Parse("01ARZ3NDEKTSV4RRFFQ69G5FAV");
  ASSERT_TRUE(upper.has_value());
  EXPECT_EQ(Ulid::Parse("01arz3ndektsv4rrffq69g5fav"), upper);
  EXPECT_EQ(Ulid::Parse("0IARZ3NDEKTSV4RRFFQ69G5FAV"), upper);  // I -> 1
  EXPECT_EQ(Ulid::Parse("0lARZ3NDEKTSV4RRFFQ69G5FAV"), upper);  // l -> 1
  EXPECT_EQ(Ulid::Parse("O1ARZ3NDEKTSV4RRFFQ69G5FAV"), upper);  // O -> 0
  EXPECT_EQ(Ulid::Parse("o1ARZ3NDEKTSV4RRFFQ69G5FAV"), upper);  // o -> 0
  // Printing gives the canonical form back.
  EXPECT_EQ(Ulid::Parse("oiarz3ndektsv4rrffq69g5fav")->ToString(), "01ARZ3NDEKTSV4RRFFQ69G5FAV");
}

TEST(UlidTest, ParseRejectsInvalidText) {
  const char* const bad[] = {
      "",
      "01ARZ3NDEKTSV4RRFFQ69G5FA",    // 25 characters.
      "01ARZ3NDEKTSV4RRFFQ69G5FAVV",  // 27 characters.
      "01ARZ3NDEKTSV4RRFFQ69G5FAU",   // U is excluded from Crockford base32.
      "01ARZ3NDEKTSV4RRFFQ69G5FAu",
      "01ARZ3NDEK-SV4RRFFQ69G5FAV",
      "01ARZ3NDEKTSV4RRFFQ69G5FA ",
      "01ARZ3NDEKTSV4RRFFQ69G5FA*",
      "01ARZ3NDEKTSV4RRFFQ69G5FA\xC3",
      "8ZZZZZZZZZZZZZZZZZZZZZZZZZ",  // Above 2^128 - 1.
      "ZZZZZZZZZZZZZZZZZZZZZZZZZZ",
      "80000000000000000000000000",
  };
  for (const char* text : bad) {
    EXPECT_EQ(Ulid::Parse(text), std::nullopt) << "accepted: \"" << text << "\"";
  }
  EXPECT_EQ(Ulid::Parse(std::string_view("0000000000000000000000000\0", 26)), std::nullopt);
  EXPECT_TRUE(Ulid::Parse("7ZZZZZZZZZZZZZZZZZZZZZZZZZ").has_value());
}

TEST(UlidTest, OrdersByTimestampThenRandomness) {
  EXPECT_LT(Ulid(1, kMax), Ulid(2, 0));
  EXPECT_LT(Ulid(1, 1), Ulid(1, 2));
  EXPECT_EQ(Ulid(3, 4), Ulid(3, 4));
  EXPECT_NE(Ulid(3, 4), Ulid(4, 3));
  // The canonical strings sort the same way as the values.
  EXPECT_LT(Ulid(1, kMax).ToString(), Ulid(2, 0).ToString());
}

TEST(UlidGeneratorTest, UsesTheClockForTheTimestamp) {
  ManualClock clock(DateTimeFromMillis(1'700'000'000'000));
  UlidGenerator generator(clock);
  EXPECT_EQ(generator.Next().TimestampMs(), 1'700'000'000'000u);
  clock.Advance(std::chrono::milliseconds{5});
  EXPECT_EQ(generator.Next().TimestampMs(), 1'700'000'000'005u);
}

TEST(UlidGeneratorTest, MonotonicWithinOneMillisecond) {
  ManualClock clock(DateTimeFromMillis(1'700'000'000'000));
  UlidGenerator generator(clock);
  Ulid previous = generator.Next();
  for (int i = 0; i < 1000; ++i) {
    // Sub-millisecond steps leave the ULID millisecond unchanged.
    if (i % 100 == 0) clock.Advance(std::chrono::microseconds{7});
    const Ulid next = generator.Next();
    EXPECT_EQ(next.TimestampMs(), previous.TimestampMs());
    // Exactly one more in the 80 random bits (carrying from lo into hi).
    const uint64_t expected_lo = previous.lo() + 1;
    EXPECT_EQ(next.lo(), expected_lo);
    EXPECT_EQ(next.hi(), expected_lo == 0 ? previous.hi() + 1 : previous.hi());
    EXPECT_LT(previous, next);
    EXPECT_LT(previous.ToString(), next.ToString());
    previous = next;
  }
}

TEST(UlidGeneratorTest, MonotonicWhenTheClockStepsBack) {
  ManualClock clock(DateTimeFromMillis(1'700'000'000'000));
  UlidGenerator generator(clock);
  const Ulid first = generator.Next();
  clock.Advance(std::chrono::milliseconds{-10});
  const Ulid second = generator.Next();
  EXPECT_EQ(second.TimestampMs(), first.TimestampMs());
  EXPECT_LT(first, second);
  clock.Advance(std::chrono::milliseconds{20});
  const Ulid third = generator.Next();
  EXPECT_EQ(third.TimestampMs(), 1'700'000'000'010u);
  EXPECT_LT(second, third);
}

TEST(UlidGeneratorTest, NewMillisecondGetsFreshRandomBits) {
  ManualClock clock(DateTimeFromMillis(1'700'000'000'000));
  UlidGenerator generator(clock);
  std::set<uint64_t> random_lows;
  for (int i = 0; i < 100; ++i) {
    random_lows.insert(generator.Next().lo());
    clock.Advance(std::chrono::milliseconds{1});
  }
  // Not an increment of the previous value: 100 distinct random draws, and
  // not a run of consecutive numbers.
  EXPECT_EQ(random_lows.size(), 100u);
  EXPECT_GT(*random_lows.rbegin() - *random_lows.begin(), 1000u);
}

TEST(UlidGeneratorDeathTest, RejectsClockBeforeTheEpoch) {
  ManualClock clock(DateTimeFromMillis(-1));
  UlidGenerator generator(clock);
  EXPECT_DEATH(static_cast<void>(generator.Next()), "timestamp range");
}

TEST(UlidGeneratorTest, UniqueAndOrderedPerThreadAcrossThreads) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10'000;
  UlidGenerator generator(SystemClock::Instance());
  std::vector<std::vector<Ulid>> per_thread(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&generator, &ids = per_thread[static_cast<size_t>(t)]] {
      ids.reserve(kPerThread);
      for (int i = 0; i < kPerThread; ++i) ids.push_back(generator.Next());
    });
  }
  for (auto& thread : threads) thread.join();

  std::vector<Ulid> all;
  for (const auto& ids : per_thread) {
    // One generator is monotonic across threads, so each thread sees its
    // own Ulids strictly increase.
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
    EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
    all.insert(all.end(), ids.begin(), ids.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread));
}

TEST(GenerateUlidTest, UniqueAcrossThreads) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10'000;
  std::vector<std::vector<Ulid>> per_thread(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&ids = per_thread[static_cast<size_t>(t)]] {
      ids.reserve(kPerThread);
      for (int i = 0; i < kPerThread; ++i) ids.push_back(GenerateUlid());
    });
  }
  for (auto& thread : threads) thread.join();

  std::set<Ulid> unique;
  for (const auto& ids : per_thread) unique.insert(ids.begin(), ids.end());
  EXPECT_EQ(unique.size(), static_cast<size_t>(kThreads * kPerThread));

  // The timestamp is the current time.
  const auto now_ms = static_cast<uint64_t>(
      std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now())
          .time_since_epoch()
          .count());
  EXPECT_LE(unique.rbegin()->TimestampMs(), now_ms);
  EXPECT_GT(unique.begin()->TimestampMs(), now_ms - 60'000);
}

}  // namespace
}  // namespace stele
