// SqliteConnection: every role of the storage contract (DbExecutor,
// DbConnection, DbExternalApi, DbConnectionTest) over one Store.
//
// Writes, locks, and the check-and-register reads (SubscribeToNextResponses,
// WaitForFinishedResult) run as logical operations on the writer thread;
// every other read runs on a read connection. The implementation is split
// by concern: append.cc (appends, creation, responses, backtraces,
// upgrade), lock.cc (locking), read.cc (point reads, timers, backtraces),
// list.cc (paginated lists), wait.cc (notifications), retention.cc
// (retention), schedules.cc (cron schedules).
//
// Threading: safe for concurrent use; holds no state of its own.
// Ownership: shares the Store with the pool (see sqlite_pool.h).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "storage/db_external_api.h"
#include "storage/sqlite/store.h"

namespace stele::storage::sqlite::internal {

// A due PendingAt row chosen for locking (lock.cc).
struct LockCandidate;

class SqliteConnection final : public DbConnectionTest {
 public:
  explicit SqliteConnection(std::shared_ptr<Store> store) : store_(std::move(store)) {}

  // DbExecutor
  Result<std::vector<LockedExecution>, DbErrorGeneric> LockPendingByFfqns(
      uint32_t batch_size, DateTime pending_at_or_sooner,
      const std::vector<core::FunctionFqn>& ffqns, DateTime created_at,
      const core::ComponentId& component_id, const core::ExecutorId& executor_id,
      DateTime lock_expires_at, const core::RunId& run_id,
      const core::ComponentRetryConfig& retry_config) override;
  Result<std::vector<LockedExecution>, DbErrorGeneric> LockPendingByComponentId(
      uint32_t batch_size, DateTime pending_at_or_sooner, const core::ComponentId& component_id,
      DateTime created_at, const core::ExecutorId& executor_id, DateTime lock_expires_at,
      const core::RunId& run_id, const core::ComponentRetryConfig& retry_config) override;
  Result<LockedExecution, DbErrorWrite> LockOne(
      DateTime created_at, const core::ComponentId& component_id, const ExecutionId& execution_id,
      const core::RunId& run_id, Version version, const core::ExecutorId& executor_id,
      DateTime lock_expires_at, const core::ComponentRetryConfig& retry_config) override;
  Result<Version, DbErrorWrite> Append(const ExecutionId& execution_id, Version version,
                                       const AppendRequest& req) override;
  // One transaction; the children created and locked in it.
  Result<CreatedAndLockedChildren, DbErrorWrite> WriteStep(const StepWrite& write) override;
  void WaitForPendingByFfqn(DateTime pending_at_or_sooner,
                            const std::vector<core::FunctionFqn>& ffqns,
                            const WaitOptions& wait) override;
  void WaitForPendingByComponentId(DateTime pending_at_or_sooner,
                                   const core::ComponentId& component_id,
                                   const WaitOptions& wait) override;
  Result<core::ExecutionEvent, DbErrorRead> GetLastExecutionEvent(
      const ExecutionId& execution_id) override;

  // DbConnection
  Result<AppendMessageOutcome, DbErrorWrite> AppendMessage(
      DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
      const core::MessageReceived& message) override;
  Result<AppendDelayResponseOutcome, DbErrorWrite> AppendDelayResponse(
      DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
      const core::DelayId& delay_id, bool ok) override;
  Result<core::ExecutionEvent, DbErrorRead> GetExecutionEvent(const ExecutionId& execution_id,
                                                              Version version) override;
  Result<core::PendingState, DbErrorRead> GetPendingState(const ExecutionId& execution_id) override;
  Result<std::vector<ExpiredTimer>, DbErrorGeneric> GetExpiredTimers(DateTime at) override;
  Result<Version, DbErrorWrite> Create(const CreateRequest& req) override;
  Result<std::vector<core::JoinSetResponseEventOuter>, DbErrorReadWithTimeout>
  SubscribeToNextResponses(const ExecutionId& execution_id, uint32_t start_idx,
                           const WaitOptions& wait) override;
  Result<core::SupportedFunctionReturnValue, DbErrorReadWithTimeout> WaitForFinishedResult(
      const ExecutionId& execution_id, const std::optional<WaitOptions>& wait) override;
  Result<void, DbErrorReadWithTimeout> WaitForPublish(const ExecutionId& execution_id,
                                                      Version since,
                                                      const WaitOptions& wait) override;
  Result<WatchToken, DbErrorRead> WatchFinished(const ExecutionId& execution_id,
                                                WatchCallback on_change) override;
  Result<WatchToken, DbErrorRead> WatchPublish(const ExecutionId& execution_id, Version since,
                                               WatchCallback on_change) override;
  void Unwatch(WatchToken token) override;
  Result<void, DbErrorWrite> AppendBacktrace(const core::BacktraceInfo& info) override;
  void StoreBacktraces(std::vector<core::BacktraceInfo> batch) override;
  Result<void, DbErrorWrite> AppendBacktraceBatch(
      const std::vector<core::BacktraceInfo>& batch) override;

