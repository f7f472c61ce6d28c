#include "executor/outcome.h"

#include <chrono>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "base/log.h"

namespace stele::executor {
namespace {

using core::ExecutionFailureKind;
using core::FinishedExecutionError;
using core::SupportedFunctionReturnValue;

// 9999-12-31T23:59:59.999999Z, the last instant RFC 3339 can write.
constexpr int64_t kMaxMicros = 253'402'300'799'999'999;

// A TemporaryTimeout that names no limit (every caller in the tree names
// one; a worker's own timeout without a reason gets DeadlineReason from
// the executor).
constexpr const char* kGenericTimeoutReason = "the run exceeded its time limit (its lock expired)";

PlannedWrite Plain(const RunInfo& run, Version version, DateTime now,
                   core::ExecutionRequest event) {
  return PlannedWrite{run.execution_id, version, storage::AppendRequest{now, std::move(event)},
                      std::nullopt, false};
}

// Finished(result), with the parent's response when the execution is a child.
PlannedWrite Finish(const RunInfo& run, Version version, DateTime now,
                    SupportedFunctionReturnValue result, core::HttpClientTraces traces) {
  PlannedWrite write = Plain(run, version, now, core::Finished{result, std::move(traces)});
  if (auto derived = run.execution_id.AsDerived()) {
    auto [parent_id, join_set_id] = derived->SplitToParts();
    // Finished does not advance the version: the response names the
    // version of the Finished event itself.
    write.parent_response = storage::AppendResponseToExecution{
        std::move(parent_id), now, std::move(join_set_id), *derived, version, std::move(result)};
  }
  return write;
}

PlannedWrite FinishWithError(const RunInfo& run, Version version, DateTime now,
                             ExecutionFailureKind kind, std::optional<std::string> reason,
                             std::optional<std::string> detail,
                             core::HttpClientTraces traces = std::nullopt) {
  return Finish(run, version, now,
                FinishedExecutionError{kind, std::move(reason), std::move(detail)},
                std::move(traces));
}

std::optional<core::Duration> RetryAfter(const RunInfo& run) {
  return core::RetryDelay(run.intermittent_event_count + 1, run.retry_config,
                          run.execution_id.ToString());
}

// The attempt that just failed, of how many the policy allows.
core::RetryAttempt AttemptOf(const RunInfo& run) {
  return core::RetryAttempt{run.intermittent_event_count + 1, core::MaxAttempts(run.retry_config)};
}

ExecutionFailureKind FailureKindOf(FatalErrorKind kind) {
  switch (kind) {
    case FatalErrorKind::kNondeterminismDetected:
      return ExecutionFailureKind::kNondeterminismDetected;
    case FatalErrorKind::kOutOfFuel:
      return ExecutionFailureKind::kOutOfFuel;
    case FatalErrorKind::kCancelled:
      return ExecutionFailureKind::kCancelled;
    default:
      return ExecutionFailureKind::kUncategorized;
  }
}

PlannedWrite MapFatal(const RunInfo& run, Version version, DateTime now, const FatalError& fatal) {
  const ExecutionFailureKind kind = FailureKindOf(fatal.kind);
  // The kind is visible in the result unless it folds into Uncategorized;
  // then the reason keeps it.
  std::string reason = kind == ExecutionFailureKind::kUncategorized
                           ? std::string(FatalErrorKindName(fatal.kind)) + ": " + fatal.reason
                           : fatal.reason;
  PlannedWrite write = FinishWithError(run, version, now, kind, std::move(reason), fatal.detail);
  write.is_activity_cancel = fatal.kind == FatalErrorKind::kCancelled;
  return write;
}

std::optional<PlannedWrite> MapError(const WorkerError& err, const RunInfo& run, DateTime now) {
  const Version version = err.version;
  return std::visit(
      [&](const auto& e) -> std::optional<PlannedWrite> {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, TemporaryTimeout>) {
          std::string reason = e.reason.value_or(kGenericTimeoutReason);
          if (auto d = RetryAfter(run)) {
            return Plain(
                run, version, now,
                core::TemporarilyTimedOut{AddSaturating(now, *d), e.http_client_traces,
                                          std::nullopt, std::move(reason), AttemptOf(run)});
          }
          return FinishWithError(run, version, now, ExecutionFailureKind::kTimedOut,
                                 std::move(reason), std::nullopt, e.http_client_traces);
        } else if constexpr (std::is_same_v<E, ActivityTrap>) {
          std::string reason = "activity trap: " + e.reason;
          if (e.non_retryable) {
            return FinishWithError(run, version, now, ExecutionFailureKind::kUncategorized,
                                   std::move(reason) + " (non-retryable)", e.detail,
                                   e.http_client_traces);
          }
          if (auto d = RetryAfter(run)) {
            return Plain(
                run, version, now,
                core::TemporarilyFailed{AddSaturating(now, *d), std::move(reason), e.detail,
                                        e.http_client_traces, std::nullopt, AttemptOf(run)});
          }
          return FinishWithError(run, version, now, ExecutionFailureKind::kUncategorized,
                                 std::move(reason), e.detail, e.http_client_traces);
        } else if constexpr (std::is_same_v<E, ActivityReturnedError>) {
          if (auto d = RetryAfter(run)) {
            std::optional<std::string> detail = e.detail;
            if (!detail && e.err.err) detail = e.err.err->dump();
            return Plain(run, version, now,
                         core::TemporarilyFailed{AddSaturating(now, *d), "activity returned error",
                                                 std::move(detail), e.http_client_traces,
                                                 std::nullopt, AttemptOf(run)});
          }
          // Retries exhausted: the err is the function's own answer.
          return Finish(run, version, now, e.err, e.http_client_traces);
        } else if constexpr (std::is_same_v<E, LimitReached>) {
          core::Duration backoff = core::ComputeRetryDurationWhenRetryingForever(
              run.intermittent_event_count + 1, run.retry_config.retry_exp_backoff);
          if (run.retry_config.max_backoff && *run.retry_config.max_backoff < backoff) {
            backoff = *run.retry_config.max_backoff;
          }
          return Plain(run, version, now,
                       core::Unlocked{AddSaturating(now, backoff), "limit reached: " + e.reason});
        } else if constexpr (std::is_same_v<E, WorkerDbError>) {
          return std::nullopt;  // the watcher cleans up after the lock expires
        } else {
          static_assert(std::is_same_v<E, FatalError>);
          return MapFatal(run, version, now, e);
        }
      },
      err.error);
}

bool IsLostRace(const storage::DbErrorWrite& error) {
  using K = storage::DbErrorWriteNonRetriable::Kind;
  // VersionConflict: someone appended at our version. IllegalState: the
  // execution is finished already. Conflict: the child's response exists.
  return error.IsNonRetriable(K::kVersionConflict) || error.IsNonRetriable(K::kIllegalState) ||
         error.IsNonRetriable(K::kConflict);
}

bool IsFinishedCancelled(storage::DbExecutor& db, const ExecutionId& id) {
  auto last = db.GetLastExecutionEvent(id);
  if (!last) return false;
  const auto* finished = std::get_if<core::Finished>(&last->event);
  if (!finished) return false;
  const auto* failure = std::get_if<FinishedExecutionError>(&finished->result);
  return failure && failure->kind == ExecutionFailureKind::kCancelled;
}

}  // namespace

