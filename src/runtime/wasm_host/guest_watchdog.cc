#include "runtime/wasm_host/guest_watchdog.h"

namespace stele::runtime::wasm_host {

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
  if (!thread_.joinable()) thread_ = std::thread([this] { Main(); });
  uint64_t handle = ++next_handle_;
  entries_[handle] = Entry{instance, std::nullopt};
  return handle;
}

void GuestWatchdog::Pause(uint64_t handle) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(handle);
  if (it != entries_.end()) it->second.deadline.reset();
}

void GuestWatchdog::Resume(uint64_t handle, SteadyTime deadline) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(handle);
  if (it == entries_.end()) return;
  it->second.deadline = deadline;
  wakeup_.notify_all();
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
      if (*entry.deadline <= now) {
        // Interrupt is thread-safe and does not call back into us.
        entry.instance->Interrupt();
        entry.deadline.reset();
        ++interrupts_;
        continue;
      }
      if (!earliest || *entry.deadline < *earliest) earliest = entry.deadline;
    }
    if (earliest) {
      wakeup_.wait_until(lock, *earliest);
    } else {
      wakeup_.wait(lock);
    }
  }
}

}  // namespace stele::runtime::wasm_host
