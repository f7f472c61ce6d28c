#include "storage/postgres/pg_conn.h"

#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <cstdlib>
#include <utility>

namespace stele::storage::postgres::internal {

DbErrorGeneric PgError::ToGeneric() const {
  std::string reason = "postgres";
  if (!sqlstate.empty()) reason += " [" + sqlstate + "]";
  reason += ": " + message;
  return DbErrorGeneric::Uncategorized(std::move(reason));
}

// --- ArrayParam -------------------------------------------------------------

void ArrayParam::Separate() {
  if (!empty_) body_ += ',';
  empty_ = false;
}
ArrayParam& ArrayParam::Text(std::string_view v) {
  Separate();
  body_ += '"';
  for (char c : v) {
    if (c == '"' || c == '\\') body_ += '\\';
    body_ += c;
  }
  body_ += '"';
  return *this;
}
ArrayParam& ArrayParam::Int(int64_t v) {
  Separate();
  body_ += std::to_string(v);
  return *this;
}
ArrayParam& ArrayParam::Bool(bool v) {
  Separate();
  body_ += v ? 't' : 'f';
  return *this;
}
ArrayParam& ArrayParam::Null() {
  Separate();
  body_ += "NULL";
  return *this;
}

// --- PgResult ---------------------------------------------------------------

PgResult& PgResult::operator=(PgResult&& other) noexcept {
  if (this != &other) {
    if (res_ != nullptr) PQclear(res_);
    res_ = std::exchange(other.res_, nullptr);
  }
  return *this;
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

// --- PgConn -----------------------------------------------------------------

void PgConn::Count(uint64_t round_trips, uint64_t statements) {
  if (counters_ == nullptr) return;
  counters_->round_trips.fetch_add(round_trips, std::memory_order_relaxed);
  counters_->statements.fetch_add(statements, std::memory_order_relaxed);
}

Result<std::unique_ptr<PgConn>, PgError> PgConn::Connect(const std::string& conninfo,
                                                         PgCounters* counters,
                                                         const char* application_name) {
  // expand_dbname: `conninfo` (a key=value string or a URI) is expanded in
  // place of dbname; a fallback_application_name yields to an
  // application_name set there.
  const char* const keys[] = {"dbname", "fallback_application_name", nullptr};
  const char* const values[] = {conninfo.c_str(), application_name, nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr) {
    return Unexpected(PgError{PgError::Kind::kConnectionLost, "out of memory", "", ""});
  }
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
    PQfinish(conn);
    return Unexpected(PgError{PgError::Kind::kConnectionLost,
                              "cannot connect to PostgreSQL: " + message, "", ""});
  }
  // Pipelines send without blocking, so that a long pipeline never waits
  // on a server that is itself waiting for us to read its replies
  // (PQexec, used by ExecScript, blocks regardless).
  if (PQsetnonblocking(conn, 1) != 0) {
    std::string message = PQerrorMessage(conn);
    PQfinish(conn);
    return Unexpected(PgError{PgError::Kind::kConnectionLost, "libpq: " + message, "", ""});
  }
  std::unique_ptr<PgConn> result(new PgConn(conn, counters));
  // Notices (e.g. "relation already exists, skipping") are not errors. But
  // a FATAL reported while the connection is idle (pg_terminate_backend, a
  // server shutdown) arrives as one, before the EOF: the connection is dead
  // even if libpq has not noticed yet, and must not be used.
  PQsetNoticeReceiver(
      conn,
      [](void* self, const PGresult* res) {
        const char* severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
        if (severity != nullptr &&
            (std::string_view(severity) == "FATAL" || std::string_view(severity) == "PANIC")) {
          static_cast<PgConn*>(self)->broken_ = true;
        }
      },
      result.get());
  return result;
}

PgConn::~PgConn() { PQfinish(conn_); }

bool PgConn::IsBroken() {
  if (broken_ || PQstatus(conn_) != CONNECTION_OK) return true;
  // Non-blocking: reads whatever arrived (a FATAL from pg_terminate_backend,
  // or EOF) without waiting, and parses it (PQisBusy), so that the notice
  // receiver sees a FATAL.
  if (PQconsumeInput(conn_) == 0) return true;
  (void)PQisBusy(conn_);
  return broken_ || PQstatus(conn_) != CONNECTION_OK;
}

bool PgConn::InTransaction() {
  const PGTransactionStatusType status = PQtransactionStatus(conn_);
  return status == PQTRANS_INTRANS || status == PQTRANS_INERROR;
}

PgError PgConn::ErrorOf(pg_result* res) {
  PgError error;
  auto field = [&](int code) {
    const char* value = res != nullptr ? PQresultErrorField(res, code) : nullptr;
    return std::string(value != nullptr ? value : "");
  };
  error.sqlstate = field(PG_DIAG_SQLSTATE);
  error.constraint = field(PG_DIAG_CONSTRAINT_NAME);
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
  } else if (error.sqlstate == "22P05" || error.sqlstate == "22021" || error.sqlstate == "22P02" ||
             error.sqlstate == "23514") {  // 23514: a CHECK constraint refused the value
    error.kind = PgError::Kind::kInvalidValue;
  }
  if (res != nullptr) PQclear(res);
  return error;
}

PgError PgConn::LostError(std::string_view what) {
  broken_ = true;
  std::string message = PQerrorMessage(conn_);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
    message.pop_back();
  }
  return PgError{PgError::Kind::kConnectionLost,
                 std::string(what) + (message.empty() ? "" : ": " + message), "", ""};
}