RunInfo RunInfo::From(const storage::LockedExecution& locked) {
  return RunInfo{locked.execution_id, locked.intermittent_event_count,
                 locked.policy.retry.ApplyTo(locked.locked_event.retry_config)};
}

std::optional<PlannedWrite> ComputeOutcome(const WorkerResult& result, const RunInfo& run,
                                           DateTime now) {
  std::optional<PlannedWrite> write = std::visit(
      [&](const auto& r) -> std::optional<PlannedWrite> {
        using R = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<R, WorkerOk>) {
          return Finish(run, r.version, now, r.value, r.http_client_traces);
        } else if constexpr (std::is_same_v<R, DbUpdatedByWorkerOrWatcher>) {
          return std::nullopt;
        } else {
          return MapError(r, run, now);
        }
      },
      result.value);
  if (write && result.engine) {
    std::visit(
        [&](auto& event) {
          if constexpr (requires { event.engine; }) event.engine = result.engine;
        },
        write->request.event);
  }
  return write;
}

ExpiredRun ExpiredRun::FromLock(const storage::ExpiredLock& lock) {
  return ExpiredRun{!lock.max_retries.has_value(),
                    core::ComponentRetryConfig{lock.max_retries, lock.retry_exp_backoff}};
}

PlannedWrite ComputeExpiredLockOutcome(const storage::ExpiredLock& lock, DateTime at,
                                       std::string reason) {
  return ComputeExpiredLockOutcome(lock, ExpiredRun::FromLock(lock), at, std::move(reason));
}

