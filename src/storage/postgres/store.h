// Store: what one PostgresPool shares with its connections — a bounded
// pool of libpq connections, the notifier and its LISTEN thread — and the
// two ways to run work: Write (one transaction in as few pipelines as its
// reads allow — Tx below —, its notices fanned out locally and handed to
// the NoticeSender after COMMIT) and Read (one statement, or one
// REPEATABLE READ snapshot in one pipeline when it needs several).
//
// Reconnection: a connection found dead when taken from the pool (e.g.
// terminated by the server while idle) is replaced before use; a write
// that loses its connection before any of its writes was sent (only
// BEGIN and reads) is retried once on a fresh connection, a read always
// once. A failure after a write was sent is reported as DbErrorGeneric and
// not retried here: the outcome of a transaction whose COMMIT (or Sync)
// was lost is unknown, and the contract's callers retry with the same
// version, which the (execution_id, version) key fences against
// duplicates.
//
// Timeouts (PostgresOptions::statement_timeout, pg_conn.h): a round trip
// without a reply in time fails its call with DbErrorGeneric, its
// connection dropped. It is never retried here, read or write: the server
// that did not answer would most likely make the retry wait as long again,
// and the caller should learn of it within the bound. A timed-out write is
// an unknown outcome, exactly like a lost COMMIT above. The server may
// even run it after the caller got the error (a stopped backend resumed);
// the same fence holds: a retry at the same version waits for the row
// lock or unique key the pending transaction holds, or sees its result,
// or — the request not started yet — takes the version first, and the
// late request then fails on that key.
//
// Threading: thread-safe. Ownership: shared_ptr held by the pool and by
// every connection; after Close every call fails with DbErrorGeneric::Close.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/result.h"
#include "storage/db_errors.h"
#include "storage/postgres/notice_sender.h"
#include "storage/postgres/notifier.h"
#include "storage/postgres/pg_conn.h"
#include "storage/postgres/postgres_pool.h"
#include "storage/postgres/response_batcher.h"

namespace stele::storage::postgres::internal {

// A write transaction in progress. Statements are queued and sent in
// pipelines: a read's result is waited for only when asked for (Get), which
// sends everything queued so far — BEGIN first, when nothing was sent yet —
// in one round trip; the writes still queued at the end go out with
// COMMIT in one more. A transaction that never
// asked for a result is one pipeline without BEGIN: an implicit
// transaction, committed by PostgreSQL at its Sync.
class Tx {
 public:
  // How a failed write becomes the operation's error.
  using ErrorMap = std::function<DbErrorWrite(const PgError&)>;

  explicit Tx(PgConn& conn) : conn_(conn) {}
  Tx(const Tx&) = delete;
  Tx& operator=(const Tx&) = delete;

  // Queues a read; returns the ticket to Get its result with.
  size_t Read(std::string sql, Params params = Params());
  // Queues a write whose result is not needed. Its failure fails the
  // operation with on_error(failure) (default: ValidationFailed for a value
  // PostgreSQL refuses, else Generic).
  void Write(std::string sql, Params params, ErrorMap on_error = nullptr);
  // The result of a queued read (valid for the transaction's lifetime).
  // Errors: Generic; when a queued write failed, the operation fails with
  // that write's mapped error whatever is returned here.
  Result<const PgResult*, DbErrorGeneric> Get(size_t ticket);
  Result<const PgResult*, DbErrorGeneric> Q(std::string sql, Params params = Params()) {
    return Get(Read(std::move(sql), std::move(params)));
  }

  std::vector<Notice> notices;  // fanned out and sent after COMMIT

 private:
  friend class Store;
  struct Queued {
    Statement statement;
    std::optional<size_t> ticket;  // a read's
    ErrorMap on_error;             // a write's
  };
  // Sends the queue in one pipeline; `tail` (notices, COMMIT) after it.
  Result<void, DbErrorGeneric> Send(std::vector<Statement> tail, bool commit);

