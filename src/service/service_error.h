// ServiceError: the one error type of the execution service's use cases
// (service/execution_service.h). Each face maps its kind once: the HTTP
// API to a status and an error envelope (server/api_util.h), libstele to
// stele::Error (runtime/native/engine.cc). The message is for people and
// names the offending input; both faces pass it through unchanged, so a
// user reads the same words through the API, the CLI and the SDK.
//
// Threading: a plain value.
#pragma once

#include <string>
#include <string_view>

#include "storage/db_errors.h"

namespace stele::service {

struct ServiceError {
  enum class Kind {
    kInvalidArgument,     // malformed or disallowed input: ids, ffqns, params, an
                          // operation the execution does not allow
    kNotFound,            // no such execution, function or delay
    kConflict,            // same id with other params, another stub value, another
                          // digest, a write to a finished execution
    kAlreadyFinished,     // cancel of an execution that finished otherwise
    kFailedPrecondition,  // the service is not in a state for it (not started, ...)
    kTimeout,             // a wait ran out
    kCancelled,           // a wait was cancelled by its caller (shutdown)
    kUnavailable,         // the database failed; nothing was written; retry
  };
  Kind kind = Kind::kInvalidArgument;
  std::string message;

  static ServiceError InvalidArgument(std::string m) {
    return {Kind::kInvalidArgument, std::move(m)};
  }
  static ServiceError NotFound(std::string m) { return {Kind::kNotFound, std::move(m)}; }
  static ServiceError Conflict(std::string m) { return {Kind::kConflict, std::move(m)}; }
  static ServiceError AlreadyFinished(std::string m) {
    return {Kind::kAlreadyFinished, std::move(m)};
  }
  static ServiceError FailedPrecondition(std::string m) {
    return {Kind::kFailedPrecondition, std::move(m)};
  }
  static ServiceError Timeout(std::string m) { return {Kind::kTimeout, std::move(m)}; }
  static ServiceError Cancelled(std::string m) { return {Kind::kCancelled, std::move(m)}; }
  static ServiceError Unavailable(std::string m) { return {Kind::kUnavailable, std::move(m)}; }

  // "invalid argument: <message>", ...
  std::string ToString() const;
  friend bool operator==(const ServiceError&, const ServiceError&) = default;
};

std::string_view KindName(ServiceError::Kind kind);

// Storage errors of the operation `what` ("cancel E_…"): NotFound →
// kNotFound, Generic → kUnavailable, ValidationFailed → kInvalidArgument,
// every other non-retriable error → kConflict.
ServiceError FromWrite(const storage::DbErrorWrite& e, std::string_view what);
ServiceError FromRead(const storage::DbErrorRead& e, std::string_view what);
ServiceError FromGeneric(const storage::DbErrorGeneric& e, std::string_view what);

}  // namespace stele::service
