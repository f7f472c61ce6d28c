#include "executor/worker.h"

#include <type_traits>

namespace stele::executor {

std::string_view FatalErrorKindName(FatalErrorKind kind) {
  switch (kind) {
    case FatalErrorKind::kNondeterminismDetected:
      return "nondeterminism detected";
    case FatalErrorKind::kParamsParsingError:
      return "params parsing error";
    case FatalErrorKind::kCannotInstantiate:
      return "cannot instantiate";
    case FatalErrorKind::kResultParsingError:
      return "result parsing error";
    case FatalErrorKind::kImportedFunctionCallError:
      return "imported function call error";
    case FatalErrorKind::kWorkflowTrap:
      return "workflow trap";
    case FatalErrorKind::kOutOfFuel:
      return "out of fuel";
    case FatalErrorKind::kConstraintViolation:
      return "constraint violation";
    case FatalErrorKind::kCancelled:
      return "cancelled";
    case FatalErrorKind::kResultTooLarge:
      return "result too large";
  }
  return "unknown fatal error";
}

std::string WorkerResult::ToString() const {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, WorkerOk>) {
          return "Ok(version " + v.version.ToString() + ")";
        } else if constexpr (std::is_same_v<T, DbUpdatedByWorkerOrWatcher>) {
          return "DbUpdatedByWorkerOrWatcher";
        } else {
          return std::visit(
              [](const auto& e) -> std::string {
                using E = std::decay_t<decltype(e)>;
                if constexpr (std::is_same_v<E, ActivityTrap>) {
                  return "ActivityTrap(" + e.reason + ")";
                } else if constexpr (std::is_same_v<E, ActivityReturnedError>) {
                  return "ActivityReturnedError";
                } else if constexpr (std::is_same_v<E, TemporaryTimeout>) {
                  return "TemporaryTimeout";
                } else if constexpr (std::is_same_v<E, LimitReached>) {
                  return "LimitReached(" + e.reason + ")";
                } else if constexpr (std::is_same_v<E, WorkerDbError>) {
                  return "DbError(" + e.error.ToString() + ")";
                } else {
                  return "FatalError(" + std::string(FatalErrorKindName(e.kind)) + ": " + e.reason +
                         ")";
                }
              },
              v.error);
        }
      },
      value);
}

}  // namespace stele::executor
