// PostgresPool: the PostgreSQL storage backend — any number of Stele
// processes share one database and divide the work (docs/postgres.md).
//
// Design:
//  - A bounded pool of libpq connections (at most `max_connections`, made
//    lazily); every logical operation takes one for its duration and runs
//    as one transaction. Callers beyond the bound wait up to
//    `acquire_timeout`, then get DbErrorGeneric.
//  - Appends lock the execution's t_state row (SELECT ... FOR UPDATE), so
//    writers of one execution serialise, and the (execution_id, version)
//    primary key of t_execution_log fences every append.
//  - Locking pending work selects due rows with FOR UPDATE SKIP LOCKED in
//    the locking transaction: concurrent lockers (threads or processes)
//    never block on, nor lock, the same execution.
//  - Responses get their cursor from t_state.response_count, advanced
//    under the parent's row lock: arrival order is the order of that lock.
//  - Wake-ups across processes by LISTEN/NOTIFY on one listener connection
//    per pool (notifier.h); polling every `poll_interval` is the fallback.
//
// Threading: PostgresPool and every connection it hands out are safe for
// concurrent use. Ownership: connections share the pool's internals; one
// used after Close fails every call with DbErrorGeneric::Close.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "base/result.h"
#include "storage/db_errors.h"
#include "storage/db_pool.h"

namespace stele::storage::postgres {

namespace internal {
class Store;
}  // namespace internal

struct PostgresOptions {
  // libpq connection string or URI; empty → $STELE_POSTGRES_URL.
  std::string conninfo = {};
  // Upper bound on connections used by operations (the LISTEN connection
  // is extra). At least 1.
  size_t max_connections = 8;
  // How long an operation waits for a free connection.
  std::chrono::milliseconds acquire_timeout = std::chrono::seconds(30);
  // Waits re-check the database at least this often even without a notice
  // (the fallback when a notice is missed); 1/5 of it while the listener
  // is disconnected.
  std::chrono::milliseconds poll_interval = std::chrono::milliseconds(1000);
  // LISTEN/NOTIFY channel; processes sharing a database must agree.
  std::string channel = "stele";
  // Every wait for the server's reply to one round trip (a statement, or a
  // pipeline of them) — client-side, not PostgreSQL's own
  // statement_timeout. Past it the statement is cancelled, the connection
  // closed (the next call opens a new one) and the call fails with
  // DbErrorGeneric saying so; for a write the outcome is then unknown
  // (docs/postgres.md, "Timeouts"). A call makes at most a few round
  // trips, plus waiting for a free connection (acquire_timeout) and
  // connecting (connect_timeout). Must be positive.
  std::chrono::milliseconds statement_timeout = std::chrono::seconds(30);
  // libpq connect_timeout, unless the conninfo (or PGCONNECT_TIMEOUT) sets
  // one; whole seconds, at least 2 (libpq's minimum).
  std::chrono::seconds connect_timeout = std::chrono::seconds(10);
  // The LISTEN connection, idle this long, checks that the server still
  // answers (it repeats its LISTEN, bounded by statement_timeout) and
  // reconnects if not: a silent server is noticed within about this plus
  // statement_timeout. Must be positive.
  std::chrono::milliseconds listener_check_interval = std::chrono::seconds(10);
  // The reply timeout while migrating the schema at Open: a migration may
  // rewrite or check every row of a large table, and wait for another
  // process's migration.
  std::chrono::milliseconds migration_timeout = std::chrono::minutes(10);
};

// Counters of one pool's connections since it was opened (the LISTEN
// connection excluded), for measuring what an operation costs.
struct PostgresPoolStats {
  uint64_t round_trips = 0;  // waits for a reply of the server
  uint64_t statements = 0;   // statements executed (BEGIN and COMMIT included)
  size_t connections = 0;    // open now, idle or in use
  // Children's responses to one parent folded into shared transactions
  // (response_batcher.h): transactions of 2 or more, the responses in them,
  // and groups that failed (their members then wrote alone).
  uint64_t response_groups = 0;
  uint64_t grouped_responses = 0;
  uint64_t failed_response_groups = 0;
  // Notices sent to other processes (notice_sender.h): transactions, the
  // notices in them, and notices dropped (server unreachable; they poll).
  uint64_t notice_batches = 0;
  uint64_t notices_sent = 0;
  uint64_t notices_dropped = 0;
};

class PostgresPool final : public DbPool {
 public:
  // Connects, runs the forward migrations (a no-op when current; concurrent
  // openers serialise on an advisory lock) and starts the listener. Fails
  // with a clear DbErrorGeneric when the server cannot be reached or the
  // schema is newer than this build.
  static Result<std::unique_ptr<PostgresPool>, DbErrorGeneric> Open(const PostgresOptions& options);

  ~PostgresPool() override;
  PostgresPool(const PostgresPool&) = delete;
  PostgresPool& operator=(const PostgresPool&) = delete;

  Result<std::unique_ptr<DbExecutor>, DbErrorGeneric> DbExecConn() override;
  Result<std::unique_ptr<DbConnection>, DbErrorGeneric> Connection() override;
  Result<std::unique_ptr<DbExternalApi>, DbErrorGeneric> ExternalApiConn() override;
  Result<std::unique_ptr<DbConnectionTest>, DbErrorGeneric> ConnectionTest() override;
  void Close() override;

  // Thread-safe; a snapshot of counters that other threads keep advancing.
  PostgresPoolStats Stats() const;

 private:
  explicit PostgresPool(std::shared_ptr<internal::Store> store);
  std::shared_ptr<internal::Store> store_;
};

}  // namespace stele::storage::postgres
