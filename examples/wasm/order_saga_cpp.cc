// Order saga in C++ (freestanding: -fno-exceptions -fno-rtti, no libc++),
// the same workflow as order_saga.c: charge, reserve, ship; each step that
// succeeds pushes its undo step, and a failed step runs the undo steps done
// so far newest first, then finishes with an error. Every step and every
// compensation is a durable child execution.
// params: [order id, amount in cents, item, address]
#include "stele.hpp"

STELE_WORKFLOW("shop:orders/saga.place-order", place_order,
               "order: string, amount: u64, item: string, address: string",
               "result<string, string>")

namespace {

// A JSON array of one or two raw JSON values.
stele_str Params(stele_str a, stele_str b = {nullptr, 0}) {
  stele::Builder p;
  p.raw("[").raw(a);
  if (b.len != 0) p.raw(",").raw(b);
  p.raw("]");
  return p.str();  // the bump allocator never frees: the view stays valid
}

// The compensations of the steps done so far.
class Compensations {
 public:
  void push(const char* ffqn, stele_str params) { steps_[count_++] = Step{ffqn, params}; }
  void run_newest_first() const {
    for (int i = count_; i-- > 0;) stele::call(steps_[i].ffqn, steps_[i].params);
  }

 private:
  struct Step {
    const char* ffqn;
    stele_str params;
  };
  Step steps_[2];
  int count_ = 0;
};

int Fail(stele_buf* result, const Compensations& undo, const char* step) {
  undo.run_newest_first();
  stele::Builder(result).raw("{\"failed_step\":").string(step).raw("}");
  return STELE_ERR;
}

}  // namespace

int place_order(stele_str params, stele_buf* result) {
  const stele::Json p(params);
  const stele_str order = p.at(0).raw();
  Compensations undo;

  const stele::Response payment =
      stele::call("shop:payments/card.charge", Params(order, p.at(1).raw()));
  if (payment.status != STELE_OK) return Fail(result, undo, "charge");
  undo.push("shop:payments/card.refund", Params(payment.value.get("payment").raw()));

  const stele::Response reservation =
      stele::call("shop:stock/items.reserve", Params(order, p.at(2).raw()));
  if (reservation.status != STELE_OK) return Fail(result, undo, "reserve");
  undo.push("shop:stock/items.release", Params(reservation.value.get("reservation").raw()));

  const stele::Response shipment =
      stele::call("shop:shipping/parcels.ship", Params(order, p.at(3).raw()));
  if (shipment.status != STELE_OK) return Fail(result, undo, "ship");

  stele::Builder(result)
      .raw("{\"order\":")
      .raw(order)
      .raw(",\"tracking\":")
      .raw(shipment.value.get("tracking").raw())
      .raw("}");
  return STELE_OK;
}
