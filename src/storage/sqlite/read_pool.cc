#include "storage/sqlite/read_pool.h"

#include <utility>

#include "base/log.h"

namespace stele::storage::sqlite::internal {

ReadPool::ReadPool(std::vector<std::unique_ptr<Connection>> connections)
    : idle_(std::move(connections)) {}

ReadPool::~ReadPool() { Close(); }

Result<std::unique_ptr<Connection>, DbErrorGeneric> ReadPool::Borrow() {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [this] { return closed_ || !idle_.empty(); });
  if (closed_) return Unexpected(DbErrorGeneric::Close());
  std::unique_ptr<Connection> connection = std::move(idle_.back());
  idle_.pop_back();
  ++borrowed_;
  return connection;
}

void ReadPool::Return(std::unique_ptr<Connection> connection) {
  std::lock_guard lock(mu_);
  --borrowed_;
  if (closed_) {
    connection.reset();  // Close() is waiting for the last one
    changed_.notify_all();
  } else {
    idle_.push_back(std::move(connection));
    // One connection came back: wake one borrower, not every one of them
    // (hundreds wait here when many workflows wait warm at once).
    changed_.notify_one();
  }
}

Result<void, DbErrorGeneric> ReadPool::Begin(Connection& connection) {
  STELE_ASSIGN_OR_RETURN(Statement begin, connection.Prepare("BEGIN"));
  return begin.Run();
}

void ReadPool::End(Connection& connection) {
  // A read transaction only ends; COMMIT cannot lose anything. A lingering
  // read transaction would pin the WAL and stop checkpoints, so if COMMIT
  // fails, ROLLBACK is tried as well.
  auto commit = connection.Prepare("COMMIT");
  if (commit && commit->Run()) return;
  if (connection.InTransaction()) {
    if (auto rollback = connection.Exec("ROLLBACK"); !rollback) {
      STELE_LOG(kError, "cannot end a read transaction: " << rollback.error().reason());
    }
  }
}

void ReadPool::Close() {
  std::unique_lock lock(mu_);
  closed_ = true;
  changed_.notify_all();
  changed_.wait(lock, [this] { return borrowed_ == 0; });
  idle_.clear();
}

}  // namespace stele::storage::sqlite::internal
