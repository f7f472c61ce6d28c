#include "storage/db_connection.h"

#include "base/log.h"

namespace stele::storage {

Result<CreateRequest, DbErrorRead> DbConnection::GetCreateRequest(
    const ExecutionId& execution_id) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionEvent event,
                         GetExecutionEvent(execution_id, Version(0)));
  auto* created = std::get_if<core::Created>(&event.event);
  if (created == nullptr) {
    STELE_LOG(kError, execution_id.ToString() << ": execution log must start with creation");
    return Unexpected(DbErrorRead(
        DbErrorGeneric::Uncategorized("execution log must start with creation")));
  }
  return CreateRequest{event.created_at,     execution_id,           std::move(created->ffqn),
                       std::move(created->params), std::move(created->parent),
                       created->scheduled_at, std::move(created->component_id),
                       std::move(created->metadata), std::move(created->scheduled_by),
                       std::move(created->policy)};
}

Result<CreatedAndLockedChildren, DbErrorWrite> DbConnection::AppendBatchCreateAndLockChildren(
    DateTime current_time, const std::vector<AppendRequest>& batch,
    const ExecutionId& execution_id, Version version,
    const std::vector<CreateRequest>& child_requests, const std::vector<ChildLock>& locks) {
  STELE_ASSIGN_OR_RETURN(Version next, AppendBatchCreateNewExecution(current_time, batch,
                                                                     execution_id, version,
                                                                     child_requests));
  CreatedAndLockedChildren result{next, {}};
  for (const ChildLock& lock : locks) {
    const core::Locked& l = lock.locked;
    auto locked = LockOne(current_time, l.component_id, lock.child_id, l.run_id, Version(1),
                          l.executor_id, l.lock_expires_at, l.retry_config);
    if (locked) {
      result.locked.push_back(*std::move(locked));
    } else {
      // Someone else was quicker, or the rules refuse it: it stays pending.
      STELE_LOG(kDebug, lock.child_id.ToString()
                            << ": not locked after creation: " << locked.error().ToString());
    }
  }
  return result;
}

Result<CreatedAndLockedChildren, DbErrorWrite> DbConnection::AppendOutcomesAndBatch(
    DateTime, const std::vector<ChildOutcome>&, const std::vector<AppendRequest>&,
    const ExecutionId&, Version, const std::vector<CreateRequest>&, const std::vector<ChildLock>&) {
  return Unexpected(DbErrorWriteNonRetriable::ValidationFailed(
      "AppendOutcomesAndBatch is not supported by this backend"));
}

}  // namespace stele::storage
