/* hello's activity, compiled against wasi-libc: greet(name) -> "hello, <name>". */
#include <stdio.h>

#include "stele_activity.h"

STELE_ACTIVITY("demo:hello/api.greet", greet, "name: string", "string")

int greet(stele_str params, stele_buf* result) {
  stele_str name = stele_json_string(stele_json_at(params, 0));
  printf("greeting %.*s\n", (int)name.len, name.ptr);
  stele_buf text = {0, 0, 0};
  stele_buf_addc(&text, "hello, ");
  stele_buf_add(&text, name);
  stele_buf_add_json_string(result, stele_buf_str(&text));
  return STELE_OK;
}
