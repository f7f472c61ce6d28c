// Messages in, values out in C++, the same workflow as await_approval.c:
// waits up to `timeout_ms` for a message on channel "approvals",
// publishing its stage as it goes (`stele execution value ID stage`), and
// answers with who approved. Send the approval with
//   stele execution send ID approvals '{"by": "ann"}'
// params: [timeout_ms]
#include "stele.hpp"

STELE_WORKFLOW("demo:approvals/api.await-approval", await_approval, "timeout-ms: u64", "string")

int await_approval(stele_str params, stele_buf* result) {
  const uint64_t timeout_ms = stele::Json(params).at(0).u64();
  stele::publish("stage", stele::Builder().string("waiting"));
  const stele::Message approval = stele::receive_for_ms("approvals", timeout_ms);
  if (approval.status != STELE_OK) {
    stele::publish("stage", stele::Builder().string("timed out"));
    stele::Builder(result).string("nobody approved");
    return STELE_OK;
  }
  stele::publish("stage", stele::Builder().string("approved"));
  stele::Builder text;
  text.raw("approved: ").raw(approval.body.raw());
  stele::Builder(result).string(text.str());
  return STELE_OK;
}
