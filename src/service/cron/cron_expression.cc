#include "service/cron/cron_expression.h"

#include <date/date.h>
#include <date/tz.h>

#include <array>
#include <cctype>
#include <cstdint>
#include <exception>
#include <utility>
#include <vector>

namespace stele::service::cron {

// Builds a CronExpression field by field (a friend: the fields are private).
class CronExpressionParser {
 public:
  static Result<CronExpression, std::string> Parse(std::string_view expression,
                                                   std::string_view time_zone);
};

namespace {

constexpr size_t kMaxExpressionBytes = 256;
constexpr size_t kMaxZoneBytes = 128;

struct FieldSpec {
  const char* name;
  int min;
  int max;
  // Upper-case three-letter names for min, min+1, ... (months, weekdays).
  const std::array<const char*, 12>* names;
  size_t name_count;
  bool allows_question_mark;
};

constexpr std::array<const char*, 12> kMonthNames = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                     "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<const char*, 12> kDayNames = {"SUN", "MON", "TUE", "WED", "THU", "FRI",
                                                   "SAT", "",    "",    "",    "",    ""};

constexpr FieldSpec kFields[6] = {
    {"second", 0, 59, nullptr, 0, false},
    {"minute", 0, 59, nullptr, 0, false},
    {"hour", 0, 23, nullptr, 0, false},
    {"day-of-month", 1, 31, nullptr, 0, true},
    {"month", 1, 12, &kMonthNames, 12, false},
    // 7 is Sunday too (folded onto 0 below).
    {"day-of-week", 0, 7, &kDayNames, 7, true},
};

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

// A number or (for named fields) a name. Errors name the field.
Result<int, std::string> ParseValue(std::string_view text, const FieldSpec& spec) {
  if (text.empty()) return Unexpected(std::string(spec.name) + ": a value is missing");
  if (std::isdigit(static_cast<unsigned char>(text[0]))) {
    if (text.size() > 2) {
      return Unexpected(std::string(spec.name) + ": " + Quote(text) + " is out of range " +
                        std::to_string(spec.min) + "-" + std::to_string(spec.max));
    }
    int v = 0;
    for (char c : text) {
      if (!std::isdigit(static_cast<unsigned char>(c))) {
        return Unexpected(std::string(spec.name) + ": " + Quote(text) + " is not a number");
      }
      v = v * 10 + (c - '0');
    }
    if (v < spec.min || v > spec.max) {
      return Unexpected(std::string(spec.name) + ": " + std::to_string(v) + " is out of range " +
                        std::to_string(spec.min) + "-" + std::to_string(spec.max));
    }
    return v;
  }
  if (spec.names != nullptr && text.size() == 3) {
    std::string upper;
    for (char c : text)
      upper.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    for (size_t i = 0; i < spec.name_count; ++i) {
      if (upper == (*spec.names)[i]) return spec.min + static_cast<int>(i);
    }
  }
  return Unexpected(std::string(spec.name) + ": " + Quote(text) + " is not a " +
                    (spec.names != nullptr ? "number or name" : "number"));
}

Result<int, std::string> ParseStep(std::string_view text, const FieldSpec& spec) {
  const int span = spec.max - spec.min + 1;
  if (text.empty()) return Unexpected(std::string(spec.name) + ": a step is missing after '/'");
  int v = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || v > span) {
      return Unexpected(std::string(spec.name) + ": step " + Quote(text) +
                        " is not a number in 1-" + std::to_string(span));
    }
    v = v * 10 + (c - '0');
  }
  if (v < 1 || v > span) {
    return Unexpected(std::string(spec.name) + ": step " + Quote(text) + " is not a number in 1-" +
                      std::to_string(span));
  }
  return v;
}

// One field into a bit mask over spec.min..spec.max (bit i = value i).
// `restricted` is false for a bare `*` or `?`.
Result<uint64_t, std::string> ParseField(std::string_view text, const FieldSpec& spec,
                                         bool* restricted) {
  *restricted = !(text == "*" || (spec.allows_question_mark && text == "?"));
  uint64_t mask = 0;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view item = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) {
      return Unexpected(std::string(spec.name) + ": empty element in list " + Quote(text));
    }
    std::string_view base = item;
    int step = 1;
    bool has_step = false;
    if (const size_t slash = item.find('/'); slash != std::string_view::npos) {
      base = item.substr(0, slash);
      STELE_ASSIGN_OR_RETURN(step, ParseStep(item.substr(slash + 1), spec));
      has_step = true;
    }
    int lo = spec.min;
    int hi = spec.max;
    if (base == "*" || (spec.allows_question_mark && base == "?")) {
      // the whole range
    } else if (const size_t dash = base.find('-'); dash != std::string_view::npos) {
      STELE_ASSIGN_OR_RETURN(lo, ParseValue(base.substr(0, dash), spec));
      STELE_ASSIGN_OR_RETURN(hi, ParseValue(base.substr(dash + 1), spec));
      if (lo > hi) {
        return Unexpected(std::string(spec.name) + ": range " + Quote(base) +
                          " ends before it starts");
      }
    } else {
      STELE_ASSIGN_OR_RETURN(lo, ParseValue(base, spec));
      // `a/n` runs from a to the end of the range; a bare value is itself.
      hi = has_step ? spec.max : lo;
    }
    for (int v = lo; v <= hi; v += step) mask |= uint64_t{1} << v;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return mask;
}

