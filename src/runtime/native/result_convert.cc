#include "runtime/native/result_convert.h"

#include <string>
#include <type_traits>
#include <variant>

namespace stele::runtime::native {

ExecutionResult ToPublic(const core::SupportedFunctionReturnValue& value) {
  return std::visit(
      [](const auto& v) -> ExecutionResult {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, core::ReturnValueOk>) {
          return ExecutionResult::Ok(v.ok.value_or(Json(nullptr)));
        } else if constexpr (std::is_same_v<V, core::ReturnValueErr>) {
          return ExecutionResult::Err(v.err.value_or(Json(nullptr)));
        } else {
          std::string reason = v.reason.value_or("");
          if (v.detail) reason += (reason.empty() ? "" : ": ") + *v.detail;
          return ExecutionResult::Failed(std::string(core::ExecutionFailureKindName(v.kind)),
                                         std::move(reason));
        }
      },
      value);
}

core::SupportedFunctionReturnValue ToCore(const ExecutionResult& result) {
  switch (result.kind) {
    case ExecutionResult::Kind::kOk:
      return core::ReturnValueOk{result.value.is_null() ? std::nullopt
                                                        : std::optional<Json>(result.value)};
    case ExecutionResult::Kind::kErr:
      return core::ReturnValueErr{result.value.is_null() ? std::nullopt
                                                         : std::optional<Json>(result.value)};
    case ExecutionResult::Kind::kFailed:
      break;
  }
  auto kind = core::ParseExecutionFailureKind(result.failure_kind)
                  .value_or(core::ExecutionFailureKind::kUncategorized);
  return core::FinishedExecutionError{kind,
                                      result.failure_reason.empty()
                                          ? std::nullopt
                                          : std::optional<std::string>(result.failure_reason),
                                      std::nullopt};
}

}  // namespace stele::runtime::native
