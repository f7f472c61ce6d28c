/* Messages in, values out (docs/model.md §8.6): waits up to `timeout_ms`
 * for a message on channel "approvals", publishing its stage as it goes
 * (`stele execution value ID stage`), and answers with who approved.
 * Send the approval with
 *   stele execution send ID approvals '{"by": "ann"}'
 * params: [timeout_ms] */
#include "stele_workflow.h"

STELE_WORKFLOW("demo:approvals/api.await-approval", await_approval, "timeout-ms: u64", "string")

int await_approval(stele_str p, stele_buf* result) {
  uint64_t timeout_ms = stele_json_u64(stele_json_at(p, 0));
  stele_publish("stage", stele_cstr("\"waiting\""));
  stele_str id, body;
  if (stele_receive_ms("approvals", timeout_ms, &id, &body) != STELE_OK) {
    stele_publish("stage", stele_cstr("\"timed out\""));
    stele_buf_add_json_string(result, stele_cstr("nobody approved"));
    return STELE_OK;
  }
  stele_publish("stage", stele_cstr("\"approved\""));
  stele_buf text = {0, 0, 0};
  stele_buf_addc(&text, "approved: ");
  stele_buf_add(&text, body);
  stele_buf_add_json_string(result, stele_buf_str(&text));
  return STELE_OK;
}
