// Storage error families, exactly Obelisk's (docs/storage_contract.md):
//   DbErrorGeneric            not tied to an execution: retry the same call
//   DbErrorWriteNonRetriable  ValidationFailed | Conflict | IllegalState |
//                             VersionConflict{expected, requested}
//   DbErrorWrite              NotFound | NonRetriable | Generic
//   DbErrorRead               NotFound | Generic
//   DbErrorReadWithTimeout    Timeout(TimeoutOutcome) | Read
// Retry policy follows the family: Generic → retry with backoff;
// VersionConflict → re-read and redo the step; other NonRetriable → report.
// A generic error converts implicitly upward; a read error becomes a write
// error only through the explicit constructor.
#pragma once

#include <string>
#include <variant>

#include "base/source_location.h"
#include "core/version.h"

namespace stele::storage {

class DbErrorGeneric {
 public:
  enum class Kind { kUncategorized, kClose };
  static DbErrorGeneric Uncategorized(std::string reason,
                                      SourceLocation loc = SourceLocation::current());
  static DbErrorGeneric Close() { return DbErrorGeneric(Kind::kClose, "database was closed", {}); }

  Kind kind() const { return kind_; }
  const std::string& reason() const { return reason_; }
  const SourceLocation& location() const { return loc_; }
  // "database error: <reason>" | "database was closed"
  std::string ToString() const;
  // Equality ignores the source location.
  friend bool operator==(const DbErrorGeneric& a, const DbErrorGeneric& b) {
    return a.kind_ == b.kind_ && a.reason_ == b.reason_;
  }

 private:
  DbErrorGeneric(Kind kind, std::string reason, SourceLocation loc)
      : kind_(kind), reason_(std::move(reason)), loc_(loc) {}
  Kind kind_;
  std::string reason_;
  SourceLocation loc_;
};

class DbErrorWriteNonRetriable {
 public:
  enum class Kind { kValidationFailed, kConflict, kIllegalState, kVersionConflict };
  static DbErrorWriteNonRetriable ValidationFailed(std::string reason) {
    return {Kind::kValidationFailed, std::move(reason), {}, {}};
  }
  static DbErrorWriteNonRetriable Conflict() { return {Kind::kConflict, "", {}, {}}; }
  static DbErrorWriteNonRetriable IllegalState(std::string reason) {
    return {Kind::kIllegalState, std::move(reason), {}, {}};
  }
  static DbErrorWriteNonRetriable VersionConflict(core::Version expected, core::Version requested) {
    return {Kind::kVersionConflict, "", expected, requested};
  }

  Kind kind() const { return kind_; }
  const std::string& reason() const { return reason_; }
  core::Version expected() const { return expected_; }
  core::Version requested() const { return requested_; }
  // "validation failed: ..." | "conflict" | "illegal state: ..." |
  // "version conflict: expected: 3, got: 2"
  std::string ToString() const;
  friend bool operator==(const DbErrorWriteNonRetriable&,
                         const DbErrorWriteNonRetriable&) = default;

  Kind kind_;
  std::string reason_;
  core::Version expected_;
  core::Version requested_;
};

class DbErrorRead {
 public:
  enum class Kind { kNotFound, kGeneric };
  static DbErrorRead NotFound() { return DbErrorRead(); }
  DbErrorRead(DbErrorGeneric generic)  // NOLINT: generic errors convert upward
      : value_(std::move(generic)) {}

  Kind kind() const { return value_.index() == 0 ? Kind::kNotFound : Kind::kGeneric; }
  bool IsNotFound() const { return kind() == Kind::kNotFound; }
  // REQUIRES: kind() == kGeneric
  const DbErrorGeneric& generic() const { return std::get<DbErrorGeneric>(value_); }
  std::string ToString() const;
  friend bool operator==(const DbErrorRead&, const DbErrorRead&) = default;

 private:
  DbErrorRead() = default;
  std::variant<std::monostate, DbErrorGeneric> value_;
};

class DbErrorWrite {
 public:
  enum class Kind { kNotFound, kNonRetriable, kGeneric };
  static DbErrorWrite NotFound() { return DbErrorWrite(); }
  DbErrorWrite(DbErrorWriteNonRetriable e) : value_(std::move(e)) {}  // NOLINT
  DbErrorWrite(DbErrorGeneric e) : value_(std::move(e)) {}            // NOLINT
  explicit DbErrorWrite(const DbErrorRead& read);

  Kind kind() const { return static_cast<Kind>(value_.index()); }
  bool IsNotFound() const { return kind() == Kind::kNotFound; }
  bool IsNonRetriable(DbErrorWriteNonRetriable::Kind k) const {
    return kind() == Kind::kNonRetriable && non_retriable().kind() == k;
  }
  bool IsVersionConflict() const {
    return IsNonRetriable(DbErrorWriteNonRetriable::Kind::kVersionConflict);
  }
  // REQUIRES: kind() == kNonRetriable
  const DbErrorWriteNonRetriable& non_retriable() const {
    return std::get<DbErrorWriteNonRetriable>(value_);
  }
  // REQUIRES: kind() == kGeneric
  const DbErrorGeneric& generic() const { return std::get<DbErrorGeneric>(value_); }
  std::string ToString() const;
  friend bool operator==(const DbErrorWrite&, const DbErrorWrite&) = default;

 private:
  DbErrorWrite() = default;
  std::variant<std::monostate, DbErrorWriteNonRetriable, DbErrorGeneric> value_;
};

enum class TimeoutOutcome { kTimeout, kCancel };

class DbErrorReadWithTimeout {
 public:
  static DbErrorReadWithTimeout Timeout(TimeoutOutcome outcome) {
    return DbErrorReadWithTimeout(outcome);
  }
  DbErrorReadWithTimeout(DbErrorRead read) : value_(std::move(read)) {}  // NOLINT
  DbErrorReadWithTimeout(DbErrorGeneric generic)                         // NOLINT
      : value_(DbErrorRead(std::move(generic))) {}

  bool IsTimeout() const { return value_.index() == 0; }
  // REQUIRES: IsTimeout()
  TimeoutOutcome timeout() const { return std::get<TimeoutOutcome>(value_); }
  // REQUIRES: !IsTimeout()
  const DbErrorRead& read() const { return std::get<DbErrorRead>(value_); }
  std::string ToString() const;
  friend bool operator==(const DbErrorReadWithTimeout&, const DbErrorReadWithTimeout&) = default;

 private:
  explicit DbErrorReadWithTimeout(TimeoutOutcome outcome) : value_(outcome) {}
  std::variant<TimeoutOutcome, DbErrorRead> value_;
};

}  // namespace stele::storage
