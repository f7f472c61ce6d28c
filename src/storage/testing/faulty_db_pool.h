// FaultyDbPool: a DbPool decorator that makes chosen storage calls fail, for
// testing that the executor, the expired-timers watcher and workflows keep
// their guarantees when the database misbehaves (docs/model.md §11, after
// LevelDB's ErrorEnv over EnvWrapper).
//
// Every connection the pool hands out wraps the inner pool's connection of
// the same role and forwards each call, unless the fault plan says the call
// fails. A failure is one of
//   kGeneric          DbErrorGeneric::Uncategorized("injected fault: ...")
//                     — a transient error; the caller may retry;
//   kVersionConflict  VersionConflict{version + 1, version} on calls that
//                     name a version, Conflict on other writes, Generic on
//                     calls that return only generic errors;
//   kTimeout          Timeout(kTimeout) on the waiting reads
//                     (SubscribeToNextResponses, WaitForFinishedResult,
//                     WaitForPublish), a
//                     wait that returns at once (WaitForPending*), and
//                     Generic("injected timeout") elsewhere, as a driver's
//                     statement timeout would be.
// A write may fail *after* the inner call committed (`after_commit`): the
// caller sees an error although the write is durable, as with a lost
// acknowledgement. Reads and waits never fail after the fact.
//
// Two ways to choose failures, combinable:
//   - a random plan (FaultyOptions): each call of a method in `methods`
//     fails with probability `rate`, the kind drawn from `kinds`, from a
//     RNG seeded with `seed` — the sequence of decisions is reproducible
//     for a given seed and call order;
//   - a script (FailNext): the next `count` calls of one method fail with
//     the given kind, before the random plan is consulted.
// Counters (calls, injected) are kept per method. Close() closes the inner
// pool; connections keep forwarding, so they see its Closed errors.
//
// Threading: thread-safe, like the pool it wraps; one plan shared by all the
// pool's connections. Ownership: owns the inner pool; connections must not
// outlive the FaultyDbPool (they share its plan).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string_view>
#include <vector>

#include "storage/db_pool.h"

namespace stele::storage::testing {

// The storage calls a plan can make fail.
enum class FaultyMethod {
  kLockPending,  // LockPendingByFfqns, LockPendingByComponentId
  kLockOne,
  kAppend,
  // WriteStep, by the shape of the write:
  kAppendBatchRespondToParent,     // a child's end alone
  kAppendBatch,                    // events alone
  kAppendBatchCreateNewExecution,  // children, locks or children's outcomes
  kAppendDelayResponse,
  kAppendMessage,
  kCreate,
  kGetLastExecutionEvent,
  kGetExecutionEvent,
  kGetPendingState,
  kGetExpiredTimers,
  kSubscribeToNextResponses,
  // WaitForFinishedResult, WaitForPublish
  kWaitForFinishedResult,
  kWaitForPending,   // WaitForPendingByFfqn, WaitForPendingByComponentId
  kAppendBacktrace,  // AppendBacktrace, AppendBacktraceBatch
  kExternalReads,    // GetBacktrace, ListExecutions, ListExecutionEvents, ListResponses
  kUpgradeExecutionComponent,
  kDeleteFinishedExecutions,
  kAppendResponse,  // DbConnectionTest
  kGet,             // DbConnectionTest
};
std::string_view FaultyMethodName(FaultyMethod method);
// Whether the method writes (and so may fail after committing).
bool IsWrite(FaultyMethod method);

enum class FaultKind { kGeneric, kVersionConflict, kTimeout };

struct FaultyOptions {
  uint64_t seed = 0;
  // Probability that one call of a method in `methods` fails.
  double rate = 0.0;
  // Methods the random plan applies to; empty: none (only scripted faults).
  std::set<FaultyMethod> methods = {};
  // Kinds drawn uniformly for random faults.
  std::vector<FaultKind> kinds = {FaultKind::kGeneric};
  // Share of random faults on writes that strike after the inner call
  // committed.
  double after_commit_share = 0.0;
};

struct FaultyCounters {
  uint64_t calls = 0;         // every call of the method
  uint64_t injected = 0;      // calls that returned an injected failure
  uint64_t after_commit = 0;  // of those, failures after a committed write
};

class FaultPlan;

class FaultyDbPool : public DbPool {
 public:
  // REQUIRES: inner non-null; 0 <= rate, after_commit_share <= 1; kinds
  // non-empty when rate > 0.
  FaultyDbPool(std::unique_ptr<DbPool> inner, FaultyOptions options);
  ~FaultyDbPool() override;

  Result<std::unique_ptr<DbExecutor>, DbErrorGeneric> DbExecConn() override;
  Result<std::unique_ptr<DbConnection>, DbErrorGeneric> Connection() override;
  Result<std::unique_ptr<DbExternalApi>, DbErrorGeneric> ExternalApiConn() override;
  Result<std::unique_ptr<DbConnectionTest>, DbErrorGeneric> ConnectionTest() override;
  void Close() override;

  // The next `count` calls of `method` fail with `kind` (after committing,
  // for a write, when `after_commit`).
  void FailNext(FaultyMethod method, FaultKind kind, uint32_t count = 1, bool after_commit = false);
  // Turns the random plan off (scripted faults still apply) or on again.
  void SetEnabled(bool enabled);
  FaultyCounters counters(FaultyMethod method) const;
  // Sum over all methods.
  FaultyCounters total() const;
  DbPool& inner() { return *inner_; }

 private:
  std::unique_ptr<DbPool> inner_;
  std::shared_ptr<FaultPlan> plan_;
};

}  // namespace stele::storage::testing
