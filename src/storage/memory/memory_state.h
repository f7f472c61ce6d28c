// The whole in-memory database: every journal, the global response
// uniqueness indexes and the backtraces, behind one mutex. Shared by the
// pool and all its connections (and by pending cancellation callbacks, which
// may outlive a connection), hence held by shared_ptr.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/backtrace.h"
#include "storage/memory/execution_journal.h"
#include "storage/schedule.h"
#include "storage/watch_registry.h"

namespace stele::storage::memory::internal {

struct MemoryState {
  std::mutex mu;
  // Notified (under `mu`) after every committed change and on Close, so
  // waiters re-check their condition; checks happen under `mu`, so no
  // wake-up can be lost between a check and the wait.
  std::condition_variable changed;
  bool closed = false;                               // guarded by mu
  std::map<ExecutionId, ExecutionJournal> journals;  // guarded by mu
  // At most one response per child id and per delay id, across the whole
  // database (the SQL backends' unique indexes). Keys are the ids' text;
  // a delay maps to the outcome of its first response (true = expired).
  std::set<std::string> child_responses;        // guarded by mu
  std::map<std::string, bool> delay_responses;  // guarded by mu
  std::vector<core::BacktraceInfo> backtraces;  // guarded by mu, in insertion order
  std::map<std::string, Schedule> schedules;    // guarded by mu, by name
  // Callback watches, re-checked after every committed change (under mu,
  // lock order mu -> the registry's own mutex).
  WatchRegistry watches;
};

}  // namespace stele::storage::memory::internal
