#include "storage/sqlite/checkpointer.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "base/log.h"
#include "base/thread_name.h"

namespace stele::storage::sqlite::internal {

Checkpointer::Checkpointer(std::unique_ptr<Connection> connection, int threshold_pages)
    : connection_(std::move(connection)),
      threshold_pages_(threshold_pages),
      next_wake_pages_(threshold_pages) {
  thread_ = std::thread([this] {
    NameThisThread("stele-checkpoint");
    Loop();
  });
}

Checkpointer::~Checkpointer() { Close(); }

void Checkpointer::Attach(Connection& writer) {
  sqlite3_wal_hook(writer.raw(), &Checkpointer::WalHook, this);
}

int Checkpointer::WalHook(void* self, sqlite3* /*db*/, const char* /*name*/, int pages) {
  static_cast<Checkpointer*>(self)->OnCommit(pages);
  return SQLITE_OK;
}

void Checkpointer::OnCommit(int wal_pages) {
  const int before = last_wal_pages_.exchange(wal_pages, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  // A smaller WAL than after the previous commit: it restarted from its
  // beginning (or the inline catch-up reset the count).
  if (wal_pages < before) next_wake_pages_ = threshold_pages_;
  wal_pages_ = wal_pages;
  if (wal_pages >= next_wake_pages_ && !requested_) {
    requested_ = true;
    next_wake_pages_ = wal_pages + std::max(threshold_pages_ / 4, 1);
    wake_.notify_one();
  }
}

void Checkpointer::Close() {
  std::lock_guard close_lock(close_mu_);
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  connection_.reset();
}

void Checkpointer::CheckpointInlineIfLarge(Connection& writer) {
  if (last_wal_pages_.load(std::memory_order_relaxed) < 4 * threshold_pages_) return;
  if (Checkpoint(writer, SQLITE_CHECKPOINT_PASSIVE)) {
    last_wal_pages_.store(0, std::memory_order_relaxed);
  }
}

bool Checkpointer::Checkpoint(Connection& connection, int mode) {
  int log_frames = 0;
  int checkpointed = 0;
  int rc = sqlite3_wal_checkpoint_v2(connection.raw(), nullptr, mode, &log_frames, &checkpointed);
  if (rc == SQLITE_OK) {
    checkpoints_.fetch_add(1);
    return log_frames == checkpointed;
  }
  // BUSY: the other checkpointer (thread or writer) is at it, a TRUNCATE
  // could not get the readers out of the way, or another process
  // checkpoints; a later round retries. Anything else is worth a line in
  // the log but not fatal: the WAL keeps every committed page.
  if (rc != SQLITE_BUSY) {
    STELE_LOG(kWarn, "WAL checkpoint failed: " << connection.LastError("checkpoint").reason());
  }
  return false;
}

void Checkpointer::Loop() {
  using std::chrono::seconds;
  while (true) {
    bool closing = false;
    {
      std::unique_lock lock(mu_);
      // Also once a second: a quiet store should not keep a big WAL.
      wake_.wait_for(lock, seconds(1), [this] { return requested_ || closing_; });
      closing = closing_;
      const bool work = requested_ || wal_pages_ > 0;
      requested_ = false;
      if (!work && !closing) continue;
      wal_pages_ = 0;
    }
    if (closing) {
      // The writer has stopped: leave a small WAL behind.
      Checkpoint(*connection_, SQLITE_CHECKPOINT_TRUNCATE);
      return;
    }
    Checkpoint(*connection_, SQLITE_CHECKPOINT_PASSIVE);
  }
}

}  // namespace stele::storage::sqlite::internal
