#include "storage/sqlite/sqlite_pool.h"

#include <utility>

#include "storage/sqlite/connection.h"
#include "storage/sqlite/store.h"

namespace stele::storage::sqlite {

Result<std::unique_ptr<SqlitePool>, DbErrorGeneric> SqlitePool::Open(const SqliteOptions& options) {
  STELE_ASSIGN_OR_RETURN(auto store, internal::Store::Open(options));
  return std::unique_ptr<SqlitePool>(new SqlitePool(std::move(store)));
}

SqlitePool::SqlitePool(std::shared_ptr<internal::Store> store) : store_(std::move(store)) {}

SqlitePool::~SqlitePool() { Close(); }

Result<std::unique_ptr<DbExecutor>, DbErrorGeneric> SqlitePool::DbExecConn() {
  if (store_->IsClosed()) return Unexpected(DbErrorGeneric::Close());
  return std::unique_ptr<DbExecutor>(std::make_unique<internal::SqliteConnection>(store_));
}

Result<std::unique_ptr<DbConnection>, DbErrorGeneric> SqlitePool::Connection() {
  if (store_->IsClosed()) return Unexpected(DbErrorGeneric::Close());
  return std::unique_ptr<DbConnection>(std::make_unique<internal::SqliteConnection>(store_));
}

Result<std::unique_ptr<DbExternalApi>, DbErrorGeneric> SqlitePool::ExternalApiConn() {
  if (store_->IsClosed()) return Unexpected(DbErrorGeneric::Close());
  return std::unique_ptr<DbExternalApi>(std::make_unique<internal::SqliteConnection>(store_));
}

Result<std::unique_ptr<DbConnectionTest>, DbErrorGeneric> SqlitePool::ConnectionTest() {
  if (store_->IsClosed()) return Unexpected(DbErrorGeneric::Close());
  return std::unique_ptr<DbConnectionTest>(std::make_unique<internal::SqliteConnection>(store_));
}

void SqlitePool::Close() { store_->Close(); }

SqliteStats SqlitePool::stats() const { return store_->stats(); }

Result<void, DbErrorGeneric> SqlitePool::RunOnWriterForTest(std::function<void(sqlite3* db)> fn) {
  return store_->Write<void, DbErrorGeneric>(
      [&](internal::WriteContext& tx) -> Result<void, DbErrorGeneric> {
        fn(tx.connection.raw());
        return {};
      });
}

}  // namespace stele::storage::sqlite
