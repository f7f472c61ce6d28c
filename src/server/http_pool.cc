// HttpPool (http_pool.h): a thread per connection up to the limit, a few
// refusal threads beyond it.
#include "server/http_pool.h"

#include <system_error>

#include "base/log.h"

namespace stele::server {

namespace {
thread_local bool t_refusing = false;
}  // namespace

HttpPool::HttpPool(size_t max_connections, std::shared_ptr<HttpPoolStats> stats)
    : max_connections_(max_connections), stats_(std::move(stats)) {
  for (size_t i = 0; i < kRefusalThreads; ++i) {
    try {
      refusal_threads_.emplace_back([this] { Refuse(); });
    } catch (const std::system_error& e) {
      STELE_LOG(kError, "HTTP: cannot start a refusal thread: " << e.what());
    }
  }
}

HttpPool::~HttpPool() { shutdown(); }

bool HttpPool::RefusingOnThisThread() { return t_refusing; }

void HttpPool::enqueue(std::function<void()> fn) {
  std::unique_lock lock(mu_);
  bool admitted = busy_ + jobs_.size() < max_connections_;
  // Every admitted connection gets a thread at once: an idle one, or a new
  // one when every idle thread already has a queued connection to take.
  if (admitted && threads_.size() - busy_ <= jobs_.size()) {
    try {
      threads_.emplace_back([this] { Serve(); });
    } catch (const std::system_error& e) {
      // Out of threads: refuse rather than queue behind connections that
      // may hold their thread for minutes.
      STELE_LOG(kWarn, "HTTP: cannot start a connection thread: " << e.what());
      admitted = false;
    }
  }
  if (admitted) {
    jobs_.push_back(std::move(fn));
    lock.unlock();
    work_.notify_one();
    return;
  }
  refused_.push_back(std::move(fn));
  ++stats_->refused;
  lock.unlock();
  refusals_.notify_one();
}

void HttpPool::Serve() {
  std::unique_lock lock(mu_);
  while (true) {
    work_.wait(lock, [&] { return shutdown_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // shutting down, nothing left
    std::function<void()> fn = std::move(jobs_.front());
    jobs_.pop_front();
    ++busy_;
    ++stats_->open;
    lock.unlock();
    fn();
    lock.lock();
    --busy_;
    --stats_->open;
  }
}

void HttpPool::Refuse() {
  t_refusing = true;
  std::unique_lock lock(mu_);
  while (true) {
    refusals_.wait(lock, [&] { return shutdown_ || !refused_.empty(); });
    if (refused_.empty()) return;
    std::function<void()> fn = std::move(refused_.front());
    refused_.pop_front();
    lock.unlock();
    fn();
    lock.lock();
  }
}

void HttpPool::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    if (shutdown_) return;
    shutdown_ = true;
    threads = std::move(threads_);
  }
  work_.notify_all();
  refusals_.notify_all();
  for (auto& t : threads) t.join();
  for (auto& t : refusal_threads_) t.join();
}

}  // namespace stele::server
