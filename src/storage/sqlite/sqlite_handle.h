// Thin RAII layer over the SQLite C API: a Connection with a cache of
// prepared statements, and Statement, a borrowed prepared statement that is
// reset when it goes out of scope (so no read transaction stays open by
// accident and no binding leaks into the next use).
//
// Every failure becomes a DbErrorGeneric whose reason names the SQLite error
// and what was being done; callers map semantic cases (not found, conflict)
// explicitly instead of decoding SQLite error codes.
//
// Threading: a Connection and its Statements are used by one thread at a
// time (the writer thread, or the borrower of a read connection).
// Ownership: a Statement borrows its Connection, which must outlive it.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "storage/db_errors.h"

namespace stele::storage::sqlite::internal {

class Connection;

// Work done by statements, summed over every connection of a store (the
// SQLite statement counters, collected when a statement is reset). Tests
// use them to prove that hot queries are index range scans: their virtual
// machine steps do not grow with the table. Thread-safe.
struct QueryCounters {
  std::atomic<uint64_t> vm_steps{0};
  std::atomic<uint64_t> full_scan_steps{0};
  std::atomic<uint64_t> sorts{0};
  std::atomic<uint64_t> auto_indexes{0};
};

class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  // Resets the statement and clears its bindings (or finalizes a one-off).
  ~Statement();

  // Parameters are 1-based, as in SQLite. Text and blobs are copied. A
  // binding error is remembered and reported by the next Step/Run.
  void BindInt64(int index, int64_t value);
  void BindText(int index, std::string_view value);
  void BindBlob(int index, const void* data, size_t size);
  void BindNull(int index);
  void BindOptionalText(int index, const std::optional<std::string>& value);
  void BindOptionalInt64(int index, std::optional<int64_t> value);

  // Advances: true when a row is available, false when done.
  Result<bool, DbErrorGeneric> Step();
  // Steps until done, ignoring rows (INSERT/UPDATE/DELETE).
  Result<void, DbErrorGeneric> Run();
  // Rewinds for another execution; bindings are kept until rebound.
  void Reset();

  // Column accessors of the current row (0-based).
  bool IsNull(int column) const;
  int64_t Int64(int column) const;
  std::optional<int64_t> OptionalInt64(int column) const;
  std::string Text(int column) const;
  std::optional<std::string> OptionalText(int column) const;
  std::vector<uint8_t> Blob(int column) const;
  // True when the column's value is a BLOB (ANY columns hold either).
  bool IsBlob(int column) const;
  // The value's bytes as stored (text or blob), valid until the next
  // Step/Reset of this statement.
  std::string_view RawBytes(int column) const;

 private:
  friend class Connection;
  // A cache slot of the connection.
  struct Cached {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  Statement(Connection* connection, sqlite3_stmt* stmt, Cached* cached);
  DbErrorGeneric Error(std::string_view what) const;
  // Adds the statement's counters to the connection's and zeroes them.
  void CollectCounters();

  Connection* connection_;
  sqlite3_stmt* stmt_;
  Cached* cached_;  // nullptr for a one-off statement owned by this object
  int bind_error_ = SQLITE_OK;
};

class Connection {
 public:
  // Opens `path` read-write (creating it) or read-only. `counters`, if
  // set, must outlive the connection.
  static Result<std::unique_ptr<Connection>, DbErrorGeneric> Open(
      const std::string& path, bool read_only, QueryCounters* counters = nullptr);
  // Finalizes every cached statement and closes the database.
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Executes one or more statements without caching (DDL, PRAGMAs,
  // transaction control).
  Result<void, DbErrorGeneric> Exec(std::string_view sql);
  // The first column of the first row of `sql` as text; nullopt when there
  // is no row or the value is NULL.
  Result<std::optional<std::string>, DbErrorGeneric> QueryText(std::string_view sql);
  // Every row's first column as text (e.g. `PRAGMA quick_check`).
  Result<std::vector<std::string>, DbErrorGeneric> QueryTexts(std::string_view sql);

  // A prepared statement for `sql`, from the cache when possible. If the
  // cached statement is in use (nested use), a one-off copy is prepared.
  Result<Statement, DbErrorGeneric> Prepare(std::string_view sql);

  // True while a transaction is open (SQLite may roll back a transaction by
  // itself after some errors; the writer checks this).
  bool InTransaction() const;
  // Rows changed by the last INSERT/UPDATE/DELETE.
  int64_t Changes() const;
  // Error from the last failed call, for messages.
  DbErrorGeneric LastError(std::string_view what) const;

  sqlite3* raw() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  friend class Statement;
  Connection(sqlite3* db, std::string path, QueryCounters* counters)
      : db_(db), path_(std::move(path)), counters_(counters) {}

  sqlite3* db_;
  std::string path_;
  QueryCounters* counters_;
  std::unordered_map<std::string, std::unique_ptr<Statement::Cached>> cache_;
};

}  // namespace stele::storage::sqlite::internal
