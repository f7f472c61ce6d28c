#include "executor/helper_threads.h"

#include <algorithm>
#include <utility>

#include "base/thread_name.h"

namespace stele::executor {

HelperThreads::HelperThreads(uint32_t parallelism, std::string thread_name)
    : parallelism_(std::max<uint32_t>(parallelism, 1)), thread_name_(std::move(thread_name)) {}

HelperThreads::~HelperThreads() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    threads.swap(threads_);
  }
  work_.notify_all();
  for (auto& thread : threads) thread.join();
}

size_t HelperThreads::thread_count() const {
  std::lock_guard lock(mu_);
  return threads_.size();
}

void HelperThreads::Drain() {
  for (size_t i = next_++; i < n_; i = next_++) {
    if ((*handle_)(i)) ++succeeded_;
  }
}

uint32_t HelperThreads::Run(size_t n, const std::function<bool(size_t)>& handle) {
  if (n == 0) return 0;
  const size_t helpers = std::min<size_t>(n, parallelism_) - 1;
  {
    std::lock_guard lock(mu_);
    while (threads_.size() < helpers) {
      threads_.emplace_back([this] {
        NameThisThread(thread_name_);
        Loop();
      });
    }
    handle_ = &handle;
    n_ = n;
    next_ = 0;
    succeeded_ = 0;
    tickets_ = helpers;
    working_ = helpers;
  }
  if (helpers > 0) work_.notify_all();
  Drain();
  std::unique_lock lock(mu_);
  // A helper that wakes only after the caller drained everything still
  // checks in: the job's state must outlive every helper's look at it.
  done_.wait(lock, [this] { return working_ == 0; });
  handle_ = nullptr;
  return succeeded_;
}

void HelperThreads::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    work_.wait(lock, [this] { return stop_ || tickets_ > 0; });
    if (stop_) return;
    --tickets_;
    lock.unlock();
    Drain();
    lock.lock();
    if (--working_ == 0) done_.notify_one();
  }
}

}  // namespace stele::executor
