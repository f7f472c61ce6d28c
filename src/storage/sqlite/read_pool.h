// ReadPool: a few read-only connections serving the read API beside the
// writer. In WAL mode each read transaction sees the latest commit as of
// its start and never blocks, nor is blocked by, the writer.
//
// Threading: thread-safe; a borrowed connection is used by its borrower
// only. Borrowers wait when every connection is in use.
// Ownership: the pool owns its connections.
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "storage/db_errors.h"
#include "storage/sqlite/sqlite_handle.h"

namespace stele::storage::sqlite::internal {

class ReadPool {
 public:
  explicit ReadPool(std::vector<std::unique_ptr<Connection>> connections);
  ~ReadPool();
  ReadPool(const ReadPool&) = delete;
  ReadPool& operator=(const ReadPool&) = delete;

  // Runs `fn(Connection&)` inside one read transaction (one snapshot) on a
  // borrowed connection; `fn` returns Result<T, E> with E constructible
  // from DbErrorGeneric. Errors: Close after Close(); Generic when the read
  // transaction cannot begin.
  template <class F>
  auto Read(F&& fn) -> decltype(fn(std::declval<Connection&>()));

  // Refuses new reads, waits for borrowed connections to come back and
  // closes them. Idempotent.
  void Close();

 private:
  class Lease {
   public:
    Lease(ReadPool* pool, std::unique_ptr<Connection> connection)
        : pool_(pool), connection_(std::move(connection)) {}
    ~Lease() { pool_->Return(std::move(connection_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Connection& connection() { return *connection_; }

   private:
    ReadPool* pool_;
    std::unique_ptr<Connection> connection_;
  };

  Result<std::unique_ptr<Connection>, DbErrorGeneric> Borrow();
  void Return(std::unique_ptr<Connection> connection);
  static Result<void, DbErrorGeneric> Begin(Connection& connection);
  static void End(Connection& connection);

  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
  size_t borrowed_ = 0;                            // guarded by mu_
  bool closed_ = false;                            // guarded by mu_
};

template <class F>
auto ReadPool::Read(F&& fn) -> decltype(fn(std::declval<Connection&>())) {
  using R = decltype(fn(std::declval<Connection&>()));
  auto borrowed = Borrow();
  if (!borrowed) return R(Unexpected(std::move(borrowed).error()));
  Lease lease(this, std::move(*borrowed));
  if (auto begin = Begin(lease.connection()); !begin) {
    return R(Unexpected(std::move(begin).error()));
  }
  // Exceptions (allocation failure) must not cross the module boundary nor
  // leave the read transaction open.
  try {
    R result = fn(lease.connection());
    End(lease.connection());
    return result;
  } catch (const std::exception& e) {
    End(lease.connection());
    return R(Unexpected(DbErrorGeneric::Uncategorized(std::string("read failed: ") + e.what())));
  }
}

}  // namespace stele::storage::sqlite::internal
