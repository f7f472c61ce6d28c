// SqlitePool: the embedded default storage backend — one SQLite file in WAL
// mode, serving every role of the storage contract (storage/db_pool.h).
//
// Design (Obelisk's single-writer SQLite backend; notifications as in
// docs/model.md §10):
//  - Exactly one write connection, owned by one writer thread. Every write
//    is a logical operation submitted to a bounded queue. The thread opens
//    `BEGIN IMMEDIATE`, runs the first operation and every operation already
//    queued (up to `max_ops_per_transaction`) in the same physical
//    transaction, each under its own SAVEPOINT, then commits once and
//    answers every caller (group commit). An operation that fails is rolled
//    back to its savepoint alone and gets its own error; the others commit.
//    If the COMMIT itself fails, every operation of that transaction fails
//    with DbErrorGeneric (nothing of it was written; callers retry).
//  - Reads of the API (events, state, lists, responses, backtraces, the
//    expired timers) run on a small pool of read-only connections; WAL gives
//    each read a consistent snapshot and reads never queue behind writes.
//    Reads that must be atomic with registering a waiter
//    (SubscribeToNextResponses, WaitForFinishedResult) run on the writer.
//  - Notifications (new pending work, responses, finished results) are
//    collected inside the transaction and delivered only after COMMIT.
//  - A checkpointer thread with its own connection copies the WAL into the
//    database file (PASSIVE checkpoints), so no commit pays for it; Close
//    leaves a truncated WAL.
//
// Threading: SqlitePool and every connection it hands out are safe for
// concurrent use from any number of threads.
// Ownership: connections share the pool's internals; a connection that
// outlives its pool (or is used after Close) fails every call with
// DbErrorGeneric::Close and every wait returns at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "storage/db_errors.h"
#include "storage/db_pool.h"

struct sqlite3;

namespace stele::storage::sqlite {

namespace internal {
class Store;
}  // namespace internal

struct SqliteOptions {
  // Path of the database file; created when missing. In-memory databases
  // are refused: the read connections could not see them.
  std::string path = {};
  // Durability of a COMMIT. kFull (default) loses no acknowledged write on
  // power loss; kNormal may lose the last transactions on power loss (never
  // on a process crash) and is much faster.
  enum class Synchronous { kFull, kNormal } synchronous = Synchronous::kFull;
  // Logical write operations that may wait for the writer thread; further
  // callers block until there is room (back-pressure).
  size_t queue_capacity = 1024;
  // Read-only connections serving the read API and the waits (at least 1).
  // Every warm workflow checks for its responses on one, so a busy engine
  // needs more than a couple (W1: 2 -> 4 took 2,400 to 3,200 wf/s).
  int read_connections = 4;
  // Run `PRAGMA quick_check` at open and refuse a damaged file.
  bool integrity_check_at_open = true;
  // Further `PRAGMA name=value` applied to every connection after the
  // defaults, e.g. {"cache_size", "-65536"}. Names and values are limited to
  // [A-Za-z0-9_.-] (no SQL injection through configuration).
  std::vector<std::pair<std::string, std::string>> extra_pragmas = {};
  // Cap on logical operations per physical transaction (group commit).
  size_t max_ops_per_transaction = 256;
  // How long a connection waits for a lock held by another process.
  int busy_timeout_ms = 5000;
};

// Counters of the writer, for tests and metrics. Monotonic since Open.
struct SqliteStats {
  uint64_t transactions_committed = 0;  // physical COMMITs that succeeded
  uint64_t transactions_failed = 0;     // BEGIN/COMMIT failures (ops got Generic)
  uint64_t ops_committed = 0;           // logical ops whose effects committed
  uint64_t ops_rolled_back = 0;         // logical ops rolled back to their savepoint
  uint64_t max_ops_in_transaction = 0;  // largest group commit so far
  uint64_t unsynced_commits = 0;        // lock-only commits without fsync (writer.h)
  uint64_t queued_ops = 0;              // waiting for the writer right now
  // SQLite statement counters over all connections (reads included): VM
  // steps, steps of full scans, sorts, automatic indexes.
  uint64_t vm_steps = 0;
  uint64_t full_scan_steps = 0;
  uint64_t sorts = 0;
  uint64_t auto_indexes = 0;
  uint64_t checkpoints = 0;  // WAL checkpoints done by the checkpointer thread
};

class SqlitePool final : public DbPool {
 public:
  // Opens (creating if needed) the database at `options.path`: applies the
  // PRAGMAs, checks integrity, runs forward migrations in one transaction
  // and starts the writer thread. Fails with a clear DbErrorGeneric when the
  // file is damaged, not a database, or has a schema newer than this code.
  static Result<std::unique_ptr<SqlitePool>, DbErrorGeneric> Open(const SqliteOptions& options);

  // Closes (see Close).
  ~SqlitePool() override;
  SqlitePool(const SqlitePool&) = delete;
  SqlitePool& operator=(const SqlitePool&) = delete;

  Result<std::unique_ptr<DbExecutor>, DbErrorGeneric> DbExecConn() override;
  Result<std::unique_ptr<DbConnection>, DbErrorGeneric> Connection() override;
  Result<std::unique_ptr<DbExternalApi>, DbErrorGeneric> ExternalApiConn() override;
  Result<std::unique_ptr<DbConnectionTest>, DbErrorGeneric> ConnectionTest() override;

  // Idempotent. Runs every write already queued, then stops the writer
  // thread, releases every waiter and closes all connections. Writes
  // submitted afterwards fail with DbErrorGeneric::Close.
  void Close() override;

  SqliteStats stats() const;

  // Test hook: runs `fn` on the writer thread inside the write transaction
  // and the op's savepoint, as one logical operation (so it blocks every
  // other write while it runs). `fn` may use the raw write connection, e.g.
  // to provoke failures. Returns the op's outcome.
  Result<void, DbErrorGeneric> RunOnWriterForTest(std::function<void(sqlite3* db)> fn);

 private:
  explicit SqlitePool(std::shared_ptr<internal::Store> store);
  std::shared_ptr<internal::Store> store_;
};

}  // namespace stele::storage::sqlite
