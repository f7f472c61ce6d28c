// DateTime, Stele's instant type, and its RFC 3339 text form.
//
// DateTime counts microseconds since the Unix epoch in UTC. Microseconds on
// purpose: PostgreSQL's TIMESTAMPTZ stores microseconds, so any finer
// instant would not survive a round trip through the Postgres backend, and
// every backend must return exactly what was written.
//
// The text form is RFC 3339 in UTC ("2024-01-02T03:04:05.123Z"), used in
// the HTTP API, in logs and in SQLite's TEXT columns.
//
// Threading: all functions are pure and safe to call from any thread.

#ifndef STELE_BASE_TIME_H_
#define STELE_BASE_TIME_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "stele/clock.h"  // DateTime

namespace stele {

// Formats `t` as RFC 3339 in UTC with a `Z` suffix. The fraction is omitted
// for a whole second, has 3 digits for an exact millisecond and 6 otherwise,
// as std::chrono prints durations: "2024-01-02T03:04:05Z",
// "2024-01-02T03:04:05.120Z", "2024-01-02T03:04:05.123456Z".
// Years 0000-9999 are written with four digits. Instants outside that range
// (DateTime reaches about ±292,000 years) cannot be written in RFC 3339; they
// are written in the ISO 8601 expanded form with an explicit sign
// ("+10000-01-01T00:00:00Z", "-0001-12-31T23:00:00Z"), which ParseRfc3339
// rejects.
std::string FormatRfc3339(DateTime t);

// Parses an RFC 3339 date-time:
//   YYYY-MM-DD ('T' | 't' | ' ') HH:MM:SS [ '.' 1-9 digits ] ('Z' | 'z' | ('+' | '-') HH:MM)
// and returns the instant it denotes. Digits beyond microseconds are
// truncated. Returns nullopt for anything else: trailing or missing
// characters, a date that does not exist (2023-02-29, 04-31), hour 24, minute
// or second 60 (leap seconds cannot be represented), an offset beyond 23:59.
std::optional<DateTime> ParseRfc3339(std::string_view text);

// Conversions to and from the integer columns of the storage backends.
DateTime DateTimeFromMicros(int64_t micros);
int64_t ToMicros(DateTime t);
// REQUIRES: |millis| small enough that millis * 1000 fits in int64_t
// (about ±292,000 years); larger values are undefined behaviour.
DateTime DateTimeFromMillis(int64_t millis);

}  // namespace stele

#endif  // STELE_BASE_TIME_H_
