// Fan-out / fan-in: a workflow submits one child per input into a join set,
// then collects the responses as they arrive (arrival order, not
// submission order) and sums them.
//
// Usage: stele_example_fan_out [db path] [n]
#include <iostream>
#include <string>

#include "stele/stele.h"

namespace {

stele::ActivityResult Square(stele::ActivityContext&, const stele::Json& p) {
  auto x = stele::Param<int64_t>(p, 0);
  if (!x) return stele::Unexpected(stele::Json(x.error()));
  return stele::Json(*x * *x);
}

stele::Task<stele::Json> SumOfSquares(stele::WorkflowContext& ctx, stele::Json p) {
  const int n = p.at(0).get<int>();
  stele::JoinSet squares = co_await ctx.new_join_set();
  for (int i = 1; i <= n; ++i) {
    co_await ctx.submit(squares, "math:squares/api.square", stele::Params(i));
  }
  int64_t sum = 0;
  for (int i = 1; i <= n; ++i) {
    auto next = co_await ctx.join_next(squares);
    if (!next || !next->result.ok()) co_return stele::Json("a child failed");
    sum += next->result.value.get<int64_t>();
  }
  co_return stele::Json{{"n", n}, {"sum_of_squares", sum}};
}

}  // namespace

int main(int argc, char** argv) {
  auto engine = stele::Engine::Open({.sqlite_path = argc > 1 ? argv[1] : "fan-out.sqlite"});
  if (!engine) {
    std::cerr << engine.error().ToString() << "\n";
    return 1;
  }
  stele::Engine& e = **engine;
  if (!e.RegisterActivity("math:squares/api.square", Square) ||
      !e.RegisterWorkflow("math:squares/api.sum-of-squares", SumOfSquares) || !e.Start()) {
    return 1;
  }
  const int n = argc > 2 ? std::stoi(argv[2]) : 50;
  auto id = e.Submit("math:squares/api.sum-of-squares", stele::Params(n));
  if (!id) {
    std::cerr << id.error().ToString() << "\n";
    return 1;
  }
  auto result = e.WaitForResult(*id, std::chrono::seconds(60));
  if (!result) {
    std::cerr << result.error().ToString() << "\n";
    return 1;
  }
  std::cout << *id << " => " << result->ToString() << "\n";
  e.Stop();
  return result->ok() ? 0 : 1;
}
