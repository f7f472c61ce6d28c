#include "runtime/js/js_watchdog.h"

#include <utility>

namespace stele::runtime::js {

JsWatchdog& JsWatchdog::Process() {
  // Leaked on purpose: runs on other threads may still unwatch during
  // static destruction.
  static auto* watchdog = new JsWatchdog();
  return *watchdog;
}

JsWatchdog::JsWatchdog() : thread_([this] { Loop(); }) {}

JsWatchdog::~JsWatchdog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

uint64_t JsWatchdog::Watch(std::shared_ptr<Entry> entry, std::function<std::string(int)> describe) {
  std::lock_guard lock(mu_);
  const uint64_t id = ++next_id_;
  watched_.emplace(id, Watched{std::move(entry), std::move(describe)});
  if (watched_.size() == 1) cv_.notify_all();
  return id;
}

void JsWatchdog::Unwatch(uint64_t id) {
  std::lock_guard lock(mu_);
  watched_.erase(id);
}

void JsWatchdog::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (watched_.empty()) {
      cv_.wait(lock, [&] { return stop_ || !watched_.empty(); });
      continue;
    }
    cv_.wait_for(lock, kPollInterval);
    const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
    for (auto& [id, watched] : watched_) {
      Entry& entry = *watched.entry;
      const int64_t deadline = entry.deadline_ns_.load(std::memory_order_acquire);
      if (deadline > now) continue;
      // Once per deadline: the run re-arms it when it next leaves its host.
      // A run that paused or re-armed meanwhile is not interrupted.
      int64_t expected = deadline;
      if (!entry.deadline_ns_.compare_exchange_strong(expected, Entry::kNever)) continue;
      ++interrupts_;
      entry.interrupt_(watched.describe(entry.why_.load(std::memory_order_relaxed)));
    }
  }
}

}  // namespace stele::runtime::js
