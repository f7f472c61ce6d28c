/* A workflow that imports WASI (printf): must be rejected at load. */
#include <stdio.h>

#include "stele_activity.h"

STELE__DECLARE("workflow", "testing:wasm/wasi.hello", hello, "", "string")

int hello(stele_str params, stele_buf* result) {
  (void)params;
  printf("hi\n");
  stele_buf_addc(result, "\"hi\"");
  return STELE_OK;
}
