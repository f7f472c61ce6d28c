// NoticeSender: sends a pool's notices (notifier.h) to the other processes,
// outside the transactions that produced them, coalesced.
//
// Why not pg_notify inside each write transaction: PostgreSQL serialises
// every committing transaction that has notified on one database-wide lock,
// held until its commit record is flushed — so notifying writes cannot share
// a WAL flush (group commit), and every write paid its own fsync in turn
// (measured: W1 on PostgreSQL 700 wf/s with notify in the transaction, 1,005
// without). Here a write's notices are queued after its COMMIT and one
// thread sends whatever has queued as one implicit transaction of
// pg_notify statements: one serialised commit per batch, not per write.
//
// What this gives up: a notice reaches other processes one round trip and
// one commit after the write (not with it), and a process that dies between
// its COMMIT and the send never sends it. Notices are hints — waiters
// re-check the database when woken and poll as the fallback
// (PostgresOptions::poll_interval) — so nothing is lost, only a wake-up
// delayed to the next poll. Waiters of this pool are woken directly after
// COMMIT (Store::Write), never through this.
//
// Threading: Enqueue is thread-safe and never blocks on the network; one
// thread of its own sends, each send bounded by the reply timeout. Failed
// (or timed-out) sends are dropped (logged) and the connection is re-opened
// for the next batch.
// Ownership: owns its connection and thread; Stop (or destruction) sends
// what is queued, best effort, and joins.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/postgres/notifier.h"
#include "storage/postgres/pg_conn.h"

namespace stele::storage::postgres::internal {

// pg_notify statements on `channel` carrying `notices`, split so that each
// payload stays under PostgreSQL's 8000-byte limit.
std::vector<Statement> NotifyStatements(const std::string& channel,
                                        const std::vector<Notice>& notices);

class NoticeSender {
 public:
  NoticeSender(std::string conninfo, std::string channel, PgTimeouts timeouts = {});
  ~NoticeSender();  // Stop()
  NoticeSender(const NoticeSender&) = delete;
  NoticeSender& operator=(const NoticeSender&) = delete;

  void Enqueue(const std::vector<Notice>& notices);
  // Sends what is queued (best effort) and stops; later Enqueues are dropped.
  void Stop();

  struct Stats {
    uint64_t batches = 0;  // transactions sent
    uint64_t notices = 0;  // notices in them
    uint64_t dropped = 0;  // notices of failed sends
  };
  Stats GetStats() const;

 private:
  void Run();
  // One batch; reconnects first when needed. False when it was dropped.
  bool Send(const std::vector<Notice>& notices);

  const std::string conninfo_;
  const std::string channel_;
  const PgTimeouts timeouts_;
  std::unique_ptr<PgConn> conn_;  // sender thread only
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Notice> queued_;  // guarded by mu_
  bool stop_ = false;           // guarded by mu_
  Stats stats_;                 // guarded by mu_
  std::thread thread_;
};

}  // namespace stele::storage::postgres::internal
