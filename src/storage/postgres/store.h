// Store: what one PostgresPool shares with its connections — a bounded
// pool of libpq connections, the notifier and its LISTEN thread — and the
// two ways to run work: Write (one transaction, notices sent with
// pg_notify inside it and fanned out locally after COMMIT) and Read (one
// statement, or one REPEATABLE READ snapshot when it needs several).
//
// Reconnection: a connection found dead when taken from the pool (e.g.
// terminated by the server while idle) is replaced before use; an
// operation whose first statement fails because the connection was lost is
// retried once on a fresh connection (nothing of it reached the server).
// A failure later in a write is reported as DbErrorGeneric and not retried
// here: the outcome of a transaction whose COMMIT was lost is unknown, and
// the contract's callers retry with the same version, which the
// (execution_id, version) key fences against duplicates.
//
// Threading: thread-safe. Ownership: shared_ptr held by the pool and by
// every connection; after Close every call fails with DbErrorGeneric::Close.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "storage/db_errors.h"
#include "storage/postgres/notifier.h"
#include "storage/postgres/pg_conn.h"
#include "storage/postgres/postgres_pool.h"

namespace stele::storage::postgres::internal {

// A write transaction in progress.
struct Tx {
  PgConn& conn;
  std::vector<Notice> notices;  // sent with pg_notify before COMMIT

  Result<PgResult, DbErrorGeneric> Q(const std::string& sql, const Params& params = Params()) {
    auto res = conn.Exec(sql, params);
    if (!res) return Unexpected(res.error().ToGeneric());
    return std::move(*res);
  }
};

class Store {
 public:
  static Result<std::shared_ptr<Store>, DbErrorGeneric> Open(const PostgresOptions& options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Runs `fn(Tx&) -> Result<T, E>` in one READ COMMITTED transaction;
  // commits on success, rolls back on error. E must be constructible from
  // DbErrorGeneric.
  template <class T, class E, class F>
  Result<T, E> Write(F&& fn) {
    for (int attempt = 0;; ++attempt) {
      STELE_ASSIGN_OR_RETURN(Lease lease, Acquire());
      if (auto begun = lease->ExecScript("BEGIN"); !begun) {
        if (begun.error().kind == PgError::Kind::kConnectionLost && attempt == 0) continue;
        return Unexpected(E(begun.error().ToGeneric()));
      }
      Tx tx{*lease, {}};
      std::optional<Result<T, E>> result;
      try {
        result.emplace(fn(tx));
      } catch (const std::exception& e) {
        result.emplace(Unexpected(
            E(DbErrorGeneric::Uncategorized(std::string("write operation failed: ") + e.what()))));
      }
      if (!result->has_value()) {
        (void)lease->ExecScript("ROLLBACK");
        return std::move(*result);
      }
      if (!tx.notices.empty()) {
        if (auto sent = SendNotices(*lease, tx.notices); !sent) {
          (void)lease->ExecScript("ROLLBACK");
          return Unexpected(E(std::move(sent).error()));
        }
      }
      if (auto committed = lease->ExecScript("COMMIT"); !committed) {
        return Unexpected(E(committed.error().ToGeneric()));
      }
      if (!tx.notices.empty()) notifier_.Notify(tx.notices);
      return std::move(*result);
    }
  }

  // Runs `fn(PgConn&) -> Result<T, E>`; with `snapshot`, inside one
  // read-only REPEATABLE READ transaction. Retried once on a lost
  // connection (reads have no effects).
  template <class T, class E, class F>
  Result<T, E> Read(bool snapshot, F&& fn) {
    for (int attempt = 0;; ++attempt) {
      STELE_ASSIGN_OR_RETURN(Lease lease, Acquire());
      if (snapshot) {
        if (auto begun = lease->ExecScript("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
            !begun) {
          if (begun.error().kind == PgError::Kind::kConnectionLost && attempt == 0) continue;
          return Unexpected(E(begun.error().ToGeneric()));
        }
      }
      Result<T, E> result = fn(*lease);
      if (!result && attempt == 0 && lease->IsBroken()) continue;
      if (snapshot) {
        if (auto ended = lease->ExecScript(result ? "COMMIT" : "ROLLBACK"); !ended && result) {
          return Unexpected(E(ended.error().ToGeneric()));
        }
      }
      return result;
    }
  }

  Notifier& notifier() { return notifier_; }
  const PostgresOptions& options() const { return options_; }
  // How long a waiter sleeps before re-checking without a notice.
  std::chrono::milliseconds PollInterval() const;

  void Close();
  bool IsClosed();

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
  Result<Lease, DbErrorGeneric> Acquire();
  void Release(std::unique_ptr<PgConn> conn);
  Result<void, DbErrorGeneric> SendNotices(PgConn& conn, const std::vector<Notice>& notices);

  const PostgresOptions options_;
  Notifier notifier_;
  std::unique_ptr<Listener> listener_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;                        // guarded by mu_
  size_t open_connections_ = 0;                // guarded by mu_ (idle + leased)
  std::vector<std::unique_ptr<PgConn>> idle_;  // guarded by mu_
};

}  // namespace stele::storage::postgres::internal
