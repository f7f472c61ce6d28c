#include "service/service_error.h"

namespace stele::service {

std::string_view KindName(ServiceError::Kind kind) {
  switch (kind) {
    case ServiceError::Kind::kInvalidArgument:
      return "invalid argument";
    case ServiceError::Kind::kNotFound:
      return "not found";
    case ServiceError::Kind::kConflict:
      return "conflict";
    case ServiceError::Kind::kAlreadyFinished:
      return "already finished";
    case ServiceError::Kind::kFailedPrecondition:
      return "failed precondition";
    case ServiceError::Kind::kTimeout:
      return "timeout";
    case ServiceError::Kind::kCancelled:
      return "cancelled";
    case ServiceError::Kind::kUnavailable:
      return "database unavailable";
  }
  return "error";
}

std::string ServiceError::ToString() const { return std::string(KindName(kind)) + ": " + message; }

ServiceError FromWrite(const storage::DbErrorWrite& e, std::string_view what) {
  switch (e.kind()) {
    case storage::DbErrorWrite::Kind::kNotFound:
      return ServiceError::NotFound(std::string(what) + ": not found");
    case storage::DbErrorWrite::Kind::kGeneric:
      return ServiceError::Unavailable(std::string(what) + ": " + e.ToString());
    case storage::DbErrorWrite::Kind::kNonRetriable:
      break;
  }
  if (e.IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kValidationFailed)) {
    return ServiceError::InvalidArgument(std::string(what) + ": " + e.ToString());
  }
  return ServiceError::Conflict(std::string(what) + ": " + e.ToString());
}

ServiceError FromRead(const storage::DbErrorRead& e, std::string_view what) {
  if (e.IsNotFound()) return ServiceError::NotFound(std::string(what) + ": no such execution");
  return ServiceError::Unavailable(std::string(what) + ": " + e.ToString());
}

ServiceError FromGeneric(const storage::DbErrorGeneric& e, std::string_view what) {
  return ServiceError::Unavailable(std::string(what) + ": " + e.ToString());
}

}  // namespace stele::service
