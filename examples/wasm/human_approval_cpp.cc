// Human approval in C++, the same workflow as human_approval.c: it awaits a
// stub activity that a person (or the API) completes; only an approval
// `true` leads to the payment.
// params: [amount, payee]
#include "stele.hpp"

STELE_WORKFLOW("demo:expenses/flow.expense", expense, "amount: u64, payee: string", "string")

int expense(stele_str params, stele_buf* result) {
  // demo:expenses/manager.approve is a stub activity: no code runs it.
  const stele::Response decision = stele::call("demo:expenses/manager.approve", params);
  if (decision.status != STELE_OK || !(decision.value == "true")) {
    stele::Builder(result).string("rejected");
    return STELE_OK;
  }
  const stele::Response paid = stele::call("demo:expenses/bank.pay", params);
  stele::Builder(result).raw(paid.value.raw());
  return paid.status == STELE_OK ? STELE_OK : STELE_ERR;
}