std::vector<std::string_view> SplitBlanks(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    const size_t begin = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    if (i > begin) out.push_back(text.substr(begin, i - begin));
  }
  return out;
}

std::string_view ExpandMacro(std::string_view text) {
  if (text == "@yearly" || text == "@annually") return "0 0 0 1 1 *";
  if (text == "@monthly") return "0 0 0 1 * *";
  if (text == "@weekly") return "0 0 0 * * SUN";
  if (text == "@daily" || text == "@midnight") return "0 0 0 * * *";
  if (text == "@hourly") return "0 0 * * * *";
  return {};
}

constexpr unsigned kMaxDays[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

template <size_t N>
std::bitset<N> ToBits(uint64_t mask) {
  return std::bitset<N>(mask & ((N >= 64) ? ~uint64_t{0} : ((uint64_t{1} << N) - 1)));
}

// The first set bit >= from, or -1.
template <size_t N>
int NextSet(const std::bitset<N>& bits, int from) {
  for (int i = from; i < static_cast<int>(N); ++i) {
    if (bits[static_cast<size_t>(i)]) return i;
  }
  return -1;
}

}  // namespace

Result<CronExpression, std::string> CronExpressionParser::Parse(std::string_view expression,
                                                                std::string_view time_zone) {
  const std::string prefix =
      "cron expression " + Quote(expression.substr(0, kMaxExpressionBytes)) + ": ";
  if (expression.size() > kMaxExpressionBytes) {
    return Unexpected("cron expression is longer than " + std::to_string(kMaxExpressionBytes) +
                      " bytes");
  }
  for (char c : expression) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
      return Unexpected(prefix + "contains a control character");
    }
    if (static_cast<unsigned char>(c) >= 0x7f) {
      return Unexpected(prefix + "contains a character that is not ASCII");
    }
  }
  std::string_view body = expression;
  std::vector<std::string_view> fields = SplitBlanks(body);
  if (fields.size() == 1 && !fields[0].empty() && fields[0][0] == '@') {
    body = ExpandMacro(fields[0]);
    if (body.empty()) {
      return Unexpected(prefix + "unknown macro " + Quote(fields[0]) +
                        " (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, "
                        "@hourly)");
    }
    fields = SplitBlanks(body);
  }
  if (fields.size() != 6) {
    return Unexpected(prefix +
                      "expected 6 fields (second minute hour day-of-month month "
                      "day-of-week), got " +
                      std::to_string(fields.size()));
  }
  CronExpression out;
  uint64_t masks[6];
  bool restricted[6];
  for (size_t i = 0; i < 6; ++i) {
    auto mask = ParseField(fields[i], kFields[i], &restricted[i]);
    if (!mask.has_value()) return Unexpected(prefix + mask.error());
    masks[i] = *mask;
  }
  if (masks[5] & (uint64_t{1} << 7)) masks[5] = (masks[5] | 1) & ~(uint64_t{1} << 7);
  out.seconds_ = ToBits<60>(masks[0]);
  out.minutes_ = ToBits<60>(masks[1]);
  out.hours_ = ToBits<24>(masks[2]);
  out.days_of_month_ = ToBits<32>(masks[3]);
  out.months_ = ToBits<13>(masks[4]);
  out.days_of_week_ = ToBits<7>(masks[5]);
  out.dom_restricted_ = restricted[3];
  out.dow_restricted_ = restricted[5];
  // With only the day of month restricted, some chosen month must have
  // one of the chosen days (Feb 29 counts: it comes every four years).
  if (out.dom_restricted_ && !out.dow_restricted_) {
    bool possible = false;
    for (unsigned m = 1; m <= 12 && !possible; ++m) {
      if (!out.months_[m]) continue;
      for (unsigned d = 1; d <= kMaxDays[m]; ++d) {
        if (out.days_of_month_[d]) {
          possible = true;
          break;
        }
      }
    }
    if (!possible) {
      return Unexpected(prefix + "never fires: no chosen month has one of the chosen days");
    }
  }

  if (time_zone.empty()) return Unexpected(std::string("empty time zone"));
  if (time_zone.size() > kMaxZoneBytes) {
    return Unexpected("time zone is longer than " + std::to_string(kMaxZoneBytes) + " bytes");
  }
  for (char c : time_zone) {
    const auto u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || c == '/' || c == '_' || c == '-' || c == '+')) {
      return Unexpected(
          std::string("unknown time zone: a zone name has only letters, digits and / _ - + "
                      "(an IANA name such as \"Europe/Berlin\" or \"UTC\")"));
    }
  }
  try {
    out.zone_ = date::locate_zone(time_zone);
  } catch (const std::exception&) {
    out.zone_ = nullptr;
  }
  if (out.zone_ == nullptr) {
    return Unexpected("unknown time zone " + Quote(time_zone) +
                      " (an IANA name such as \"Europe/Berlin\" or \"UTC\")");
  }
  out.expression_ = std::string(expression);
  out.time_zone_ = std::string(time_zone);
  return out;
}

