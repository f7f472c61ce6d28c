// stele_demo: Stele's main job, end to end on an embedded SQLite file.
//
// A checkout workflow (a coroutine) calls three activities: the card
// payment fails on its first attempt and is retried with backoff, the
// stock is reserved, and a fan-out sends one notification per channel
// into a join set and collects them. The program submits three orders,
// waits for each result, and prints every execution with its final state.
// Run it twice on the same database: the fixed order ids make the second
// run find the same, already finished executions (idempotent submit).
//
// Usage: stele_demo [path/to/db.sqlite]
#include <atomic>
#include <chrono>
#include <iostream>
#include <string>

#include "stele/stele.h"

namespace {

using stele::ActivityContext;
using stele::ActivityResult;
using stele::Json;

ActivityResult Charge(ActivityContext& ctx, const Json& p) {
  if (ctx.attempt() == 1) {
    std::cout << "  [charge]  " << p.at(0) << ": card network busy (attempt 1), will retry\n";
    return stele::Unexpected(Json("card network busy"));
  }
  std::cout << "  [charge]  " << p.at(0) << ": charged " << p.at(1) << " cents (attempt "
            << ctx.attempt() << ")\n";
  return Json{{"receipt", "R-" + p.at(0).get<std::string>()}};
}

ActivityResult Reserve(ActivityContext&, const Json& p) {
  std::cout << "  [reserve] " << p.at(0) << ": reserved\n";
  return Json(true);
}

ActivityResult Notify(ActivityContext&, const Json& p) {
  return Json(p.at(1).get<std::string>() + " sent for " + p.at(0).get<std::string>());
}

stele::Task<Json> Checkout(stele::WorkflowContext& ctx, Json p) {
  const Json order = p.at(0);
  auto receipt = co_await ctx.call("demo:shop/payments.charge", stele::Params(order, p.at(1)));
  if (!receipt.ok()) co_return Json{{"order", order}, {"status", "payment failed"}};
  auto reserved = co_await ctx.call("demo:shop/stock.reserve", stele::Params(order));
  if (!reserved.ok()) co_return Json{{"order", order}, {"status", "out of stock"}};

  stele::JoinSet notifications = co_await ctx.new_join_set();
  for (const char* channel : {"email", "sms", "push"}) {
    co_await ctx.submit(notifications, "demo:shop/notify.send", stele::Params(order, channel));
  }
  Json sent = Json::array();
  for (int i = 0; i < 3; ++i) {
    auto next = co_await ctx.join_next(notifications);
    if (next && next->result.ok()) sent.push_back(next->result.value);
  }
  co_return Json{{"order", order},
                 {"status", "placed"},
                 {"receipt", receipt.value["receipt"]},
                 {"notifications", sent.size()}};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "stele-demo.sqlite";
  auto opened = stele::Engine::Open({.sqlite_path = path});
  if (!opened) {
    std::cerr << "demo: " << opened.error().ToString() << "\n";
    return 1;
  }
  stele::Engine& engine = **opened;
  stele::ActivityOptions fast_retry{.max_retries = 3, .backoff = std::chrono::milliseconds(50)};
  auto registered = engine.RegisterActivity("demo:shop/payments.charge", Charge, fast_retry);
  if (registered) registered = engine.RegisterActivity("demo:shop/stock.reserve", Reserve);
  if (registered) registered = engine.RegisterActivity("demo:shop/notify.send", Notify);
  if (registered) registered = engine.RegisterWorkflow("demo:shop/checkout.place-order", Checkout);
  if (registered) registered = engine.Start();
  if (!registered) {
    std::cerr << "demo: " << registered.error().ToString() << "\n";
    return 1;
  }

  // Fixed ids: rerunning the demo on the same file finds these executions.
  const char* ids[] = {"E_01KBNHM5FQW81KP5Y3XMNX31K1", "E_01KBNHM5FQW81KP5Y3XMNX31K2",
                       "E_01KBNHM5FQW81KP5Y3XMNX31K3"};
  int placed = 0;
  for (int i = 0; i < 3; ++i) {
    std::string order = "order-" + std::to_string(i + 1);
    auto id = engine.Submit("demo:shop/checkout.place-order", stele::Params(order, 1000 * (i + 1)),
                            {.execution_id = ids[i]});
    if (!id) {
      std::cerr << "demo: submit: " << id.error().ToString() << "\n";
      return 1;
    }
    std::cout << order << " submitted as " << *id << "\n";
    auto result = engine.WaitForResult(*id, std::chrono::seconds(30));
    if (!result) {
      std::cerr << "demo: " << result.error().ToString() << "\n";
      return 1;
    }
    std::cout << "  => " << result->ToString() << "\n";
    if (result->ok() && result->value["status"] == "placed") ++placed;
  }

  std::cout << "\nexecutions in " << path << " (newest first):\n";
  if (auto all = engine.List({.limit = 40})) {
    for (const auto& row : all->executions) {
      std::cout << "  " << row.execution_id << "  " << row.ffqn << "  " << row.description << "\n";
    }
  }
  engine.Stop();
  std::cout << "\nRESULT: " << placed << " of 3 orders placed\n";
  return placed == 3 ? 0 : 1;
}
