#include "storage/requests.h"

namespace stele::storage {

core::Created CreateRequest::ToCreatedEvent() const {
  return core::Created{ffqn,         params,   parent,       scheduled_at,
                       component_id, metadata, scheduled_by, policy};
}

}  // namespace stele::storage
