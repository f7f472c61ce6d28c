// TimedDbConnection: a DbConnection decorator that measures every write
// made through it in a LatencyHistogram. The server hands one to each wasm
// workflow worker, so that the appends a workflow makes during its run (join
// sets, children, delays, the JoinNext that blocks it, backtraces) are
// measured: the executor's record histogram sees only the outcome it
// records itself (a finished run), not a run that blocked after writing its
// own events. Exported on /metrics as
// stele_workflow_write_latency_seconds{component} (metrics.cc).
//
// Writes are the calls that append or create (Append*, Create,
// AppendDelayResponse, AppendMessage, AppendBacktrace*, CancelActivity), failed ones
// included; locks, reads and waits are forwarded untimed. Every call is forwarded unchanged.
//
// Threading: as thread-safe as the inner connection (the histogram is
// atomic). Ownership: shares the inner connection and the histogram.
#pragma once

#include <memory>

#include "executor/latency_histogram.h"
#include "storage/db_connection.h"

namespace stele::server {

class TimedDbConnection final : public storage::DbConnection {
 public:
  TimedDbConnection(std::shared_ptr<storage::DbConnection> inner,
                    std::shared_ptr<executor::LatencyHistogram> writes)
      : inner_(std::move(inner)), writes_(std::move(writes)) {}

  // DbExecutor
  Result<std::vector<storage::LockedExecution>, storage::DbErrorGeneric> LockPendingByFfqns(
      uint32_t batch_size, DateTime pending_at_or_sooner,
      const std::vector<core::FunctionFqn>& ffqns, DateTime created_at,
      const core::ComponentId& component_id, const core::ExecutorId& executor_id,
      DateTime lock_expires_at, const core::RunId& run_id,
      const core::ComponentRetryConfig& retry_config) override;
  Result<std::vector<storage::LockedExecution>, storage::DbErrorGeneric> LockPendingByComponentId(
      uint32_t batch_size, DateTime pending_at_or_sooner, const core::ComponentId& component_id,
      DateTime created_at, const core::ExecutorId& executor_id, DateTime lock_expires_at,
      const core::RunId& run_id, const core::ComponentRetryConfig& retry_config) override;
  Result<storage::LockedExecution, storage::DbErrorWrite> LockOne(
      DateTime created_at, const core::ComponentId& component_id,
      const storage::ExecutionId& execution_id, const core::RunId& run_id, storage::Version version,
      const core::ExecutorId& executor_id, DateTime lock_expires_at,
      const core::ComponentRetryConfig& retry_config) override;
  Result<storage::Version, storage::DbErrorWrite> Append(
      const storage::ExecutionId& execution_id, storage::Version version,
      const storage::AppendRequest& req) override;
  Result<storage::CreatedAndLockedChildren, storage::DbErrorWrite> WriteStep(
      const storage::StepWrite& write) override;
  void WaitForPendingByFfqn(DateTime pending_at_or_sooner,
                            const std::vector<core::FunctionFqn>& ffqns,
                            const storage::WaitOptions& wait) override;
  void WaitForPendingByComponentId(DateTime pending_at_or_sooner,
                                   const core::ComponentId& component_id,
                                   const storage::WaitOptions& wait) override;
  Result<core::ExecutionEvent, storage::DbErrorRead> GetLastExecutionEvent(
      const storage::ExecutionId& execution_id) override;
  Result<storage::CancelOutcome, storage::DbErrorWrite> CancelActivity(
      const storage::ExecutionId& execution_id, DateTime cancelled_at) override;

  // DbConnection
  Result<storage::AppendMessageOutcome, storage::DbErrorWrite> AppendMessage(
      DateTime created_at, const storage::ExecutionId& execution_id,
      const core::JoinSetId& join_set_id, const core::MessageReceived& message) override;
  Result<storage::AppendDelayResponseOutcome, storage::DbErrorWrite> AppendDelayResponse(
      DateTime created_at, const storage::ExecutionId& execution_id,
      const core::JoinSetId& join_set_id, const core::DelayId& delay_id, bool ok) override;
  Result<core::ExecutionEvent, storage::DbErrorRead> GetExecutionEvent(
      const storage::ExecutionId& execution_id, storage::Version version) override;
  Result<storage::CreateRequest, storage::DbErrorRead> GetCreateRequest(
      const storage::ExecutionId& execution_id) override;
  Result<core::PendingState, storage::DbErrorRead> GetPendingState(
      const storage::ExecutionId& execution_id) override;
  Result<std::vector<storage::ExpiredTimer>, storage::DbErrorGeneric> GetExpiredTimers(
      DateTime at) override;
  Result<storage::Version, storage::DbErrorWrite> Create(
      const storage::CreateRequest& req) override;
  Result<std::vector<core::JoinSetResponseEventOuter>, storage::DbErrorReadWithTimeout>
  SubscribeToNextResponses(const storage::ExecutionId& execution_id, uint32_t start_idx,
                           const storage::WaitOptions& wait) override;
  Result<core::SupportedFunctionReturnValue, storage::DbErrorReadWithTimeout> WaitForFinishedResult(
      const storage::ExecutionId& execution_id,
      const std::optional<storage::WaitOptions>& wait) override;
  Result<void, storage::DbErrorReadWithTimeout> WaitForPublish(
      const storage::ExecutionId& execution_id, storage::Version since,
      const storage::WaitOptions& wait) override;
  Result<storage::WatchToken, storage::DbErrorRead> WatchFinished(
      const storage::ExecutionId& execution_id, storage::WatchCallback on_change) override;
  Result<storage::WatchToken, storage::DbErrorRead> WatchPublish(
      const storage::ExecutionId& execution_id, storage::Version since,
      storage::WatchCallback on_change) override;
  void Unwatch(storage::WatchToken token) override;
  Result<void, storage::DbErrorWrite> AppendBacktrace(const core::BacktraceInfo& info) override;
  Result<void, storage::DbErrorWrite> AppendBacktraceBatch(
      const std::vector<core::BacktraceInfo>& batch) override;
  void StoreBacktraces(std::vector<core::BacktraceInfo> batch) override;

 private:
  // Runs `write` and records how long it took.
  template <class F>
  auto Timed(F&& write) {
    const auto start = std::chrono::steady_clock::now();
    auto result = write();
    writes_->Record(std::chrono::steady_clock::now() - start);
    return result;
  }

  std::shared_ptr<storage::DbConnection> inner_;
  std::shared_ptr<executor::LatencyHistogram> writes_;
};

}  // namespace stele::server
