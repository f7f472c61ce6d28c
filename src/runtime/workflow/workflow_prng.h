// WorkflowPrng: the deterministic random generator of a workflow
// (docs/model.md §6.5). Part of the replay contract: every value a
// workflow draws is Persist-ed and recomputed on replay, so changing any
// line here makes in-flight workflows fail with nondeterminism.
//
// Algorithm: xoshiro256** (Blackman & Vigna, 2018), its 256-bit state
// filled by four successive outputs of splitmix64 started at the seed
// (ExecutionId::RandomSeed()). Ranges use rejection sampling (no modulo
// bias): with r = range size, draws below (2^64 - r) mod r are discarded
// and the value is min + x mod r. Strings draw each character uniformly
// from "0-9A-Za-z" (62 symbols) after drawing the length.
//
// Threading: a value type; one generator per run.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace stele::runtime::workflow {

class WorkflowPrng {
 public:
  explicit WorkflowPrng(uint64_t seed);

  uint64_t NextU64();
  // Uniform in [min, max_inclusive]. REQUIRES: min <= max_inclusive.
  uint64_t UniformInclusive(uint64_t min, uint64_t max_inclusive);
  // Length uniform in [min_length, max_length_exclusive), alphanumeric.
  // REQUIRES: min_length < max_length_exclusive.
  std::string AlphanumericString(uint64_t min_length, uint64_t max_length_exclusive);

 private:
  std::array<uint64_t, 4> s_;
};

}  // namespace stele::runtime::workflow
