#include "storage/db_errors.h"

namespace stele::storage {

DbErrorGeneric DbErrorGeneric::Uncategorized(std::string reason, SourceLocation loc) {
  return DbErrorGeneric(Kind::kUncategorized, std::move(reason), loc);
}

std::string DbErrorGeneric::ToString() const {
  if (kind_ == Kind::kClose) return "database was closed";
  return "database error: " + reason_;
}

std::string DbErrorWriteNonRetriable::ToString() const {
  switch (kind_) {
    case Kind::kValidationFailed:
      return "validation failed: " + reason_;
    case Kind::kConflict:
      return "conflict";
    case Kind::kIllegalState:
      return "illegal state: " + reason_;
    case Kind::kVersionConflict:
      return "version conflict: expected: " + expected_.ToString() +
             ", got: " + requested_.ToString();
  }
  return "unknown";
}

std::string DbErrorRead::ToString() const {
  if (IsNotFound()) return "cannot read - row not found";
  return generic().ToString();
}

DbErrorWrite::DbErrorWrite(const DbErrorRead& read) {
  if (!read.IsNotFound()) value_ = read.generic();
}

std::string DbErrorWrite::ToString() const {
  switch (kind()) {
    case Kind::kNotFound:
      return "cannot write - row not found";
    case Kind::kNonRetriable:
      return "non-retriable error: " + non_retriable().ToString();
    case Kind::kGeneric:
      return generic().ToString();
  }
  return "unknown";
}

std::string DbErrorReadWithTimeout::ToString() const {
  if (IsTimeout()) return timeout() == TimeoutOutcome::kTimeout ? "timeout" : "cancelled";
  return read().ToString();
}

}  // namespace stele::storage
