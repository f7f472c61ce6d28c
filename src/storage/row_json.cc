#include "storage/row_json.h"

#include <exception>
#include <utility>

#include "core/backtrace.h"
#include "core/component_id.h"
#include "core/duration.h"
#include "core/json_codec.h"
#include "core/pending_state.h"
#include "core/return_value.h"

namespace stele::storage {

namespace {

Result<std::string, DbErrorWriteNonRetriable> Dump(const core::Json& json) {
  try {
    return json.dump();
  } catch (const std::exception& e) {
    return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(
        std::string("value cannot be stored as JSON: ") + e.what()));
  }
}

}  // namespace

template <class T>
Result<std::string, DbErrorWriteNonRetriable> EncodeJson(const T& value) {
  return Dump(core::ToJson(value));
}

template <class T>
Result<T, DbErrorGeneric> DecodeJson(std::string_view json, std::string_view what) {
  auto parsed = core::ParseJson(json);
  if (!parsed) {
    return Unexpected(DbErrorGeneric::Uncategorized("corrupt JSON in " + std::string(what) + ": " +
                                                    parsed.error().message));
  }
  auto decoded = core::FromJson<T>(*parsed);
  if (!decoded) {
    return Unexpected(DbErrorGeneric::Uncategorized("corrupt " + std::string(what) + ": " +
                                                    decoded.error().message));
  }
  return std::move(*decoded);
}

Result<std::string, DbErrorWriteNonRetriable> EncodeRawJson(const core::Json& value) {
  return Dump(value);
}

Result<core::Json, DbErrorGeneric> DecodeRawJson(std::string_view json, std::string_view what) {
  auto parsed = core::ParseJson(json);
  if (!parsed) {
    return Unexpected(DbErrorGeneric::Uncategorized("corrupt JSON in " + std::string(what) + ": " +
                                                    parsed.error().message));
  }
  return std::move(*parsed);
}

template Result<std::string, DbErrorWriteNonRetriable> EncodeJson(const core::ComponentId&);
template Result<std::string, DbErrorWriteNonRetriable> EncodeJson(const core::Duration&);
template Result<std::string, DbErrorWriteNonRetriable> EncodeJson(
    const core::PendingStateFinishedResultKind&);
template Result<std::string, DbErrorWriteNonRetriable> EncodeJson(const core::WasmBacktrace&);
template Result<std::string, DbErrorWriteNonRetriable> EncodeJson(
    const core::SupportedFunctionReturnValue&);
template Result<core::ComponentId, DbErrorGeneric> DecodeJson(std::string_view, std::string_view);
template Result<core::Duration, DbErrorGeneric> DecodeJson(std::string_view, std::string_view);
template Result<core::PendingStateFinishedResultKind, DbErrorGeneric> DecodeJson(std::string_view,
                                                                                 std::string_view);
template Result<core::WasmBacktrace, DbErrorGeneric> DecodeJson(std::string_view, std::string_view);
template Result<core::SupportedFunctionReturnValue, DbErrorGeneric> DecodeJson(std::string_view,
                                                                               std::string_view);

Result<std::string, DbErrorWriteNonRetriable> EncodeEvent(const core::ExecutionRequest& event) {
  return Dump(core::ToJson(event));
}

Result<core::ExecutionRequest, DbErrorGeneric> DecodeEvent(std::string_view json,
                                                           std::string_view execution_id,
                                                           int64_t version) {
  std::string what =
      "t_execution_log row `" + std::string(execution_id) + "`@" + std::to_string(version);
  return DecodeJson<core::ExecutionRequest>(json, what);
}

}  // namespace stele::storage
