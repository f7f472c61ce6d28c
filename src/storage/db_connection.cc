#include "storage/db_connection.h"

#include "base/log.h"

namespace stele::storage {

void DbConnection::StoreBacktraces(std::vector<core::BacktraceInfo> batch) {
  if (batch.empty()) return;
  if (auto stored = AppendBacktraceBatch(batch); !stored) {
    STELE_LOG(kWarn, "storing " << batch.size() << " backtraces of "
                                << batch.front().execution_id.ToString()
                                << " failed: " << stored.error().ToString());
  }
}

Result<CreateRequest, DbErrorRead> DbConnection::GetCreateRequest(const ExecutionId& execution_id) {
  STELE_ASSIGN_OR_RETURN(core::ExecutionEvent event, GetExecutionEvent(execution_id, Version(0)));
  auto* created = std::get_if<core::Created>(&event.event);
  if (created == nullptr) {
    STELE_LOG(kError, execution_id.ToString() << ": execution log must start with creation");
    return Unexpected(
        DbErrorRead(DbErrorGeneric::Uncategorized("execution log must start with creation")));
  }
  return CreateRequest{event.created_at,
                       execution_id,
                       std::move(created->ffqn),
                       std::move(created->params),
                       std::move(created->parent),
                       created->scheduled_at,
                       std::move(created->component_id),
                       std::move(created->metadata),
                       std::move(created->scheduled_by),
                       std::move(created->policy)};
}

Result<Version, DbErrorWrite> DbConnection::AppendBatch(DateTime current_time,
                                                        const std::vector<AppendRequest>& batch,
                                                        const ExecutionId& execution_id,
                                                        Version version) {
  STELE_ASSIGN_OR_RETURN(
      CreatedAndLockedChildren written,
      WriteStep(StepWrite{current_time, execution_id, version, batch, {}, {}, {}}));
  return written.next_version;
}

Result<Version, DbErrorWrite> DbConnection::AppendBatchCreateNewExecution(
    DateTime current_time, const std::vector<AppendRequest>& batch, const ExecutionId& execution_id,
    Version version, const std::vector<CreateRequest>& child_requests) {
  STELE_ASSIGN_OR_RETURN(
      CreatedAndLockedChildren written,
      WriteStep(StepWrite{current_time, execution_id, version, batch, child_requests, {}, {}}));
  return written.next_version;
}

Result<CreatedAndLockedChildren, DbErrorWrite> DbConnection::AppendBatchCreateAndLockChildren(
    DateTime current_time, const std::vector<AppendRequest>& batch, const ExecutionId& execution_id,
    Version version, const std::vector<CreateRequest>& child_requests,
    const std::vector<ChildLock>& locks) {
  return WriteStep(
      StepWrite{current_time, execution_id, version, batch, child_requests, locks, {}});
}

Result<CreatedAndLockedChildren, DbErrorWrite> DbConnection::AppendOutcomesAndBatch(
    DateTime current_time, const std::vector<ChildOutcome>& outcomes,
    const std::vector<AppendRequest>& batch, const ExecutionId& execution_id, Version version,
    const std::vector<CreateRequest>& child_requests, const std::vector<ChildLock>& locks) {
  return WriteStep(
      StepWrite{current_time, execution_id, version, batch, child_requests, locks, outcomes});
}

}  // namespace stele::storage
