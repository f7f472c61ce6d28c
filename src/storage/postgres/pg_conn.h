// PgConn: one libpq connection with the few things every query of the
// PostgreSQL backend needs — parameterised statements (prepared once per
// connection and cached by SQL text, so a hot statement is parsed once),
// pipelines (several statements sent at once, one wait for all their
// replies: libpq pipeline mode), text-format results, and error
// classification by SQLSTATE.
//
// A pipeline without BEGIN runs as one implicit transaction: PostgreSQL
// commits it at the Sync that ends the pipeline, and a failing statement
// rolls back the ones before it and skips the ones after. With a BEGIN
// (sent in this or an earlier pipeline) the transaction stays open until
// its COMMIT / ROLLBACK.
//
// Error mapping (the contract's families, storage/db_errors.h):
//   lost connection, server down, serialization/deadlock, anything unknown
//     → DbErrorGeneric (retry the same call);
//   unique violation → reported to the caller as PgError::kUniqueViolation
//     (with the constraint's name) so that it can map it to Conflict /
//     IllegalState / VersionConflict;
//   invalid text or JSON value (e.g. bad encoding), or a value a CHECK
//   constraint refuses (e.g. an instant past year 9999) → kInvalidValue
//     (ValidationFailed upstream: retrying the same value cannot help);
//   no reply within the reply timeout → kTimeout (below).
//
// Bounded waits: a server that stops answering without closing the
// connection (a stopped process, a network partition) must not hang the
// caller. Connecting is bounded by libpq's connect_timeout, and every wait
// for the server — sending a statement or pipeline and reading all its
// replies, one round trip — by the reply timeout (PgTimeouts). When it
// passes, the statement is cancelled (a cancel request, sent from a thread
// of its own: libpq 15's PQcancel itself waits without a bound), the
// connection is marked broken — its owner drops and closes it — and the
// call fails with kTimeout. For a write this is an unknown outcome: the
// server may still commit it (store.h says how callers cope).
// Unless the connection string sets them, connections also get TCP
// keepalives and tcp_user_timeout (kDefaultKeepaliveParams), so that a peer
// gone from the network is noticed by the kernel too. (Keepalives do not
// catch a stopped server process: its kernel still acknowledges; only the
// reply timeout does.)
//
// Threading: a PgConn is used by one thread at a time (the pool hands it
// out exclusively). Ownership: owns its PGconn.
#pragma once

#include <atomic>
#include <chrono>
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
  // kConnectionLost: the connection failed (nothing more was heard).
  // kTimeout: no reply within the reply timeout; the connection was given
  // up (a retry would likely wait as long again).
  enum class Kind { kGeneric, kUniqueViolation, kInvalidValue, kConnectionLost, kTimeout };
  Kind kind = Kind::kGeneric;
  std::string message;
  std::string sqlstate;
  std::string constraint;  // of a constraint violation, else empty
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

// Array literals for `unnest($n::type[])` parameters: one parameter carries
// a column of many rows. Elements are quoted (text, json, bytea) or bare
// (numbers, booleans); nullopt is NULL.
class ArrayParam {
 public:
  ArrayParam& Text(std::string_view v);
  ArrayParam& Int(int64_t v);
  ArrayParam& Bool(bool v);
  ArrayParam& Null();
  ArrayParam& OptText(const std::optional<std::string>& v) { return v ? Text(*v) : Null(); }
  ArrayParam& OptInt(std::optional<int64_t> v) { return v ? Int(*v) : Null(); }
  std::string Literal() const { return "{" + body_ + "}"; }

 private:
  void Separate();
  std::string body_;
  bool empty_ = true;
};

