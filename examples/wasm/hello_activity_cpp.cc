// hello's activity in C++ (wasm32-wasi against wasi-libc; no libc++, so C
// headers only, -fno-exceptions -fno-rtti): greet(name) -> "hello, <name>",
// the same as hello_activity.c.
#include <stdio.h>

#include "stele_activity.h"

STELE_ACTIVITY("demo:hello/api.greet", greet, "name: string", "string")

namespace {

// A string builder over the SDK's stele_buf (malloc'ed; freed with the
// instance after the attempt).
class Text {
 public:
  Text& add(const char* text) {
    stele_buf_addc(&buf_, text);
    return *this;
  }
  Text& add(stele_str text) {
    stele_buf_add(&buf_, text);
    return *this;
  }
  stele_str str() const { return stele_buf_str(&buf_); }

 private:
  stele_buf buf_ = {nullptr, 0, 0};
};

}  // namespace

int greet(stele_str params, stele_buf* result) {
  const stele_str name = stele_json_string(stele_json_at(params, 0));
  printf("greeting %.*s\n", static_cast<int>(name.len), name.ptr);
  Text text;
  text.add("hello, ").add(name);
  stele_buf_add_json_string(result, text.str());
  return STELE_OK;
}
