// The journal inside a write transaction (PostgreSQL): appending events
// and responses, creating executions, keeping t_state equal to the pending
// state prescribed by reference/obelisk.md §2.6. Same checks in the same
// order as storage/sqlite/journal_tx.h; every function validates before it
// writes. The execution's t_state row is locked (FOR UPDATE) first, so
// concurrent writers of one execution serialise on it and the version
// check cannot race; the (execution_id, version) key fences the insert.
//
// Also the shared reads (state, events, responses, whole log), which run
// inside whatever transaction or snapshot the caller holds.
//
// Threading: on the thread holding the connection.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/time.h"
#include "core/execution_event.h"
#include "storage/db_errors.h"
#include "storage/postgres/codec.h"
#include "storage/postgres/store.h"
#include "storage/requests.h"

namespace stele::storage::postgres::internal {

// nullopt when the execution does not exist; `for_update` locks the row.
Result<std::optional<ExecutionState>, DbErrorGeneric> LoadState(PgConn& db, std::string_view id,
                                                                bool for_update = false);
Result<std::optional<core::ExecutionEvent>, DbErrorGeneric> LoadEvent(PgConn& db,
                                                                      std::string_view id,
                                                                      Version version);
Result<std::vector<ResponseWithCursor>, DbErrorGeneric> LoadResponses(PgConn& db,
                                                                      std::string_view id,
                                                                      uint32_t from_cursor);
Result<std::optional<ExecutionLog>, DbErrorGeneric> LoadLog(PgConn& db,
                                                            const ExecutionId& execution_id);

Result<Version, DbErrorWrite> AppendEventTx(Tx& tx, const ExecutionId& execution_id,
                                            Version version, const AppendRequest& req,
                                            DateTime current_time);
// Variant for a caller that already holds the row lock and state.
Result<Version, DbErrorWrite> AppendEventLockedTx(Tx& tx, const ExecutionState& state,
                                                  Version version, const AppendRequest& req,
                                                  DateTime current_time);
Result<Version, DbErrorWrite> AppendBatchTx(Tx& tx, const ExecutionId& execution_id,
                                            Version version,
                                            const std::vector<AppendRequest>& batch,
                                            DateTime current_time);
Result<void, DbErrorWrite> InsertResponseTx(Tx& tx, const ExecutionId& execution_id,
                                            const core::JoinSetResponseEventOuter& response,
                                            DateTime current_time);
Result<std::optional<bool>, DbErrorGeneric> FindDelayResponse(PgConn& db,
                                                              const core::DelayId& delay_id);
Result<Version, DbErrorWrite> CreateTx(Tx& tx, const CreateRequest& req, DateTime current_time);
Result<LockedExecution, DbErrorGeneric> LoadLockedExecution(PgConn& db,
                                                            const ExecutionId& execution_id,
                                                            const core::Locked& locked,
                                                            Version next_version,
                                                            uint32_t intermittent_event_count);
Result<void, DbErrorWrite> UpgradeComponentTx(Tx& tx, const ExecutionId& execution_id,
                                              const core::InputContentDigest& old_digest,
                                              const core::InputContentDigest& new_digest);

// Notice keys (notifier.h).
std::string PendingFfqnKey(std::string_view ffqn);
std::string PendingDigestKey(const core::InputContentDigest& digest);
std::string ResponseKey(std::string_view execution_id);
std::string FinishedKey(std::string_view execution_id);

}  // namespace stele::storage::postgres::internal
