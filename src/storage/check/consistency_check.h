// Consistency checker over the storage contract (`stele db check`,
// docs/reliability.md): walks every execution of a store through the public
// read API (DbExternalApi), so it works on every backend alike, and reports
// what contradicts the invariants of the event log:
//  - versions 0..n without gaps, Created exactly at version 0, nothing after
//    a Finished event, response cursors 0..m without gaps;
//  - the pending state stored for the execution equals the one the log
//    implies — derived by replaying the log through the in-memory reference
//    model (storage/memory ExecutionJournal, the same transition table and
//    lock rules the conformance suite holds every backend to);
//  - parent/child bookkeeping: every response names a child or delay the
//    execution requested in that join set, at most one response per child
//    and per delay (no result recorded twice), a child response matches the
//    child's Finished version, every finished child has its response;
//  - join sets: responses and JoinNexts of a join set never outnumber its
//    requests, and every join set used was created.
//
// Memory: executions are paged (CheckOptions::execution_page); only one
// execution's events and responses are held at a time.
// Live stores: an execution whose state changes while it is read is re-read
// (up to CheckOptions::max_attempts) before any finding is reported, so a
// check against a running server does not report in-flight progress.
// Threading: uses the connection from the calling thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "storage/db_external_api.h"

namespace stele::storage::check {

struct Finding {
  std::string execution_id;
  std::string description;
  friend bool operator==(const Finding&, const Finding&) = default;
};

struct CheckOptions {
  uint16_t execution_page = 200;    // executions per ListExecutions page
  Version::Type event_page = 1000;  // events per ListExecutionEvents call
  uint16_t response_page = 1000;    // responses per ListResponses call
  int max_attempts = 3;             // re-reads of an execution that changed
  size_t max_findings = 10000;      // stop collecting after this many
};

struct CheckReport {
  uint64_t executions = 0;  // executions checked
  uint64_t events = 0;      // events read
  uint64_t responses = 0;   // responses read
  std::vector<Finding> findings;
  bool truncated = false;  // max_findings was reached
};

// Checks one execution. Errors: the database error text when it cannot be
// read (NotFound of the execution itself is a finding, not an error).
Result<std::vector<Finding>, std::string> CheckExecution(DbExternalApi& db, const ExecutionId& id,
                                                         const CheckOptions& options,
                                                         CheckReport* counters = nullptr);

// Checks every execution of the store; `progress` (optional) is called after
// each execution with the number checked so far.
// Errors: the database error text when the store cannot be read.
Result<CheckReport, std::string> CheckStore(
    DbExternalApi& db, const CheckOptions& options = {},
    const std::function<void(uint64_t)>& progress = nullptr);

}  // namespace stele::storage::check
