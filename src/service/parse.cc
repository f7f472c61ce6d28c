#include "service/parse.h"

#include <string>

namespace stele::service::internal {

namespace {

// The text as quoted in a message: cut at kMaxIdBytes.
std::string Quoted(std::string_view text) {
  if (text.size() <= kMaxIdBytes) return "`" + std::string(text) + "`";
  return "`" + std::string(text.substr(0, kMaxIdBytes)) + "…`";
}

}  // namespace

std::string Reason(const std::string& message, std::string_view text) {
  const std::string named = "`" + std::string(text) + "`: ";
  const size_t at = message.find(named);
  return at == std::string::npos ? message : message.substr(at + named.size());
}

Result<core::ExecutionId, ServiceError> ParseExecutionId(std::string_view text) {
  if (text.size() > kMaxIdBytes) {
    return Unexpected(ServiceError::InvalidArgument("execution id " + Quoted(text) +
                                                    " is too long (the limit is " +
                                                    std::to_string(kMaxIdBytes) + " bytes)"));
  }
  auto id = core::ExecutionId::Parse(text);
  if (!id) {
    return Unexpected(ServiceError::InvalidArgument(
        "invalid execution id " + Quoted(text) +
        " (expected E_<ULID> or a child id): " + Reason(id.error().message, text)));
  }
  return std::move(*id);
}

Result<core::DelayId, ServiceError> ParseDelayId(std::string_view text) {
  auto delay = core::DelayId::Parse(text.substr(0, kMaxIdBytes));
  if (!delay || text.size() > kMaxIdBytes) {
    return Unexpected(ServiceError::InvalidArgument(
        "invalid delay id " + Quoted(text) + " (expected Delay_<ULID>...): " +
        (delay ? std::string("too long") : Reason(delay.error().message, text))));
  }
  return std::move(*delay);
}

Result<core::FunctionFqn, ServiceError> ParseFfqn(std::string_view text) {
  auto ffqn = core::FunctionFqn::Parse(text.substr(0, kMaxIdBytes));
  if (!ffqn || text.size() > kMaxIdBytes) {
    return Unexpected(ServiceError::InvalidArgument(
        "invalid ffqn " + Quoted(text) + " (expected ns:pkg/ifc.fn)" +
        (ffqn ? std::string(": too long") : ": " + Reason(ffqn.error().message, text))));
  }
  return std::move(*ffqn);
}

Result<core::InputContentDigest, ServiceError> ParseDigest(std::string_view text,
                                                           std::string_view what) {
  auto digest = core::InputContentDigest::Parse(text.substr(0, kMaxIdBytes));
  if (!digest) {
    return Unexpected(ServiceError::InvalidArgument(std::string(what) + " " + Quoted(text) + ": " +
                                                    Reason(digest.error().message, text)));
  }
  return std::move(*digest);
}

}  // namespace stele::service::internal
