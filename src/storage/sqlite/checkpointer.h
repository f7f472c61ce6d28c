// Checkpointer: a background thread that copies committed WAL pages into
// the database file, so that the writer thread never does it inline.
//
// Why: a checkpoint writes pages scattered over the whole database file and
// fsyncs it; with a large store that takes milliseconds and, done inline by
// SQLite's auto-checkpoint, lands on whichever commit crosses the threshold
// (a latency spike for that caller and every op in its group commit). A
// PASSIVE checkpoint from a second connection runs concurrently with the
// writer and the readers and never blocks them; the writer restarts the WAL
// from its beginning once a checkpoint has caught up.
//
// The writer's connection reports each commit's WAL size (sqlite3_wal_hook);
// past `threshold_pages` the thread is woken, and again each time the WAL
// has grown by another quarter of it (not on every commit: each checkpoint
// fsyncs the WAL and the database, and those fsyncs compete with the
// writer's own). It also checkpoints once a
// second while the WAL is not empty, and truncates the WAL on Close.
//
// A background checkpoint never quite finishes under a steady stream of
// commits (new frames keep arriving), and SQLite restarts the WAL only after
// a checkpoint that copied everything. So once the WAL passes 4× the
// threshold, the writer itself runs a PASSIVE checkpoint between two
// transactions (CheckpointInlineIfLarge): with no concurrent commit it
// completes, usually copying only the tail the background thread has not
// reached, and the next transaction starts the WAL afresh.
//
// Threading: OnCommit is called on the writer thread; everything else runs
// on the checkpointer thread. Ownership: owns its connection and thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "storage/sqlite/sqlite_handle.h"

namespace stele::storage::sqlite::internal {

class Checkpointer {
 public:
  Checkpointer(std::unique_ptr<Connection> connection, int threshold_pages);
  // Closes.
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Installs the WAL hook on the writer's connection. The hook replaces
  // SQLite's auto-checkpoint on that connection. REQUIRES: called before the
  // writer thread starts; `writer` outlives this object's Close().
  void Attach(Connection& writer);

  // Stops the thread after a final TRUNCATE checkpoint (call after the
  // writer stopped). Idempotent.
  void Close();

  // Writer thread, between transactions: the inline catch-up described
  // above, when the WAL has grown past 4× the threshold.
  void CheckpointInlineIfLarge(Connection& writer);

  uint64_t checkpoints() const { return checkpoints_.load(); }

 private:
  static int WalHook(void* self, sqlite3* db, const char* name, int pages);
  void OnCommit(int wal_pages);
  void Loop();
  // Runs a checkpoint of `mode` on `connection`; true when it completed.
  bool Checkpoint(Connection& connection, int mode);

  std::unique_ptr<Connection> connection_;  // checkpointer thread only
  const int threshold_pages_;

  std::mutex mu_;
  std::condition_variable wake_;
  bool requested_ = false;  // guarded by mu_
  bool closing_ = false;    // guarded by mu_
  int wal_pages_ = 0;       // guarded by mu_: WAL size after the last commit
  // WAL size that wakes the thread next (guarded by mu_): the threshold,
  // then a quarter threshold more after each wake-up until the WAL
  // restarts. Without the step, every commit past the threshold would
  // wake a checkpoint (two fsyncs) while the WAL cannot restart.
  int next_wake_pages_ = 0;
  std::mutex close_mu_;
  std::thread thread_;
  std::atomic<uint64_t> checkpoints_{0};
  // WAL size after the last commit, for the writer's inline catch-up.
  std::atomic<int> last_wal_pages_{0};
};

}  // namespace stele::storage::sqlite::internal
