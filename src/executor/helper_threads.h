// HelperThreads: a few threads kept to share bursts of blocking calls with
// the thread that owns them.
//
// The expired-timers watcher fires each due delay as its own write and
// issues them concurrently so that they share commits (SQLite's group
// commit, PostgreSQL's pool): a burst of sleepers waking together costs a
// few fsyncs instead of one fsync per sleeper in a row. It used to start
// and join up to `parallelism - 1` threads for every group of due timers:
// with a thousand sleepers waking within a second that was thousands of
// thread starts a second, each mapping and unmapping a stack. These
// threads start on first use and stay until the owner goes.
//
// Threading: Run is called by one thread at a time (the owner); the
// helpers only run the handle Run was given, while Run waits for them.
// Ownership: owns its threads; the destructor joins them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace stele::executor {

class HelperThreads {
 public:
  // Up to `parallelism` threads work on one Run, the caller's included.
  // Helper threads are named `thread_name`.
  HelperThreads(uint32_t parallelism, std::string thread_name);
  ~HelperThreads();
  HelperThreads(const HelperThreads&) = delete;
  HelperThreads& operator=(const HelperThreads&) = delete;

  // Calls handle(i) once for every i in [0, n), spread over the caller and
  // up to parallelism - 1 helpers; returns when every call has returned,
  // with how many returned true. `handle` must not throw.
  uint32_t Run(size_t n, const std::function<bool(size_t)>& handle);

  // Threads started so far (for tests).
  size_t thread_count() const;

 private:
  void Loop();
  // Takes indices of the current job until none is left.
  void Drain();

  const uint32_t parallelism_;
  const std::string thread_name_;

  mutable std::mutex mu_;
  std::condition_variable work_;
  std::condition_variable done_;
  const std::function<bool(size_t)>* handle_ = nullptr;  // the current job
  size_t n_ = 0;                                         // its size
  std::atomic<size_t> next_{0};                          // its next index
  std::atomic<uint32_t> succeeded_{0};
  size_t tickets_ = 0;                // guarded by mu_: helpers still to join the job
  size_t working_ = 0;                // guarded by mu_: helpers in the job
  bool stop_ = false;                 // guarded by mu_
  std::vector<std::thread> threads_;  // guarded by mu_
};

}  // namespace stele::executor
