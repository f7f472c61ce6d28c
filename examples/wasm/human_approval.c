/* Human approval: the workflow awaits a stub activity that a person (or the
 * API) completes; only an approval `true` leads to the payment.
 * params: [amount, payee] */
#include "stele_workflow.h"

STELE_WORKFLOW("demo:expenses/flow.expense", expense, "amount: u64, payee: string", "string")

int expense(stele_str p, stele_buf* result) {
  stele_str decision, paid;
  /* demo:expenses/manager.approve is a stub activity: no code runs it. */
  if (stele_call("demo:expenses/manager.approve", p, &decision) != STELE_OK ||
      !stele_str_eq(decision, "true")) {
    stele_buf_addc(result, "\"rejected\"");
    return STELE_OK;
  }
  if (stele_call("demo:expenses/bank.pay", p, &paid) != STELE_OK) {
    stele_buf_add(result, paid);
    return STELE_ERR;
  }
  stele_buf_add(result, paid);
  return STELE_OK;
}
