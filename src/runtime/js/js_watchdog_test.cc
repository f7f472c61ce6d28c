// The watchdog charges a slice with the CPU time of the guest's thread: a
// run that waits (for a core, a lock, a page) has computed nothing.
#include "runtime/js/js_watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

namespace stele::runtime::js {
namespace {

using std::chrono::milliseconds;

constexpr int kWatchdogSliceWhy = 1;
constexpr int kWatchdogDeadlineWhy = 2;

struct WatchedRun {
  std::atomic<int> interrupts{0};
  std::string reason;  // written by the watchdog thread before `interrupts`
  std::shared_ptr<JsWatchdog::Entry> entry =
      std::make_shared<JsWatchdog::Entry>([this](const std::string& why) {
        reason = why;
        interrupts.fetch_add(1, std::memory_order_release);
      });
};

std::string DescribeWhy(int why) { return why == kWatchdogSliceWhy ? "slice" : "deadline"; }

TEST(JsWatchdogTest, WaitingDoesNotUseTheSliceComputingDoes) {
  JsWatchdog watchdog;
  WatchedRun run;
  const uint64_t id = watchdog.Watch(run.entry, DescribeWhy);
  std::thread guest([&] {
    run.entry->Arm(milliseconds(30), kWatchdogSliceWhy, JsWatchdog::SteadyTime::max(),
                   kWatchdogDeadlineWhy);
    // Ten slices of wall time without computing: not interrupted.
    std::this_thread::sleep_for(milliseconds(300));
    EXPECT_EQ(run.interrupts.load(std::memory_order_acquire), 0);
    // Computing: interrupted once the thread has used its 30 ms.
    while (run.interrupts.load(std::memory_order_acquire) == 0) {
    }
    run.entry->Pause();
  });
  guest.join();
  watchdog.Unwatch(id);
  EXPECT_EQ(run.interrupts.load(), 1);
  EXPECT_EQ(run.reason, "slice");
}

TEST(JsWatchdogTest, TheDeadlinePassesWhetherOrNotTheGuestComputes) {
  JsWatchdog watchdog;
  WatchedRun run;
  const uint64_t id = watchdog.Watch(run.entry, DescribeWhy);
  run.entry->Arm(std::chrono::hours(1), kWatchdogSliceWhy,
                 std::chrono::steady_clock::now() + milliseconds(20), kWatchdogDeadlineWhy);
  while (run.interrupts.load(std::memory_order_acquire) == 0) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  watchdog.Unwatch(id);
  EXPECT_EQ(run.interrupts.load(), 1);
  EXPECT_EQ(run.reason, "deadline");
}

TEST(JsWatchdogTest, APausedRunIsNotInterrupted) {
  JsWatchdog watchdog;
  WatchedRun run;
  const uint64_t id = watchdog.Watch(run.entry, DescribeWhy);
  run.entry->Arm(milliseconds(1), kWatchdogSliceWhy,
                 std::chrono::steady_clock::now() + milliseconds(1), kWatchdogDeadlineWhy);
  run.entry->Pause();
  std::this_thread::sleep_for(milliseconds(50));
  watchdog.Unwatch(id);
  EXPECT_EQ(run.interrupts.load(), 0);
}

}  // namespace
}  // namespace stele::runtime::js
