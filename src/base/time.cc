#include "base/time.h"

namespace stele {
namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using std::chrono::sys_days;

// Appends `value` in decimal, left-padded with zeros to at least `width`.
void AppendPadded(std::string& out, uint64_t value, int width) {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  for (int i = n; i < width; ++i) out.push_back('0');
  while (n > 0) out.push_back(digits[--n]);
}

// Reads exactly `count` decimal digits at `pos`. Returns -1 if any is not a
// digit or the text is too short.
int ReadDigits(std::string_view text, size_t pos, size_t count) {
  if (pos + count > text.size()) return -1;
  int value = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

bool Expect(std::string_view text, size_t pos, char c) {
  return pos < text.size() && text[pos] == c;
}

}  // namespace

std::string FormatRfc3339(DateTime t) {
  constexpr int64_t kMicrosPerDay = int64_t{86'400} * 1'000'000;
  // The Gregorian calendar repeats exactly every 400 years (146097 days).
  constexpr int64_t kDaysPer400Years = 146'097;

  // Split into a day and a time of day in [0, 24h), rounding the day towards
  // minus infinity so that instants before 1970 come out right. Done on the
  // integers because floor<days>(t) would overflow near DateTime::min().
  const int64_t micros = t.time_since_epoch().count();
  int64_t micros_of_day = micros % kMicrosPerDay;
  int64_t day = micros / kMicrosPerDay;
  if (micros_of_day < 0) {
    micros_of_day += kMicrosPerDay;
    --day;
  }
  // std::chrono::year stops at ±32767 but DateTime reaches ±292,000 years:
  // move the day to within 400 years of 1970 and add the cycles back after.
  const int64_t cycles = day / kDaysPer400Years;
  const std::chrono::year_month_day ymd{sys_days{days{day - cycles * kDaysPer400Years}}};
  const std::chrono::hh_mm_ss<microseconds> tod{microseconds{micros_of_day}};
  const int64_t year = int64_t{static_cast<int>(ymd.year())} + cycles * 400;

  std::string out;
  out.reserve(32);
  if (year >= 0 && year <= 9999) {
    AppendPadded(out, static_cast<uint64_t>(year), 4);
  } else {
    out.push_back(year < 0 ? '-' : '+');
    AppendPadded(out, static_cast<uint64_t>(year < 0 ? -year : year), 4);
  }
  out.push_back('-');
  AppendPadded(out, static_cast<unsigned>(ymd.month()), 2);
  out.push_back('-');
  AppendPadded(out, static_cast<unsigned>(ymd.day()), 2);
  out.push_back('T');
  AppendPadded(out, static_cast<uint64_t>(tod.hours().count()), 2);
  out.push_back(':');
  AppendPadded(out, static_cast<uint64_t>(tod.minutes().count()), 2);
  out.push_back(':');
  AppendPadded(out, static_cast<uint64_t>(tod.seconds().count()), 2);
  const auto fraction = static_cast<uint64_t>(tod.subseconds().count());
  if (fraction != 0) {
    out.push_back('.');
    if (fraction % 1000 == 0) {
      AppendPadded(out, fraction / 1000, 3);
    } else {
      AppendPadded(out, fraction, 6);
    }
  }
  out.push_back('Z');
  return out;
}

std::optional<DateTime> ParseRfc3339(std::string_view text) {
  // Fixed layout up to the seconds: "YYYY-MM-DDTHH:MM:SS" is 19 characters.
  const int year = ReadDigits(text, 0, 4);
  const int month = ReadDigits(text, 5, 2);
  const int day = ReadDigits(text, 8, 2);
  const int hour = ReadDigits(text, 11, 2);
  const int minute = ReadDigits(text, 14, 2);
  const int second = ReadDigits(text, 17, 2);
  if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) {
    return std::nullopt;
  }
  if (!Expect(text, 4, '-') || !Expect(text, 7, '-') || !Expect(text, 13, ':') ||
      !Expect(text, 16, ':')) {
    return std::nullopt;
  }
  if (text.size() <= 10 || (text[10] != 'T' && text[10] != 't' && text[10] != ' ')) {
    return std::nullopt;
  }
  const std::chrono::year_month_day ymd{std::chrono::year{year},
                                        std::chrono::month{static_cast<unsigned>(month)},
                                        std::chrono::day{static_cast<unsigned>(day)}};
  // ok() checks the month and the day against the month's length, leap
  // years included, so 2023-02-29 and 2024-04-31 are rejected here.
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 59) return std::nullopt;

  size_t pos = 19;
  int64_t fraction_micros = 0;
  if (Expect(text, pos, '.')) {
    ++pos;
    const size_t first = pos;
    int64_t scale = 100000;  // Weight of the first fraction digit in µs.
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (pos - first == 9) return std::nullopt;
      fraction_micros += (text[pos] - '0') * scale;  // Beyond µs, scale is 0.
      scale /= 10;
      ++pos;
    }
    if (pos == first) return std::nullopt;
  }

  minutes offset{0};
  if (Expect(text, pos, 'Z') || Expect(text, pos, 'z')) {
    ++pos;
  } else if (Expect(text, pos, '+') || Expect(text, pos, '-')) {
    const bool negative = text[pos] == '-';
    const int offset_hours = ReadDigits(text, pos + 1, 2);
    const int offset_minutes = ReadDigits(text, pos + 4, 2);
    if (offset_hours < 0 || offset_minutes < 0 || !Expect(text, pos + 3, ':') ||
        offset_hours > 23 || offset_minutes > 59) {
      return std::nullopt;
    }
    offset = hours{offset_hours} + minutes{offset_minutes};
    if (negative) offset = -offset;
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;

  // Local time minus the offset is UTC: 10:00+02:00 is 08:00Z.
  return DateTime{sys_days{ymd}} + hours{hour} + minutes{minute} + seconds{second} +
         microseconds{fraction_micros} - offset;
}

DateTime DateTimeFromMicros(int64_t micros) { return DateTime{microseconds{micros}}; }

int64_t ToMicros(DateTime t) { return t.time_since_epoch().count(); }

DateTime DateTimeFromMillis(int64_t millis) { return DateTime{std::chrono::milliseconds{millis}}; }

}  // namespace stele
