// stele/execution_result.h — what a finished execution returned, as the
// public API sees it: its `ok` value, its `err` value (a business error the
// function returned), or a failure of the platform (timed out, cancelled,
// nondeterminism detected, a trap after retries ran out).
//
// Threading: a plain value.
#pragma once

#include <string>
#include <utility>

#include "stele/json.h"

namespace stele {

struct ExecutionResult {
  enum class Kind {
    kOk,      // `value` is the ok value (null when the function returned none)
    kErr,     // `value` is the err value the function returned
    kFailed,  // the platform failed the execution: see failure_kind / reason
  };
  Kind kind = Kind::kOk;
  Json value;
  // kFailed only: "timed_out", "cancelled", "nondeterminism_detected",
  // "out_of_fuel" or "uncategorized", and a human reason when known.
  std::string failure_kind;
  std::string failure_reason;

  static ExecutionResult Ok(Json v = nullptr) { return {Kind::kOk, std::move(v), {}, {}}; }
  static ExecutionResult Err(Json v = nullptr) { return {Kind::kErr, std::move(v), {}, {}}; }
  static ExecutionResult Failed(std::string kind, std::string reason = {}) {
    return {Kind::kFailed, nullptr, std::move(kind), std::move(reason)};
  }

  bool ok() const { return kind == Kind::kOk; }
  bool err() const { return kind == Kind::kErr; }
  bool failed() const { return kind == Kind::kFailed; }

  // The ok value converted to T; an error naming what went wrong when the
  // execution did not return ok or the value has another shape.
  template <class T>
  Result<T, std::string> As() const {
    if (!ok()) return Unexpected(ToString());
    return FromJson<T>(value);
  }

  // {"ok": v} / {"err": v} / {"failed": {"kind": k, "reason": r}}.
  Json ToJson() const {
    switch (kind) {
      case Kind::kOk:
        return Json{{"ok", value}};
      case Kind::kErr:
        return Json{{"err", value}};
      case Kind::kFailed:
        break;
    }
    return Json{{"failed", {{"kind", failure_kind}, {"reason", failure_reason}}}};
  }
  std::string ToString() const { return ToJson().dump(); }
  friend bool operator==(const ExecutionResult&, const ExecutionResult&) = default;
};

}  // namespace stele