Result<void, PgError> PgConn::FlushAll() {
  while (true) {
    const int flushed = PQflush(conn_);
    if (flushed == 0) return {};
    if (flushed < 0) return Unexpected(LostError("sending to PostgreSQL failed"));
    // Read while we wait to write: the server may be blocked on replies.
    pollfd fd{PQsocket(conn_), POLLIN | POLLOUT, 0};
    if (::poll(&fd, 1, -1) < 0 && errno != EINTR) {
      return Unexpected(LostError("poll on the PostgreSQL socket failed"));
    }
    if ((fd.revents & POLLIN) != 0 && PQconsumeInput(conn_) == 0) {
      return Unexpected(LostError("reading from PostgreSQL failed"));
    }
  }
}

Result<void, PgError> PgConn::AwaitResult() {
  while (PQisBusy(conn_) != 0) {
    pollfd fd{PQsocket(conn_), POLLIN, 0};
    if (::poll(&fd, 1, -1) < 0 && errno != EINTR) {
      return Unexpected(LostError("poll on the PostgreSQL socket failed"));
    }
    if (PQconsumeInput(conn_) == 0) return Unexpected(LostError("reading from PostgreSQL failed"));
  }
  return {};
}

Result<std::vector<PgResult>, PipelineError> PgConn::ExecPipeline(
    const std::vector<Statement>& batch) {
  auto lost = [&](std::string_view what) { return Unexpected(PipelineError{0, LostError(what)}); };
  if (PQenterPipelineMode(conn_) != 1) return lost("cannot enter pipeline mode");
  // What was sent, in order: a Prepare (of statement `index`, named
  // `name`) or an Execute of statement `index`.
  struct Sent {
    bool prepare;
    size_t index;
    std::string name;
  };
  std::vector<Sent> sent;
  sent.reserve(batch.size() + 2);
  std::unordered_map<std::string, std::string> preparing;  // new in this pipeline
  std::vector<const char*> raw;
  std::vector<int> lengths;
  for (size_t i = 0; i < batch.size(); ++i) {
    const Statement& statement = batch[i];
    std::string name;
    if (auto it = prepared_.find(statement.sql); it != prepared_.end()) {
      name = it->second;
    } else if (auto pending = preparing.find(statement.sql); pending != preparing.end()) {
      name = pending->second;
    } else {
      name = "s" + std::to_string(next_name_++);
      if (PQsendPrepare(conn_, name.c_str(), statement.sql.c_str(), 0, nullptr) != 1) {
        return lost("sending to PostgreSQL failed");
      }
      preparing.emplace(statement.sql, name);
      sent.push_back(Sent{true, i, name});
    }
    const auto& values = statement.params.values();
    raw.assign(values.size(), nullptr);
    lengths.assign(values.size(), 0);
    for (size_t v = 0; v < values.size(); ++v) {
      if (values[v]) {
        raw[v] = values[v]->c_str();
        lengths[v] = static_cast<int>(values[v]->size());
      }
    }
    if (PQsendQueryPrepared(conn_, name.c_str(), static_cast<int>(values.size()), raw.data(),
                            lengths.data(), nullptr, 0) != 1) {
      return lost("sending to PostgreSQL failed");
    }
    sent.push_back(Sent{false, i, {}});
  }
  if (PQpipelineSync(conn_) != 1) return lost("sending to PostgreSQL failed");
  Count(1, batch.size());
  if (auto flushed = FlushAll(); !flushed) {
    return Unexpected(PipelineError{0, std::move(flushed).error()});
  }

  // One result per sent message, in order, NULLs between them, and the
  // Sync's PGRES_PIPELINE_SYNC at the end. After a failure the rest come
  // back PGRES_PIPELINE_ABORTED.
  std::vector<PgResult> results;
  results.reserve(batch.size());
  std::optional<PipelineError> failure;
  size_t next = 0;
  while (true) {
    if (auto ready = AwaitResult(); !ready) {
      return Unexpected(
          PipelineError{next < sent.size() ? sent[next].index : 0, std::move(ready).error()});
    }
    PGresult* res = PQgetResult(conn_);
    if (res == nullptr) {
      if (PQstatus(conn_) != CONNECTION_OK) return lost("connection to PostgreSQL lost");
      continue;  // the end of one message's results
    }
    const ExecStatusType status = PQresultStatus(res);
    if (status == PGRES_PIPELINE_SYNC) {
      PQclear(res);
      break;
    }
    if (next >= sent.size()) {
      PQclear(res);
      return lost("unexpected reply from PostgreSQL in a pipeline");
    }
    const Sent& item = sent[next++];
    if (status == PGRES_PIPELINE_ABORTED) {
      PQclear(res);
    } else if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      PgError error = ErrorOf(res);
      if (!failure) failure = PipelineError{item.index, std::move(error)};
      if (PQstatus(conn_) != CONNECTION_OK) return Unexpected(std::move(*failure));
    } else if (item.prepare) {
      prepared_.emplace(batch[item.index].sql, item.name);
      PQclear(res);
    } else {
      results.emplace_back(res);
    }
  }
  if (PQexitPipelineMode(conn_) != 1) {
    broken_ = true;
    if (!failure) return lost("cannot leave pipeline mode");
  }
  if (failure) return Unexpected(std::move(*failure));
  return results;
}

Result<PgResult, PgError> PgConn::Exec(const std::string& sql, const Params& params) {
  auto results = ExecPipeline({Statement{sql, params}});
  if (!results) return Unexpected(std::move(results).error().error);
  return std::move(results->front());
}

Result<void, PgError> PgConn::ExecScript(const std::string& sql) {
  PGresult* res = PQexec(conn_, sql.c_str());
  Count(1, 1);
  const ExecStatusType status = res != nullptr ? PQresultStatus(res) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return Unexpected(ErrorOf(res));
  }
  PQclear(res);
  return {};
}

}  // namespace stele::storage::postgres::internal
