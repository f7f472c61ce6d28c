#include "service/async_wait.h"

#include <vector>

namespace stele::service {

DeadlineTimer::~DeadlineTimer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t DeadlineTimer::Schedule(Clock::time_point at, std::function<void()> fn) {
  std::lock_guard lock(mu_);
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  const uint64_t id = next_++;
  by_time_.emplace(at, id);
  by_id_.emplace(id, std::make_pair(at, std::move(fn)));
  cv_.notify_all();
  return id;
}

void DeadlineTimer::Cancel(uint64_t id) {
  std::function<void()> dropped;
  std::lock_guard lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  auto [first, last] = by_time_.equal_range(it->second.first);
  for (auto t = first; t != last; ++t) {
    if (t->second == id) {
      by_time_.erase(t);
      break;
    }
  }
  dropped = std::move(it->second.second);
  by_id_.erase(it);
}

void DeadlineTimer::Run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (by_time_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const auto first = by_time_.begin();
    // A copy: Cancel may erase the entry while this waits.
    const Clock::time_point at = first->first;
    if (at > Clock::now()) {
      cv_.wait_until(lock, at);
      continue;
    }
    const uint64_t id = first->second;
    by_time_.erase(first);
    auto it = by_id_.find(id);
    std::function<void()> fn = std::move(it->second.second);
    by_id_.erase(it);
    lock.unlock();
    fn();
    fn = nullptr;
    lock.lock();
  }
}

AsyncWaits::~AsyncWaits() {
  std::vector<std::shared_ptr<internal::AsyncWaitBase>> live;
  {
    std::lock_guard lock(mu_);
    for (auto& [ptr, wait] : live_) live.push_back(wait);
  }
  for (auto& wait : live) wait->AbandonForShutdown();
}

void AsyncWaits::Track(const std::shared_ptr<internal::AsyncWaitBase>& wait) {
  std::lock_guard lock(mu_);
  live_.emplace(wait.get(), wait);
}

void AsyncWaits::Untrack(internal::AsyncWaitBase* wait) {
  std::shared_ptr<internal::AsyncWaitBase> released;
  std::lock_guard lock(mu_);
  auto it = live_.find(wait);
  if (it == live_.end()) return;
  released = std::move(it->second);  // destroyed after the unlock
  live_.erase(it);
}

size_t AsyncWaits::size() const {
  std::lock_guard lock(mu_);
  return live_.size();
}

}  // namespace stele::service
