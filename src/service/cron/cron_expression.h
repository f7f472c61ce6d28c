// CronExpression: a cron expression with seconds, evaluated in a time zone
// (docs/config.md, "[[cron]]"). The parser and the next-tick search of
// cron schedules; no I/O but reading the OS time zone database
// (/usr/share/zoneinfo, through Howard Hinnant's date/tz with
// USE_OS_TZDB) when a zone is first named.
//
// Syntax: six fields separated by blanks,
//   second minute hour day-of-month month day-of-week
// each `*`, `?` (day fields only, same as `*`), a number, a range `a-b`, a
// step `*/n`, `a/n` or `a-b/n`, or a comma list of those. Months may be
// named JAN..DEC, days of week SUN..SAT (0 and 7 are Sunday); names are
// case-insensitive. The macros @yearly (@annually), @monthly, @weekly,
// @daily (@midnight) and @hourly stand for their six-field forms. As in
// every cron, when both day fields are restricted a day matches when
// either matches; when one is `*` (or `?`) only the other counts.
//
// Ticks are instants: every local time the fields match, in the zone, is
// one tick, with two rules for daylight-saving changes:
//   - a local time that does not exist (spring forward: 02:30 in a gap
//     02:00 -> 03:00) fires at the first instant after the gap (03:00);
//     several such times fire once;
//   - a local time that occurs twice (fall back: 02:30 in 03:00 -> 02:00)
//     fires once, at its first occurrence.
// So a daily schedule fires exactly once every local day.
//
// Threading: a CronExpression is an immutable value, safe to share.
#pragma once

#include <bitset>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/result.h"

namespace date {
class time_zone;
}  // namespace date

namespace stele::service::cron {

class CronExpression {
 public:
  // Parses `expression` to be evaluated in the IANA zone `time_zone`
  // ("Europe/Berlin", "UTC"). Errors: a message naming the field and the
  // offending text, e.g. "cron expression \"61 * * * * *\": second: 61 is
  // out of range 0-59", or "unknown time zone \"Mars/Base\"", or a
  // day-of-month that no month has ("never fires").
  static Result<CronExpression, std::string> Parse(std::string_view expression,
                                                   std::string_view time_zone);

  // The first tick strictly after `after`, or nullopt when there is none
  // before the year 9999 (only possible for expressions like Feb 29 on a
  // Monday near the end of that range).
  std::optional<DateTime> NextAfter(DateTime after) const;

  const std::string& expression() const { return expression_; }
  const std::string& time_zone() const { return time_zone_; }

 private:
  friend class CronExpressionParser;
  CronExpression() = default;

  bool DayMatches(int year, unsigned month, unsigned day) const;

  std::string expression_;
  std::string time_zone_;
  const date::time_zone* zone_ = nullptr;  // owned by the date library's tz database
  std::bitset<60> seconds_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_of_month_;  // 1..31
  std::bitset<13> months_;         // 1..12
  std::bitset<7> days_of_week_;    // 0 = Sunday
  bool dom_restricted_ = false;
  bool dow_restricted_ = false;
};

}  // namespace stele::service::cron
