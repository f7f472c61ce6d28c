// Results of finished executions (docs/model.md §3.6).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/json.h"

namespace stele::core {

enum class ExecutionFailureKind {
  kTimedOut,                // activities only
  kNondeterminismDetected,  // workflows
  kOutOfFuel,
  kCancelled,
  kUncategorized,
};
// snake_case: "timed_out", "nondeterminism_detected", ...
std::string_view ExecutionFailureKindName(ExecutionFailureKind kind);
std::optional<ExecutionFailureKind> ParseExecutionFailureKind(std::string_view text);

// A platform failure: the function did not produce a value of its own.
struct FinishedExecutionError {
  ExecutionFailureKind kind = ExecutionFailureKind::kUncategorized;
  std::optional<std::string> reason;
  std::optional<std::string> detail;
  friend bool operator==(const FinishedExecutionError&, const FinishedExecutionError&) = default;
};

struct ReturnValueOk {
  std::optional<Json> ok;
  friend bool operator==(const ReturnValueOk&, const ReturnValueOk&) = default;
};
struct ReturnValueErr {
  std::optional<Json> err;
  friend bool operator==(const ReturnValueErr&, const ReturnValueErr&) = default;
};

using SupportedFunctionReturnValue =
    std::variant<ReturnValueOk, ReturnValueErr, FinishedExecutionError>;

// Summary of a result stored in the state table and shown in lists.
struct PendingStateFinishedResultKind {
  enum class Kind { kOk, kFallibleError, kExecutionFailure };
  Kind kind = Kind::kOk;
  ExecutionFailureKind failure = ExecutionFailureKind::kUncategorized;  // kExecutionFailure only

  static PendingStateFinishedResultKind Ok() { return {}; }
  static PendingStateFinishedResultKind FallibleError() { return {Kind::kFallibleError, {}}; }
  static PendingStateFinishedResultKind Failure(ExecutionFailureKind k) {
    return {Kind::kExecutionFailure, k};
  }
  static PendingStateFinishedResultKind From(const SupportedFunctionReturnValue& value);
  // "ok", "execution completed with an error", "execution terminated: timed_out"
  std::string ToString() const;
  friend bool operator==(const PendingStateFinishedResultKind& a,
                         const PendingStateFinishedResultKind& b) {
    return a.kind == b.kind && (a.kind != Kind::kExecutionFailure || a.failure == b.failure);
  }
};

}  // namespace stele::core
