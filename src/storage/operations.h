// Operations composed from the contract, identical on every backend
// (Obelisk's free functions `stub_execution`, `cancel_delay`; docs/model.md
// §9.2, §9.3).
#pragma once

#include "storage/db_connection.h"

namespace stele::storage {

// Writes a stub activity's result: Finished at version 1 plus the parent
// response, in one transaction. NotFound, writing nothing, when the child
// does not exist or `parent_execution_id` did not request it in
// `join_set_id` (request_rules.h). Idempotent: when the write fails
// otherwise and version 1 already holds Finished with the same value,
// succeeds; with another value → Conflict; anything else → IllegalState.
Result<void, DbErrorWrite> StubExecution(DbConnection& db,
                                         const core::ExecutionIdDerived& execution_id,
                                         const ExecutionId& parent_execution_id,
                                         const core::JoinSetId& join_set_id, DateTime created_at,
                                         const core::SupportedFunctionReturnValue& return_value);

// Cancels a delay (idempotent): Cancelled, or AlreadyFinished when it fired.
// NotFound, writing nothing, when the execution the id names does not exist
// or never requested that delay in that join set.
Result<CancelOutcome, DbErrorWrite> CancelDelay(DbConnection& db, const core::DelayId& delay_id,
                                                DateTime created_at);

// Appends `request` (docs/model.md §9.5) at the end of the log of workflow
// `execution_id`, fenced at the last version it read; a writer racing it
// (the workflow's own run) makes it re-read and retry, up to 5 more times.
// kCancelled when written (the execution becomes pending at once, so that
// a run sees the request), kAlreadyFinished, writing nothing, when it is
// finished. Whether a request is in the log already is the caller's
// question: a second one is harmless to a run. Errors: NotFound,
// VersionConflict after the retries, Generic.
Result<CancelOutcome, DbErrorWrite> AppendCancelRequest(DbConnection& db,
                                                        const ExecutionId& execution_id,
                                                        const core::HistoryCancelRequest& request,
                                                        DateTime created_at);

// What AppendPauseChange did.
enum class PauseOutcome {
  kWritten,          // Paused or Resumed appended
  kUnchanged,        // it was paused (or not) already: nothing written
  kAlreadyFinished,  // nothing written
};

// Pauses (`pause`) or resumes execution `execution_id` (docs/model.md §9.6)
// by appending Paused or Resumed at the end of its log, fenced at the last
// version it read and retried like AppendCancelRequest. Idempotent: a pause
// of a paused execution, or a resume of one that is not, writes nothing.
// Errors: NotFound, VersionConflict after the retries, Generic.
Result<PauseOutcome, DbErrorWrite> AppendPauseChange(DbConnection& db,
                                                     const ExecutionId& execution_id, bool pause,
                                                     const std::string& reason,
                                                     DateTime created_at);

}  // namespace stele::storage
