#include "storage/sqlite/sqlite_handle.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace stele::storage::sqlite::internal {

namespace {

// SQLITE_TRANSIENT spelled without the C-style cast of the macro: SQLite
// copies the bound value before the call returns.
const sqlite3_destructor_type kTransient =
    reinterpret_cast<sqlite3_destructor_type>(static_cast<intptr_t>(-1));

std::string Describe(sqlite3* db, int code, std::string_view what) {
  std::string reason(what);
  reason += ": ";
  reason += sqlite3_errstr(code);
  if (db != nullptr) {
    const char* message = sqlite3_errmsg(db);
    if (message != nullptr && std::strcmp(message, sqlite3_errstr(code)) != 0) {
      reason += " (";
      reason += message;
      reason += ")";
    }
  }
  reason += " [code " + std::to_string(code) + "]";
  return reason;
}

}  // namespace

// --- Statement ---------------------------------------------------------------

Statement::Statement(Connection* connection, sqlite3_stmt* stmt, Cached* cached)
    : connection_(connection), stmt_(stmt), cached_(cached) {}

Statement::Statement(Statement&& other) noexcept
    : connection_(other.connection_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      cached_(std::exchange(other.cached_, nullptr)),
      bind_error_(other.bind_error_) {}

void Statement::CollectCounters() {
  QueryCounters* counters = connection_->counters_;
  if (counters == nullptr) return;
  counters->vm_steps +=
      static_cast<uint64_t>(sqlite3_stmt_status(stmt_, SQLITE_STMTSTATUS_VM_STEP, /*resetFlg=*/1));
  counters->full_scan_steps +=
      static_cast<uint64_t>(sqlite3_stmt_status(stmt_, SQLITE_STMTSTATUS_FULLSCAN_STEP, 1));
  counters->sorts += static_cast<uint64_t>(sqlite3_stmt_status(stmt_, SQLITE_STMTSTATUS_SORT, 1));
  counters->auto_indexes +=
      static_cast<uint64_t>(sqlite3_stmt_status(stmt_, SQLITE_STMTSTATUS_AUTOINDEX, 1));
}

Statement::~Statement() {
  if (stmt_ == nullptr) return;
  CollectCounters();
  if (cached_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    cached_->in_use = false;
  } else {
    sqlite3_finalize(stmt_);
  }
}

void Statement::BindInt64(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
}

void Statement::BindText(int index, std::string_view value) {
  int rc = sqlite3_bind_text64(stmt_, index, value.data(), value.size(), kTransient, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
}

void Statement::BindBlob(int index, const void* data, size_t size) {
  int rc = sqlite3_bind_blob64(stmt_, index, data, size, kTransient);
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
}

void Statement::BindNull(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
}

void Statement::BindOptionalText(int index, const std::optional<std::string>& value) {
  if (value) {
    BindText(index, *value);
  } else {
    BindNull(index);
  }
}

void Statement::BindOptionalInt64(int index, std::optional<int64_t> value) {
  if (value) {
    BindInt64(index, *value);
  } else {
    BindNull(index);
  }
}

DbErrorGeneric Statement::Error(std::string_view what) const {
  std::string context(what);
  if (const char* sql = sqlite3_sql(stmt_)) {
    context += " `";
    // The first line is enough to recognise the statement.
    std::string_view text(sql);
    context += text.substr(0, std::min<size_t>(text.find('\n'), 80));
    context += "`";
  }
  return connection_->LastError(context);
}

Result<bool, DbErrorGeneric> Statement::Step() {
  if (bind_error_ != SQLITE_OK) {
    return Unexpected(DbErrorGeneric::Uncategorized(
        Describe(connection_->raw(), bind_error_, "binding a parameter")));
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return Unexpected(Error("executing"));
}

Result<void, DbErrorGeneric> Statement::Run() {
  while (true) {
    STELE_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return {};
  }
}

void Statement::Reset() {
  CollectCounters();
  sqlite3_reset(stmt_);
  bind_error_ = SQLITE_OK;
}

bool Statement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::Int64(int column) const { return sqlite3_column_int64(stmt_, column); }

std::optional<int64_t> Statement::OptionalInt64(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Int64(column);
}

std::string Statement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return {};
  int size = sqlite3_column_bytes(stmt_, column);
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(size));
}

std::optional<std::string> Statement::OptionalText(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Text(column);
}

std::vector<uint8_t> Statement::Blob(int column) const {
  const void* data = sqlite3_column_blob(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  if (data == nullptr || size <= 0) return {};
  const auto* bytes = static_cast<const uint8_t*>(data);
  return std::vector<uint8_t>(bytes, bytes + size);
}

bool Statement::IsBlob(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_BLOB;
}

std::string_view Statement::RawBytes(int column) const {
  // Blob first: sqlite3_column_blob never converts, and for a TEXT value it
  // returns the text's bytes.
  const void* data = sqlite3_column_blob(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  if (data == nullptr || size <= 0) return {};
  return std::string_view(static_cast<const char*>(data), static_cast<size_t>(size));
}

// --- Connection --------------------------------------------------------------

Result<std::unique_ptr<Connection>, DbErrorGeneric> Connection::Open(const std::string& path,
                                                                     bool read_only,
                                                                     QueryCounters* counters) {
  sqlite3* db = nullptr;
  // NOMUTEX: each connection is confined to one thread at a time by its
  // owner (writer thread or read pool), so SQLite's own mutex is not needed.
  int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE |
              (read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string reason = Describe(db, rc, "cannot open SQLite database `" + path + "`");
    sqlite3_close_v2(db);  // a handle is returned even on failure
    return Unexpected(DbErrorGeneric::Uncategorized(std::move(reason)));
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<Connection>(new Connection(db, path, counters));
}

Connection::~Connection() {
  for (auto& [sql, cached] : cache_) sqlite3_finalize(cached->stmt);
  cache_.clear();
  sqlite3_close_v2(db_);
}

Result<void, DbErrorGeneric> Connection::Exec(std::string_view sql) {
  std::string text(sql);
  char* message = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return {};
  std::string reason = "executing `" + text.substr(0, std::min<size_t>(text.find('\n'), 80)) +
                       "`: " + sqlite3_errstr(rc);
  if (message != nullptr) {
    reason += std::string(" (") + message + ")";
    sqlite3_free(message);
  }
  reason += " [code " + std::to_string(rc) + "]";
  return Unexpected(DbErrorGeneric::Uncategorized(std::move(reason)));
}

Result<std::optional<std::string>, DbErrorGeneric> Connection::QueryText(std::string_view sql) {
  STELE_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<std::string>();
  return stmt.OptionalText(0);
}

Result<std::vector<std::string>, DbErrorGeneric> Connection::QueryTexts(std::string_view sql) {
  STELE_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  std::vector<std::string> rows;
  while (true) {
    STELE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return rows;
    rows.push_back(stmt.Text(0));
  }
}

Result<Statement, DbErrorGeneric> Connection::Prepare(std::string_view sql) {
  std::string key(sql);
  auto it = cache_.find(key);
  if (it != cache_.end() && !it->second->in_use) {
    it->second->in_use = true;
    return Statement(this, it->second->stmt, it->second.get());
  }
  sqlite3_stmt* stmt = nullptr;
  const bool cache = it == cache_.end();
  int rc = sqlite3_prepare_v3(db_, key.data(), static_cast<int>(key.size()),
                              cache ? SQLITE_PREPARE_PERSISTENT : 0, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    return Unexpected(
        LastError("preparing `" + key.substr(0, std::min<size_t>(key.find('\n'), 80)) + "`"));
  }
  if (stmt == nullptr) {
    return Unexpected(DbErrorGeneric::Uncategorized("empty SQL statement"));
  }
  if (!cache) return Statement(this, stmt, nullptr);  // nested use of a cached statement
  auto cached = std::make_unique<Statement::Cached>();
  cached->stmt = stmt;
  cached->in_use = true;
  Statement::Cached* slot = cached.get();
  cache_.emplace(std::move(key), std::move(cached));
  return Statement(this, stmt, slot);
}

bool Connection::InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }

int64_t Connection::Changes() const { return sqlite3_changes64(db_); }

DbErrorGeneric Connection::LastError(std::string_view what) const {
  return DbErrorGeneric::Uncategorized(Describe(db_, sqlite3_extended_errcode(db_), what));
}

}  // namespace stele::storage::sqlite::internal
