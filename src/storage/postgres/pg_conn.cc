#include "storage/postgres/pg_conn.h"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace stele::storage::postgres::internal {

namespace {

// Cancel requests being sent. libpq 15's PQcancel opens a connection to
// the server, sends the request and waits for the server to close it —
// with no bound: a stopped server holds it forever. So each is sent from a
// detached thread of its own (the PGcancel it uses is a copy, independent
// of the connection), and at most this many at once: beyond that a
// timed-out statement is only abandoned (its connection closed), not
// cancelled.
std::atomic<int> cancels_in_flight{0};
constexpr int kMaxCancelsInFlight = 4;

void CancelInBackground(PGconn* conn) {
  if (cancels_in_flight.fetch_add(1) >= kMaxCancelsInFlight) {
    cancels_in_flight.fetch_sub(1);
    return;
  }
  PGcancel* cancel = PQgetCancel(conn);
  if (cancel == nullptr) {
    cancels_in_flight.fetch_sub(1);
    return;
  }
  try {
    std::thread([cancel] {
      char error[256];
      (void)PQcancel(cancel, error, sizeof(error));  // best effort
      PQfreeCancel(cancel);
      cancels_in_flight.fetch_sub(1);
    }).detach();
  } catch (const std::system_error&) {  // no thread to be had: abandon only
    PQfreeCancel(cancel);
    cancels_in_flight.fetch_sub(1);
  }
}

void TrimTrailingSpace(std::string& message) {
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
    message.pop_back();
  }
}

}  // namespace

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
                                                         const char* application_name,
                                                         const PgTimeouts& timeouts) {
  // expand_dbname: `conninfo` (a key=value string or a URI) is expanded in
  // place of dbname. libpq keeps the last value of a key given twice, so
  // the defaults come before it and whatever `conninfo` sets wins; a
  // fallback_application_name yields to an application_name set there.
  std::vector<const char*> keys;
  std::vector<const char*> values;
  const std::string connect_timeout =
      std::to_string(std::max<int64_t>(2, static_cast<int64_t>(timeouts.connect.count())));
  const char* connect_timeout_env = std::getenv("PGCONNECT_TIMEOUT");
  if (connect_timeout_env == nullptr || *connect_timeout_env == '\0') {
    keys.push_back("connect_timeout");
    values.push_back(connect_timeout.c_str());
  }
  for (const auto& param : kDefaultKeepaliveParams) {
    keys.push_back(param[0]);
    values.push_back(param[1]);
  }
  keys.insert(keys.end(), {"dbname", "fallback_application_name", nullptr});
  values.insert(values.end(), {conninfo.c_str(), application_name, nullptr});
  PGconn* conn = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (conn == nullptr) {
    return Unexpected(PgError{PgError::Kind::kConnectionLost, "out of memory", "", ""});
  }
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn);
    TrimTrailingSpace(message);
    PQfinish(conn);
    return Unexpected(PgError{PgError::Kind::kConnectionLost,
                              "cannot connect to PostgreSQL: " + message, "", ""});
  }
  // Nothing blocks in libpq: sends are non-blocking (a long pipeline never
  // waits on a server that is itself waiting for us to read its replies)
  // and every wait is our poll() with a deadline — also PQfinish's
  // goodbye to a server that no longer reads.
  if (PQsetnonblocking(conn, 1) != 0) {
    std::string message = PQerrorMessage(conn);
    PQfinish(conn);
    return Unexpected(PgError{PgError::Kind::kConnectionLost, "libpq: " + message, "", ""});
  }
  std::unique_ptr<PgConn> result(new PgConn(conn, counters, timeouts.reply));
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
  TrimTrailingSpace(message);
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
  TrimTrailingSpace(message);
  return PgError{PgError::Kind::kConnectionLost,
                 std::string(what) + (message.empty() ? "" : ": " + message), "", ""};
}

PgError PgConn::TimeoutError() {
  broken_ = true;
  timed_out_ = true;
  CancelInBackground(conn_);
  return PgError{PgError::Kind::kTimeout,
                 "no reply from PostgreSQL within the statement timeout (" +
                     std::to_string(reply_timeout_.count()) +
                     " ms): the statement is cancelled and the connection closed; if it was a "
                     "write, it may or may not have committed",
                 "", ""};
}

Result<void, PgError> PgConn::WaitSocket(bool write, Deadline deadline) {
  const auto now = std::chrono::steady_clock::now();
  if (now >= deadline) return Unexpected(TimeoutError());
  const int socket = PQsocket(conn_);
  if (socket < 0) return Unexpected(LostError("connection to PostgreSQL lost"));
  const int64_t left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  // Read while we wait to write, too: the server may be blocked on replies.
  pollfd fd{socket, static_cast<short>(POLLIN | (write ? POLLOUT : 0)), 0};
  const int ready = ::poll(&fd, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
  if (ready < 0) {
    if (errno == EINTR) return {};
    return Unexpected(LostError("poll on the PostgreSQL socket failed"));
  }
  if ((fd.revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL)) != 0 && PQconsumeInput(conn_) == 0) {
    return Unexpected(LostError("reading from PostgreSQL failed"));
  }
  return {};  // the caller re-checks its condition (and the deadline)
}

Result<void, PgError> PgConn::FlushAll(Deadline deadline) {
  while (true) {
    const int flushed = PQflush(conn_);
    if (flushed == 0) return {};
    if (flushed < 0) return Unexpected(LostError("sending to PostgreSQL failed"));
    STELE_TRY(WaitSocket(/*write=*/true, deadline));
  }
}

Result<void, PgError> PgConn::AwaitResult(Deadline deadline) {
  while (PQisBusy(conn_) != 0) STELE_TRY(WaitSocket(/*write=*/false, deadline));
  return {};
}

Result<std::vector<PgResult>, PipelineError> PgConn::ExecPipeline(
    const std::vector<Statement>& batch) {
  // One round trip, one bound: sending everything and reading every reply.
  const Deadline deadline = NextDeadline();
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
  if (auto flushed = FlushAll(deadline); !flushed) {
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
    if (auto ready = AwaitResult(deadline); !ready) {
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
  // PQexec would wait without a bound: the same as it does, with our
  // deadline (simple query protocol, one result per statement).
  const Deadline deadline = NextDeadline();
  Count(1, 1);
  if (PQsendQuery(conn_, sql.c_str()) != 1) {
    return Unexpected(LostError("sending to PostgreSQL failed"));
  }
  STELE_TRY(FlushAll(deadline));
  std::optional<PgError> failure;
  while (true) {
    STELE_TRY(AwaitResult(deadline));
    PGresult* res = PQgetResult(conn_);
    if (res == nullptr) break;
    const ExecStatusType status = PQresultStatus(res);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY) {
      PQclear(res);
    } else {
      PgError error = ErrorOf(res);  // clears res
      if (!failure) failure = std::move(error);
      // Anything else (COPY, which no script here runs) cannot be drained.
      if (status != PGRES_FATAL_ERROR && status != PGRES_NONFATAL_ERROR) {
        broken_ = true;
        return Unexpected(std::move(*failure));
      }
    }
  }
  if (failure) return Unexpected(std::move(*failure));
  if (PQstatus(conn_) != CONNECTION_OK)
    return Unexpected(LostError("connection to PostgreSQL lost"));
  return {};
}

}  // namespace stele::storage::postgres::internal
