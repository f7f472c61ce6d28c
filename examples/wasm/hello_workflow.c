/* hello: a workflow calling an activity and sleeping durably. */
#include "stele_workflow.h"

STELE_WORKFLOW("demo:hello/api.welcome", welcome, "name: string", "string")

int welcome(stele_str params, stele_buf* result) {
  stele_str greeting;
  /* params is ["Ada"]; the activity takes the same params. */
  if (stele_call("demo:hello/api.greet", params, &greeting) != STELE_OK) {
    stele_buf_add(result, greeting);
    return STELE_ERR;
  }
  stele_log_c(STELE_LOG_INFO, "greeted; sleeping");
  stele_sleep_ms(1000);
  stele_buf_add(result, greeting);
  return STELE_OK;
}
