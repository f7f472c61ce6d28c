// Durable sleep in C++, the same workflow as durable_sleep.c: the timer
// survives restarts; nothing runs while it waits.
// params: [seconds, name]
#include "stele.hpp"

STELE_WORKFLOW("demo:reminder/api.remind", remind, "seconds: u64, name: string", "string")

int remind(stele_str params, stele_buf* result) {
  const stele::Json p(params);
  stele::log("sleeping");
  stele::sleep_ms(p.at(0).u64() * 1000);
  stele::Builder text;
  text.raw("time to stretch, ").raw(p.at(1).string());
  stele::Builder(result).string(text.str());
  return STELE_OK;
}
