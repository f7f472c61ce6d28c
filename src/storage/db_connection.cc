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
                       std::move(created->metadata), std::move(created->scheduled_by)};
}

}  // namespace stele::storage
