// Whole-store consistency checks shared by the stress tests: the shape of
// each execution log, the pending state it implies (docs/model.md §4.3,
// computed here independently of any backend), parent/child response
// bookkeeping, and a differential replay through the in-memory reference
// backend.
//
// Every check returns a list of human-readable problems; empty means
// consistent. Nothing here aborts, so a test can report all problems at once.
//
// Threading: pure functions over the logs passed in; the oracle pool is used
// from the calling thread only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "storage/db_pool.h"

namespace stele::storage::stress {

using LogMap = std::map<ExecutionId, ExecutionLog>;

// The pending state the events and responses of `log` imply. The state after
// a JoinNext does not depend on whether its response arrived before or after
// it: both orders end in PendingAt(max(run_expires_at, response time)).
// REQUIRES: log.events is non-empty and starts with Created.
core::PendingState ImpliedPendingState(const ExecutionLog& log);

// Created at version 0 and nowhere else, versions 0..n without gaps, at most
// one Finished and only as the last event, next_version consistent with the
// events, pending_state == ImpliedPendingState(log).
std::vector<std::string> CheckLog(const ExecutionLog& log);

// Across a snapshot of the whole store: every response of a parent names a
// child the parent requested, in the right join set, at most once; its
// finished_version and result match the child's Finished event; every
// finished child has exactly one response in its parent (the finish and the
// response are one transaction).
std::vector<std::string> CheckParentChildResponses(const LogMap& logs);

// Rebuilds every execution of `logs` in `oracle` (a fresh reference store)
// with the contract's own calls — Create, Append, AppendBatchCreateNewExecution
// for child requests, AppendResponse for responses — and compares the
// oracle's ExecutionLog with the original, field by field. Responses are fed
// in their original order, each just before the first event that needs it.
std::vector<std::string> CompareWithOracle(DbPool& oracle, const LogMap& logs);

// Every execution in the store, top-level and derived (ListExecutions paged
// by id).
Result<std::vector<ExecutionId>, DbErrorGeneric> ListAllExecutionIds(DbExternalApi& db);

// Reads the whole store: Get() of every execution ListAllExecutionIds finds.
Result<LogMap, std::string> ReadAllLogs(DbConnectionTest& db);

// Multi-line JSON dump of a log, for failure messages.
std::string DescribeLog(const ExecutionLog& log);

}  // namespace stele::storage::stress
