#include "runtime/workflow/workflow_prng.h"

#include "base/check.h"

namespace stele::runtime::workflow {

namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

constexpr char kAlphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

}  // namespace

WorkflowPrng::WorkflowPrng(uint64_t seed) {
  uint64_t state = seed;
  for (uint64_t& word : s_) word = SplitMix64(state);
}

uint64_t WorkflowPrng::NextU64() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

uint64_t WorkflowPrng::UniformInclusive(uint64_t min, uint64_t max_inclusive) {
  STELE_CHECK(min <= max_inclusive, "empty random range");
  const uint64_t range = max_inclusive - min + 1;  // 0 means the whole 2^64
  if (range == 0) return NextU64();
  const uint64_t threshold = (0 - range) % range;
  for (;;) {
    const uint64_t x = NextU64();
    if (x >= threshold) return min + x % range;
  }
}

std::string WorkflowPrng::AlphanumericString(uint64_t min_length, uint64_t max_length_exclusive) {
  STELE_CHECK(min_length < max_length_exclusive, "empty random string length range");
  const uint64_t length = UniformInclusive(min_length, max_length_exclusive - 1);
  std::string out;
  out.reserve(length);
  for (uint64_t i = 0; i < length; ++i) out.push_back(kAlphabet[UniformInclusive(0, 61)]);
  return out;
}

}  // namespace stele::runtime::workflow
