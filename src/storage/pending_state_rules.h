// The lock rule of the pending-state table (docs/model.md §4.4; Obelisk's
// `PendingState::can_append_lock`). What a write may name (ids, requests,
// responses) and the shape of what it creates are in request_rules.h.
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
// Paused (and unfinished): IllegalState "cannot lock, paused", whatever the
// state, extensions included (docs/model.md §9.6).
Result<LockKind, DbErrorWriteNonRetriable> CanAppendLock(const core::PendingState& state,
                                                         DateTime created_at,
                                                         const core::ExecutorId& executor_id,
                                                         const core::RunId& run_id,
                                                         DateTime lock_expires_at);

}  // namespace stele::storage