  // DbExternalApi
  Result<core::BacktraceInfo, DbErrorRead> GetBacktrace(const ExecutionId& execution_id,
                                                        BacktraceFilter filter) override;
  Result<std::vector<ExecutionWithState>, DbErrorGeneric> ListExecutions(
      const std::optional<core::FunctionFqn>& ffqn, bool top_level_only,
      const core::ExecutionListPagination& pagination) override;
  Result<std::vector<core::ExecutionEvent>, DbErrorRead> ListExecutionEvents(
      const ExecutionId& execution_id, Version since, Version::Type max_length,
      bool include_backtrace_id) override;
  Result<std::vector<ResponseWithCursor>, DbErrorRead> ListResponses(
      const ExecutionId& execution_id, const core::Pagination<uint32_t>& pagination) override;
  Result<ExecutionCounts, DbErrorGeneric> CountExecutionsByState() override;
  Result<PendingCounts, DbErrorGeneric> CountPendingByFfqns(
      const std::vector<core::FunctionFqn>& ffqns, DateTime now) override;
  Result<std::vector<DigestCount>, DbErrorGeneric> CountPendingByComponentDigest() override;
  Result<void, DbErrorWrite> UpgradeExecutionComponent(
      const ExecutionId& execution_id, const core::InputContentDigest& old_digest,
      const core::InputContentDigest& new_digest) override;
  Result<DeletedExecutions, DbErrorWrite> DeleteFinishedExecutions(
      DateTime cutoff, uint32_t batch_size, const std::optional<RetentionCursor>& after) override;
  // Schedules (schedules.cc)
  Result<Schedule, DbErrorWrite> CreateSchedule(const ScheduleDefinition& definition,
                                                DateTime at) override;
  Result<Schedule, DbErrorWrite> UpsertSchedule(const ScheduleDefinition& definition,
                                                DateTime at) override;
  Result<Schedule, DbErrorRead> GetSchedule(const std::string& name) override;
  Result<std::vector<Schedule>, DbErrorGeneric> ListSchedules() override;
  Result<Schedule, DbErrorWrite> SetSchedulePaused(const std::string& name, bool paused,
                                                   DateTime at) override;
  Result<void, DbErrorWrite> DeleteSchedule(const std::string& name) override;
  Result<void, DbErrorWrite> RecordScheduleTick(
      const std::string& name, DateTime watermark,
      const std::optional<core::ExecutionId>& execution_id) override;

  // DbConnectionTest
  Result<void, DbErrorWrite> AppendResponse(DateTime created_at, const ExecutionId& execution_id,
                                            const core::JoinSetResponseEvent& response) override;
  Result<ExecutionLog, DbErrorRead> Get(const ExecutionId& execution_id) override;

 private:
  // Locks the first `batch_size` of `candidates` in (scheduled_at, id) order.
  static Result<std::vector<LockedExecution>, DbErrorGeneric> LockCandidates(
      WriteContext& tx, std::vector<LockCandidate> candidates, uint32_t batch_size,
      const core::Locked& locked, DateTime created_at);

  std::shared_ptr<Store> store_;
};

}  // namespace stele::storage::sqlite::internal
