#include "runtime/wasm/watchdog.h"

namespace stele::wasm {

Watchdog& Watchdog::Process() {
  // Leaked on purpose: a process-wide thread must not be joined during
  // static destruction while another static's destructor may still arm it.
  static Watchdog* watchdog = new Watchdog();
  return *watchdog;
}

Watchdog::Watchdog() : thread_([this] { Loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

uint64_t Watchdog::Arm(Clock::time_point deadline, std::function<void()> callback) {
  uint64_t id;
  bool earliest;
  {
    std::lock_guard lock(mu_);
    id = ++next_id_;
    deadlines_.emplace(deadline, id);
    entries_.emplace(id, std::make_pair(deadline, std::move(callback)));
    earliest = deadlines_.begin()->second == id;
  }
  if (earliest) cv_.notify_all();
  return id;
}

void Watchdog::Disarm(uint64_t id) {
  std::unique_lock lock(mu_);
  auto it = entries_.find(id);
  if (it != entries_.end()) {
    deadlines_.erase({it->second.first, id});
    entries_.erase(it);
  }
  done_cv_.wait(lock, [&] { return running_id_ != id; });
}

void Watchdog::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (deadlines_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto [deadline, id] = *deadlines_.begin();
    if (Clock::now() < deadline) {
      cv_.wait_until(lock, deadline);
      continue;
    }
    deadlines_.erase(deadlines_.begin());
    auto it = entries_.find(id);
    std::function<void()> callback = std::move(it->second.second);
    entries_.erase(it);
    running_id_ = id;
    lock.unlock();
    callback();
    lock.lock();
    running_id_ = 0;
    done_cv_.notify_all();
  }
}

}  // namespace stele::wasm
