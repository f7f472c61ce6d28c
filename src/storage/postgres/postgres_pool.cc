#include "storage/postgres/postgres_pool.h"

#include <utility>

#include "storage/postgres/connection.h"
#include "storage/postgres/store.h"

namespace stele::storage::postgres {

using internal::PostgresConnection;
using internal::Store;

Result<std::unique_ptr<PostgresPool>, DbErrorGeneric> PostgresPool::Open(
    const PostgresOptions& options) {
  STELE_ASSIGN_OR_RETURN(std::shared_ptr<Store> store, Store::Open(options));
  return std::unique_ptr<PostgresPool>(new PostgresPool(std::move(store)));
}

PostgresPool::PostgresPool(std::shared_ptr<Store> store) : store_(std::move(store)) {}

PostgresPool::~PostgresPool() { Close(); }

namespace {
template <class Role>
Result<std::unique_ptr<Role>, DbErrorGeneric> Make(const std::shared_ptr<Store>& store) {
  if (store->IsClosed()) return Unexpected(DbErrorGeneric::Close());
  return std::unique_ptr<Role>(new PostgresConnection(store));
}
}  // namespace

Result<std::unique_ptr<DbExecutor>, DbErrorGeneric> PostgresPool::DbExecConn() {
  return Make<DbExecutor>(store_);
}
Result<std::unique_ptr<DbConnection>, DbErrorGeneric> PostgresPool::Connection() {
  return Make<DbConnection>(store_);
}
Result<std::unique_ptr<DbExternalApi>, DbErrorGeneric> PostgresPool::ExternalApiConn() {
  return Make<DbExternalApi>(store_);
}
Result<std::unique_ptr<DbConnectionTest>, DbErrorGeneric> PostgresPool::ConnectionTest() {
  return Make<DbConnectionTest>(store_);
}

void PostgresPool::Close() { store_->Close(); }

PostgresPoolStats PostgresPool::Stats() const { return store_->Stats(); }

}  // namespace stele::storage::postgres
