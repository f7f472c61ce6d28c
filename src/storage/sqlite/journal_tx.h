// The journal inside a write transaction: appending events and responses,
// creating executions, and keeping t_state equal to the pending state the
// transition table of docs/model.md §4.3 prescribes. Every function
// validates before it writes, and the writer's per-operation SAVEPOINT
// discards partial writes of an operation that fails later.
//
// Checks, in this order (as the memory reference model does):
//   Created in an append → ValidationFailed; unknown execution → NotFound;
//   finished → IllegalState "already finished"; version mismatch →
//   VersionConflict{expected = next version, requested}; for Locked the
//   lock rules of storage::CanAppendLock.
//
// Threading: writer thread only.
#pragma once

#include <vector>

#include "base/result.h"
#include "base/time.h"
#include "core/execution_event.h"
#include "storage/db_errors.h"
#include "storage/requests.h"
#include "storage/sqlite/writer.h"

namespace stele::storage::sqlite::internal {

// Appends one event at `version`; returns the next version.
// `current_time` only decides wake-ups (is the new PendingAt due?).
// The event's row is looked up in tx.pre_encoded under `source`, or under
// &req.event when `source` is null (event_codec.h, PreEncodedEvents).
Result<Version, DbErrorWrite> AppendEventTx(WriteContext& tx, const ExecutionId& execution_id,
                                            Version version, const AppendRequest& req,
                                            DateTime current_time, const void* source = nullptr);

// Appends `batch` at consecutive versions; all or nothing (the caller's
// savepoint). ValidationFailed for an empty batch or any Created.
Result<Version, DbErrorWrite> AppendBatchTx(WriteContext& tx, const ExecutionId& execution_id,
                                            Version version,
                                            const std::vector<AppendRequest>& batch,
                                            DateTime current_time);

// Records a response of `execution_id` (NotFound when absent). The response
// must answer a request of it (request_rules.h): NotFound for a delay
// without its live timer, for a child that does not exist, or for an id
// naming another execution or join set. At most one response per child id
// and per delay id: a second one is Conflict. Unblocks
// an execution BlockedByJoinSet on the same join set to
// PendingAt(max(lease, response time)); a delay response deletes the timer.
Result<void, DbErrorWrite> InsertResponseTx(WriteContext& tx, const ExecutionId& execution_id,
                                            const core::JoinSetResponseEventOuter& response,
                                            DateTime current_time);

// The index the next response of `id` gets (its response count).
// The message `message_id` delivered to `id` before (its join set and
// body), if any.
Result<std::optional<core::JoinSetResponseEvent>, DbErrorGeneric> FindMessage(
    Connection& db, std::string_view id, const std::string& message_id);

Result<uint32_t, DbErrorGeneric> NextCursor(Connection& db, std::string_view id);

// The outcome recorded for `delay_id` (true = expired), if any.
Result<std::optional<bool>, DbErrorGeneric> FindDelayResponse(Connection& db,
                                                              const core::DelayId& delay_id);

// Creates an execution (Created at 0, PendingAt(scheduled_at)); returns
// Version(1). IllegalState when the id exists. ValidateCreateRequest only:
// the caller checks who may create it (ValidateStandaloneCreate,
// ValidateChildCreation).
Result<Version, DbErrorWrite> CreateTx(WriteContext& tx, const CreateRequest& req,
                                       DateTime current_time);

// What the lock holder needs, read right after `locked` was appended at
// next_version - 1: history events with versions, all responses, params...
Result<LockedExecution, DbErrorGeneric> LoadLockedExecution(Connection& db,
                                                            const ExecutionId& execution_id,
                                                            const core::Locked& locked,
                                                            Version next_version);

// Moves the execution to a new component digest (see DbExternalApi).
Result<void, DbErrorWrite> UpgradeComponentTx(WriteContext& tx, const ExecutionId& execution_id,
                                              const core::InputContentDigest& old_digest,
                                              const core::InputContentDigest& new_digest);

}  // namespace stele::storage::sqlite::internal
