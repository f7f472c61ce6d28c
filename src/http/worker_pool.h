// WorkerPool: the threads on which requests do their blocking work (the
// database, a webhook's guest), off the I/O threads of http/server.h. At
// most `max_threads`, started on demand and kept until Stop; tasks beyond
// them queue in order. The queue needs no bound of its own: a connection
// has at most one request in its handler at a time, so it holds at most
// one task per connection.
//
// Threading: Post from any thread; Stop from one controlling thread, not a
// worker. Ownership: the pool owns its threads and queued tasks.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace stele::http {

class WorkerPool {
 public:
  // REQUIRES: max_threads > 0.
  explicit WorkerPool(size_t max_threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Runs `task` on a worker; false (and `task` dropped) once stopping.
  // A task must not throw.
  bool Post(std::function<void()> task);
  // Runs what is queued, then joins every thread. Idempotent.
  void Stop();

 private:
  void Run();

  const size_t max_threads_;
  std::mutex mu_;
  std::condition_variable work_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  size_t idle_ = 0;                          // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;         // guarded by mu_
};

}  // namespace stele::http
