#include "runtime/js/js_watchdog.h"

#include <pthread.h>

#include <optional>
#include <utility>

namespace stele::runtime::js {

namespace {

// Nanoseconds of CPU time `clock` has counted, or nullopt when it cannot be
// read (its thread ended).
std::optional<int64_t> CpuNanos(clockid_t clock) {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return std::nullopt;
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

void JsWatchdog::Entry::Arm(std::chrono::nanoseconds cpu_budget, int cpu_why, SteadyTime deadline,
                            int deadline_why) {
  clockid_t clock = CLOCK_THREAD_CPUTIME_ID;
  int64_t cpu_deadline = kNever;
  if (pthread_getcpuclockid(pthread_self(), &clock) == 0) {
    if (auto used = CpuNanos(clock); used && cpu_budget.count() < kNever - *used) {
      cpu_deadline = *used + cpu_budget.count();
    }
  }
  cpu_why_.store(cpu_why, std::memory_order_relaxed);
  deadline_why_.store(deadline_why, std::memory_order_relaxed);
  cpu_clock_.store(clock, std::memory_order_relaxed);
  cpu_deadline_ns_.store(cpu_deadline, std::memory_order_release);
  deadline_ns_.store(deadline.time_since_epoch().count(), std::memory_order_release);
}

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
      // Once per deadline: the run re-arms when it next leaves its host. A
      // run that paused or re-armed meanwhile is not interrupted (the
      // exchange fails).
      auto fire = [&](std::atomic<int64_t>& slot, int64_t deadline, const std::atomic<int>& why) {
        int64_t expected = deadline;
        if (!slot.compare_exchange_strong(expected, Entry::kNever)) return;
        ++interrupts_;
        entry.interrupt_(watched.describe(why.load(std::memory_order_relaxed)));
      };
      const int64_t deadline = entry.deadline_ns_.load(std::memory_order_acquire);
      if (deadline <= now) {
        fire(entry.deadline_ns_, deadline, entry.deadline_why_);
        continue;
      }
      const int64_t cpu_deadline = entry.cpu_deadline_ns_.load(std::memory_order_acquire);
      if (cpu_deadline == Entry::kNever) continue;
      const auto used = CpuNanos(entry.cpu_clock_.load(std::memory_order_relaxed));
      if (used && *used >= cpu_deadline) fire(entry.cpu_deadline_ns_, cpu_deadline, entry.cpu_why_);
    }
  }
}

}  // namespace stele::runtime::js
