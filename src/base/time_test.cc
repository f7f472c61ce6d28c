#include "base/time.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>

namespace stele {
namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::sys_days;

DateTime At(std::chrono::year_month_day ymd, microseconds time_of_day = microseconds{0}) {
  return DateTime{sys_days{ymd}} + time_of_day;
}

using namespace std::chrono_literals;

TEST(TimeTest, FormatsFractionLikeChrono) {
  const DateTime base = At(2024y / 1 / 2, 3h + 4min + 5s);
  EXPECT_EQ(FormatRfc3339(base), "2024-01-02T03:04:05Z");
  EXPECT_EQ(FormatRfc3339(base + 120ms), "2024-01-02T03:04:05.120Z");
  EXPECT_EQ(FormatRfc3339(base + 1ms), "2024-01-02T03:04:05.001Z");
  EXPECT_EQ(FormatRfc3339(base + 123456us), "2024-01-02T03:04:05.123456Z");
  EXPECT_EQ(FormatRfc3339(base + 1us), "2024-01-02T03:04:05.000001Z");
  EXPECT_EQ(FormatRfc3339(base + 100us), "2024-01-02T03:04:05.000100Z");
}

TEST(TimeTest, FormatsEpochAndBoundaries) {
  EXPECT_EQ(FormatRfc3339(DateTimeFromMicros(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(DateTimeFromMicros(-1)), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(FormatRfc3339(DateTimeFromMillis(-1)), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatRfc3339(At(0y / 1 / 1)), "0000-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(At(9999y / 12 / 31, 23h + 59min + 59s + 999999us)),
            "9999-12-31T23:59:59.999999Z");
  // Beyond 2^32 seconds since the epoch (the 32-bit unsigned time_t limit).
  EXPECT_EQ(FormatRfc3339(At(2106y / 2 / 7, 6h + 28min + 16s)), "2106-02-07T06:28:16Z");
  EXPECT_EQ(FormatRfc3339(At(1900y / 3 / 1, 12h)), "1900-03-01T12:00:00Z");
  EXPECT_EQ(FormatRfc3339(At(2000y / 2 / 29)), "2000-02-29T00:00:00Z");
}

TEST(TimeTest, FormatsYearsOutsideRfc3339WithSign) {
  EXPECT_EQ(FormatRfc3339(At(10000y / 1 / 1)), "+10000-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(At(0y / 1 / 1) - 1h), "-0001-12-31T23:00:00Z");
  // Far beyond std::chrono::year's ±32767, up to DateTime's own limits.
  EXPECT_EQ(FormatRfc3339(DateTime::max()), "+294247-01-10T04:00:54.775807Z");
  EXPECT_EQ(FormatRfc3339(DateTime::min()), "-290308-12-21T19:59:05.224192Z");
}

TEST(TimeTest, RoundTripsThroughText) {
  const DateTime instants[] = {
      DateTimeFromMicros(0),
      DateTimeFromMicros(1),
      DateTimeFromMicros(-1),
      DateTimeFromMillis(1'700'000'000'123),
      At(2106y / 2 / 7, 6h + 28min + 16s + 1us),  // Past 2^32 seconds.
      At(2106y / 12 / 31, 23h + 59min + 59s + 999999us),
      At(1969y / 7 / 20, 20h + 17min + 40s),
      At(1900y / 1 / 1, 500ms),
      At(1583y / 10 / 15, 1h + 2min + 3s + 4us),
      At(0y / 1 / 1),
      At(0y / 2 / 29, 12h),  // Year 0 is a leap year.
      At(9999y / 12 / 31, 23h + 59min + 59s + 999999us),
      At(2024y / 2 / 29, 123457us),
  };
  for (const DateTime t : instants) {
    const std::string text = FormatRfc3339(t);
    const std::optional<DateTime> parsed = ParseRfc3339(text);
    ASSERT_TRUE(parsed.has_value()) << text;
    EXPECT_EQ(*parsed, t) << text;
  }
}

TEST(TimeTest, ParsesOffsetsAndSeparators) {
  const DateTime expected = At(2024y / 1 / 2, 3h + 4min + 5s);
  EXPECT_EQ(ParseRfc3339("2024-01-02T03:04:05Z"), expected);
  EXPECT_EQ(ParseRfc3339("2024-01-02t03:04:05z"), expected);
  EXPECT_EQ(ParseRfc3339("2024-01-02 03:04:05Z"), expected);
  EXPECT_EQ(ParseRfc3339("2024-01-02T03:04:05+00:00"), expected);
  EXPECT_EQ(ParseRfc3339("2024-01-02T03:04:05-00:00"), expected);
  EXPECT_EQ(ParseRfc3339("2024-01-02T05:34:05+02:30"), expected);
  EXPECT_EQ(ParseRfc3339("2024-01-01T22:04:05-05:00"), expected);
  EXPECT_EQ(ParseRfc3339("2024-01-02T03:04:05.5+23:59"),
            expected + 500ms - 23h - std::chrono::minutes{59});
  // An offset can move the instant across the epoch and across year 0.
  EXPECT_EQ(ParseRfc3339("1970-01-01T00:00:00+01:00"), DateTimeFromMicros(-3'600'000'000));
  EXPECT_EQ(ParseRfc3339("0000-01-01T00:00:00+01:00"), At(0y / 1 / 1) - 1h);
}

TEST(TimeTest, ParsesFractionsOfEveryLength) {
  const DateTime base = At(2024y / 1 / 2, 3h + 4min + 5s);
  EXPECT_EQ(ParseRfc3339("2024-01-02T03:04:05.1Z"), base + 100ms);
  EXPECT_EQ(ParseRfc3339("2024-01-02T03:04:05.12Z"), base + 120ms);
  EXPECT_EQ(ParseRfc3339("2024-01-02T03:04:05.123Z"), base + 123ms);
  EXPECT_EQ(ParseRfc3339("2024-01-02T03:04:05.000001Z"), base + 1us);
  EXPECT_EQ(ParseRfc3339("2024-01-02T03:04:05.1234567Z"), base + 123456us);
  // Beyond microseconds the digits are truncated, not rounded.
  EXPECT_EQ(ParseRfc3339("2024-01-02T03:04:05.999999999Z"), base + 999999us);
  EXPECT_EQ(ParseRfc3339("2024-01-02T03:04:05.000000999Z"), base);
  EXPECT_EQ(ParseRfc3339("1969-12-31T23:59:59.9999999Z"), DateTimeFromMicros(-1));
}

TEST(TimeTest, RejectsMalformedText) {
  const char* const bad[] = {
      "",
      "2024-01-02",
      "2024-01-02T03:04:05",    // No offset.
      "2024-01-02T03:04Z",      // No seconds.
      "2024-01-02T03:04:05ZZ",  // Trailing garbage.
      "2024-01-02T03:04:05Z ",
      " 2024-01-02T03:04:05Z",
      "2024-01-02T03:04:05+01:00x",
      "2024-01-02T03:04:05.Z",            // Empty fraction.
      "2024-01-02T03:04:05.1234567890Z",  // 10 fraction digits.
      "2024-01-02T03:04:05,5Z",
      "2024-13-02T03:04:05Z",  // Month 13.
      "2024-00-02T03:04:05Z",
      "2024-01-00T03:04:05Z",
      "2024-01-32T03:04:05Z",
      "2023-02-29T00:00:00Z",  // Not a leap year.
      "2100-02-29T00:00:00Z",
      "2024-02-30T00:00:00Z",
      "2024-04-31T00:00:00Z",
      "2024-01-02T24:00:00Z",  // Hour 24.
      "2024-01-02T03:60:05Z",
      "2024-01-02T03:04:60Z",  // Leap seconds are not representable.
      "2024-01-02T03:04:05+24:00",
      "2024-01-02T03:04:05+01:60",
      "2024-01-02T03:04:05+0100",
      "2024-01-02T03:04:05+01",
      "2024-01-02T03:04:05UTC",
      "2024-01-02X03:04:05Z",
      "2024/01/02T03:04:05Z",
      "24-01-02T03:04:05Z",
      "+2024-01-02T03:04:05Z",
      "-0001-12-31T23:00:00Z",
      "+10000-01-01T00:00:00Z",
      "2024-1-02T03:04:05Z",
      "2024-01-02T3:04:05Z",
      "2024-01-02T03:04:5Z",
      "2024-0a-02T03:04:05Z",
      "2024-01-02T03:04:05.12a4Z",
  };
  for (const char* text : bad) {
    EXPECT_EQ(ParseRfc3339(text), std::nullopt) << "accepted: \"" << text << "\"";
  }
  // Embedded NUL: the string_view must be read to its end.
  EXPECT_EQ(ParseRfc3339(std::string_view("2024-01-02T03:04:05Z\0", 21)), std::nullopt);
}

TEST(TimeTest, IntegerConversions) {
  EXPECT_EQ(ToMicros(DateTimeFromMicros(1'700'000'000'123'456)), 1'700'000'000'123'456);
  EXPECT_EQ(ToMicros(DateTimeFromMicros(-42)), -42);
  EXPECT_EQ(ToMicros(DateTimeFromMillis(1'500)), 1'500'000);
  EXPECT_EQ(ToMicros(DateTimeFromMillis(-1'500)), -1'500'000);
  EXPECT_EQ(DateTimeFromMillis(86'400'000), DateTime{sys_days{days{1}}});
  EXPECT_EQ(ToMicros(DateTimeFromMicros(std::numeric_limits<int64_t>::min())),
            std::numeric_limits<int64_t>::min());
}

}  // namespace
}  // namespace stele
