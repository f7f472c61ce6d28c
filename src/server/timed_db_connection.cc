// TimedDbConnection (timed_db_connection.h): forwarding, writes timed.
#include "server/timed_db_connection.h"

namespace stele::server {

using storage::ExecutionId;
using storage::Version;

Result<std::vector<storage::LockedExecution>, storage::DbErrorGeneric>
TimedDbConnection::LockPendingByFfqns(uint32_t batch_size, DateTime pending_at_or_sooner,
                                      const std::vector<core::FunctionFqn>& ffqns,
                                      DateTime created_at, const core::ComponentId& component_id,
                                      const core::ExecutorId& executor_id, DateTime lock_expires_at,
                                      const core::RunId& run_id,
                                      const core::ComponentRetryConfig& retry_config) {
  return inner_->LockPendingByFfqns(batch_size, pending_at_or_sooner, ffqns, created_at,
                                    component_id, executor_id, lock_expires_at, run_id,
                                    retry_config);
}

Result<std::vector<storage::LockedExecution>, storage::DbErrorGeneric>
TimedDbConnection::LockPendingByComponentId(uint32_t batch_size, DateTime pending_at_or_sooner,
                                            const core::ComponentId& component_id,
                                            DateTime created_at,
                                            const core::ExecutorId& executor_id,
                                            DateTime lock_expires_at, const core::RunId& run_id,
                                            const core::ComponentRetryConfig& retry_config) {
  return inner_->LockPendingByComponentId(batch_size, pending_at_or_sooner, component_id,
                                          created_at, executor_id, lock_expires_at, run_id,
                                          retry_config);
}

Result<storage::LockedExecution, storage::DbErrorWrite> TimedDbConnection::LockOne(
    DateTime created_at, const core::ComponentId& component_id, const ExecutionId& execution_id,
    const core::RunId& run_id, Version version, const core::ExecutorId& executor_id,
    DateTime lock_expires_at, const core::ComponentRetryConfig& retry_config) {
  return inner_->LockOne(created_at, component_id, execution_id, run_id, version, executor_id,
                         lock_expires_at, retry_config);
}

Result<Version, storage::DbErrorWrite> TimedDbConnection::Append(
    const ExecutionId& execution_id, Version version, const storage::AppendRequest& req) {
  return Timed([&] { return inner_->Append(execution_id, version, req); });
}

Result<storage::CreatedAndLockedChildren, storage::DbErrorWrite> TimedDbConnection::WriteStep(
    const storage::StepWrite& write) {
  return Timed([&] { return inner_->WriteStep(write); });
}

void TimedDbConnection::WaitForPendingByFfqn(DateTime pending_at_or_sooner,
                                             const std::vector<core::FunctionFqn>& ffqns,
                                             const storage::WaitOptions& wait) {
  inner_->WaitForPendingByFfqn(pending_at_or_sooner, ffqns, wait);
}

void TimedDbConnection::WaitForPendingByComponentId(DateTime pending_at_or_sooner,
                                                    const core::ComponentId& component_id,
                                                    const storage::WaitOptions& wait) {
  inner_->WaitForPendingByComponentId(pending_at_or_sooner, component_id, wait);
}

Result<core::ExecutionEvent, storage::DbErrorRead> TimedDbConnection::GetLastExecutionEvent(
    const ExecutionId& execution_id) {
  return inner_->GetLastExecutionEvent(execution_id);
}

Result<storage::CancelOutcome, storage::DbErrorWrite> TimedDbConnection::CancelActivity(
    const ExecutionId& execution_id, DateTime cancelled_at) {
  return Timed([&] { return inner_->CancelActivity(execution_id, cancelled_at); });
}

Result<storage::AppendDelayResponseOutcome, storage::DbErrorWrite>
TimedDbConnection::AppendDelayResponse(DateTime created_at, const ExecutionId& execution_id,
                                       const core::JoinSetId& join_set_id,
                                       const core::DelayId& delay_id, bool ok) {
  return Timed([&] {
    return inner_->AppendDelayResponse(created_at, execution_id, join_set_id, delay_id, ok);
  });
}

Result<storage::AppendMessageOutcome, storage::DbErrorWrite> TimedDbConnection::AppendMessage(
    DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
    const core::MessageReceived& message) {
  return Timed(
      [&] { return inner_->AppendMessage(created_at, execution_id, join_set_id, message); });
}

Result<core::ExecutionEvent, storage::DbErrorRead> TimedDbConnection::GetExecutionEvent(
    const ExecutionId& execution_id, Version version) {
  return inner_->GetExecutionEvent(execution_id, version);
}

Result<storage::CreateRequest, storage::DbErrorRead> TimedDbConnection::GetCreateRequest(
    const ExecutionId& execution_id) {
  return inner_->GetCreateRequest(execution_id);
}

Result<core::PendingState, storage::DbErrorRead> TimedDbConnection::GetPendingState(
    const ExecutionId& execution_id) {
  return inner_->GetPendingState(execution_id);
}

Result<std::vector<storage::ExpiredTimer>, storage::DbErrorGeneric>
TimedDbConnection::GetExpiredTimers(DateTime at) {
  return inner_->GetExpiredTimers(at);
}

Result<Version, storage::DbErrorWrite> TimedDbConnection::Create(
    const storage::CreateRequest& req) {
  return Timed([&] { return inner_->Create(req); });
}

Result<std::vector<core::JoinSetResponseEventOuter>, storage::DbErrorReadWithTimeout>
TimedDbConnection::SubscribeToNextResponses(const ExecutionId& execution_id, uint32_t start_idx,
                                            const storage::WaitOptions& wait) {
  return inner_->SubscribeToNextResponses(execution_id, start_idx, wait);
}

Result<core::SupportedFunctionReturnValue, storage::DbErrorReadWithTimeout>
TimedDbConnection::WaitForFinishedResult(const ExecutionId& execution_id,
                                         const std::optional<storage::WaitOptions>& wait) {
  return inner_->WaitForFinishedResult(execution_id, wait);
}

Result<void, storage::DbErrorReadWithTimeout> TimedDbConnection::WaitForPublish(
    const ExecutionId& execution_id, storage::Version since, const storage::WaitOptions& wait) {
  return inner_->WaitForPublish(execution_id, since, wait);
}

Result<storage::WatchToken, storage::DbErrorRead> TimedDbConnection::WatchFinished(
    const ExecutionId& execution_id, storage::WatchCallback on_change) {
  return inner_->WatchFinished(execution_id, std::move(on_change));
}

Result<storage::WatchToken, storage::DbErrorRead> TimedDbConnection::WatchPublish(
    const ExecutionId& execution_id, storage::Version since, storage::WatchCallback on_change) {
  return inner_->WatchPublish(execution_id, since, std::move(on_change));
}

void TimedDbConnection::Unwatch(storage::WatchToken token) { inner_->Unwatch(token); }

Result<void, storage::DbErrorWrite> TimedDbConnection::AppendBacktrace(
    const core::BacktraceInfo& info) {
  return Timed([&] { return inner_->AppendBacktrace(info); });
}

Result<void, storage::DbErrorWrite> TimedDbConnection::AppendBacktraceBatch(
    const std::vector<core::BacktraceInfo>& batch) {
  return Timed([&] { return inner_->AppendBacktraceBatch(batch); });
}

// Not timed: it need not wait for the write (DbConnection::StoreBacktraces).
void TimedDbConnection::StoreBacktraces(std::vector<core::BacktraceInfo> batch) {
  inner_->StoreBacktraces(std::move(batch));
}

}  // namespace stele::server
