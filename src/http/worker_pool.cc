#include "http/worker_pool.h"

#include <utility>

#include "base/thread_name.h"

namespace stele::http {

WorkerPool::WorkerPool(size_t max_threads) : max_threads_(max_threads) {}

WorkerPool::~WorkerPool() { Stop(); }

bool WorkerPool::Post(std::function<void()> task) {
  std::unique_lock lock(mu_);
  if (stopping_) return false;
  tasks_.push_back(std::move(task));
  if (idle_ >= tasks_.size() || threads_.size() >= max_threads_) {
    lock.unlock();
    work_.notify_one();
    return true;
  }
  threads_.emplace_back([this] {
    NameThisThread("stele-http-work");
    Run();
  });
  return true;
}

void WorkerPool::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    ++idle_;
    work_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    --idle_;
    if (tasks_.empty()) return;  // stopping, nothing left
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // its captures die off the lock
    lock.lock();
  }
}

void WorkerPool::Stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  work_.notify_all();
  for (auto& t : threads) t.join();
}

}  // namespace stele::http
