// MemoryPool: the in-memory reference backend of the storage contract.
//
// Deliberately simple and obviously correct rather than fast: a journal per
// execution, every operation one critical section under a single mutex, and
// the pending state moved event by event exactly as the transition table of
// docs/model.md §4.3 says. It is the oracle of the differential
// tests and the fake behind executor unit tests; nothing is persisted.
//
// Threading: thread-safe; connections may be used from any thread.
// Ownership: connections share the database with the pool and keep it
// alive, but once the pool is closed (or destroyed) every call on them fails
// with DbErrorGeneric::Close and blocked waiters are released.
#pragma once

#include <memory>

#include "storage/db_pool.h"

namespace stele::storage::memory {

namespace internal {
struct MemoryState;
}  // namespace internal

class MemoryPool final : public DbPool {
 public:
  static std::unique_ptr<MemoryPool> Create();
  ~MemoryPool() override;

  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  Result<std::unique_ptr<DbExecutor>, DbErrorGeneric> DbExecConn() override;
  Result<std::unique_ptr<DbConnection>, DbErrorGeneric> Connection() override;
  Result<std::unique_ptr<DbExternalApi>, DbErrorGeneric> ExternalApiConn() override;
  Result<std::unique_ptr<DbConnectionTest>, DbErrorGeneric> ConnectionTest() override;
  void Close() override;

 private:
  explicit MemoryPool(std::shared_ptr<internal::MemoryState> state);

  std::shared_ptr<internal::MemoryState> state_;
};

}  // namespace stele::storage::memory