// A query result in text format. Row/column access is bounds-unchecked in
// release builds; callers use the column order of their own SELECT.
class PgResult {
 public:
  explicit PgResult(pg_result* res) : res_(res) {}
  PgResult(PgResult&& other) noexcept : res_(other.res_) { other.res_ = nullptr; }
  PgResult& operator=(PgResult&& other) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
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

// One statement of a pipeline.
struct Statement {
  std::string sql;
  Params params;
};

// The first statement of a pipeline that failed; the ones after it were
// skipped.
struct PipelineError {
  size_t index = 0;
  PgError error;
};

// What the connections of one pool did, for measuring (PostgresPool::Stats).
// A round trip is one wait for the server's reply.
struct PgCounters {
  std::atomic<uint64_t> round_trips{0};
  std::atomic<uint64_t> statements{0};
};

// How long a connection waits for the server (PostgresOptions has the
// pool's).
struct PgTimeouts {
  // Each wait for the server's replies to one statement or pipeline.
  std::chrono::milliseconds reply = std::chrono::seconds(30);
  // libpq connect_timeout (whole seconds, at least 2: libpq's minimum),
  // unless the connection string or PGCONNECT_TIMEOUT sets one.
  std::chrono::seconds connect = std::chrono::seconds(10);
};

// libpq parameters every connection gets unless its connection string sets
// them: a dead peer is noticed after about 30 s idle + 3 × 10 s of
// unanswered probes, and data unacknowledged for 30 s drops the connection.
inline constexpr const char* kDefaultKeepaliveParams[][2] = {
    {"keepalives", "1"},       {"keepalives_idle", "30"},     {"keepalives_interval", "10"},
    {"keepalives_count", "3"}, {"tcp_user_timeout", "30000"},
};

class PgConn {
 public:
  // Connects (blocking, at most about timeouts.connect per host tried).
  // Errors: Generic naming the server problem. `counters`, when given,
  // must outlive the connection. `application_name` is the session's name
  // in pg_stat_activity unless `conninfo` sets one (libpq
  // fallback_application_name): the pool's connections are "stele", its
  // LISTEN connection "stele listener", its notice sender "stele notices"
  // — so an operator (or a test) can tell them apart. `conninfo` wins over
  // the connect timeout and the keepalive defaults too.
  static Result<std::unique_ptr<PgConn>, PgError> Connect(const std::string& conninfo,
                                                          PgCounters* counters = nullptr,
                                                          const char* application_name = "stele",
                                                          const PgTimeouts& timeouts = {});
  ~PgConn();
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  // Runs one parameterised statement (prepared on first use): one round
  // trip.
  Result<PgResult, PgError> Exec(const std::string& sql, const Params& params = Params());
  // Sends every statement (each prepared on first use, in the same
  // pipeline), then one Sync, then reads every reply: one round trip.
  // Returns one result per statement, or the first failure.
  Result<std::vector<PgResult>, PipelineError> ExecPipeline(const std::vector<Statement>& batch);
  // Runs SQL text without parameters (may hold several statements); the
  // first failure.
  Result<void, PgError> ExecScript(const std::string& sql);

  // The reply timeout of the calls above (e.g. longer for migrations).
  void set_reply_timeout(std::chrono::milliseconds timeout) { reply_timeout_ = timeout; }
  std::chrono::milliseconds reply_timeout() const { return reply_timeout_; }

  // True when the socket is known to be dead (or was given up after a
  // reply timeout); reads pending input first so that a server-side
  // termination of an idle connection is noticed.
  bool IsBroken();
  // Whether a call timed out waiting for the server (the connection is
  // then broken too).
  bool TimedOut() const { return timed_out_; }
  // Whether the server reports an open (or failed) transaction block.
  bool InTransaction();
  pg_conn* raw() { return conn_; }

 private:
  using Deadline = std::chrono::steady_clock::time_point;
  PgConn(pg_conn* conn, PgCounters* counters, std::chrono::milliseconds reply_timeout)
      : conn_(conn), counters_(counters), reply_timeout_(reply_timeout) {}
  PgError ErrorOf(pg_result* res);
  PgError LostError(std::string_view what);
  // The deadline passed: cancels the statement, gives the connection up.
  PgError TimeoutError();
  // Waits (until `deadline`) for the socket to be readable, or writable
  // too when `write`; consumes what arrived.
  Result<void, PgError> WaitSocket(bool write, Deadline deadline);
  // Waits until libpq can hand out the next result without blocking.
  Result<void, PgError> AwaitResult(Deadline deadline);
  Result<void, PgError> FlushAll(Deadline deadline);
  Deadline NextDeadline() const { return std::chrono::steady_clock::now() + reply_timeout_; }
  void Count(uint64_t round_trips, uint64_t statements);
  pg_conn* conn_;
  PgCounters* counters_;
  std::chrono::milliseconds reply_timeout_;
  bool broken_ = false;     // a pipeline ended in a state it cannot recover from
  bool timed_out_ = false;  // given up after a reply timeout (broken_ too)
  std::unordered_map<std::string, std::string> prepared_;  // sql → statement name
  uint64_t next_name_ = 0;
};

}  // namespace stele::storage::postgres::internal