PlannedWrite ComputeExpiredLockOutcome(const storage::ExpiredLock& lock, const ExpiredRun& expired,
                                       DateTime at, std::string reason) {
  const bool made_progress = lock.locked_at_version.value() + 1 < lock.next_version.value();
  const RunInfo run{lock.execution_id, lock.intermittent_event_count, expired.retry_config};
  if (expired.workflow && made_progress) {
    // No penalty: the workflow replays from where it got to.
    return Plain(run, lock.next_version, at, core::Unlocked{at, "made progress"});
  }
  // Exactly what the executor writes when it times a run out itself.
  std::optional<PlannedWrite> write = ComputeOutcome(
      WorkerResult::Err(lock.next_version, TemporaryTimeout{{}, std::move(reason)}), run, at);
  STELE_CHECK(write.has_value(), "a timeout always writes");
  return *std::move(write);
}

std::string FormatLimit(std::chrono::milliseconds limit) {
  const int64_t ms = limit.count();
  if (ms < 1000) return std::to_string(ms) + " ms";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  std::string text = std::to_string(ms / 1000) + "." + std::to_string(1000 + ms % 1000).substr(1);
  while (text.back() == '0') text.pop_back();
  return text + " s";
}

std::string DeadlineReason(std::chrono::milliseconds limit, std::string_view setting) {
  return "the activity ran past its time limit of " + FormatLimit(limit) + " (" +
         std::string(setting) + ")";
}

std::string ExpiredLockReason(bool workflow, std::optional<std::chrono::milliseconds> lease,
                              std::string_view setting) {
  const std::string of = lease ? " of " + FormatLimit(*lease) : std::string();
  if (workflow) {
    return "the workflow run's lease" + of +
           " expired without progress: the server running it stopped, or the run could not "
           "renew its lease (" +
           std::string(setting) + ")";
  }
  return "the activity's lock" + of +
         " expired with no result recorded: it ran past its time limit, or the server running it "
         "stopped (" +
         std::string(setting) + ")";
}

std::string_view ApplyStatusName(ApplyStatus status) {
  switch (status) {
    case ApplyStatus::kWritten:
      return "written";
    case ApplyStatus::kLostToAnotherWriter:
      return "lost to another writer";
    case ApplyStatus::kAlreadyCancelled:
      return "already cancelled";
  }
  return "unknown";
}

Result<ApplyStatus, storage::DbErrorWrite> ApplyOutcome(storage::DbExecutor& db,
                                                        const PlannedWrite& write) {
  Result<Version, storage::DbErrorWrite> res =
      write.parent_response ? db.AppendBatchRespondToParent(
                                  storage::AppendEventsToExecution{
                                      write.execution_id, write.version, {write.request}},
                                  *write.parent_response, write.request.created_at)
                            : db.Append(write.execution_id, write.version, write.request);
  const std::string what = std::string(core::ExecutionRequestVariantName(write.request.event));
  if (res) {
    STELE_LOG(kDebug, write.execution_id.ToString()
                          << ": appended " << what << " at version " << write.version.ToString());
    return ApplyStatus::kWritten;
  }
  if (!IsLostRace(res.error())) {
    STELE_LOG(kWarn, write.execution_id.ToString()
                         << ": cannot append " << what << " at version " << write.version.ToString()
                         << ": " << res.error().ToString());
    return Unexpected(std::move(res).error());
  }
  if (write.is_activity_cancel && IsFinishedCancelled(db, write.execution_id)) {
    STELE_LOG(kInfo, write.execution_id.ToString() << ": already cancelled");
    return ApplyStatus::kAlreadyCancelled;
  }
  STELE_LOG(kInfo, write.execution_id.ToString()
                       << ": " << what << " at version " << write.version.ToString()
                       << " lost to another writer (" << res.error().ToString()
                       << "); writing nothing more");
  return ApplyStatus::kLostToAnotherWriter;
}

DateTime AddSaturating(DateTime t, core::Duration d) {
  const int64_t base = ToMicros(t);
  const int64_t add = d.ToChronoSaturating().count();
  if (add >= kMaxMicros || base >= kMaxMicros - add) return DateTimeFromMicros(kMaxMicros);
  return DateTimeFromMicros(base + add);
}

}  // namespace stele::executor