Result<CronExpression, std::string> CronExpression::Parse(std::string_view expression,
                                                          std::string_view time_zone) {
  return CronExpressionParser::Parse(expression, time_zone);
}

bool CronExpression::DayMatches(int year, unsigned month, unsigned day) const {
  const bool dom = days_of_month_[day];
  const date::weekday wd{date::sys_days{date::year{year} / date::month{month} / date::day{day}}};
  const bool dow = days_of_week_[wd.c_encoding()];
  if (dom_restricted_ && dow_restricted_) return dom || dow;
  if (dom_restricted_) return dom;
  if (dow_restricted_) return dow;
  return true;
}

std::optional<DateTime> CronExpression::NextAfter(DateTime after) const {
  using std::chrono::seconds;
  const date::sys_seconds t = date::floor<seconds>(after);
  date::local_seconds candidate = zone_->to_local(t) + seconds(1);
  // Each round either returns or moves `candidate` forward; a round that
  // lands in the second occurrence of a repeated hour jumps past it.
  for (int round = 0; round < 100'000; ++round) {
    date::local_days day = date::floor<date::days>(candidate);
    date::year_month_day ymd{day};
    if (int(ymd.year()) > 9999) return std::nullopt;
    int h = static_cast<int>((candidate - day) / std::chrono::hours(1));
    int m = static_cast<int>((candidate - day) % std::chrono::hours(1) / std::chrono::minutes(1));
    int s = static_cast<int>((candidate - day) % std::chrono::minutes(1) / seconds(1));
    // Find the first matching local time >= candidate.
    bool found = false;
    for (int steps = 0; steps < 200'000 && !found; ++steps) {
      if (int(ymd.year()) > 9999) return std::nullopt;
      const unsigned mon = unsigned(ymd.month());
      if (!months_[mon]) {
        ymd = mon == 12
                  ? date::year_month_day{ymd.year() + date::years(1), date::January, date::day(1)}
                  : date::year_month_day{ymd.year(), date::month(mon + 1), date::day(1)};
        h = m = s = 0;
        continue;
      }
      if (!DayMatches(int(ymd.year()), mon, unsigned(ymd.day()))) {
        ymd = date::year_month_day{date::sys_days{ymd} + date::days(1)};
        h = m = s = 0;
        continue;
      }
      const int nh = NextSet(hours_, h);
      if (nh < 0) {
        ymd = date::year_month_day{date::sys_days{ymd} + date::days(1)};
        h = m = s = 0;
        continue;
      }
      if (nh != h) {
        h = nh;
        m = s = 0;
      }
      const int nm = NextSet(minutes_, m);
      if (nm < 0) {
        ++h;
        m = s = 0;
        if (h == 24) {
          ymd = date::year_month_day{date::sys_days{ymd} + date::days(1)};
          h = 0;
        }
        continue;
      }
      if (nm != m) {
        m = nm;
        s = 0;
      }
      const int ns = NextSet(seconds_, s);
      if (ns < 0) {
        ++m;
        s = 0;
        if (m == 60) {
          m = 0;
          ++h;
          if (h == 24) {
            ymd = date::year_month_day{date::sys_days{ymd} + date::days(1)};
            h = 0;
          }
        }
        continue;
      }
      s = ns;
      found = true;
    }
    if (!found) return std::nullopt;
    const date::local_seconds local =
        date::local_days{ymd} + std::chrono::hours(h) + std::chrono::minutes(m) + seconds(s);
    const date::local_info info = zone_->get_info(local);
    date::sys_seconds instant;
    switch (info.result) {
      case date::local_info::unique:
      case date::local_info::ambiguous:  // the first occurrence
        instant = date::sys_seconds{local.time_since_epoch()} - info.first.offset;
        break;
      case date::local_info::nonexistent:  // the first instant after the gap
        instant = info.second.begin;
        break;
    }
    if (instant > t)
      return DateTime(
          std::chrono::duration_cast<std::chrono::microseconds>(instant.time_since_epoch()));
    if (info.result == date::local_info::ambiguous) {
      // `after` lies in the second occurrence of a repeated hour: every
      // local time of the repeat fired in its first occurrence already.
      const date::local_seconds repeat_end{(info.first.end + info.first.offset).time_since_epoch()};
      candidate = repeat_end > local ? repeat_end : local + seconds(1);
    } else {
      candidate = local + seconds(1);
    }
  }
  return std::nullopt;
}

}  // namespace stele::service::cron
