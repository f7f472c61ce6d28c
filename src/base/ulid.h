// ULID: 128-bit identifiers that sort by creation time
// (https://github.com/ulid/spec).
//
// Layout, most significant bit first: a 48-bit Unix timestamp in
// milliseconds, then 80 random bits. In this class `hi` holds the timestamp
// and the top 16 random bits, `lo` the remaining 64. Text form: 26 characters
// of Crockford base32, e.g. "01ARZ3NDEKTSV4RRFFQ69G5FAV". Comparing two Ulids
// (or their canonical strings) orders them by timestamp first.
//
// Threading: Ulid is an immutable value. UlidGenerator::Next() and
// GenerateUlid() may be called from any thread.
// Ownership: UlidGenerator keeps a reference to its Clock, which must outlive
// it.

#ifndef STELE_BASE_ULID_H_
#define STELE_BASE_ULID_H_

#include <compare>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace stele {

class Ulid {
 public:
  Ulid(uint64_t hi, uint64_t lo) : hi_(hi), lo_(lo) {}

  // Decodes the 26-character text form. Case-insensitive; as in Crockford
  // decoding, 'I' and 'L' read as '1' and 'O' as '0'. Returns nullopt for a
  // wrong length, any other character (including 'U' and '-'), or a value
  // above 2^128 - 1 (first character above '7').
  static std::optional<Ulid> Parse(std::string_view text);

  // The canonical text form: 26 characters, upper case, no I, L, O or U.
  std::string ToString() const;

  // Milliseconds since the Unix epoch, from the top 48 bits.
  uint64_t TimestampMs() const { return hi_ >> 16; }

  uint64_t hi() const { return hi_; }
  uint64_t lo() const { return lo_; }

  // Member order (hi_, lo_) makes the defaulted comparison numeric.
  friend bool operator==(const Ulid&, const Ulid&) = default;
  friend std::strong_ordering operator<=>(const Ulid&, const Ulid&) = default;

 private:
  uint64_t hi_;
  uint64_t lo_;
};

// Makes Ulids that increase strictly, even within one millisecond and even
// if the clock steps back: when the clock's millisecond is not past the last
// one used, the last millisecond is kept and the 80 random bits of the
// previous Ulid are incremented by one, as the ULID spec's monotonic mode
// does. So Ulids from one generator sort in the order Next() returned them.
class UlidGenerator {
 public:
  // REQUIRES: `clock` reads between 1970 and the year 10889 (the 48-bit
  // millisecond range); Next() aborts otherwise.
  explicit UlidGenerator(const Clock& clock);

  UlidGenerator(const UlidGenerator&) = delete;
  UlidGenerator& operator=(const UlidGenerator&) = delete;

  // Aborts, through STELE_CHECK, if more Ulids are asked for within one
  // millisecond than the 80 random bits have room for above their random
  // starting point; with a random start that needs about 2^79 calls.
  Ulid Next();

 private:
  const Clock& clock_;
  std::mutex mu_;
  // Guarded by mu_. A Mersenne Twister rather than random_device per call:
  // ULIDs need uniqueness, not unpredictability, and random_device can be a
  // system call. Seeded once from random_device.
  std::mt19937_64 rng_;
  // Guarded by mu_. The last Ulid returned, if has_last_.
  uint64_t last_hi_ = 0;
  uint64_t last_lo_ = 0;
  bool has_last_ = false;
};

// Next() of a process-wide UlidGenerator on SystemClock::Instance().
// Note: a child process created by fork() continues the parent's sequence,
// so parent and child can produce equal Ulids; create processes with exec.
Ulid GenerateUlid();

}  // namespace stele

#endif  // STELE_BASE_ULID_H_
