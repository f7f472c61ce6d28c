// Writer: the one thread that owns the write connection, and the group
// commit it performs (as in Obelisk's SQLite backend, with per-operation
// savepoints instead of Obelisk 0.34's "commit whatever an op wrote";
// docs/model.md §12).
//
// Callers submit a WriteOp to a bounded queue and block until it completes.
// The thread takes the first op, runs `BEGIN IMMEDIATE`, then runs that op
// and every op already queued (up to max_ops_per_transaction), each inside
// `SAVEPOINT op`:
//   - an op that succeeds is RELEASEd and its notifications kept;
//   - an op that fails is rolled back to its savepoint (ROLLBACK TO +
//     RELEASE), so none of its writes survive, and gets its own error;
//   - if SQLite aborts the whole transaction by itself (I/O error, disk
//     full), or BEGIN / SAVEPOINT / COMMIT fail, every op of the
//     transaction fails with DbErrorGeneric and nothing of it is written.
// After a successful COMMIT the collected notifications are delivered and
// then every caller is answered, so a caller that sees its write
// acknowledged also knows that waiters have been woken.
//
// Answers. Delivering them (waking every caller and every waiter) is left
// to a second thread, the answerer, which takes each transaction's answers
// in commit order. On a busy server the writer is the one serial stage, and
// each wake-up it made itself could hand its core to the woken thread
// (the scheduler favours a thread that has just woken): measured on two
// cores, answering inline took 10-18 % of the writer's time and the writer
// waited for a core a third of the time it had work. Handing a whole
// transaction's answers over costs the writer one wake-up.
//
// Unsynced commits. With synchronous=FULL, a transaction whose ops all
// either take locks (LockPending*, LockOne) or fire a timer (a delay's
// response with ok = true, written by the expired-timers watcher) commits
// with synchronous=NORMAL: no fsync of its own. In WAL mode a later synced
// commit makes every earlier frame durable, so what a power loss can take
// is a tail of such transactions, and the engine makes each good by
// itself: a lost lock is the state as if its holder (which died with the
// machine) had died just before taking it; a lost fired delay leaves its
// t_delay row, which the restarted watcher fires again. Nothing that acts
// on them reaches the outside world before a synced commit (a child's
// creation, a result), which makes them durable first. A process crash
// (kill -9) loses nothing: the frames are in the page cache. Nothing a
// caller acknowledges to a user (submissions, results, responses, stubs,
// cancels, a delay cancelled) is ever in such a transaction: a queued op
// that needs the sync waits for the next transaction. This takes one of
// the three fsyncs out of every activity step, and one out of every wake
// from a durable sleep.
//
// Threading: Submit/Close/stats are thread-safe; ops run on the writer
// thread only, and are completed (or failed) on the answerer thread.
// Ownership: the Writer owns the connection and both threads; the Notifier
// must outlive it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/result.h"
#include "storage/db_errors.h"
#include "storage/sqlite/checkpointer.h"
#include "storage/sqlite/notifier.h"
#include "storage/sqlite/sqlite_handle.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele::storage::sqlite::internal {

class PreEncodedEvents;  // event_codec.h

// What an op sees while it runs: the connection (inside a transaction and a
// savepoint) and the notifications it wants delivered if it commits. An op
// may point `pre_encoded` at rows its caller encoded (event_codec.h).
struct WriteContext {
  Connection& connection;
  Notifications notes;
  const PreEncodedEvents* pre_encoded = nullptr;
};

class WriteOp {
 public:
  virtual ~WriteOp() = default;
  // Runs inside the op's savepoint; returns true to keep its writes, false
  // to roll them back. Must not throw.
  virtual bool Run(WriteContext& context) = 0;
  // Called once after the op's transaction committed (with the outcome Run
  // produced) or failed as a whole (with `error`). Exactly one of them is
  // called for every op accepted by Submit.
  virtual void Complete() = 0;
  virtual void Fail(const DbErrorGeneric& error) = 0;
  // Whether the op's commit must reach the disk before it is acknowledged.
  // Only lock acquisitions and fired timers say no (see "Unsynced
  // commits" above).
  virtual bool needs_sync() const { return true; }
};

class Writer {
 public:
  // `checkpointer` (may be null) gets a chance to catch up on the WAL
  // between transactions; it must outlive the writer.
  Writer(std::unique_ptr<Connection> connection, const SqliteOptions& options, Notifier& notifier,
         Checkpointer* checkpointer);
  // Closes.
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Queues `op`, blocking while the queue is full. The op completes later
  // on the writer thread. Errors: Close when the writer is closed (the op is
  // then neither run nor completed).
  Result<void, DbErrorGeneric> Submit(std::unique_ptr<WriteOp> op);

  // Idempotent. Refuses new ops, runs every op already queued, stops and
  // joins the thread and closes the connection.
  void Close();

  SqliteStats stats() const;

 private:
  void Loop();
  // Runs one transaction starting with `first`.
  void RunTransaction(std::unique_ptr<WriteOp> first);
  // Next queued op without blocking, or nullptr; with `only_unsynced`,
  // nullptr also when the next op needs a synced commit.
  std::unique_ptr<WriteOp> TryPop(bool only_unsynced);
  // Sets synchronous=FULL or NORMAL on the connection when it differs from
  // the current level. Outside a transaction only (SQLite's rule).
  Result<void, DbErrorGeneric> SetSynced(bool synced);
  // A transaction's outcome for its ops: committed (deliver `notes`, then
  // Complete each op) or failed as a whole (Fail each op with `error`).
  struct Answers {
    std::vector<std::unique_ptr<WriteOp>> ops;
    Notifications notes;
    std::optional<DbErrorGeneric> error;
  };
  // Queues `answers` for the answerer (writer thread).
  void Answer(Answers answers);
  void AnswerLoop();

  std::unique_ptr<Connection> connection_;  // writer thread only (after start)
  Notifier& notifier_;
  Checkpointer* checkpointer_;
  const size_t capacity_;
  const size_t max_ops_per_transaction_;
  const bool sync_commits_;        // synchronous=FULL configured
  bool connection_synced_ = true;  // the connection's level (writer thread)

  mutable std::mutex mu_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<std::unique_ptr<WriteOp>> queue_;  // guarded by mu_
  bool closing_ = false;                        // guarded by mu_
  std::mutex close_mu_;                         // serialises Close()
  std::thread thread_;

  std::mutex answers_mu_;
  std::condition_variable answers_ready_;
  std::deque<Answers> answers_;   // guarded by answers_mu_, in commit order
  bool answers_closing_ = false;  // guarded by answers_mu_
  std::thread answer_thread_;

  std::atomic<uint64_t> transactions_committed_{0};
  std::atomic<uint64_t> transactions_failed_{0};
  std::atomic<uint64_t> ops_committed_{0};
  std::atomic<uint64_t> ops_rolled_back_{0};
  std::atomic<uint64_t> max_ops_in_transaction_{0};
  std::atomic<uint64_t> unsynced_commits_{0};
};

}  // namespace stele::storage::sqlite::internal
