// Order-processing saga: charge the card, reserve the stock, ship; when a
// step fails, undo the steps already done (refund, release) in reverse
// order and finish with an error. Every step is a durable child execution,
// so a crash at any point resumes the saga where it was.
//
// Usage: stele_example_order_saga [db path]
#include <iostream>
#include <string>
#include <vector>

#include "stele/stele.h"

namespace {

using stele::ActivityContext;
using stele::ActivityResult;
using stele::Json;
using stele::Unexpected;

ActivityResult Charge(ActivityContext&, const Json& p) {
  std::cout << "  charge   " << p.at(1) << " cents for order " << p.at(0) << "\n";
  return Json{{"payment", "P-" + p.at(0).get<std::string>()}};
}
ActivityResult Refund(ActivityContext&, const Json& p) {
  std::cout << "  refund   payment " << p.at(0) << "\n";
  return Json(true);
}
ActivityResult Reserve(ActivityContext&, const Json& p) {
  std::cout << "  reserve  " << p.at(1) << " for order " << p.at(0) << "\n";
  return Json{{"reservation", "R-" + p.at(0).get<std::string>()}};
}
ActivityResult Release(ActivityContext&, const Json& p) {
  std::cout << "  release  reservation " << p.at(0) << "\n";
  return Json(true);
}
ActivityResult Ship(ActivityContext&, const Json& p) {
  std::string address = p.at(1).get<std::string>();
  if (address.empty()) return Unexpected(Json("no shipping address"));  // a business error
  std::cout << "  ship     order " << p.at(0) << " to " << address << "\n";
  return Json{{"tracking", "T-" + p.at(0).get<std::string>()}};
}

// params: [order id, amount in cents, item, address]
stele::Task<stele::WorkflowResult> PlaceOrder(stele::WorkflowContext& ctx, Json p) {
  const Json order = p.at(0);
  std::vector<std::pair<std::string, Json>> compensations;  // ffqn, params
  // Compensations run in reverse order; each is a durable call too.
  auto undo = [&]() -> stele::Task<void> {
    for (auto it = compensations.rbegin(); it != compensations.rend(); ++it) {
      co_await ctx.call(it->first, it->second);
    }
  };

  auto payment = co_await ctx.call("shop:payments/card.charge", stele::Params(order, p.at(1)));
  if (!payment.ok()) co_return Unexpected(Json{{"failed_step", "charge"}});
  compensations.emplace_back("shop:payments/card.refund", stele::Params(payment.value["payment"]));

  auto reservation = co_await ctx.call("shop:stock/items.reserve", stele::Params(order, p.at(2)));
  if (!reservation.ok()) {
    co_await undo();
    co_return Unexpected(Json{{"failed_step", "reserve"}});
  }
  compensations.emplace_back("shop:stock/items.release",
                             stele::Params(reservation.value["reservation"]));

  auto shipment = co_await ctx.call("shop:shipping/parcels.ship", stele::Params(order, p.at(3)));
  if (!shipment.ok()) {
    co_await undo();
    co_return Unexpected(Json{{"failed_step", "ship"}, {"reason", shipment.value}});
  }
  co_return Json{{"order", order}, {"tracking", shipment.value["tracking"]}};
}

}  // namespace

int main(int argc, char** argv) {
  auto engine = stele::Engine::Open({.sqlite_path = argc > 1 ? argv[1] : "order-saga.sqlite"});
  if (!engine) {
    std::cerr << engine.error().ToString() << "\n";
    return 1;
  }
  stele::Engine& e = **engine;
  // Shipping errors are final at once: retrying will not invent an address.
  stele::ActivityOptions no_retry_on_err{.retry_on_err = false};
  bool ok =
      e.RegisterActivity("shop:payments/card.charge", Charge) &&
      e.RegisterActivity("shop:payments/card.refund", Refund) &&
      e.RegisterActivity("shop:stock/items.reserve", Reserve) &&
      e.RegisterActivity("shop:stock/items.release", Release) &&
      e.RegisterActivity("shop:shipping/parcels.ship", Ship, no_retry_on_err) &&
      e.RegisterWorkflow("shop:orders/saga.place-order", stele::WorkflowFnWithErr(PlaceOrder)) &&
      e.Start();
  if (!ok) return 1;

  int exit_code = 0;
  for (const auto& [order, address] : {std::pair{"A-1", "221B Baker St"}, std::pair{"A-2", ""}}) {
    std::cout << "order " << order << ":\n";
    auto id =
        e.Submit("shop:orders/saga.place-order", stele::Params(order, 4999, "teapot", address));
    if (!id) {
      std::cerr << id.error().ToString() << "\n";
      return 1;
    }
    auto result = e.WaitForResult(*id, std::chrono::seconds(30));
    if (!result) {
      std::cerr << result.error().ToString() << "\n";
      exit_code = 1;
      continue;
    }
    std::cout << "  => " << (result->ok() ? "placed " : "rolled back ") << result->ToString()
              << "\n";
  }
  e.Stop();
  return exit_code;
}
