#include "executor/concurrency_limiter.h"

#include <gtest/gtest.h>

#include <thread>

#include "executor/worker_pool.h"

namespace stele::executor {
namespace {

using namespace std::chrono_literals;  // NOLINT

TEST(ConcurrencyLimiterTest, TakesAtMostWhatIsFree) {
  auto limiter = ConcurrencyLimiter::Create(3);
  auto first = limiter->TryAcquireUpTo(2);
  EXPECT_EQ(first.size(), 2u);
  auto second = limiter->TryAcquireUpTo(5);
  EXPECT_EQ(second.size(), 1u);
  EXPECT_TRUE(limiter->TryAcquireUpTo(1).empty());
  EXPECT_EQ(limiter->available(), 0u);
  first.pop_back();  // a permit released on destruction
  EXPECT_EQ(limiter->available(), 1u);
  second.front().Release();
  second.front().Release();  // idempotent
  EXPECT_EQ(limiter->available(), 2u);
}

TEST(ConcurrencyLimiterTest, MovedPermitsReleaseOnce) {
  auto limiter = ConcurrencyLimiter::Create(1);
  {
    auto permits = limiter->TryAcquireUpTo(1);
    ConcurrencyLimiter::Permit moved = std::move(permits.front());
    EXPECT_TRUE(moved.valid());
    EXPECT_FALSE(permits.front().valid());  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(limiter->available(), 0u);
  }
  EXPECT_EQ(limiter->available(), 1u);
}

TEST(ConcurrencyLimiterTest, WaitForAvailableWakesOnRelease) {
  auto limiter = ConcurrencyLimiter::Create(1);
  auto permits = limiter->TryAcquireUpTo(1);
  EXPECT_FALSE(limiter->WaitForAvailable(1ms));
  std::thread releaser([&] { permits.clear(); });
  EXPECT_TRUE(limiter->WaitForAvailable(10s));
  releaser.join();
}

TEST(WorkerThreadPoolTest, RunsTasksConcurrentlyAndDrainsOnShutdown) {
  internal::WorkerThreadPool pool;
  std::mutex mu;
  std::condition_variable cv;
  int waiting = 0;
  int done = 0;
  // Three tasks that can only finish together: needs three threads.
  for (int i = 0; i < 3; ++i) {
    pool.Submit([&] {
      std::unique_lock lock(mu);
      ++waiting;
      cv.notify_all();
      cv.wait(lock, [&] { return waiting == 3; });
      ++done;
    });
  }
  pool.Shutdown();
  EXPECT_EQ(done, 3);
}

}  // namespace
}  // namespace stele::executor