  PgConn& conn_;
  std::vector<Queued> queue_;
  std::deque<std::optional<PgResult>> results_;  // by ticket; deque: stable addresses
  bool begun_ = false;                           // BEGIN was sent: an explicit transaction is open
  bool sent_writes_ = false;                     // a write reached the server (no blind retry)
  bool retryable_ = false;               // failed on a lost connection before any write was sent
  std::optional<DbErrorWrite> failure_;  // the failed statement's mapped error
};

// Runs `batch` in one REPEATABLE READ READ ONLY snapshot, in one round
// trip; one result per statement.
Result<std::vector<PgResult>, DbErrorGeneric> SnapshotRead(PgConn& db,
                                                           std::vector<Statement> batch);

class Store {
 public:
  static Result<std::shared_ptr<Store>, DbErrorGeneric> Open(const PostgresOptions& options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Runs `fn(Tx&) -> Result<T, E>` in one READ COMMITTED transaction;
  // commits on success, rolls back on error. E is DbErrorWrite or
  // DbErrorGeneric.
  template <class T, class E, class F>
  Result<T, E> Write(F&& fn) {
    for (int attempt = 0;; ++attempt) {
      STELE_ASSIGN_OR_RETURN(Lease lease, Acquire());
      Tx tx(*lease);
      std::optional<Result<T, E>> result;
      try {
        result.emplace(fn(tx));
      } catch (const std::exception& e) {
        result.emplace(Unexpected(
            E(DbErrorGeneric::Uncategorized(std::string("write operation failed: ") + e.what()))));
      }
      if (result->has_value()) {
        if (auto committed = tx.Send({}, true); !committed) {
          result.emplace(Unexpected(E(std::move(committed).error())));
        }
      }
      if (!result->has_value()) {
        // An explicit transaction still open (failed or not) is rolled
        // back; an implicit one ended with its pipeline.
        if (!lease->IsBroken() && lease->InTransaction()) (void)lease->ExecScript("ROLLBACK");
        if (tx.retryable_ && attempt == 0) continue;
        if (tx.failure_) return Unexpected(As<E>(*tx.failure_));
        return std::move(*result);
      }
      if (!tx.notices.empty()) {
        notifier_.Notify(tx.notices);
        sender_->Enqueue(tx.notices);
      }
      return std::move(*result);
    }
  }

  // Runs `fn(PgConn&) -> Result<T, E>` (one statement, or a pipeline —
  // SnapshotRead — when it needs several). Retried once on a lost
  // connection (reads have no effects), not after a timeout.
  template <class T, class E, class F>
  Result<T, E> Read(F&& fn) {
    for (int attempt = 0;; ++attempt) {
      STELE_ASSIGN_OR_RETURN(Lease lease, Acquire());
      Result<T, E> result = fn(*lease);
      if (!result && attempt == 0 && lease->IsBroken() && !lease->TimedOut()) continue;
      return result;
    }
  }

  // Runs `fn(PgConn&) -> Result<T, E>` once: for a write that is a single
  // statement (its own implicit transaction), which must not be repeated
  // blindly when its reply is lost.
  template <class T, class E, class F>
  Result<T, E> Once(F&& fn) {
    STELE_ASSIGN_OR_RETURN(Lease lease, Acquire());
    return fn(*lease);
  }

  Notifier& notifier() { return notifier_; }
  ResponseBatcher& response_batcher() { return response_batcher_; }
  const PostgresOptions& options() const { return options_; }
  // How long a waiter sleeps before re-checking without a notice.
  std::chrono::milliseconds PollInterval() const;

  void Close();
  bool IsClosed();
  PostgresPoolStats Stats();

 private:
  // Exclusive use of one pooled connection; returns it on destruction
  // (dropping it when it is broken or the store closed).
  class Lease {
   public:
    Lease(Store* store, std::unique_ptr<PgConn> conn) : store_(store), conn_(std::move(conn)) {}
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();
    PgConn* operator->() { return conn_.get(); }
    PgConn& operator*() { return *conn_; }

   private:
    Store* store_;
    std::unique_ptr<PgConn> conn_;
  };

  explicit Store(const PostgresOptions& options) : options_(options) {}
  PgTimeouts Timeouts() const {
    return PgTimeouts{.reply = options_.statement_timeout, .connect = options_.connect_timeout};
  }
  Result<Lease, DbErrorGeneric> Acquire();
  void Release(std::unique_ptr<PgConn> conn);
  template <class E>
  static E As(const DbErrorWrite& error) {
    if constexpr (std::is_same_v<E, DbErrorWrite>) {
      return error;
    } else {
      if (error.kind() == DbErrorWrite::Kind::kGeneric) return E(error.generic());
      return E(DbErrorGeneric::Uncategorized(error.ToString()));
    }
  }

  const PostgresOptions options_;
  ResponseBatcher response_batcher_;
  PgCounters counters_;  // of the pooled connections (not the listener)
  Notifier notifier_;
  std::unique_ptr<Listener> listener_;
  std::unique_ptr<NoticeSender> sender_;  // to the other processes' listeners
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;                        // guarded by mu_
  size_t open_connections_ = 0;                // guarded by mu_ (idle + leased)
  std::vector<std::unique_ptr<PgConn>> idle_;  // guarded by mu_
};

}  // namespace stele::storage::postgres::internal
