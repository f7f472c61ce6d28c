#include "service/retention.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "base/log.h"

namespace stele::service {

namespace {

// Waits `duration`, or less when `stop` fires; false when it fired.
bool PauseUnlessStopped(const CancellationToken& stop,
                        std::chrono::steady_clock::duration duration) {
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    bool fired = false;
  };
  auto waiter = std::make_shared<Waiter>();
  const uint64_t registration = stop.OnCancel([waiter] {
    std::lock_guard lock(waiter->mu);
    waiter->fired = true;
    waiter->cv.notify_all();
  });
  bool fired = false;
  {
    std::unique_lock lock(waiter->mu);
    fired = waiter->cv.wait_for(lock, duration, [&] { return waiter->fired; });
  }
  if (registration != 0) stop.Unregister(registration);
  return !fired;
}

}  // namespace

Result<RetentionReport, ServiceError> RunRetentionPass(storage::DbExternalApi& api, DateTime cutoff,
                                                       uint32_t batch_size,
                                                       const CancellationToken& stop,
                                                       RetentionCounters& counters,
                                                       const RetentionBatchObserver& on_batch) {
  RetentionReport report;
  report.cutoff = cutoff;
  std::optional<storage::RetentionCursor> cursor;
  do {
    const auto started = std::chrono::steady_clock::now();
    auto batch = api.DeleteFinishedExecutions(cutoff, batch_size, cursor);
    if (!batch) return Unexpected(FromWrite(batch.error(), "delete finished executions"));
    const auto took = std::chrono::steady_clock::now() - started;
    if (on_batch) on_batch(*batch, took);
    ++report.batches;
    report.examined += batch->examined;
    report.deleted += batch->deleted;
    report.deleted_top_level += batch->deleted_top_level;
    counters.deleted += batch->deleted;
    counters.deleted_top_level += batch->deleted_top_level;
    cursor = batch->next;
    if (!cursor) break;
    // As long again as the batch held the write lock: other writers get at
    // least half of the time while a backlog is collected.
    if (!PauseUnlessStopped(
            stop, std::min<std::chrono::steady_clock::duration>(took, std::chrono::seconds(1)))) {
      break;
    }
  } while (!stop.IsCancelled());
  return report;
}

RetentionCollector::RetentionCollector(std::unique_ptr<storage::DbExternalApi> api,
                                       SharedClock clock, Options options,
                                       std::shared_ptr<RetentionCounters> counters)
    : api_(std::move(api)),
      clock_(std::move(clock)),
      options_(options),
      counters_(std::move(counters)) {}

RetentionCollector::~RetentionCollector() { Stop(); }

void RetentionCollector::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void RetentionCollector::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_.Cancel();
  wakeup_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RetentionCollector::Loop() {
  while (true) {
    const DateTime cutoff = clock_->Now() - options_.finished_after;
    auto pass = RunRetentionPass(*api_, cutoff, options_.batch_size, stop_, *counters_);
    ++counters_->passes;
    if (!pass) {
      ++counters_->failed_passes;
      STELE_LOG(kWarn, "retention: " << pass.error().message << " (retried in "
                                     << options_.interval.count() << " ms)");
    } else if (pass->deleted > 0) {
      STELE_LOG(kInfo, "retention: deleted " << pass->deleted_top_level
                                             << " finished execution(s) with their children ("
                                             << pass->deleted << " in all)");
    }
    std::unique_lock lock(mu_);
    if (wakeup_.wait_for(lock, options_.interval, [&] { return stopping_; })) return;
  }
}

}  // namespace stele::service
