// HttpPool: the threads that serve the API's connections (installed as
// httplib::Server::new_task_queue), replacing httplib's fixed pool of
// max(8, nproc - 1) threads. httplib hands over one task per accepted
// connection, which runs the connection's whole keep-alive life; with a
// fixed pool, 8 long-polling clients (GET .../result?timeout=, follow)
// stalled every other request, /healthz included (BENCHMARKS.md).
//
// Here a connection gets its own thread, started on demand and reused
// afterwards, up to `max_connections` connections served at once. A
// connection beyond that is still served, but by one of a few "refusal"
// threads on which RefusingOnThisThread() is true: the API's pre-routing
// handler answers every request there with 503 `unavailable` and
// `Connection: close` (api.cc), without reading a body. So a flood of
// clients gets a clear refusal while the connections already admitted, and
// the server, stay healthy.
//
// Threads are never retired before shutdown: the pool grows to the peak
// number of connections (at most max_connections + the refusal threads).
// After each connection a thread returns the stack pages below its frame
// to the kernel, so an idle thread holds a few pages, not the stack of
// the deepest request it served. And once no connection has ended for
// kTrimAfterQuiet after some did, a trimming thread hands the free pages
// of every malloc arena back (malloc_trim): glibc keeps what a burst freed
// (docs/reliability.md, Memory under hostile traffic).
//
// Threading: enqueue is called by httplib's accept thread, shutdown by the
// same thread after the accept loop ends; the stats are atomics read by
// /metrics from any thread. Ownership: httplib owns the pool (one per
// listen); the pool shares `stats` with the ServerImpl that outlives it.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace stele::server {

struct HttpPoolStats {
  std::atomic<uint64_t> open{0};     // connections being served (not refused)
  std::atomic<uint64_t> refused{0};  // connections over the limit, since start
  std::atomic<uint64_t> trims{0};    // malloc_trim calls after quiet periods
};

class HttpPool final : public httplib::TaskQueue {
 public:
  // REQUIRES: max_connections > 0, stats non-null.
  HttpPool(size_t max_connections, std::shared_ptr<HttpPoolStats> stats);
  ~HttpPool() override;
  HttpPool(const HttpPool&) = delete;
  HttpPool& operator=(const HttpPool&) = delete;

  void enqueue(std::function<void()> fn) override;
  // Runs what was queued, then joins every thread.
  void shutdown() override;

  // True on the refusal threads, while they serve a refused connection.
  static bool RefusingOnThisThread();

  static constexpr std::chrono::milliseconds kTrimAfterQuiet{1000};

 private:
  static constexpr size_t kRefusalThreads = 2;

  void Serve();
  void Refuse();
  void TrimWhenQuiet();

  const size_t max_connections_;
  const std::shared_ptr<HttpPoolStats> stats_;

  std::mutex mu_;
  std::condition_variable work_;
  std::condition_variable refusals_;
  std::deque<std::function<void()>> jobs_;     // guarded by mu_
  std::deque<std::function<void()>> refused_;  // guarded by mu_
  size_t busy_ = 0;                            // guarded by mu_: threads running a job
  bool shutdown_ = false;                      // guarded by mu_
  std::vector<std::thread> threads_;           // guarded by mu_ until shutdown
  std::vector<std::thread> refusal_threads_;
  std::condition_variable trim_;
  bool ended_since_trim_ = false;                   // guarded by mu_
  std::chrono::steady_clock::time_point last_end_;  // guarded by mu_
  std::thread trim_thread_;
};

}  // namespace stele::server
