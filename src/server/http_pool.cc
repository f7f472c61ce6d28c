// HttpPool (http_pool.h): a thread per connection up to the limit, a few
// refusal threads beyond it.
#include "server/http_pool.h"

#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <system_error>

#include "base/log.h"

namespace stele::server {

namespace {
thread_local bool t_refusing = false;

// Gives the kernel back the pages of this thread's stack below the
// current frame, as glibc does when a thread exits. A pooled thread lives
// until shutdown, and the deepest request it ever served would otherwise
// keep its stack pages resident (docs/reliability.md, Memory under hostile
// traffic). Touched again, the pages come back zero-filled.
void ReleaseUnusedStack() {
  static const uintptr_t kPage = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  // Left alone below the current frame: what the caller's next calls and a
  // signal handler may use without faulting pages in again.
  constexpr uintptr_t kKeep = 64 * 1024;
  pthread_attr_t attr;
  if (::pthread_getattr_np(::pthread_self(), &attr) != 0) return;
  void* base = nullptr;
  size_t size = 0;
  int got = ::pthread_attr_getstack(&attr, &base, &size);
  ::pthread_attr_destroy(&attr);
  if (got != 0) return;
  const auto low = (reinterpret_cast<uintptr_t>(base) + kPage - 1) & ~(kPage - 1);
  const auto high = reinterpret_cast<uintptr_t>(base) + size;
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  // Not on this stack (a sanitizer's fake frame): leave everything alone.
  if (here >= high || here < low + kKeep + kPage) return;
  const uintptr_t end = (here - kKeep) & ~(kPage - 1);
  ::madvise(reinterpret_cast<void*>(low), end - low, MADV_DONTNEED);
}
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
  try {
    trim_thread_ = std::thread([this] { TrimWhenQuiet(); });
  } catch (const std::system_error& e) {
    STELE_LOG(kWarn, "HTTP: cannot start the heap trimming thread: " << e.what());
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
    ReleaseUnusedStack();
    lock.lock();
    --busy_;
    --stats_->open;
    last_end_ = std::chrono::steady_clock::now();
    if (!ended_since_trim_) {
      ended_since_trim_ = true;
      trim_.notify_one();
    }
  }
}

void HttpPool::TrimWhenQuiet() {
  std::unique_lock lock(mu_);
  while (true) {
    trim_.wait(lock, [&] { return shutdown_ || ended_since_trim_; });
    if (shutdown_) return;
    // Under a steady stream of connections nothing is trimmed: the heap
    // stays at its working size. Once the stream pauses, one trim.
    const auto quiet_at = last_end_ + kTrimAfterQuiet;
    if (std::chrono::steady_clock::now() < quiet_at) {
      trim_.wait_until(lock, quiet_at, [&] { return shutdown_; });
      continue;
    }
    ended_since_trim_ = false;
    lock.unlock();
    ::malloc_trim(0);
    ++stats_->trims;
    lock.lock();
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
  trim_.notify_all();
  for (auto& t : threads) t.join();
  for (auto& t : refusal_threads_) t.join();
  if (trim_thread_.joinable()) trim_thread_.join();
}

}  // namespace stele::server
