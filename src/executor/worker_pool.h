// WorkerThreadPool: the threads that run Worker::Run for one executor.
//
// A cached pool: a task submitted while every thread is busy starts a new
// thread, and threads wait for further tasks until Shutdown. The number of
// threads therefore follows the number of runs in flight, which the
// executor bounds with its ConcurrencyLimiter permits. Worker runs block
// (they are ordinary C++ calls), so a fixed-size pool would let a queued run
// eat into its own lock deadline.
//
// Threading: thread-safe. Ownership: owns its threads; Shutdown (or the
// destructor) waits for every submitted task to finish and joins them.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace stele::executor::internal {

class WorkerThreadPool {
 public:
  WorkerThreadPool() = default;
  ~WorkerThreadPool() { Shutdown(); }
  WorkerThreadPool(const WorkerThreadPool&) = delete;
  WorkerThreadPool& operator=(const WorkerThreadPool&) = delete;

  // Runs `task` on a pool thread. REQUIRES: Shutdown has not been called.
  // `task` must not throw.
  void Submit(std::function<void()> task);
  // Runs every task already submitted, then joins the threads. Idempotent.
  void Shutdown();
  size_t thread_count() const;

 private:
  void Loop();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  std::vector<std::thread> threads_;         // guarded by mu_
  size_t idle_ = 0;                          // guarded by mu_
  bool shutdown_ = false;                    // guarded by mu_
};

}  // namespace stele::executor::internal
