// The wasm guest watchdog charges a slice with the CPU time of the guest's
// thread: a run that waits (for a core, a lock, a page) has computed
// nothing; the lease's deadline passes whether or not it computes.
#include "runtime/wasm_host/guest_watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace stele::runtime::wasm_host {
namespace {

using std::chrono::milliseconds;

// Counts Interrupt calls; nothing else is used by the watchdog.
class InterruptCountingInstance final : public wasm::WasmInstance {
 public:
  Result<std::vector<wasm::Value>, wasm::WasmError> Call(std::string_view,
                                                         std::span<const wasm::Value>,
                                                         const wasm::CallBudget&) override {
    return std::vector<wasm::Value>{};
  }
  void Interrupt() override { interrupts.fetch_add(1, std::memory_order_release); }
  bool poisoned() const override { return false; }
  Result<std::vector<uint8_t>, wasm::WasmError> ReadBytes(uint32_t, uint32_t) override {
    return std::vector<uint8_t>{};
  }
  Result<void, wasm::WasmError> WriteBytes(uint32_t, std::span<const uint8_t>) override {
    return {};
  }
  uint64_t MemorySize() override { return 0; }
  const wasm::WasmModule& module() const override { std::abort(); }
  Result<void, wasm::WasmError> Checkpoint() override { return {}; }
  bool Restore() override { return false; }

  std::atomic<int> interrupts{0};
};

TEST(GuestWatchdogCpuTest, WaitingDoesNotUseTheSliceComputingDoes) {
  GuestWatchdog watchdog;
  InterruptCountingInstance instance;
  const uint64_t handle = watchdog.Watch(&instance);
  std::thread guest([&] {
    watchdog.Resume(handle, milliseconds(30), GuestWatchdog::SteadyTime::max());
    // Ten slices of wall time without computing: not interrupted.
    std::this_thread::sleep_for(milliseconds(300));
    EXPECT_EQ(instance.interrupts.load(std::memory_order_acquire), 0);
    // Computing: interrupted once the thread has used its 30 ms.
    while (instance.interrupts.load(std::memory_order_acquire) == 0) {
    }
    watchdog.Pause(handle);
  });
  guest.join();
  watchdog.Unwatch(handle);
  EXPECT_EQ(instance.interrupts.load(), 1);
  EXPECT_EQ(watchdog.interrupts(), 1u);
}

TEST(GuestWatchdogCpuTest, TheLeaseDeadlinePassesWhetherOrNotTheGuestComputes) {
  GuestWatchdog watchdog;
  InterruptCountingInstance instance;
  const uint64_t handle = watchdog.Watch(&instance);
  watchdog.Resume(handle, std::chrono::hours(1),
                  std::chrono::steady_clock::now() + milliseconds(20));
  while (instance.interrupts.load(std::memory_order_acquire) == 0) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  watchdog.Unwatch(handle);
  EXPECT_EQ(instance.interrupts.load(), 1);
}

TEST(GuestWatchdogCpuTest, APausedGuestIsNotInterrupted) {
  GuestWatchdog watchdog;
  InterruptCountingInstance instance;
  const uint64_t handle = watchdog.Watch(&instance);
  watchdog.Resume(handle, milliseconds(1), std::chrono::steady_clock::now() + milliseconds(1));
  watchdog.Pause(handle);
  std::this_thread::sleep_for(milliseconds(50));
  watchdog.Unwatch(handle);
  EXPECT_EQ(instance.interrupts.load(), 0);
}

}  // namespace
}  // namespace stele::runtime::wasm_host
