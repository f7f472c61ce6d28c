// Queries shared by the writer's operations and the read connections: load
// an execution's state, events and responses. They run inside whatever
// transaction the caller holds (the writer's, or a read snapshot).
//
// Threading: on the connection's owning thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "core/execution_event.h"
#include "storage/db_errors.h"
#include "storage/requests.h"
#include "storage/sqlite/row_codec.h"
#include "storage/sqlite/sqlite_handle.h"

namespace stele::storage::sqlite::internal {

// nullopt when the execution does not exist.
Result<std::optional<ExecutionState>, DbErrorGeneric> LoadState(Connection& db,
                                                                std::string_view execution_id);

// Every event in version order (backtrace_id unset).
Result<std::vector<core::ExecutionEvent>, DbErrorGeneric> LoadEvents(Connection& db,
                                                                     std::string_view execution_id);

// One event; nullopt when absent.
Result<std::optional<core::ExecutionEvent>, DbErrorGeneric> LoadEvent(Connection& db,
                                                                      std::string_view execution_id,
                                                                      Version version);

// Responses with cursor >= from_cursor, in cursor order.
Result<std::vector<ResponseWithCursor>, DbErrorGeneric> LoadResponses(Connection& db,
                                                                      std::string_view execution_id,
                                                                      uint32_t from_cursor);

// The full journal (test/oracle view). nullopt when absent.
Result<std::optional<ExecutionLog>, DbErrorGeneric> LoadLog(Connection& db,
                                                            const ExecutionId& execution_id);

}  // namespace stele::storage::sqlite::internal
