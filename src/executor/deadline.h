// Enforcing a whole execution's deadline (core::ExecutionPolicy::deadline;
// docs/model.md §9.7): what the expired-timers watcher does with an
// ExpiredDeadline, on whichever node runs it.
//
//   workflow  a terminate request marked timed_out (AppendCancelRequest):
//             its next run ends it at once with the `timed_out` execution
//             error and cancels its open subtree — activities, delays,
//             child workflows recursively — as any terminate does (§9.5).
//   activity  Finished(timed_out) at once (with the parent's response for a
//             child), then the local run of it, if any, is told to stop
//             (CancelRegistry); a run elsewhere loses its write and stops
//             at its own lock deadline.
// Both disarm the deadline (the storage contract clears it with the
// terminate request or the Finished), so a deadline is acted on once —
// also when two watchers (two servers on one database) read it before
// either wrote: the activity's Finished is fenced, and a workflow gets no
// second request once its log holds a timed-out one.
//
// Threading: thread-safe (uses only the thread-safe connection and
// registry). Ownership: borrows its arguments for the call.
#pragma once

#include <string>

#include "base/result.h"
#include "base/time.h"
#include "executor/cancel_registry.h"
#include "storage/db_connection.h"
#include "storage/requests.h"

namespace stele::executor {

enum class DeadlineOutcome {
  kTerminateRequested,  // a workflow: the terminate request was written
  kTimedOut,            // an activity: Finished(timed_out) was written
  kAlreadyFinished,     // nothing to do: finished, or (a workflow) another watcher
                        // wrote the timed-out terminate request already
};

// The reason recorded: "the execution's deadline 2026-01-01T00:00:00Z
// passed".
std::string DeadlinePassedReason(DateTime deadline);

// Acts on one expired deadline at `now`. `registry` may be null. Errors:
// NotFound, Generic, a VersionConflict that outlasted 5 retries.
Result<DeadlineOutcome, storage::DbErrorWrite> ExpireDeadline(
    storage::DbConnection& db, CancelRegistry* registry, const storage::ExpiredDeadline& expired,
    DateTime now);

}  // namespace stele::executor
