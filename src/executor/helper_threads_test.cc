// HelperThreads: every index handled exactly once, blocking calls shared
// with the helpers, and threads kept across runs instead of restarted.
#include "executor/helper_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

namespace stele::executor {
namespace {

TEST(HelperThreadsTest, HandlesEveryIndexOnceAndCountsSuccesses) {
  HelperThreads helpers(4, "test-helper");
  for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{1000}}) {
    std::vector<std::atomic<int>> calls(n);
    const uint32_t even = helpers.Run(n, [&](size_t i) {
      ++calls[i];
      return i % 2 == 0;
    });
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(calls[i].load(), 1) << "index " << i << " of " << n;
    EXPECT_EQ(even, (n + 1) / 2);
  }
}

// The point: blocking calls overlap (here four sleeps of 200 ms take one
// round, not four), and the same helpers serve every run.
TEST(HelperThreadsTest, BlockingCallsRunTogetherOnKeptThreads) {
  HelperThreads helpers(4, "test-helper");
  for (int run = 0; run < 3; ++run) {
    std::atomic<int> inside{0};
    std::atomic<int> most{0};
    std::set<std::thread::id> threads;
    std::mutex mu;
    helpers.Run(4, [&](size_t) {
      const int now = ++inside;
      for (int seen = most; now > seen && !most.compare_exchange_weak(seen, now);) {
      }
      {
        std::lock_guard lock(mu);
        threads.insert(std::this_thread::get_id());
      }
      // Long enough that every helper has woken and taken a call.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      --inside;
      return true;
    });
    EXPECT_EQ(most.load(), 4) << "run " << run;
    EXPECT_EQ(threads.size(), 4u) << "run " << run;
    EXPECT_EQ(helpers.thread_count(), 3u) << "the caller is the fourth";
  }
}

TEST(HelperThreadsTest, ParallelismOfOneUsesTheCallerOnly) {
  HelperThreads helpers(1, "test-helper");
  const auto caller = std::this_thread::get_id();
  bool elsewhere = false;
  helpers.Run(10, [&](size_t) {
    elsewhere |= std::this_thread::get_id() != caller;
    return true;
  });
  EXPECT_FALSE(elsewhere);
  EXPECT_EQ(helpers.thread_count(), 0u);
}

}  // namespace
}  // namespace stele::executor
