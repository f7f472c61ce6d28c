// stele.hpp: a thin C++ layer over the C workflow SDK (stele_workflow.h) for
// guests compiled freestanding (-fno-exceptions -fno-rtti, no libc++): JSON
// slices with at()/get(), a string builder, join sets and responses as
// small value types. Everything is header-only and allocation goes through
// the SDK's bump allocator.
//
// Threading: single-threaded guest. Ownership: views into run-long buffers.
#ifndef STELE_HPP
#define STELE_HPP

#include "stele_workflow.h"

namespace stele {

// A view of one JSON value (not validated; see stele_json_* in stele_guest.h).
class Json {
 public:
  Json() : s_{nullptr, 0} {}
  explicit Json(stele_str s) : s_(s) {}
  Json at(uint32_t index) const { return Json(stele_json_at(s_, index)); }
  Json get(const char* key) const { return Json(stele_json_get(s_, key)); }
  uint64_t u64() const { return stele_json_u64(s_); }
  stele_str string() const { return stele_json_string(s_); }
  stele_str raw() const { return s_; }
  bool empty() const { return s_.len == 0; }
  bool operator==(const char* text) const { return stele_str_eq(s_, text) != 0; }

 private:
  stele_str s_;
};

// Appends to a stele_buf (its own, or the result buffer of the export).
class Builder {
 public:
  Builder() : buf_(&own_) {}
  explicit Builder(stele_buf* target) : buf_(target) {}
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;
  Builder& raw(const char* text) { stele_buf_addc(buf_, text); return *this; }
  Builder& raw(stele_str text) { stele_buf_add(buf_, text); return *this; }
  Builder& u64(uint64_t v) { stele_buf_add_u64(buf_, v); return *this; }
  Builder& string(const char* text) { stele_buf_add_json_string(buf_, stele_cstr(text)); return *this; }
  Builder& string(stele_str text) { stele_buf_add_json_string(buf_, text); return *this; }
  stele_str str() const { return stele_buf_str(buf_); }

 private:
  stele_buf own_ = {nullptr, 0, 0};
  stele_buf* buf_;
};

// One response of a join set: status STELE_OK / STELE_ERR / STELE_FAILED,
// STELE_ALL_PROCESSED when nothing was left, or STELE_CANCELLED when the
// workflow is being cancelled (clean up and return; docs/model.md §9.5).
struct Response {
  int status;
  stele_str id;
  Json value;
};

class JoinSet {
 public:
  static JoinSet Create() { return JoinSet(stele_join_set_create()); }
  stele_str id() const { return id_; }
  stele_str submit(const char* ffqn, stele_str params_json) const {
    return stele_submit(id_, ffqn, params_json);
  }
  // `options_json`: the child's own timeout and retry policy
  // (stele_submit_with_options).
  stele_str submit(const char* ffqn, stele_str params_json, stele_str options_json) const {
    return stele_submit_with_options(id_, ffqn, params_json, options_json);
  }
  stele_str submit_delay_ms(uint64_t millis) const { return stele_submit_delay(id_, millis); }
  Response join_next() const {
    stele_str child = {nullptr, 0}, value = {nullptr, 0};
    int status = stele_join_next(id_, &child, &value);
    return Response{status, child, Json(value)};
  }
  void close() const { stele_join_set_close(id_); }

 private:
  explicit JoinSet(stele_str id) : id_(id) {}
  stele_str id_;
};

// A direct durable call.
inline Response call(const char* ffqn, stele_str params_json) {
  stele_str value = {nullptr, 0};
  int status = stele_call(ffqn, params_json, &value);
  return Response{status, {nullptr, 0}, Json(value)};
}
// A direct durable call with the child's own timeout and retry policy
// (stele_call_with_options).
inline Response call(const char* ffqn, stele_str params_json, stele_str options_json) {
  stele_str value = {nullptr, 0};
  int status = stele_call_with_options(ffqn, params_json, options_json, &value);
  return Response{status, {nullptr, 0}, Json(value)};
}
inline bool sleep_ms(uint64_t millis) { return stele_sleep_ms(millis) != 0; }

// Messages in, values out (docs/model.md §8.6, docs/guest_abi.md §3).
// A received message: status STELE_OK with its id and JSON body; otherwise
// STELE_FAILED (receive_for_ms ran out), STELE_PENDING (receive_try found
// none) or STELE_CANCELLED (the workflow is being cancelled: clean up and
// return).
struct Message {
  int status;
  stele_str id;
  Json body;
};
// The next message of `channel`, in arrival order, waiting for it.
inline Message receive(const char* channel) {
  stele_str id = {nullptr, 0}, body = {nullptr, 0};
  int status = stele_receive(channel, &id, &body);
  return Message{status, id, Json(body)};
}
// receive, waiting at most `millis`.
inline Message receive_for_ms(const char* channel, uint64_t millis) {
  stele_str id = {nullptr, 0}, body = {nullptr, 0};
  int status = stele_receive_ms(channel, millis, &id, &body);
  return Message{status, id, Json(body)};
}
// receive without waiting.
inline Message receive_try(const char* channel) {
  stele_str id = {nullptr, 0}, body = {nullptr, 0};
  int status = stele_receive_try(channel, &id, &body);
  return Message{status, id, Json(body)};
}
// Publishes a JSON value under `key` (last write wins) for readers outside.
inline void publish(const char* key, stele_str value_json) { stele_publish(key, value_json); }
inline void publish(const char* key, const Builder& value) { stele_publish(key, value.str()); }
// Sends a JSON body to `channel` of execution `id`, once: STELE_OK,
// STELE_NOT_FOUND, or STELE_FAILED when that execution has finished.
inline int send(stele_str id, const char* channel, stele_str body_json) {
  return stele_send(id, channel, body_json);
}
inline void log(const char* message) { stele_log_c(STELE_LOG_INFO, message); }

}  // namespace stele

#endif  // STELE_HPP
