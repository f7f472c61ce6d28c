// ResponseBatcher: folds concurrent AppendBatchRespondToParent calls for
// one parent into shared transactions.
//
// Why: a child's Finished and its response lock the parent's row from the
// first round trip to COMMIT (the response sequence is per parent), so N
// children of one parent finishing at once would commit one after another,
// one fsync each — a fan-out of 200 paid 200 serial commits. Here the
// first caller for a parent writes alone at once (no added latency when
// there is no contention); callers arriving while it writes queue, and the
// next of them writes the whole queue (up to kMaxGroup) in one transaction.
//
// A group is all or nothing in the database, but each caller keeps its
// own outcome: when a group's transaction fails (one member's version
// conflict, a duplicate response, a lost connection), every member writes
// alone again, so one bad request never fails the others. Retrying alone
// is safe even when the group's COMMIT outcome is unknown: a write that
// did commit is then refused by its version fence.
//
// Threading: thread-safe; Run blocks its caller until its request is
// written. Requests are borrowed from the blocked callers' stacks.
// Ownership: held by the Store, one per pool (grouping is per process).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "storage/db_errors.h"
#include "storage/requests.h"

namespace stele::storage::postgres::internal {

struct ChildResponseWrite {
  const AppendEventsToExecution* events;
  const AppendResponseToExecution* response;
  DateTime current_time;
};

class ResponseBatcher {
 public:
  // Largest group in one transaction: bounds its size and the row locks
  // it holds.
  static constexpr size_t kMaxGroup = 256;

  // Writes `group` (2 or more requests for one parent, in arrival order)
  // in one transaction; on success, each member's next version.
  using WriteGroup = std::function<Result<std::vector<Version>, DbErrorWrite>(
      const std::vector<const ChildResponseWrite*>&)>;
  using WriteOne = std::function<Result<Version, DbErrorWrite>(const ChildResponseWrite&)>;

  // Writes `request` — alone or in a group with concurrent requests for the
  // same parent — and returns its own outcome.
  Result<Version, DbErrorWrite> Run(const ChildResponseWrite& request,
                                    const WriteGroup& write_group, const WriteOne& write_one);

  struct Stats {
    uint64_t groups = 0;         // transactions of 2 or more requests
    uint64_t grouped = 0;        // requests written in them
    uint64_t failed_groups = 0;  // groups whose members wrote alone again
  };
  Stats GetStats();
  // Requests waiting behind the one being written for `parent` (tests).
  size_t QueuedForTest(const std::string& parent);

 private:
  struct Waiter {
    const ChildResponseWrite* request = nullptr;
    std::condition_variable cv;
    bool lead = false;  // this waiter writes the next group
    bool done = false;  // written by a leader (or to be written alone)
    bool write_alone = false;
    std::optional<Result<Version, DbErrorWrite>> result;
  };
  struct Queue {
    std::deque<Waiter*> waiting;  // front: the current or next leader
  };

  std::mutex mu_;
  std::unordered_map<std::string, Queue> queues_;  // by parent id, while writing
  Stats stats_;
};

}  // namespace stele::storage::postgres::internal
