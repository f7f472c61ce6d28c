/* Durable sleep: the timer survives restarts; nothing runs while it waits.
 * params: [seconds, name] */
#include "stele_workflow.h"

STELE_WORKFLOW("demo:reminder/api.remind", remind, "seconds: u64, name: string", "string")

int remind(stele_str p, stele_buf* result) {
  uint64_t seconds = stele_json_u64(stele_json_at(p, 0));
  stele_log_c(STELE_LOG_INFO, "sleeping");
  stele_sleep_ms(seconds * 1000);
  stele_buf text = {0, 0, 0};
  stele_buf_addc(&text, "time to stretch, ");
  stele_buf_add(&text, stele_json_string(stele_json_at(p, 1)));
  stele_buf_add_json_string(result, stele_buf_str(&text));
  return STELE_OK;
}
