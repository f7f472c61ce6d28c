#include "storage/postgres/pg_conn.h"

#include <libpq-fe.h>

#include <cstdlib>
#include <utility>

namespace stele::storage::postgres::internal {

DbErrorGeneric PgError::ToGeneric() const {
  std::string reason = "postgres";
  if (!sqlstate.empty()) reason += " [" + sqlstate + "]";
  reason += ": " + message;
  return DbErrorGeneric::Uncategorized(std::move(reason));
}

PgResult::~PgResult() {
  if (res_ != nullptr) PQclear(res_);
}
int PgResult::rows() const { return PQntuples(res_); }
int64_t PgResult::affected() const {
  const char* n = PQcmdTuples(res_);
  return (n == nullptr || *n == '\0') ? 0 : std::strtoll(n, nullptr, 10);
}
bool PgResult::IsNull(int row, int col) const { return PQgetisnull(res_, row, col) != 0; }
std::string_view PgResult::Text(int row, int col) const {
  return std::string_view(PQgetvalue(res_, row, col),
                          static_cast<size_t>(PQgetlength(res_, row, col)));
}
std::optional<std::string> PgResult::OptStr(int row, int col) const {
  if (IsNull(row, col)) return std::nullopt;
  return Str(row, col);
}
int64_t PgResult::Int(int row, int col) const {
  return std::strtoll(PQgetvalue(res_, row, col), nullptr, 10);
}
std::optional<int64_t> PgResult::OptInt(int row, int col) const {
  if (IsNull(row, col)) return std::nullopt;
  return Int(row, col);
}

Result<std::unique_ptr<PgConn>, PgError> PgConn::Connect(const std::string& conninfo) {
  PGconn* conn = PQconnectdb(conninfo.c_str());
  if (conn == nullptr) {
    return Unexpected(PgError{PgError::Kind::kConnectionLost, "out of memory", ""});
  }
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
    PQfinish(conn);
    return Unexpected(
        PgError{PgError::Kind::kConnectionLost, "cannot connect to PostgreSQL: " + message, ""});
  }
  // Notices (e.g. "relation already exists, skipping") are not errors.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  return std::unique_ptr<PgConn>(new PgConn(conn));
}

PgConn::~PgConn() { PQfinish(conn_); }

bool PgConn::IsBroken() {
  if (PQstatus(conn_) != CONNECTION_OK) return true;
  // Non-blocking: reads whatever arrived (a FATAL from pg_terminate_backend,
  // or EOF) without waiting.
  if (PQconsumeInput(conn_) == 0) return true;
  return PQstatus(conn_) != CONNECTION_OK;
}

PgError PgConn::ErrorOf(pg_result* res) {
  PgError error;
  const char* state = res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  error.sqlstate = state != nullptr ? state : "";
  std::string message = res != nullptr ? PQresultErrorMessage(res) : PQerrorMessage(conn_);
  if (message.empty()) message = PQerrorMessage(conn_);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
    message.pop_back();
  }
  error.message = std::move(message);
  if (PQstatus(conn_) != CONNECTION_OK || error.sqlstate.rfind("08", 0) == 0 ||
      error.sqlstate.rfind("57P", 0) == 0) {
    error.kind = PgError::Kind::kConnectionLost;
  } else if (error.sqlstate == "23505") {
    error.kind = PgError::Kind::kUniqueViolation;
  } else if (error.sqlstate == "22P05" || error.sqlstate == "22021" || error.sqlstate == "22P02") {
    error.kind = PgError::Kind::kInvalidValue;
  }
  if (res != nullptr) PQclear(res);
  return error;
}

Result<PgResult, PgError> PgConn::Exec(const std::string& sql, const Params& params) {
  const auto& values = params.values();
  auto it = prepared_.find(sql);
  if (it == prepared_.end()) {
    std::string name = "s" + std::to_string(prepared_.size());
    PGresult* res = PQprepare(conn_, name.c_str(), sql.c_str(), 0, nullptr);
    if (res == nullptr || PQresultStatus(res) != PGRES_COMMAND_OK) {
      return Unexpected(ErrorOf(res));
    }
    PQclear(res);
    it = prepared_.emplace(sql, std::move(name)).first;
  }
  std::vector<const char*> raw(values.size());
  std::vector<int> lengths(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    raw[i] = values[i] ? values[i]->c_str() : nullptr;
    lengths[i] = values[i] ? static_cast<int>(values[i]->size()) : 0;
  }
  PGresult* res = PQexecPrepared(conn_, it->second.c_str(), static_cast<int>(values.size()),
                                 raw.data(), lengths.data(), nullptr, 0);
  const ExecStatusType status = res != nullptr ? PQresultStatus(res) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return Unexpected(ErrorOf(res));
  }
  return PgResult(res);
}

Result<void, PgError> PgConn::ExecScript(const std::string& sql) {
  PGresult* res = PQexec(conn_, sql.c_str());
  const ExecStatusType status = res != nullptr ? PQresultStatus(res) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return Unexpected(ErrorOf(res));
  }
  PQclear(res);
  return {};
}

}  // namespace stele::storage::postgres::internal
