#include "base/ulid.h"

#include <array>
#include <chrono>

#include "base/check.h"

namespace stele {
namespace {

constexpr char kEncode[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
constexpr int kTextLength = 26;
constexpr uint64_t kTimestampLimit = uint64_t{1} << 48;
constexpr uint64_t kRandomHiMask = 0xFFFF;  // Random bits kept in hi.

// Crockford base32 digit values by character; -1 for characters that are not
// digits. Lower case and the look-alikes I, L (1) and O (0) are accepted.
constexpr std::array<int8_t, 256> MakeDecodeTable() {
  std::array<int8_t, 256> table{};
  for (auto& entry : table) entry = -1;
  for (int i = 0; i < 32; ++i) {
    const char c = kEncode[i];
    table[static_cast<unsigned char>(c)] = static_cast<int8_t>(i);
    if (c >= 'A' && c <= 'Z') {
      table[static_cast<unsigned char>(c - 'A' + 'a')] = static_cast<int8_t>(i);
    }
  }
  for (const char c : {'I', 'i', 'L', 'l'}) table[static_cast<unsigned char>(c)] = 1;
  for (const char c : {'O', 'o'}) table[static_cast<unsigned char>(c)] = 0;
  return table;
}

constexpr std::array<int8_t, 256> kDecode = MakeDecodeTable();

}  // namespace

std::optional<Ulid> Ulid::Parse(std::string_view text) {
  if (text.size() != kTextLength) return std::nullopt;
  // 26 digits carry 130 bits; the first digit holds only the top 3 of the
  // 128, so anything above '7' there would not fit.
  uint64_t hi = 0;
  uint64_t lo = 0;
  for (int i = 0; i < kTextLength; ++i) {
    const int digit = kDecode[static_cast<unsigned char>(text[i])];
    if (digit < 0 || (i == 0 && digit > 7)) return std::nullopt;
    hi = (hi << 5) | (lo >> 59);
    lo = (lo << 5) | static_cast<uint64_t>(digit);
  }
  return Ulid(hi, lo);
}

std::string Ulid::ToString() const {
  std::string out(kTextLength, '0');
  // Character i holds bits [shift, shift + 5) of the value, counting from the
  // least significant bit, where shift = 125 - 5 * i.
  for (int i = 0; i < kTextLength; ++i) {
    const int shift = 125 - 5 * i;
    uint64_t digit;
    if (shift >= 64) {
      digit = hi_ >> (shift - 64);
    } else if (shift + 5 <= 64) {
      digit = lo_ >> shift;
    } else {  // The 5 bits straddle lo_ and hi_.
      digit = (lo_ >> shift) | (hi_ << (64 - shift));
    }
    out[static_cast<size_t>(i)] = kEncode[digit & 31];
  }
  return out;
}

UlidGenerator::UlidGenerator(const Clock& clock) : clock_(clock) {
  std::random_device device;
  std::seed_seq seed{device(), device(), device(), device(),
                     device(), device(), device(), device()};
  rng_.seed(seed);
}

Ulid UlidGenerator::Next() {
  const int64_t now_ms =
      std::chrono::floor<std::chrono::milliseconds>(clock_.Now()).time_since_epoch().count();
  STELE_CHECK(now_ms >= 0 && static_cast<uint64_t>(now_ms) < kTimestampLimit,
              "UlidGenerator: clock reading outside the 48-bit ULID timestamp range");
  const auto ms = static_cast<uint64_t>(now_ms);

  std::lock_guard<std::mutex> lock(mu_);
  if (has_last_ && ms <= (last_hi_ >> 16)) {
    // Same (or an earlier) millisecond: keep the last timestamp and add one
    // to the 80 random bits, carrying from lo into the 16 bits in hi.
    ++last_lo_;
    if (last_lo_ == 0) {
      STELE_CHECK((last_hi_ & kRandomHiMask) != kRandomHiMask,
                  "UlidGenerator: 80-bit random part overflowed within one millisecond");
      ++last_hi_;
    }
  } else {
    last_hi_ = (ms << 16) | (rng_() & kRandomHiMask);
    last_lo_ = rng_();
    has_last_ = true;
  }
  return Ulid(last_hi_, last_lo_);
}

Ulid GenerateUlid() {
  // Never destroyed, so that threads still running during static destruction
  // can keep generating.
  static UlidGenerator* const generator = new UlidGenerator(SystemClock::Instance());
  return generator->Next();
}

}  // namespace stele
