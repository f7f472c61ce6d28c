// stele/error.h — the error value of the public libstele API.
//
// Every Engine call that can fail for an expected reason returns
// Result<T, stele::Error>. `kind` is for code (branch on it); `message` is
// for people and names the offending input ("unknown ffqn
// `shop:orders/api.plaec`: not registered").
//
// Threading: a plain value.
#pragma once

#include <string>
#include <string_view>

namespace stele {

struct Error {
  enum class Kind {
    kInvalidArgument,     // malformed ffqn, params not an array, oversized params, bad id
    kNotFound,            // no such execution / function
    kConflict,            // same id, other params; stub with another value; registered twice
    kFailedPrecondition,  // wrong state: engine not started, execution not cancellable, ...
    kTimeout,             // a wait ran out
    kStorage,             // the database failed; the call may be retried
  };
  Kind kind = Kind::kInvalidArgument;
  std::string message;

  static Error InvalidArgument(std::string m) { return {Kind::kInvalidArgument, std::move(m)}; }
  static Error NotFound(std::string m) { return {Kind::kNotFound, std::move(m)}; }
  static Error Conflict(std::string m) { return {Kind::kConflict, std::move(m)}; }
  static Error FailedPrecondition(std::string m) {
    return {Kind::kFailedPrecondition, std::move(m)};
  }
  static Error Timeout(std::string m) { return {Kind::kTimeout, std::move(m)}; }
  static Error Storage(std::string m) { return {Kind::kStorage, std::move(m)}; }

  // "invalid argument", "not found", ...
  static std::string_view KindName(Kind kind);
  // "<kind name>: <message>"
  std::string ToString() const { return std::string(KindName(kind)) + ": " + message; }
  friend bool operator==(const Error&, const Error&) = default;
};

inline std::string_view Error::KindName(Kind kind) {
  switch (kind) {
    case Kind::kInvalidArgument:
      return "invalid argument";
    case Kind::kNotFound:
      return "not found";
    case Kind::kConflict:
      return "conflict";
    case Kind::kFailedPrecondition:
      return "failed precondition";
    case Kind::kTimeout:
      return "timeout";
    case Kind::kStorage:
      return "storage error";
  }
  return "error";
}

}  // namespace stele
