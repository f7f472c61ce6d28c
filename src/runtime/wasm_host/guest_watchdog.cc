#include "runtime/wasm_host/guest_watchdog.h"

#include <pthread.h>

#include <algorithm>

#include "base/thread_name.h"

namespace stele::runtime::wasm_host {

namespace {

// Nanoseconds of CPU time `clock` has counted, or nullopt when it cannot be
// read (its thread ended).
std::optional<int64_t> CpuNanos(clockid_t clock) {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return std::nullopt;
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

GuestWatchdog::~GuestWatchdog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wakeup_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t GuestWatchdog::Watch(wasm::WasmInstance* instance) {
  std::lock_guard lock(mu_);
  if (!thread_.joinable())
    thread_ = std::thread([this] {
      NameThisThread("stele-guest-dog");
      Main();
    });
  uint64_t handle = ++next_handle_;
  entries_[handle] = Entry{instance, std::nullopt, CLOCK_THREAD_CPUTIME_ID, std::nullopt};
  return handle;
}

void GuestWatchdog::Pause(uint64_t handle) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(handle);
  if (it == entries_.end()) return;
  it->second.deadline.reset();
  it->second.cpu_deadline_ns.reset();
}

void GuestWatchdog::Resume(uint64_t handle, std::chrono::nanoseconds cpu_budget,
                           SteadyTime deadline) {
  // The clock of the calling thread, read before taking the lock.
  clockid_t clock = CLOCK_THREAD_CPUTIME_ID;
  std::optional<int64_t> cpu_deadline;
  if (pthread_getcpuclockid(pthread_self(), &clock) == 0) {
    if (auto used = CpuNanos(clock)) cpu_deadline = *used + cpu_budget.count();
  }
  std::lock_guard lock(mu_);
  auto it = entries_.find(handle);
  if (it == entries_.end()) return;
  it->second.deadline = deadline;
  it->second.cpu_clock = clock;
  it->second.cpu_deadline_ns = cpu_deadline;
  // Wake the watchdog thread only when it would look too late: a guest
  // resumes after every host call, and waking the thread each time costs
  // two context switches and lock contention per call (on 2 cores, more
  // than the host call itself). A CPU budget is looked at every
  // kPollInterval anyway.
  SteadyTime due = deadline;
  if (cpu_deadline) due = std::min(due, std::chrono::steady_clock::now() + kPollInterval);
  if (!wakes_at_ || due < *wakes_at_) wakeup_.notify_all();
}

void GuestWatchdog::Unwatch(uint64_t handle) {
  std::lock_guard lock(mu_);
  entries_.erase(handle);
}

uint64_t GuestWatchdog::interrupts() const {
  std::lock_guard lock(mu_);
  return interrupts_;
}

void GuestWatchdog::Main() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    SteadyTime now = std::chrono::steady_clock::now();
    std::optional<SteadyTime> earliest;
    for (auto& [handle, entry] : entries_) {
      if (!entry.deadline) continue;
      bool due = *entry.deadline <= now;
      if (!due && entry.cpu_deadline_ns) {
        const auto used = CpuNanos(entry.cpu_clock);
        due = used && *used >= *entry.cpu_deadline_ns;
        // A CPU budget has no instant on the steady clock: look again soon.
        const SteadyTime poll = now + kPollInterval;
        if (!earliest || poll < *earliest) earliest = poll;
      }
      if (due) {
        // Interrupt is thread-safe and does not call back into us.
        entry.instance->Interrupt();
        entry.deadline.reset();
        entry.cpu_deadline_ns.reset();
        ++interrupts_;
        continue;
      }
      if (!earliest || *entry.deadline < *earliest) earliest = entry.deadline;
    }
    wakes_at_ = earliest;
    if (earliest) {
      wakeup_.wait_until(lock, *earliest);
    } else {
      wakeup_.wait(lock);
    }
  }
}

}  // namespace stele::runtime::wasm_host
