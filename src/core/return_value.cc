#include "core/return_value.h"

#include "base/check.h"

namespace stele::core {
namespace {

struct FailureKindEntry {
  ExecutionFailureKind kind;
  std::string_view name;
};
constexpr FailureKindEntry kFailureKinds[] = {
    {ExecutionFailureKind::kTimedOut, "timed_out"},
    {ExecutionFailureKind::kNondeterminismDetected, "nondeterminism_detected"},
    {ExecutionFailureKind::kOutOfFuel, "out_of_fuel"},
    {ExecutionFailureKind::kCancelled, "cancelled"},
    {ExecutionFailureKind::kUncategorized, "uncategorized"},
};

}  // namespace

std::string_view ExecutionFailureKindName(ExecutionFailureKind kind) {
  for (const FailureKindEntry& entry : kFailureKinds) {
    if (entry.kind == kind) return entry.name;
  }
  STELE_CHECK(false, "unknown ExecutionFailureKind");
  return {};
}

std::optional<ExecutionFailureKind> ParseExecutionFailureKind(std::string_view text) {
  for (const FailureKindEntry& entry : kFailureKinds) {
    if (entry.name == text) return entry.kind;
  }
  return std::nullopt;
}

PendingStateFinishedResultKind PendingStateFinishedResultKind::From(
    const SupportedFunctionReturnValue& value) {
  if (std::holds_alternative<ReturnValueOk>(value)) return Ok();
  if (std::holds_alternative<ReturnValueErr>(value)) return FallibleError();
  return Failure(std::get<FinishedExecutionError>(value).kind);
}

// Obelisk's Display of PendingStateFinished / PendingStateFinishedError.
std::string PendingStateFinishedResultKind::ToString() const {
  switch (kind) {
    case Kind::kOk:
      return "ok";
    case Kind::kFallibleError:
      return "execution completed with an error";
    case Kind::kExecutionFailure:
      return "execution terminated: " + std::string(ExecutionFailureKindName(failure));
  }
  STELE_CHECK(false, "unknown PendingStateFinishedResultKind::Kind");
  return {};
}

}  // namespace stele::core
