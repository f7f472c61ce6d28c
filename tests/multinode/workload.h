// The workload of the multi-node tests and the checks of its outcome.
//
// Workload: N `math:squares/api.sum-of-squares(n)` workflows (examples/wasm
// fan_out, n = 1 + i % 3), each submitting n `math:squares/api.square(x)`
// child activities into a join set and awaiting them all. Submitted round
// robin across the live nodes with caller-chosen ids, so a retried
// submission is idempotent.
//
// Checks (Verify), all from the API of the live nodes:
//   - every workflow finished once, with {"n", "sum_of_squares"} right;
//   - its event log: Created first, exactly one Finished, last; its child
//     requests are n distinct ids; its responses are exactly one per child,
//     with the child's right value;
//   - every child: exactly one Finished (last), value x*x;
//   - lock exclusion on every log: a Locked by another (executor, run) comes
//     only after the previous holder released the lock (Unlocked,
//     TemporarilyFailed, TemporarilyTimedOut, Finished) or its lease
//     (lock_expires_at, or a JoinNext's run_expires_at) had expired;
//   - the database holds exactly N top-level executions and sum(n) children.
// It also counts Locked events per executor id, and takeovers (a lock taken
// from a holder that never released it, after its lease expired).
//
// Threading: each function runs its own worker threads and joins them.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "harness.h"

namespace stele::multinode {

struct Workflow {
  std::string id;
  uint64_t n = 0;
};

// The nodes requests may go to; flipped by the test when it kills one.
class Targets {
 public:
  explicit Targets(Cluster& cluster);
  void Remove(int node);
  // The port of a live node, chosen by `hint` (round robin); 0 if none.
  int Port(size_t hint) const;
  std::vector<int> LiveNodes() const;

 private:
  std::vector<int> ports_;
  std::vector<std::unique_ptr<std::atomic<bool>>> live_;
};

// `count` workflows with fresh ids (n = 1 + i % 3).
std::vector<Workflow> MakeWorkflows(int count);
// Submits them; `submitted` counts accepted ones (tests act on it while
// this runs); errors are appended to `errors`.
void Submit(const Targets& targets, const std::vector<Workflow>& workflows,
            std::atomic<int>* submitted, std::vector<std::string>* errors);

// Waits for every workflow's result (long polls spread over the live
// nodes) until `limit`; `finished` counts those seen finished, for tests
// that act under load. Returns id -> result JSON ({"ok": ...}).
std::map<std::string, json> AwaitAll(const Targets& targets, const std::vector<Workflow>& workflows,
                                     std::chrono::seconds limit, std::atomic<int>* finished);

struct Takeover {
  std::string execution_id;
  std::string from_executor;
  std::string to_executor;
};

struct Report {
  std::vector<std::string> errors;               // each a violated expectation
  std::map<std::string, int> locks_by_executor;  // Locked events per executor id
  std::vector<Takeover> takeovers;
  int children = 0;
  int events = 0;
};

Report Verify(const Targets& targets, const std::vector<Workflow>& workflows,
              const std::map<std::string, json>& results);

// For tests: the lock-exclusion check of one event log (the `events` array
// of GET .../events); appends violations to `report`.
void CheckLocks(const std::string& execution_id, const json& events, Report* report);

}  // namespace stele::multinode
