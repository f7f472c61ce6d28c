// PgConn: one libpq connection with the few things every query of the
// PostgreSQL backend needs — parameterised statements (prepared once per
// connection and cached by SQL text, so a hot statement is parsed once),
// text-format results, transactions, and error classification by SQLSTATE.
//
// Error mapping (the contract's families, storage/db_errors.h):
//   lost connection, server down, serialization/deadlock, anything unknown
//     → DbErrorGeneric (retry the same call);
//   unique violation → reported to the caller as PgError::kUniqueViolation
//     so that it can map it to Conflict / IllegalState;
//   invalid text or JSON value (e.g. bad encoding) → kInvalidValue
//     (ValidationFailed upstream).
//
// Threading: a PgConn is used by one thread at a time (the pool hands it
// out exclusively). Ownership: owns its PGconn.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "storage/db_errors.h"

struct pg_conn;
struct pg_result;

namespace stele::storage::postgres::internal {

struct PgError {
  enum class Kind { kGeneric, kUniqueViolation, kInvalidValue, kConnectionLost };
  Kind kind = Kind::kGeneric;
  std::string message;
  std::string sqlstate;
  DbErrorGeneric ToGeneric() const;
};

// Positional text parameters ($1, $2, ...); nullopt is SQL NULL.
class Params {
 public:
  Params& Text(std::string_view v) {
    values_.emplace_back(std::string(v));
    return *this;
  }
  Params& Int(int64_t v) {
    values_.emplace_back(std::to_string(v));
    return *this;
  }
  Params& Bool(bool v) {
    values_.emplace_back(v ? "t" : "f");
    return *this;
  }
  Params& Null() {
    values_.emplace_back(std::nullopt);
    return *this;
  }
  Params& OptText(const std::optional<std::string>& v) {
    values_.push_back(v);
    return *this;
  }
  Params& OptInt(std::optional<int64_t> v) { return v ? Int(*v) : Null(); }
  const std::vector<std::optional<std::string>>& values() const { return values_; }

 private:
  std::vector<std::optional<std::string>> values_;
};

// A query result in text format. Row/column access is bounds-unchecked in
// release builds; callers use the column order of their own SELECT.
class PgResult {
 public:
  explicit PgResult(pg_result* res) : res_(res) {}
  PgResult(PgResult&& other) noexcept : res_(other.res_) { other.res_ = nullptr; }
  PgResult& operator=(PgResult&&) = delete;
  PgResult(const PgResult&) = delete;
  ~PgResult();

  int rows() const;
  int64_t affected() const;  // cmdTuples of INSERT/UPDATE/DELETE
  bool IsNull(int row, int col) const;
  std::string_view Text(int row, int col) const;
  std::string Str(int row, int col) const { return std::string(Text(row, col)); }
  std::optional<std::string> OptStr(int row, int col) const;
  int64_t Int(int row, int col) const;
  std::optional<int64_t> OptInt(int row, int col) const;
  bool Bool(int row, int col) const { return Text(row, col) == "t"; }

 private:
  pg_result* res_;
};

class PgConn {
 public:
  // Connects (blocking). Errors: Generic naming the server problem.
  static Result<std::unique_ptr<PgConn>, PgError> Connect(const std::string& conninfo);
  ~PgConn();
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  // Runs one parameterised statement (prepared on first use).
  Result<PgResult, PgError> Exec(const std::string& sql, const Params& params = Params());
  // Runs SQL text without parameters (may hold several statements).
  Result<void, PgError> ExecScript(const std::string& sql);

  // True when the socket is known to be dead; reads pending input first so
  // that a server-side termination of an idle connection is noticed.
  bool IsBroken();
  pg_conn* raw() { return conn_; }

 private:
  explicit PgConn(pg_conn* conn) : conn_(conn) {}
  PgError ErrorOf(pg_result* res);
  pg_conn* conn_;
  std::unordered_map<std::string, std::string> prepared_;  // sql → statement name
};

}  // namespace stele::storage::postgres::internal
