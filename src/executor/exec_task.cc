#include "executor/exec_task.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "base/check.h"
#include "base/log.h"
#include "base/thread_name.h"
#include "core/json_codec.h"
#include "executor/outcome.h"
#include "storage/wait.h"

namespace stele::executor {

// One run in flight. The flags are guarded by ExecTask::mu_.
struct ExecTask::InFlight {
  uint64_t seq = 0;
  ExecutionId execution_id;
  Version locked_version;  // next version when locked
  DateTime deadline;       // lock_expires_at
  CancellationToken cancel = CancellationToken();
  // Fired (before `cancel`) when the CancelRegistry reports the execution
  // cancelled. A token rather than a flag under mu_: the registry's
  // callback may outlive the ExecTask, so it captures only this struct.
  CancellationToken cancel_requested = CancellationToken();
  bool returned = false;       // Worker::Run has returned
  bool timed_out = false;      // the deadline fired first: record TemporaryTimeout
  bool shutting_down = false;  // cancelled by Stop: record errors as Unlocked
  bool abandoned = false;      // Stop unlocked it already: discard the result
};

namespace {

constexpr const char* kShutdownReason = "executor shutting down";

bool IsWorkflowComponent(core::ComponentType type) { return core::IsWorkflowComponentType(type); }

WorkerContext MakeContext(const storage::LockedExecution& locked, const CancellationToken& cancel,
                          uint64_t max_result_bytes) {
  const core::ComponentRetryConfig retry =
      locked.policy.retry.ApplyTo(locked.locked_event.retry_config);
  WorkerContext ctx{
      .execution_id = locked.execution_id,
      .ffqn = locked.ffqn,
      .params = locked.params,
      .metadata = locked.metadata,
      .event_history = locked.event_history,
      .responses = locked.responses,
      .version = locked.next_version,
      .locked_event = locked.locked_event,
      .parent = locked.parent,
      .intermittent_event_count = locked.intermittent_event_count,
      .can_be_retried = core::CanBeRetriedAfter(locked.intermittent_event_count + 1,
                                                retry.max_retries, retry.retry_exp_backoff)
                            .has_value(),
      .execution_deadline = locked.locked_event.lock_expires_at,
      .deadline = locked.policy.deadline,
      .cancel = cancel,
      .run_id = locked.locked_event.run_id,
      .executor_id = locked.locked_event.executor_id,
      .max_result_bytes = max_result_bytes,
  };
  return ctx;
}

// The version a result is to be recorded at; `fallback` when it names none.
Version VersionOf(const WorkerResult& result, Version fallback) {
  if (const auto* ok = std::get_if<WorkerOk>(&result.value)) return ok->version;
  if (const auto* err = std::get_if<WorkerError>(&result.value)) return err->version;
  return fallback;
}

// HTTP traces the run collected, whatever its result.
core::HttpClientTraces TracesOf(const WorkerResult& result) {
  if (const auto* ok = std::get_if<WorkerOk>(&result.value)) return ok->http_client_traces;
  const auto* err = std::get_if<WorkerError>(&result.value);
  if (!err) return std::nullopt;
  return std::visit(
      [](const auto& e) -> core::HttpClientTraces {
        if constexpr (requires { e.http_client_traces; }) {
          return e.http_client_traces;
        } else {
          return std::nullopt;
        }
      },
      err->error);
}

// The JSON size of the value a result carries (an ok/err value, an
// activity's err), 0 for none.
uint64_t ResultBytes(const WorkerResult& result) {
  if (const auto* ok = std::get_if<WorkerOk>(&result.value)) {
    return core::SerializeJson(core::ToJson(ok->value)).size();
  }
  if (const auto* err = std::get_if<WorkerError>(&result.value)) {
    if (const auto* returned = std::get_if<ActivityReturnedError>(&err->error)) {
      return core::SerializeJson(core::ToJson(core::SupportedFunctionReturnValue(returned->err)))
          .size();
    }
  }
  return 0;
}

// `result`, or a kResultTooLarge error at its version when its value is
// over `max_bytes` (0: no limit).
WorkerResult LimitResultSize(WorkerResult result, uint64_t max_bytes) {
  if (max_bytes == 0) return result;
  const uint64_t bytes = ResultBytes(result);
  if (bytes <= max_bytes) return result;
  WorkerResult limited =
      WorkerResult::Fatal(VersionOf(result, Version(0)), FatalErrorKind::kResultTooLarge,
                          "the result is " + std::to_string(bytes) + " bytes, over the limit of " +
                              std::to_string(max_bytes));
  limited.engine = result.engine;
  return limited;
}

PlannedWrite ShutdownUnlock(const ExecutionId& id, Version version, DateTime now) {
  return PlannedWrite{id, version,
                      storage::AppendRequest{now, core::Unlocked{now, kShutdownReason}},
                      std::nullopt, false};
}

// The worker's own timeout reason, if it returned a TemporaryTimeout with one.
std::optional<std::string> TimeoutReasonOf(const WorkerResult& result) {
  const auto* err = std::get_if<WorkerError>(&result.value);
  if (err == nullptr) return std::nullopt;
  const auto* timeout = std::get_if<TemporaryTimeout>(&err->error);
  return timeout ? timeout->reason : std::nullopt;
}

// A TemporaryTimeout the worker returned without naming the limit is the
// lock deadline's: an exec command its supervisor killed at the deadline,
// a wasm activity interrupted there.
WorkerResult WithDeadlineReason(WorkerResult result, const std::string& reason) {
  if (auto* err = std::get_if<WorkerError>(&result.value)) {
    auto* timeout = std::get_if<TemporaryTimeout>(&err->error);
    if (timeout != nullptr && !timeout->reason) timeout->reason = reason;
  }
  return result;
}

// What to record for a run, given how it ended on the executor's side.
// `deadline_reason`: the reason of a timeout at the lock deadline.
std::optional<PlannedWrite> DecideWrite(const WorkerResult& result,
                                        const storage::LockedExecution& locked, DateTime now,
                                        bool timed_out, bool shutting_down, bool cancel_requested,
                                        const std::string& deadline_reason) {
  // The cancellation is committed already; the result is mapped as usual
  // and its fenced append loses to it. (Should a registry have been
  // notified without a committed cancel, the result is simply recorded.)
  if (cancel_requested) return ComputeOutcome(result, RunInfo::From(locked), now);
  const bool db_updated = std::holds_alternative<DbUpdatedByWorkerOrWatcher>(result.value);
  if (timed_out && !db_updated) {
    WorkerResult timeout = WorkerResult::Err(
        VersionOf(result, locked.next_version),
        TemporaryTimeout{TracesOf(result), TimeoutReasonOf(result).value_or(deadline_reason)});
    timeout.engine = result.engine;
    return ComputeOutcome(timeout, RunInfo::From(locked), now);
  }
  if (shutting_down) {
    const auto* err = std::get_if<WorkerError>(&result.value);
    if (err && !std::holds_alternative<WorkerDbError>(err->error)) {
      return ShutdownUnlock(locked.execution_id, err->version, now);
    }
  }
  return ComputeOutcome(result, RunInfo::From(locked), now);
}

}  // namespace

ExecTask::ExecTask(std::shared_ptr<Worker> worker, std::unique_ptr<storage::DbExecutor> db,
                   SharedClock clock, ExecutorOptions options)
    : worker_(std::move(worker)),
      db_(std::move(db)),
      clock_owner_(CheckedClock(std::move(clock), "ExecTask needs a clock")),
      clock_(*clock_owner_),
      options_(std::move(options)),
      limiter_(options_.concurrency_limiter ? options_.concurrency_limiter
                                            : ConcurrencyLimiter::Create(options_.batch_size)),
      enforce_deadlines_(!IsWorkflowComponent(options_.component_id.component_type)),
      next_cancel_watch_(clock_.Now() + options_.cancel_watch_interval) {
  STELE_CHECK(worker_ != nullptr, "ExecTask needs a worker");
  STELE_CHECK(db_ != nullptr, "ExecTask needs a DbExecutor");
  STELE_CHECK(options_.batch_size > 0, "ExecutorOptions::batch_size must be positive");
  watchdog_thread_ = std::thread([this] {
    NameThisThread("stele-leases");
    WatchdogMain();
  });
}

ExecTask::~ExecTask() { Stop(); }

void ExecTask::Start() {
  STELE_CHECK(!started_ && !stopped_, "ExecTask::Start: already started or stopped");
  started_ = true;
  loop_thread_ = std::thread([this] {
    NameThisThread("stele-lock");
    LoopMain();
  });
}

void ExecTask::Stop() {
  if (stopped_) return;
  stopped_ = true;
  // 1. No more locking.
  {
    std::lock_guard lock(mu_);
    loop_stop_ = true;
  }
  loop_wakeup_.notify_all();
  stop_loop_.Cancel();
  if (loop_thread_.joinable()) loop_thread_.join();

  // 2. Ask every run to stop.
  std::vector<CancellationToken> tokens;
  {
    std::lock_guard lock(mu_);
    runs_stopping_ = true;
    retry_wakeup_.notify_all();
    for (auto& [seq, run] : in_flight_) {
      if (run->returned) continue;
      run->shutting_down = true;
      tokens.push_back(run->cancel);
    }
  }
  for (const auto& token : tokens) token.Cancel();

  // 3. Give them `shutdown_grace` to return; unlock the rest ourselves.
  std::vector<std::pair<ExecutionId, Version>> stragglers;
  {
    std::unique_lock lock(mu_);
    runs_changed_.wait_for(lock, options_.shutdown_grace, [this] { return in_flight_.empty(); });
    for (auto& [seq, run] : in_flight_) {
      if (run->returned) continue;  // recording its own outcome right now
      run->abandoned = true;
      stragglers.emplace_back(run->execution_id, run->locked_version);
    }
  }
  for (const auto& [id, version] : stragglers) {
    STELE_LOG(kWarn, id.ToString() << ": run did not stop within the shutdown grace; unlocking");
    auto applied = ApplyOutcome(*db_, ShutdownUnlock(id, version, clock_.Now()));
    if (!applied) {
      STELE_LOG(kWarn, id.ToString()
                           << ": cannot unlock at shutdown: " << applied.error().ToString());
    }
  }

  // 4. Join everything (waits for stragglers to return).
  {
    std::lock_guard lock(mu_);
    watchdog_stop_ = true;
  }
  watchdog_wakeup_.notify_all();
  if (watchdog_thread_.joinable()) watchdog_thread_.join();
  pool_.Shutdown();
}

Result<std::vector<ExecutionId>, storage::DbErrorGeneric> ExecTask::TickForTest(DateTime now) {
  WaitForRuns(ExpireDeadlines(now));
  WaitForRuns(WatchCancels(now));
  // A run whose worker returned just before this tick is no longer
  // expirable, but its outcome may not be written yet.
  std::vector<uint64_t> returned;
  {
    std::lock_guard lock(mu_);
    for (const auto& [seq, run] : in_flight_) {
      if (run->returned) returned.push_back(seq);
    }
  }
  WaitForRuns(returned);
  STELE_ASSIGN_OR_RETURN(TickOutcome tick, Tick(now, core::RunId::Generate()));
  WaitForRuns(tick.run_seqs);
  return std::move(tick.locked);
}

Result<std::vector<ExecutionId>, storage::DbErrorGeneric> ExecTask::SpawnForTest(DateTime now) {
  STELE_ASSIGN_OR_RETURN(TickOutcome tick, Tick(now, core::RunId::Generate()));
  return std::move(tick.locked);
}

size_t ExecTask::InFlightCountForTest() const {
  std::lock_guard lock(mu_);
  return in_flight_.size();
}

Result<ExecTask::TickOutcome, storage::DbErrorGeneric> ExecTask::Tick(DateTime now,
                                                                      const core::RunId& run_id) {
  TickOutcome outcome;
  std::vector<ConcurrencyLimiter::Permit> permits = limiter_->TryAcquireUpTo(options_.batch_size);
  if (permits.empty()) {
    outcome.no_permits = true;
    return outcome;
  }
  const DateTime lock_expires_at = now + options_.lock_expiry;
  const auto batch = static_cast<uint32_t>(permits.size());
  const auto lock_started = std::chrono::steady_clock::now();
  auto locked = options_.locking_strategy == LockingStrategy::kByFfqn
                    ? db_->LockPendingByFfqns(batch, now, worker_->ExportedFunctions(), now,
                                              options_.component_id, options_.executor_id,
                                              lock_expires_at, run_id, options_.retry_config)
                    : db_->LockPendingByComponentId(batch, now, options_.component_id, now,
                                                    options_.executor_id, lock_expires_at, run_id,
                                                    options_.retry_config);
  stats_.lock.Record(std::chrono::steady_clock::now() - lock_started);
  if (!locked) return Unexpected(std::move(locked).error());
  STELE_CHECK(locked->size() <= permits.size(), "locked more executions than the batch size");
  for (size_t i = 0; i < locked->size(); ++i) {
    Spawn(std::move((*locked)[i]), std::move(permits[i]), outcome);
  }
  return outcome;  // unused permits are released here
}

std::optional<ExecTask::Reservation> ExecTask::TryReserve(DateTime now) {
  {
    std::lock_guard lock(mu_);
    if (loop_stop_) return std::nullopt;
  }
  std::vector<ConcurrencyLimiter::Permit> permits = limiter_->TryAcquireUpTo(1);
  if (permits.empty()) return std::nullopt;
  return Reservation{
      std::move(permits[0]),
      core::Locked{options_.component_id, options_.executor_id, core::RunId::Generate(),
                   now + options_.lock_expiry, options_.retry_config}};
}

void ExecTask::RunLocked(storage::LockedExecution locked, Reservation reservation) {
  const ExecutionId id = locked.execution_id;
  const Version version = locked.next_version;
  TickOutcome ignored;
  if (Spawn(std::move(locked), std::move(reservation.permit), ignored, /*only_if_running=*/true)) {
    return;
  }
  auto applied = ApplyOutcome(*db_, ShutdownUnlock(id, version, clock_.Now()));
  if (!applied) {
    STELE_LOG(kWarn, id.ToString() << ": cannot unlock an execution dispatched at shutdown: "
                                   << applied.error().ToString());
  }
}

bool ExecTask::Spawn(storage::LockedExecution locked, ConcurrencyLimiter::Permit permit,
                     TickOutcome& outcome, bool only_if_running) {
  auto run = std::make_shared<InFlight>(InFlight{.execution_id = locked.execution_id,
                                                 .locked_version = locked.next_version,
                                                 .deadline = locked.locked_event.lock_expires_at});
  bool expired_already = false;
  // An eager spawn (any thread) holds mu_ until its task is in the pool:
  // Stop sets loop_stop_ under mu_ before it shuts the pool down, so the
  // pool is still open. The loop thread's spawns are joined before that.
  std::unique_lock lock(mu_);
  if (only_if_running && loop_stop_) return false;
  run->seq = next_seq_++;
  // A deadline already behind the clock (a slow lock, a clock jump)
  // times the run out before it starts.
  if (enforce_deadlines_ && clock_.Now() >= run->deadline) {
    run->timed_out = true;
    expired_already = true;
  }
  in_flight_.emplace(run->seq, run);
  if (!only_if_running) lock.unlock();
  if (expired_already) run->cancel.Cancel();
  watchdog_wakeup_.notify_all();
  STELE_LOG(kDebug, locked.execution_id.ToString()
                        << ": locked by run " << locked.locked_event.run_id.ToString());
  outcome.locked.push_back(locked.execution_id);
  outcome.run_seqs.push_back(run->seq);
  auto permit_holder = std::make_shared<ConcurrencyLimiter::Permit>(std::move(permit));
  auto registration = std::make_shared<CancelRegistry::Registration>();
  if (options_.cancel_registry) {
    // Registered before the worker starts: a cancel that arrives in between
    // finds the token already fired when the run begins.
    *registration = options_.cancel_registry->Register(locked.execution_id, [run] {
      run->cancel_requested.Cancel();
      run->cancel.Cancel();
    });
  }
  pool_.Submit([this, run, locked = std::move(locked), permit_holder, registration] {
    RunOne(run, locked, *permit_holder, *registration);
  });
  return true;
}

void ExecTask::RunOne(const std::shared_ptr<InFlight>& run, const storage::LockedExecution& locked,
                      ConcurrencyLimiter::Permit& permit,
                      CancelRegistry::Registration& registration) {
  const std::string deadline_reason =
      DeadlineReason(options_.lock_expiry, options_.lock_expiry_setting);
  const WorkerResult result = WithDeadlineReason(
      LimitResultSize(worker_->Run(MakeContext(locked, run->cancel, options_.max_result_bytes)),
                      options_.max_result_bytes),
      deadline_reason);
  // A cancel from now on cannot stop anything; the fence handles it.
  registration.Reset();
  const bool cancel_requested = run->cancel_requested.IsCancelled();
  bool timed_out = false;
  bool shutting_down = false;
  bool abandoned = false;
  {
    std::lock_guard lock(mu_);
    run->returned = true;
    timed_out = run->timed_out;
    shutting_down = run->shutting_down;
    abandoned = run->abandoned;
  }
  const std::string id = locked.execution_id.ToString();
  STELE_LOG(kDebug, id << ": worker returned " << result.ToString()
                       << (timed_out ? " after its deadline" : "")
                       << (shutting_down ? " during shutdown" : "")
                       << (cancel_requested ? " after a cancel request" : ""));
  if (abandoned) {
    STELE_LOG(kInfo, id << ": discarding the result of a run unlocked at shutdown");
  } else if (auto write = DecideWrite(result, locked, clock_.Now(), timed_out, shutting_down,
                                      cancel_requested, deadline_reason)) {
    const auto record_started = std::chrono::steady_clock::now();
    Result<ApplyStatus, storage::DbErrorWrite> applied = ApplyStatus::kWritten;
    // A parent waiting warm on this very child records the result with its
    // own next step; otherwise (or if it cannot) it is recorded here.
    std::shared_ptr<ResponseHandoff::Ticket> ticket;
    if (options_.response_handoff && !cancel_requested && !timed_out && !shutting_down) {
      ticket = options_.response_handoff->Offer(*write);
    }
    if (!ticket || !ticket->AwaitResolution(options_.handoff_take_timeout)) {
      applied = RecordOutcome(*write);
    }
    stats_.record.Record(std::chrono::steady_clock::now() - record_started);
    if (applied && cancel_requested && *applied != ApplyStatus::kWritten) {
      STELE_LOG(kInfo, id << ": cancelled while running; the worker's " << result.ToString()
                          << " is not recorded");
    } else if (!applied) {
      STELE_LOG(kWarn, id << ": outcome not recorded (" << applied.error().ToString()
                          << "); the expired-timers watcher will handle the lock");
    }
  } else if (const auto* err = std::get_if<WorkerError>(&result.value);
             err && std::holds_alternative<WorkerDbError>(err->error)) {
    STELE_LOG(kWarn, id << ": worker failed on the database ("
                        << std::get<WorkerDbError>(err->error).error.ToString()
                        << "); the expired-timers watcher will handle the lock");
  }
  // The permit goes back before the run counts as recorded, so whoever
  // waits for the run finds the permit free.
  permit.Release();
  {
    std::lock_guard lock(mu_);
    in_flight_.erase(run->seq);
  }
  runs_changed_.notify_all();
}

Result<ApplyStatus, storage::DbErrorWrite> ExecTask::RecordOutcome(const PlannedWrite& write) {
  const std::string id = write.execution_id.ToString();
  bool after_generic_error = false;
  for (uint32_t attempt = 1;; ++attempt) {
    auto applied = ApplyOutcome(*db_, write);
    if (applied) {
      if (after_generic_error && *applied == ApplyStatus::kLostToAnotherWriter) {
        // Did the failed attempt commit after all (lost acknowledgement)?
        auto last = db_->GetLastExecutionEvent(write.execution_id);
        if (last && last->version == write.version && last->event == write.request.event) {
          STELE_LOG(kInfo, id << ": an earlier attempt had recorded the outcome already");
          return ApplyStatus::kWritten;
        }
      }
      return applied;
    }
    const storage::DbErrorWrite& error = applied.error();
    const bool transient = error.kind() == storage::DbErrorWrite::Kind::kGeneric &&
                           error.generic().kind() != storage::DbErrorGeneric::Kind::kClose;
    if (!transient || attempt >= options_.outcome_write_attempts) return applied;
    after_generic_error = true;
    const auto backoff =
        options_.outcome_write_backoff * (int64_t{1} << std::min(attempt - 1, 20u));
    STELE_LOG(kInfo, id << ": retrying the outcome write (attempt " << attempt + 1 << " of "
                        << options_.outcome_write_attempts << ") in " << backoff.count() << " ms");
    WaitForClock(clock_.Now() + backoff);
  }
}

void ExecTask::WaitForClock(DateTime t) {
  std::unique_lock lock(mu_);
  while (!runs_stopping_ && clock_.Now() < t) {
    // A ManualClock moves without telling anyone: re-read it periodically.
    retry_wakeup_.wait_for(lock, options_.deadline_check_interval);
  }
}

std::vector<uint64_t> ExecTask::ExpireDeadlines(DateTime now) {
  std::vector<uint64_t> expired;
  std::vector<CancellationToken> to_cancel;
  if (!enforce_deadlines_) return expired;
  {
    std::lock_guard lock(mu_);
    for (auto& [seq, run] : in_flight_) {
      if (run->returned || run->deadline > now) continue;
      expired.push_back(seq);
      // A run cancelled for shutdown is unlocked, not timed out; a run
      // whose execution was cancelled is finished already.
      if (run->timed_out || run->shutting_down || run->cancel_requested.IsCancelled()) continue;
      run->timed_out = true;
      to_cancel.push_back(run->cancel);
    }
  }
  for (const auto& token : to_cancel) token.Cancel();
  return expired;
}

bool ExecTask::WatchesCancels() const {
  return enforce_deadlines_ && options_.cancel_watch_interval.count() > 0;
}

std::vector<uint64_t> ExecTask::WatchCancels(DateTime now) {
  std::vector<uint64_t> stopped;
  if (!WatchesCancels()) return stopped;
  std::vector<std::shared_ptr<InFlight>> running;
  {
    std::lock_guard lock(mu_);
    if (now < next_cancel_watch_) return stopped;
    next_cancel_watch_ = now + options_.cancel_watch_interval;
    for (const auto& [seq, run] : in_flight_) {
      // Already stopping (timed out, shutdown, cancelled): nothing to add.
      if (run->returned || run->timed_out || run->shutting_down ||
          run->cancel_requested.IsCancelled()) {
        continue;
      }
      running.push_back(run);
    }
  }
  // Reads outside mu_: a slow database must not hold up the runs.
  for (const std::shared_ptr<InFlight>& run : running) {
    auto last = db_->GetLastExecutionEvent(run->execution_id);
    if (!last) continue;
    const bool finished = std::holds_alternative<core::Finished>(last->event);
    if (!finished && !std::holds_alternative<core::Paused>(last->event)) continue;
    STELE_LOG(kInfo, run->execution_id.ToString()
                         << (finished ? ": finished" : ": paused")
                         << " by another writer while running here; stopping the run");
    // As a registry notification: the finish (or pause) is committed, the
    // run's outcome loses to it.
    run->cancel_requested.Cancel();
    run->cancel.Cancel();
    stopped.push_back(run->seq);
  }
  return stopped;
}

void ExecTask::WaitForRuns(const std::vector<uint64_t>& seqs) {
  std::unique_lock lock(mu_);
  runs_changed_.wait(lock, [&] {
    return std::none_of(seqs.begin(), seqs.end(),
                        [&](uint64_t seq) { return in_flight_.contains(seq); });
  });
}

void ExecTask::SleepUnlessStopped(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  loop_wakeup_.wait_for(lock, d, [this] { return loop_stop_; });
}

void ExecTask::LoopMain() {
  STELE_LOG(kDebug, "executor " << options_.executor_id.ToString() << " of "
                                << options_.component_id.ToString() << " started");
  std::optional<std::string> last_error;
  while (!stop_loop_.IsCancelled()) {
    auto tick = Tick(clock_.Now(), core::RunId::Generate());
    if (stop_loop_.IsCancelled()) break;
    if (!tick) {
      // Log a failure once, not every tick.
      std::string message = tick.error().ToString();
      if (message != last_error) STELE_LOG(kWarn, "executor tick failed: " << message);
      last_error = std::move(message);
      SleepUnlessStopped(options_.tick_sleep);
      continue;
    }
    last_error.reset();
    if (tick->no_permits) {
      limiter_->WaitForAvailable(options_.tick_sleep);
      continue;
    }
    const auto wait = storage::WaitOptions::For(options_.tick_sleep, stop_loop_);
    if (options_.locking_strategy == LockingStrategy::kByFfqn) {
      db_->WaitForPendingByFfqn(clock_.Now(), worker_->ExportedFunctions(), wait);
    } else {
      db_->WaitForPendingByComponentId(clock_.Now(), options_.component_id, wait);
    }
  }
  STELE_LOG(kDebug, "executor " << options_.executor_id.ToString() << " stopped locking");
}

void ExecTask::WatchdogMain() {
  std::unique_lock lock(mu_);
  while (!watchdog_stop_) {
    std::optional<DateTime> earliest;
    if (enforce_deadlines_) {
      bool running = false;
      for (const auto& [seq, run] : in_flight_) {
        if (run->returned || run->timed_out || run->shutting_down ||
            run->cancel_requested.IsCancelled()) {
          continue;
        }
        running = true;
        if (!earliest || run->deadline < *earliest) earliest = run->deadline;
      }
      // The cancel watcher's next round, while there is a run to watch.
      if (running && WatchesCancels() && next_cancel_watch_ < *earliest) {
        earliest = next_cancel_watch_;
      }
    }
    if (!earliest) {
      watchdog_wakeup_.wait(lock);
      continue;
    }
    const auto remaining = *earliest - clock_.Now();
    if (remaining > std::chrono::microseconds::zero()) {
      // Re-read the clock at least every interval: a ManualClock (or a
      // clock adjustment) moves without telling anyone.
      const auto wait = std::min<std::chrono::microseconds>(
          remaining,
          std::chrono::duration_cast<std::chrono::microseconds>(options_.deadline_check_interval));
      watchdog_wakeup_.wait_for(lock, wait);
      continue;
    }
    lock.unlock();
    const DateTime now = clock_.Now();
    ExpireDeadlines(now);
    WatchCancels(now);
    lock.lock();
  }
}

}  // namespace stele::executor
