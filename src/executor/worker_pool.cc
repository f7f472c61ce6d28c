#include "executor/worker_pool.h"

#include <utility>

#include "base/check.h"
#include "base/thread_name.h"

namespace stele::executor::internal {

void WorkerThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    STELE_CHECK(!shutdown_, "WorkerThreadPool::Submit after Shutdown");
    queue_.push_back(std::move(task));
    // Every queued task needs a thread of its own right now.
    if (idle_ < queue_.size()) {
      threads_.emplace_back([this] {
        NameThisThread("stele-run");
        Loop();
      });
      ++idle_;  // counted idle until it picks a task up
    }
  }
  cv_.notify_one();
}

void WorkerThreadPool::Shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    shutdown_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (auto& thread : threads) thread.join();
}

size_t WorkerThreadPool::thread_count() const {
  std::lock_guard lock(mu_);
  return threads_.size();
}

void WorkerThreadPool::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return shutdown_ || !queue_.empty(); });
    if (queue_.empty()) return;  // shut down and drained
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    --idle_;
    lock.unlock();
    task();
    task = nullptr;  // destroy captures outside the lock
    lock.lock();
    ++idle_;
  }
}

}  // namespace stele::executor::internal
