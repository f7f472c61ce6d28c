// The lock rule of the pending-state table (docs/model.md §4.4; Obelisk's
// `PendingState::can_append_lock`), and the shape every backend checks
// before it creates an execution.
#pragma once

#include "base/result.h"
#include "core/pending_state.h"
#include "storage/db_errors.h"
#include "storage/requests.h"

namespace stele::storage {

// lock_expires_at must be after created_at (ValidationFailed "invalid expiry
// date"). PendingAt: new lock when scheduled_at <= created_at, extension when
// last_lock is (executor, run), else ValidationFailed "cannot lock, not yet
// pending". Locked: extension by the same (executor, run), else IllegalState
// "cannot lock, already locked". BlockedByJoinSet / Finished: IllegalState.
Result<LockKind, DbErrorWriteNonRetriable> CanAppendLock(const core::PendingState& state,
                                                         DateTime created_at,
                                                         const core::ExecutorId& executor_id,
                                                         const core::RunId& run_id,
                                                         DateTime lock_expires_at);

// A Created event must be readable back: params are a JSON array
// (ValidationFailed "params must be a JSON array, got <type>"). Every
// backend checks it in Create and for every child it creates.
Result<void, DbErrorWriteNonRetriable> ValidateCreateRequest(const CreateRequest& req);

}  // namespace stele::storage
