#include "storage/memory/memory_pool.h"

#include <mutex>
#include <utility>

#include "storage/memory/memory_connection.h"
#include "storage/memory/memory_state.h"

namespace stele::storage::memory {

namespace {

// Every role is served by the same connection class; the pool only narrows
// the interface handed out.
Result<std::unique_ptr<DbConnectionTest>, DbErrorGeneric> NewConnection(
    const std::shared_ptr<internal::MemoryState>& state) {
  std::lock_guard lock(state->mu);
  if (state->closed) return Unexpected(DbErrorGeneric::Close());
  return std::unique_ptr<DbConnectionTest>(std::make_unique<internal::MemoryConnection>(state));
}

}  // namespace

std::unique_ptr<MemoryPool> MemoryPool::Create() {
  return std::unique_ptr<MemoryPool>(new MemoryPool(std::make_shared<internal::MemoryState>()));
}

MemoryPool::MemoryPool(std::shared_ptr<internal::MemoryState> state) : state_(std::move(state)) {}

MemoryPool::~MemoryPool() { Close(); }

Result<std::unique_ptr<DbExecutor>, DbErrorGeneric> MemoryPool::DbExecConn() {
  STELE_ASSIGN_OR_RETURN(std::unique_ptr<DbConnectionTest> conn, NewConnection(state_));
  return std::unique_ptr<DbExecutor>(std::move(conn));
}

Result<std::unique_ptr<DbConnection>, DbErrorGeneric> MemoryPool::Connection() {
  STELE_ASSIGN_OR_RETURN(std::unique_ptr<DbConnectionTest> conn, NewConnection(state_));
  return std::unique_ptr<DbConnection>(std::move(conn));
}

Result<std::unique_ptr<DbExternalApi>, DbErrorGeneric> MemoryPool::ExternalApiConn() {
  STELE_ASSIGN_OR_RETURN(std::unique_ptr<DbConnectionTest> conn, NewConnection(state_));
  return std::unique_ptr<DbExternalApi>(std::move(conn));
}

Result<std::unique_ptr<DbConnectionTest>, DbErrorGeneric> MemoryPool::ConnectionTest() {
  return NewConnection(state_);
}

void MemoryPool::Close() {
  std::lock_guard lock(state_->mu);
  state_->closed = true;
  state_->changed.notify_all();  // releases every waiter
  state_->watches.Close();
}

}  // namespace stele::storage::memory
