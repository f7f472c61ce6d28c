// Retention: deleting the trees of finished top-level executions once they
// are old enough (docs/config.md "[retention]", docs/sdk.md "Retention").
// The storage call (DbExternalApi::DeleteFinishedExecutions) deletes one
// bounded batch per transaction; a pass here walks the whole store batch by
// batch, pausing between batches as long as the last one took, so that
// collecting a large backlog takes at most about half of the database's
// write capacity and never holds its write lock for long.
//
// Used by ExecutionService twice: by the periodic collector it starts with
// the executors (RetentionCollector, when ServiceOptions says so), and by
// the one-off ExecutionService::CollectFinished (`stele db gc`,
// Engine::CollectFinished).
//
// Threading: RunRetentionPass is reentrant; RetentionCounters are atomics
// read from any thread; RetentionCollector's Start/Stop are called from one
// controlling thread. Ownership: the collector owns its connection and
// thread; it shares the clock and the counters.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "base/cancellation.h"
#include "base/clock.h"
#include "base/result.h"
#include "service/service_error.h"
#include "storage/db_external_api.h"

namespace stele::service {

// What one pass deleted.
struct RetentionReport {
  uint64_t deleted = 0;            // executions, children included
  uint64_t deleted_top_level = 0;  // trees
  uint64_t examined = 0;           // top-level executions looked at
  uint32_t batches = 0;            // storage calls (transactions)
  DateTime cutoff;                 // trees finished at or before it were deleted
};

// Monotonic since the service was created (the /metrics counters).
struct RetentionCounters {
  std::atomic<uint64_t> deleted{0};
  std::atomic<uint64_t> deleted_top_level{0};
  std::atomic<uint64_t> passes{0};
  std::atomic<uint64_t> failed_passes{0};
};

// Deletes, batch by batch, every tree collectable at `cutoff`
// (storage/retention.h). Between batches it waits as long as the last
// batch took (at most a second), or less when `stop` fires: then the pass
// ends early with what it deleted so far. Adds to `counters` as it goes;
// `on_batch`, when set, sees each batch and how long its call took (the
// benchmark's view of how long the write lock is held).
// Errors: kUnavailable when a batch fails (what earlier batches deleted
// stays deleted, and counted); kInvalidArgument for a batch size out of
// range.
using RetentionBatchObserver =
    std::function<void(const storage::DeletedExecutions&, std::chrono::steady_clock::duration)>;
Result<RetentionReport, ServiceError> RunRetentionPass(
    storage::DbExternalApi& api, DateTime cutoff, uint32_t batch_size,
    const CancellationToken& stop, RetentionCounters& counters,
    const RetentionBatchObserver& on_batch = nullptr);

// The periodic collector: a pass at Start and then every `interval` (steady
// time), with the cutoff `finished_after` before the clock's now. A failed
// pass is logged and retried at the next interval.
class RetentionCollector {
 public:
  struct Options {
    std::chrono::milliseconds finished_after{0};
    std::chrono::milliseconds interval{60000};
    uint32_t batch_size = 100;
  };
  RetentionCollector(std::unique_ptr<storage::DbExternalApi> api, SharedClock clock,
                     Options options, std::shared_ptr<RetentionCounters> counters);
  // Stops.
  ~RetentionCollector();
  RetentionCollector(const RetentionCollector&) = delete;
  RetentionCollector& operator=(const RetentionCollector&) = delete;

  // Starts the thread. REQUIRES: not started.
  void Start();
  // Ends the pass in progress after its current batch and joins. Idempotent.
  void Stop();

 private:
  void Loop();

  const std::unique_ptr<storage::DbExternalApi> api_;
  const SharedClock clock_;
  const Options options_;
  const std::shared_ptr<RetentionCounters> counters_;
  CancellationToken stop_;
  std::mutex mu_;
  std::condition_variable wakeup_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace stele::service
