// HttpPool's memory hygiene (http_pool.h; docs/reliability.md, Memory
// under hostile traffic): a pooled thread returns the stack pages a deep
// connection touched, and the pool trims the heap once connections stop
// ending.
#include "server/http_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

namespace stele::server {
namespace {

constexpr size_t kFrameBytes = 16 * 1024;

// Touches depth * 16 KiB of the real stack (not instrumented: under ASan
// the locals would otherwise live on its fake stack, on the heap).
__attribute__((noinline, no_sanitize("address"))) size_t TouchStack(size_t depth) {
  volatile char frame[kFrameBytes];
  for (size_t i = 0; i < kFrameBytes; i += 256) frame[i] = static_cast<char>(i + depth);
  if (depth == 0) return static_cast<size_t>(frame[0]);
  return TouchStack(depth - 1) + static_cast<size_t>(frame[256]);
}

struct StackRange {
  uintptr_t low = 0;
  uintptr_t high = 0;
};

StackRange ThisThreadsStack() {
  pthread_attr_t attr;
  StackRange range;
  if (::pthread_getattr_np(::pthread_self(), &attr) != 0) return range;
  void* base = nullptr;
  size_t size = 0;
  if (::pthread_attr_getstack(&attr, &base, &size) == 0) {
    range.low = reinterpret_cast<uintptr_t>(base);
    range.high = range.low + size;
  }
  ::pthread_attr_destroy(&attr);
  return range;
}

// Resident bytes of [low, high) (mincore).
size_t ResidentBytes(StackRange range) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t low = (range.low + page - 1) & ~(page - 1);
  std::vector<unsigned char> pages((range.high - low) / page);
  if (::mincore(reinterpret_cast<void*>(low), pages.size() * page, pages.data()) != 0) return 0;
  size_t resident = 0;
  for (unsigned char p : pages) resident += (p & 1) * page;
  return resident;
}

// Polls `cond` until it holds (bounded, so a broken pool fails the test).
template <class F>
bool Eventually(F cond) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TEST(HttpPoolTest, AFinishedConnectionLeavesItsThreadsStackPagesFree) {
  auto stats = std::make_shared<HttpPoolStats>();
  HttpPool pool(4, stats);
  constexpr size_t kDepth = 256;  // 4 MiB
  std::promise<std::pair<StackRange, size_t>> touched;
  pool.enqueue([&] {
    StackRange range = ThisThreadsStack();
    TouchStack(kDepth);
    touched.set_value({range, ResidentBytes(range)});
  });
  auto [range, while_running] = touched.get_future().get();
  ASSERT_NE(range.low, 0u);
  // The connection is over once its thread is counted idle again.
  ASSERT_TRUE(Eventually([&] { return stats->open.load() == 0; }));
  EXPECT_GE(while_running, kDepth * kFrameBytes);
  const size_t after = ResidentBytes(range);
  EXPECT_LT(after, 512u * 1024) << "of " << while_running << " resident bytes while it ran";
  // The thread serves again, with a fresh stack as deep as it needs.
  std::promise<size_t> again;
  pool.enqueue([&] { again.set_value(TouchStack(kDepth) + 1); });
  EXPECT_GT(again.get_future().get(), 0u);
}

TEST(HttpPoolTest, TheHeapIsTrimmedOnceConnectionsStopEnding) {
  auto stats = std::make_shared<HttpPoolStats>();
  HttpPool pool(4, stats);
  EXPECT_EQ(stats->trims.load(), 0u);
  for (int burst = 1; burst <= 2; ++burst) {
    for (int i = 0; i < 20; ++i) {
      pool.enqueue([] {
        std::vector<std::vector<char>> garbage;
        for (int j = 0; j < 64; ++j) garbage.emplace_back(4096 * (j + 1), 'x');
      });
    }
    // A trim after each pause (one per pause, unless the burst itself
    // paused for a second).
    ASSERT_TRUE(Eventually([&] { return stats->trims.load() >= static_cast<uint64_t>(burst); }))
        << "burst " << burst << ": " << stats->trims.load() << " trims";
  }
}

}  // namespace
}  // namespace stele::server
