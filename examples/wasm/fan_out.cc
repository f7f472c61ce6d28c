// Fan-out in C++ (freestanding: -fno-exceptions -fno-rtti, no libc++):
// submit n children into a join set, then await every response.
// params: [n]
#include "stele.hpp"

STELE_WORKFLOW("math:squares/api.sum-of-squares", sum_of_squares, "n: u64",
               "result<string, string>")

int sum_of_squares(stele_str params, stele_buf* result) {
  stele::Json p(params);
  const uint64_t n = p.at(0).u64();
  stele::JoinSet squares = stele::JoinSet::Create();
  for (uint64_t i = 1; i <= n; ++i) {
    stele::Builder args;
    args.raw("[").u64(i).raw("]");
    squares.submit("math:squares/api.square", args.str());
  }
  uint64_t sum = 0;
  for (uint64_t i = 1; i <= n; ++i) {
    stele::Response next = squares.join_next();
    if (next.status != STELE_OK) {
      stele::Builder(result).string("a child failed");
      return STELE_ERR;
    }
    sum += next.value.u64();
  }
  stele::Builder(result).raw("{\"n\":").u64(n).raw(",\"sum_of_squares\":").u64(sum).raw("}");
  return STELE_OK;
}
