#include "storage/postgres/response_batcher.h"

#include <utility>

namespace stele::storage::postgres::internal {

Result<Version, DbErrorWrite> ResponseBatcher::Run(const ChildResponseWrite& request,
                                                   const WriteGroup& write_group,
                                                   const WriteOne& write_one) {
  const std::string parent = request.response->parent_execution_id.ToString();
  Waiter me;
  me.request = &request;
  std::vector<Waiter*> group;
  {
    std::unique_lock lock(mu_);
    auto [it, first] = queues_.try_emplace(parent);
    if (first) {
      // Nobody writes for this parent: write at once, alone.
      group.push_back(&me);
    } else {
      it->second.waiting.push_back(&me);
      me.cv.wait(lock, [&] { return me.done || me.lead; });
      if (me.lead) {
        // `me` is at the front: take it and those queued behind it.
        Queue& queue = queues_.at(parent);
        while (!queue.waiting.empty() && group.size() < kMaxGroup) {
          group.push_back(queue.waiting.front());
          queue.waiting.pop_front();
        }
      }
    }
  }
  if (group.empty()) {
    // Written by a leader, or its group failed and each writes alone.
    if (me.write_alone) return write_one(request);
    return std::move(*me.result);
  }

  bool failed = false;
  if (group.size() == 1) {
    me.result.emplace(write_one(request));
  } else {
    std::vector<const ChildResponseWrite*> requests;
    requests.reserve(group.size());
    for (const Waiter* waiter : group) requests.push_back(waiter->request);
    Result<std::vector<Version>, DbErrorWrite> written = write_group(requests);
    if (written) {
      for (size_t i = 0; i < group.size(); ++i) group[i]->result.emplace((*written)[i]);
    } else {
      failed = true;
      for (Waiter* waiter : group) waiter->write_alone = true;
    }
  }

  {
    std::lock_guard lock(mu_);
    if (group.size() > 1) {
      ++stats_.groups;
      stats_.grouped += group.size();
      if (failed) ++stats_.failed_groups;
    }
    // Notified under the lock: a woken waiter may return (and destroy its
    // condition variable) as soon as the lock is released.
    for (Waiter* waiter : group) {
      if (waiter == &me) continue;
      waiter->done = true;
      waiter->cv.notify_one();
    }
    Queue& queue = queues_.at(parent);
    if (queue.waiting.empty()) {
      queues_.erase(parent);
    } else {
      queue.waiting.front()->lead = true;
      queue.waiting.front()->cv.notify_one();
    }
  }
  if (me.write_alone) return write_one(request);
  return std::move(*me.result);
}

ResponseBatcher::Stats ResponseBatcher::GetStats() {
  std::lock_guard lock(mu_);
  return stats_;
}

size_t ResponseBatcher::QueuedForTest(const std::string& parent) {
  std::lock_guard lock(mu_);
  auto it = queues_.find(parent);
  return it == queues_.end() ? 0 : it->second.waiting.size();
}

}  // namespace stele::storage::postgres::internal
