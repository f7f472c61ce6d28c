// What appending an event or recording a response does to an execution's
// t_state row: the transition table of docs/model.md §4.3 (with pause and
// cancel, §9.5–9.6), decided once for both SQL backends. The memory
// backend keeps its own implementation on purpose: it is the independent
// oracle the differential tests compare these against.
//
// A backend loads the row (sql_rows.h), calls CheckAppend, inserts the
// event, calls ApplyAppend, and then writes what the returned effects name
// with its own SQL: the new row (or only its version), the live timer, the
// deadline, and the notices of its wake-up channel.
//
// Threading: pure functions; `awaited` is called on the caller's thread.
#pragma once

#include <functional>
#include <optional>

#include "base/result.h"
#include "base/time.h"
#include "core/execution_event.h"
#include "storage/db_errors.h"
#include "storage/requests.h"
#include "storage/sql_rows.h"

namespace stele::storage {

// The checks every append makes against the current row, in this order (as
// the memory model does): finished → IllegalState "already finished";
// version mismatch → VersionConflict{expected = next version, requested};
// for Locked the lock rules of CanAppendLock (pending_state_rules.h).
Result<void, DbErrorWrite> CheckAppend(const ExecutionState& state, Version version,
                                       const AppendRequest& req);

// What an applied event asks the backend to write besides the event row.
struct AppendEffects {
  // Only corresponding_version and updated_at changed: a backend may fold
  // this into the next write of the row.
  bool version_only = true;
  // The execution became (or stays, resumed) pending at this instant:
  // wake the executors of its ffqn / digest.
  std::optional<DateTime> pending_at;
  bool disarm_deadline = false;  // it finished, or a terminate request came
  // A DelayRequest: upsert its live timer (keyed by delay id within the
  // execution). Points into the request passed to ApplyAppend.
  const core::HistoryJoinSetRequest* timer = nullptr;
  const core::Finished* finished = nullptr;  // into the request, when it finished
  bool published = false;                    // a HistoryPublish: wake value waiters
};

// For a JoinNext on `join_set`: created_at of the response it awaits (the
// k-th response of the join set in cursor order for its k-th JoinNext,
// counting this one), nullopt when it has not arrived.
using AwaitedResponse =
    std::function<Result<std::optional<DateTime>, DbErrorWrite>(const core::JoinSetId& join_set)>;

// Moves `state` to what it is after `req` at `version` (REQUIRES:
// CheckAppend passed): the pending state, last lock, retry config, counters,
// flags, corresponding_version and updated_at; returns what else to write.
Result<AppendEffects, DbErrorWrite> ApplyAppend(ExecutionState& state, Version version,
                                                const AppendRequest& req,
                                                const AwaitedResponse& awaited);

// A response on `join_set` arrived at `created_at`. An execution blocked on
// that very join set becomes PendingAt(max(its lease, created_at)) and the
// instant is returned; in any other state nothing changes (the response
// waits for its JoinNext) and nullopt is returned.
std::optional<DateTime> ApplyResponse(ExecutionState& state, const core::JoinSetId& join_set,
                                      DateTime created_at);

}  // namespace stele::storage
