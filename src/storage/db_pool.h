// DbPool: hands out role-specific connections to one database.
//
// Threading: thread-safe. Ownership: connections are owned by the caller and
// must not outlive the pool. After Close(), the factory methods below fail
// with DbErrorGeneric::Close, every call on a connection handed out earlier
// fails with it as well, and blocked waiters are released.
#pragma once

#include <memory>

#include "base/result.h"
#include "storage/db_errors.h"
#include "storage/db_external_api.h"

namespace stele::storage {

class DbPool {
 public:
  virtual ~DbPool() = default;
  // Each factory returns a new connection of one role.
  // Errors: Close once Close() was called; Generic when the backend cannot
  // open a connection.
  virtual Result<std::unique_ptr<DbExecutor>, DbErrorGeneric> DbExecConn() = 0;
  virtual Result<std::unique_ptr<DbConnection>, DbErrorGeneric> Connection() = 0;
  virtual Result<std::unique_ptr<DbExternalApi>, DbErrorGeneric> ExternalApiConn() = 0;
  // For tests and the differential oracle only.
  virtual Result<std::unique_ptr<DbConnectionTest>, DbErrorGeneric> ConnectionTest() = 0;
  // Idempotent; flushes and releases the database.
  virtual void Close() = 0;
};

}  // namespace stele::storage
