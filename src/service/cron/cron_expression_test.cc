#include "service/cron/cron_expression.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stele::service::cron {
namespace {

using ::testing::HasSubstr;

DateTime At(const char* rfc3339) {
  auto t = ParseRfc3339(rfc3339);
  EXPECT_TRUE(t.has_value()) << rfc3339;
  return t.value_or(DateTime{});
}

CronExpression MustParse(std::string_view expr, std::string_view zone = "UTC") {
  auto parsed = CronExpression::Parse(expr, zone);
  EXPECT_TRUE(parsed.has_value()) << expr << ": " << (parsed ? "" : parsed.error());
  return *parsed;
}

// The first `n` ticks after `from`, as RFC 3339 text.
std::vector<std::string> Ticks(const CronExpression& expr, const char* from, int n) {
  std::vector<std::string> out;
  DateTime t = At(from);
  for (int i = 0; i < n; ++i) {
    auto next = expr.NextAfter(t);
    if (!next) break;
    out.push_back(FormatRfc3339(*next));
    t = *next;
  }
  return out;
}

std::string ParseError(std::string_view expr, std::string_view zone = "UTC") {
  auto parsed = CronExpression::Parse(expr, zone);
  EXPECT_FALSE(parsed.has_value()) << expr << " in " << zone << " parsed";
  return parsed ? std::string() : parsed.error();
}

TEST(CronExpressionTest, EverySecondsStepIsStrictlyAfter) {
  const CronExpression e = MustParse("*/20 * * * * *");
  EXPECT_EQ(Ticks(e, "2024-01-01T00:00:00.5Z", 4),
            (std::vector<std::string>{"2024-01-01T00:00:20Z", "2024-01-01T00:00:40Z",
                                      "2024-01-01T00:01:00Z", "2024-01-01T00:01:20Z"}));
  EXPECT_EQ(Ticks(e, "2024-01-01T00:00:20Z", 1),
            (std::vector<std::string>{"2024-01-01T00:00:40Z"}));
}

TEST(CronExpressionTest, ListsRangesStepsAndNames) {
  EXPECT_EQ(Ticks(MustParse("0 0,30 9-10 * * *"), "2024-01-01T00:00:00Z", 5),
            (std::vector<std::string>{"2024-01-01T09:00:00Z", "2024-01-01T09:30:00Z",
                                      "2024-01-01T10:00:00Z", "2024-01-01T10:30:00Z",
                                      "2024-01-02T09:00:00Z"}));
  EXPECT_EQ(Ticks(MustParse("0 0 12 1 jan-MAR/2 *"), "2024-01-05T00:00:00Z", 3),
            (std::vector<std::string>{"2024-03-01T12:00:00Z", "2025-01-01T12:00:00Z",
                                      "2025-03-01T12:00:00Z"}));
  // `a/n` runs from a to the end of the range.
  EXPECT_EQ(Ticks(MustParse("50/5 0 0 * * *"), "2024-01-01T00:00:00Z", 3),
            (std::vector<std::string>{"2024-01-01T00:00:50Z", "2024-01-01T00:00:55Z",
                                      "2024-01-02T00:00:50Z"}));
}

TEST(CronExpressionTest, WeekdaysSundayIsZeroAndSeven) {
  // 2024-09-01 is a Sunday.
  EXPECT_EQ(Ticks(MustParse("0 0 9 * * MON-FRI"), "2024-09-01T00:00:00Z", 2),
            (std::vector<std::string>{"2024-09-02T09:00:00Z", "2024-09-03T09:00:00Z"}));
  EXPECT_EQ(Ticks(MustParse("0 0 0 * * 7"), "2024-09-01T00:00:00Z", 1),
            (std::vector<std::string>{"2024-09-08T00:00:00Z"}));
  EXPECT_EQ(Ticks(MustParse("0 0 0 ? * sun"), "2024-09-01T00:00:00Z", 1),
            (std::vector<std::string>{"2024-09-08T00:00:00Z"}));
}

TEST(CronExpressionTest, BothDayFieldsRestrictedMatchEither) {
  // The 13th or a Friday (2024-09-06, 13 (both), 20).
  EXPECT_EQ(Ticks(MustParse("0 0 0 13 * FRI"), "2024-09-01T00:00:00Z", 4),
            (std::vector<std::string>{"2024-09-06T00:00:00Z", "2024-09-13T00:00:00Z",
                                      "2024-09-20T00:00:00Z", "2024-09-27T00:00:00Z"}));
}

TEST(CronExpressionTest, ShortMonthsAndLeapDays) {
  EXPECT_EQ(Ticks(MustParse("0 0 0 31 * *"), "2024-01-31T00:00:00Z", 2),
            (std::vector<std::string>{"2024-03-31T00:00:00Z", "2024-05-31T00:00:00Z"}));
  EXPECT_EQ(Ticks(MustParse("0 0 0 29 2 *"), "2024-03-01T00:00:00Z", 1),
            (std::vector<std::string>{"2028-02-29T00:00:00Z"}));
}

TEST(CronExpressionTest, Macros) {
  EXPECT_EQ(Ticks(MustParse("@hourly"), "2024-01-01T00:10:00Z", 1),
            (std::vector<std::string>{"2024-01-01T01:00:00Z"}));
  EXPECT_EQ(Ticks(MustParse("@daily"), "2024-01-01T00:10:00Z", 1),
            (std::vector<std::string>{"2024-01-02T00:00:00Z"}));
  EXPECT_EQ(Ticks(MustParse("@weekly"), "2024-09-02T00:00:00Z", 1),
            (std::vector<std::string>{"2024-09-08T00:00:00Z"}));
  EXPECT_EQ(Ticks(MustParse("@monthly"), "2024-09-02T00:00:00Z", 1),
            (std::vector<std::string>{"2024-10-01T00:00:00Z"}));
  EXPECT_EQ(Ticks(MustParse("@yearly"), "2024-09-02T00:00:00Z", 1),
            (std::vector<std::string>{"2025-01-01T00:00:00Z"}));
}

TEST(CronExpressionTest, ZoneOffsetApplies) {
  // 09:00 in Berlin is 08:00 UTC in winter, 07:00 in summer.
  const CronExpression e = MustParse("0 0 9 * * *", "Europe/Berlin");
  EXPECT_EQ(Ticks(e, "2024-01-10T00:00:00Z", 1),
            (std::vector<std::string>{"2024-01-10T08:00:00Z"}));
  EXPECT_EQ(Ticks(e, "2024-07-10T00:00:00Z", 1),
            (std::vector<std::string>{"2024-07-10T07:00:00Z"}));
}

// Berlin springs forward on 2024-03-31 at 01:00 UTC (02:00 CET -> 03:00
// CEST): 02:30 does not exist that day and fires at 03:00 CEST.
TEST(CronExpressionTest, BerlinSpringForwardGapFiresAfterTheGap) {
  const CronExpression e = MustParse("0 30 2 * * *", "Europe/Berlin");
  EXPECT_EQ(Ticks(e, "2024-03-30T00:00:00Z", 3),
            (std::vector<std::string>{"2024-03-30T01:30:00Z", "2024-03-31T01:00:00Z",
                                      "2024-04-01T00:30:00Z"}));
  // Every minute: the hour 02:00-02:59 that never happens is one tick.
  EXPECT_EQ(Ticks(MustParse("0 * * * * *", "Europe/Berlin"), "2024-03-31T00:58:00Z", 3),
            (std::vector<std::string>{"2024-03-31T00:59:00Z", "2024-03-31T01:00:00Z",
                                      "2024-03-31T01:01:00Z"}));
}

// Berlin falls back on 2024-10-27 at 01:00 UTC (03:00 CEST -> 02:00 CET):
// 02:30 happens twice and fires once, at its first occurrence.
TEST(CronExpressionTest, BerlinFallBackRepeatFiresOnce) {
  const CronExpression e = MustParse("0 30 2 * * *", "Europe/Berlin");
  EXPECT_EQ(Ticks(e, "2024-10-26T00:00:00Z", 3),
            (std::vector<std::string>{"2024-10-26T00:30:00Z", "2024-10-27T00:30:00Z",
                                      "2024-10-28T01:30:00Z"}));
  EXPECT_EQ(Ticks(MustParse("0 */15 * * * *", "Europe/Berlin"), "2024-10-27T00:00:00Z", 4),
            (std::vector<std::string>{"2024-10-27T00:15:00Z", "2024-10-27T00:30:00Z",
                                      "2024-10-27T00:45:00Z", "2024-10-27T02:00:00Z"}));
  // Asked from inside the second occurrence: the repeat fired already.
  EXPECT_EQ(Ticks(e, "2024-10-27T01:10:00Z", 1),
            (std::vector<std::string>{"2024-10-28T01:30:00Z"}));
  EXPECT_EQ(Ticks(MustParse("0 */15 * * * *", "Europe/Berlin"), "2024-10-27T01:10:00Z", 1),
            (std::vector<std::string>{"2024-10-27T02:00:00Z"}));
}

// New York: 2024-03-10 02:00 EST -> 03:00 EDT (07:00 UTC); 2024-11-03
// 02:00 EDT -> 01:00 EST (06:00 UTC).
TEST(CronExpressionTest, NewYorkDaylightSavingChanges) {
  EXPECT_EQ(Ticks(MustParse("0 30 2 * * *", "America/New_York"), "2024-03-09T12:00:00Z", 3),
            (std::vector<std::string>{"2024-03-10T07:00:00Z", "2024-03-11T06:30:00Z",
                                      "2024-03-12T06:30:00Z"}));
  EXPECT_EQ(Ticks(MustParse("0 30 1 * * *", "America/New_York"), "2024-11-02T12:00:00Z", 3),
            (std::vector<std::string>{"2024-11-03T05:30:00Z", "2024-11-04T06:30:00Z",
                                      "2024-11-05T06:30:00Z"}));
  // Every day fires exactly once across both changes.
  const CronExpression daily = MustParse("0 30 2 * * *", "America/New_York");
  DateTime t = At("2024-01-01T00:00:00Z");
  int ticks = 0;
  while (true) {
    auto next = daily.NextAfter(t);
    ASSERT_TRUE(next.has_value());
    if (*next >= At("2025-01-01T00:00:00Z")) break;
    ASSERT_GT(*next, t);
    t = *next;
    ++ticks;
  }
  EXPECT_EQ(ticks, 366);
}

TEST(CronExpressionTest, MalformedExpressionsSayWhatIsWrong) {
  EXPECT_THAT(ParseError("61 * * * * *"), HasSubstr("second: 61 is out of range 0-59"));
  EXPECT_THAT(ParseError("* 60 * * * *"), HasSubstr("minute: 60 is out of range 0-59"));
  EXPECT_THAT(ParseError("* * 24 * * *"), HasSubstr("hour: 24 is out of range 0-23"));
  EXPECT_THAT(ParseError("* * * 0 * *"), HasSubstr("day-of-month: 0 is out of range 1-31"));
  EXPECT_THAT(ParseError("* * * * 13 *"), HasSubstr("month: 13 is out of range 1-12"));
  EXPECT_THAT(ParseError("* * * * * 8"), HasSubstr("day-of-week: 8 is out of range 0-7"));
  EXPECT_THAT(ParseError("* * * * *"), HasSubstr("expected 6 fields"));
  EXPECT_THAT(ParseError("* * * * *"), HasSubstr("got 5"));
  EXPECT_THAT(ParseError("* * * * * * *"), HasSubstr("got 7"));
  EXPECT_THAT(ParseError(""), HasSubstr("got 0"));
  EXPECT_THAT(ParseError("   \t "), HasSubstr("got 0"));
  EXPECT_THAT(ParseError("*/0 * * * * *"), HasSubstr("second: step \"0\" is not a number in 1-60"));
  EXPECT_THAT(ParseError("1/ * * * * *"), HasSubstr("a step is missing"));
  EXPECT_THAT(ParseError("5-1 * * * * *"), HasSubstr("range \"5-1\" ends before it starts"));
  EXPECT_THAT(ParseError("1,,2 * * * * *"), HasSubstr("empty element in list \"1,,2\""));
  EXPECT_THAT(ParseError(",1 * * * * *"), HasSubstr("empty element"));
  EXPECT_THAT(ParseError("1- * * * * *"), HasSubstr("second: a value is missing"));
  EXPECT_THAT(ParseError("-1 * * * * *"), HasSubstr("second: a value is missing"));
  EXPECT_THAT(ParseError("a * * * * *"), HasSubstr("second: \"a\" is not a number"));
  EXPECT_THAT(ParseError("99999999999999999999 * * * * *"), HasSubstr("is out of range 0-59"));
  EXPECT_THAT(ParseError("* * * * FOO *"), HasSubstr("month: \"FOO\" is not a number or name"));
  EXPECT_THAT(ParseError("* * * * * MONDAY"), HasSubstr("day-of-week"));
  EXPECT_THAT(ParseError("? * * * * *"), HasSubstr("second: \"?\""));
  EXPECT_THAT(ParseError("@every 5m"), HasSubstr("expected 6 fields"));
  EXPECT_THAT(ParseError("@fortnightly"), HasSubstr("unknown macro \"@fortnightly\""));
  EXPECT_THAT(ParseError("0 0 0 30 2 *"), HasSubstr("never fires"));
  EXPECT_THAT(ParseError("0 0 0 31 4,6,9,11 *"), HasSubstr("never fires"));
  EXPECT_THAT(ParseError(std::string(300, '*')), HasSubstr("longer than 256 bytes"));
  EXPECT_THAT(ParseError("* * * * * *\n"), HasSubstr("control character"));
  EXPECT_THAT(ParseError(std::string("* * * * * \0", 12)), HasSubstr("control character"));
  EXPECT_THAT(ParseError("\xc3\xa9 * * * * *"), HasSubstr("not ASCII"));
}

TEST(CronExpressionTest, UnknownOrHostileZones) {
  EXPECT_THAT(ParseError("* * * * * *", "Mars/Base"), HasSubstr("unknown time zone \"Mars/Base\""));
  EXPECT_THAT(ParseError("* * * * * *", ""), HasSubstr("empty time zone"));
  EXPECT_THAT(ParseError("* * * * * *", "../../etc/passwd"), HasSubstr("unknown time zone"));
  EXPECT_THAT(ParseError("* * * * * *", "Europe/Berlin\n"), HasSubstr("unknown time zone"));
  EXPECT_THAT(ParseError("* * * * * *", std::string(200, 'A')), HasSubstr("longer than"));
  EXPECT_TRUE(CronExpression::Parse("* * * * * *", "America/New_York").has_value());
  EXPECT_TRUE(CronExpression::Parse("* * * * * *", "Etc/UTC").has_value());
}

}  // namespace
}  // namespace stele::service::cron
