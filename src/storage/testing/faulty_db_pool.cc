#include "storage/testing/faulty_db_pool.h"

#include <string>
#include <type_traits>
#include <utility>

#include "base/check.h"

namespace stele::storage::testing {

struct Fault {
  FaultKind kind = FaultKind::kGeneric;
  bool after_commit = false;
};

// The fault plan shared by a pool and its connections.
class FaultPlan {
 public:
  explicit FaultPlan(FaultyOptions options) : options_(std::move(options)), rng_(options_.seed) {}

  // Decides the fate of one call of `method` (and counts the call).
  std::optional<Fault> Decide(FaultyMethod method) {
    std::lock_guard lock(mu_);
    ++counters_[method].calls;
    auto scripted = script_.find(method);
    if (scripted != script_.end() && !scripted->second.empty()) {
      Fault fault = scripted->second.front();
      scripted->second.erase(scripted->second.begin());
      return fault;
    }
    if (!enabled_ || options_.rate <= 0.0 || !options_.methods.contains(method)) {
      return std::nullopt;
    }
    // Always draw the same numbers per decision, so that a seed replays.
    const double roll = Uniform();
    const double kind_roll = Uniform();
    const double commit_roll = Uniform();
    if (roll >= options_.rate) return std::nullopt;
    Fault fault;
    const size_t k = static_cast<size_t>(kind_roll * static_cast<double>(options_.kinds.size()));
    fault.kind = options_.kinds[std::min(k, options_.kinds.size() - 1)];
    fault.after_commit = IsWrite(method) && commit_roll < options_.after_commit_share;
    return fault;
  }
  void Injected(FaultyMethod method, bool after_commit) {
    std::lock_guard lock(mu_);
    ++counters_[method].injected;
    if (after_commit) ++counters_[method].after_commit;
  }
  void FailNext(FaultyMethod method, FaultKind kind, uint32_t count, bool after_commit) {
    std::lock_guard lock(mu_);
    for (uint32_t i = 0; i < count; ++i) {
      script_[method].push_back(Fault{kind, after_commit && IsWrite(method)});
    }
  }
  void SetEnabled(bool enabled) {
    std::lock_guard lock(mu_);
    enabled_ = enabled;
  }
  FaultyCounters counters(FaultyMethod method) const {
    std::lock_guard lock(mu_);
    auto it = counters_.find(method);
    return it == counters_.end() ? FaultyCounters{} : it->second;
  }
  FaultyCounters total() const {
    std::lock_guard lock(mu_);
    FaultyCounters sum;
    for (const auto& [method, c] : counters_) {
      sum.calls += c.calls;
      sum.injected += c.injected;
      sum.after_commit += c.after_commit;
    }
    return sum;
  }

 private:
  double Uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

  const FaultyOptions options_;
  mutable std::mutex mu_;
  std::mt19937_64 rng_;                                // guarded by mu_
  bool enabled_ = true;                                // guarded by mu_
  std::map<FaultyMethod, std::vector<Fault>> script_;  // guarded by mu_
  std::map<FaultyMethod, FaultyCounters> counters_;    // guarded by mu_
};

namespace {

std::string Describe(FaultyMethod method, const Fault& fault) {
  return std::string(fault.kind == FaultKind::kTimeout ? "injected timeout" : "injected fault") +
         " in " + std::string(FaultyMethodName(method)) +
         (fault.after_commit ? " (after commit)" : "");
}

// The error an injected fault of `fault.kind` becomes in error family E.
template <class E>
E MakeError(FaultyMethod method, const Fault& fault, std::optional<Version> version) {
  const DbErrorGeneric generic = DbErrorGeneric::Uncategorized(Describe(method, fault));
  if constexpr (std::is_same_v<E, DbErrorWrite>) {
    if (fault.kind == FaultKind::kVersionConflict) {
      if (version) return DbErrorWriteNonRetriable::VersionConflict(version->Increment(), *version);
      return DbErrorWriteNonRetriable::Conflict();
    }
    return generic;
  } else if constexpr (std::is_same_v<E, DbErrorReadWithTimeout>) {
    if (fault.kind == FaultKind::kTimeout) return E::Timeout(TimeoutOutcome::kTimeout);
    return generic;
  } else {
    static_assert(std::is_same_v<E, DbErrorGeneric> || std::is_same_v<E, DbErrorRead>);
    return generic;
  }
}

// Forwards `call` unless the plan fails it; see the header for the rules.
template <class F>
auto Guarded(FaultPlan& plan, FaultyMethod method, std::optional<Version> version, F&& call)
    -> decltype(call()) {
  using R = decltype(call());
  using E = typename R::error_type;
  const std::optional<Fault> fault = plan.Decide(method);
  if (fault && !fault->after_commit) {
    plan.Injected(method, false);
    return Unexpected(MakeError<E>(method, *fault, version));
  }
  R result = call();
  if (fault && fault->after_commit && result.has_value()) {
    plan.Injected(method, true);
    return Unexpected(MakeError<E>(method, *fault, version));
  }
  return result;
}

// The decorators, one layer per interface so each role's connection wraps
// exactly the inner connection of that role. `Iface` is the interface the
// finished class implements; `inner_` has the same type.

template <class Iface>
class FaultyExecutorT : public Iface {
 public:
  FaultyExecutorT(std::unique_ptr<Iface> inner, std::shared_ptr<FaultPlan> plan)
      : inner_(std::move(inner)), plan_(std::move(plan)) {}

  Result<std::vector<LockedExecution>, DbErrorGeneric> LockPendingByFfqns(
      uint32_t batch_size, DateTime pending_at_or_sooner,
      const std::vector<core::FunctionFqn>& ffqns, DateTime created_at,
      const core::ComponentId& component_id, const core::ExecutorId& executor_id,
      DateTime lock_expires_at, const core::RunId& run_id,
      const core::ComponentRetryConfig& retry_config) override {
    return Guarded(*plan_, FaultyMethod::kLockPending, std::nullopt, [&] {
      return inner_->LockPendingByFfqns(batch_size, pending_at_or_sooner, ffqns, created_at,
                                        component_id, executor_id, lock_expires_at, run_id,
                                        retry_config);
    });
  }
  Result<std::vector<LockedExecution>, DbErrorGeneric> LockPendingByComponentId(
      uint32_t batch_size, DateTime pending_at_or_sooner, const core::ComponentId& component_id,
      DateTime created_at, const core::ExecutorId& executor_id, DateTime lock_expires_at,
      const core::RunId& run_id, const core::ComponentRetryConfig& retry_config) override {
    return Guarded(*plan_, FaultyMethod::kLockPending, std::nullopt, [&] {
      return inner_->LockPendingByComponentId(batch_size, pending_at_or_sooner, component_id,
                                              created_at, executor_id, lock_expires_at, run_id,
                                              retry_config);
    });
  }
  Result<LockedExecution, DbErrorWrite> LockOne(
      DateTime created_at, const core::ComponentId& component_id, const ExecutionId& execution_id,
      const core::RunId& run_id, Version version, const core::ExecutorId& executor_id,
      DateTime lock_expires_at, const core::ComponentRetryConfig& retry_config) override {
    return Guarded(*plan_, FaultyMethod::kLockOne, version, [&] {
      return inner_->LockOne(created_at, component_id, execution_id, run_id, version, executor_id,
                             lock_expires_at, retry_config);
    });
  }
  Result<Version, DbErrorWrite> Append(const ExecutionId& execution_id, Version version,
                                       const AppendRequest& req) override {
    return Guarded(*plan_, FaultyMethod::kAppend, version,
                   [&] { return inner_->Append(execution_id, version, req); });
  }
  // A plan names a step write by its shape, as the convenience forms
  // (db_connection.h) write it: a child's end alone; events alone; the rest
  // (children, locks, children's outcomes: the step writes of a workflow).
  Result<CreatedAndLockedChildren, DbErrorWrite> WriteStep(const StepWrite& write) override {
    FaultyMethod method = FaultyMethod::kAppendBatchCreateNewExecution;
    Version version = write.version;
    if (write.batch.empty() && write.outcomes.size() == 1 && !write.outcomes[0].response_index) {
      method = FaultyMethod::kAppendBatchRespondToParent;
      version = write.outcomes[0].child.version;
    } else if (write.outcomes.empty() && write.children.empty() && write.locks.empty()) {
      method = FaultyMethod::kAppendBatch;
    }
    return Guarded(*plan_, method, version, [&] { return inner_->WriteStep(write); });
  }
  void WaitForPendingByFfqn(DateTime pending_at_or_sooner,
                            const std::vector<core::FunctionFqn>& ffqns,
                            const WaitOptions& wait) override {
    if (plan_->Decide(FaultyMethod::kWaitForPending)) {
      plan_->Injected(FaultyMethod::kWaitForPending, false);
      return;  // a wait cut short: callers re-query anyway
    }
    inner_->WaitForPendingByFfqn(pending_at_or_sooner, ffqns, wait);
  }
  void WaitForPendingByComponentId(DateTime pending_at_or_sooner,
                                   const core::ComponentId& component_id,
                                   const WaitOptions& wait) override {
    if (plan_->Decide(FaultyMethod::kWaitForPending)) {
      plan_->Injected(FaultyMethod::kWaitForPending, false);
      return;
    }
    inner_->WaitForPendingByComponentId(pending_at_or_sooner, component_id, wait);
  }
  Result<core::ExecutionEvent, DbErrorRead> GetLastExecutionEvent(
      const ExecutionId& execution_id) override {
    return Guarded(*plan_, FaultyMethod::kGetLastExecutionEvent, std::nullopt,
                   [&] { return inner_->GetLastExecutionEvent(execution_id); });
  }
  // CancelActivity is not overridden: the contract's default composes it
  // from GetLastExecutionEvent and the appends above, so their faults apply.

 protected:
  std::unique_ptr<Iface> inner_;
  std::shared_ptr<FaultPlan> plan_;
};

template <class Iface>
class FaultyConnectionT : public FaultyExecutorT<Iface> {
 protected:
  using FaultyExecutorT<Iface>::inner_;
  using FaultyExecutorT<Iface>::plan_;

 public:
  using FaultyExecutorT<Iface>::FaultyExecutorT;

  Result<AppendDelayResponseOutcome, DbErrorWrite> AppendDelayResponse(
      DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
      const core::DelayId& delay_id, bool ok) override {
    return Guarded(*plan_, FaultyMethod::kAppendDelayResponse, std::nullopt, [&] {
      return inner_->AppendDelayResponse(created_at, execution_id, join_set_id, delay_id, ok);
    });
  }
  Result<AppendMessageOutcome, DbErrorWrite> AppendMessage(
      DateTime created_at, const ExecutionId& execution_id, const core::JoinSetId& join_set_id,
      const core::MessageReceived& message) override {
    return Guarded(*plan_, FaultyMethod::kAppendMessage, std::nullopt, [&] {
      return inner_->AppendMessage(created_at, execution_id, join_set_id, message);
    });
  }
  Result<core::ExecutionEvent, DbErrorRead> GetExecutionEvent(const ExecutionId& execution_id,
                                                              Version version) override {
    return Guarded(*plan_, FaultyMethod::kGetExecutionEvent, std::nullopt,
                   [&] { return inner_->GetExecutionEvent(execution_id, version); });
  }
  Result<CreateRequest, DbErrorRead> GetCreateRequest(const ExecutionId& execution_id) override {
    return Guarded(*plan_, FaultyMethod::kGetExecutionEvent, std::nullopt,
                   [&] { return inner_->GetCreateRequest(execution_id); });
  }
  Result<core::PendingState, DbErrorRead> GetPendingState(
      const ExecutionId& execution_id) override {
    return Guarded(*plan_, FaultyMethod::kGetPendingState, std::nullopt,
                   [&] { return inner_->GetPendingState(execution_id); });
  }
  Result<std::vector<ExpiredTimer>, DbErrorGeneric> GetExpiredTimers(DateTime at) override {
    return Guarded(*plan_, FaultyMethod::kGetExpiredTimers, std::nullopt,
                   [&] { return inner_->GetExpiredTimers(at); });
  }
  Result<Version, DbErrorWrite> Create(const CreateRequest& req) override {
    return Guarded(*plan_, FaultyMethod::kCreate, std::nullopt,
                   [&] { return inner_->Create(req); });
  }
  Result<std::vector<core::JoinSetResponseEventOuter>, DbErrorReadWithTimeout>
  SubscribeToNextResponses(const ExecutionId& execution_id, uint32_t start_idx,
                           const WaitOptions& wait) override {
    return Guarded(*plan_, FaultyMethod::kSubscribeToNextResponses, std::nullopt,
                   [&] { return inner_->SubscribeToNextResponses(execution_id, start_idx, wait); });
  }
  Result<core::SupportedFunctionReturnValue, DbErrorReadWithTimeout> WaitForFinishedResult(
      const ExecutionId& execution_id, const std::optional<WaitOptions>& wait) override {
    return Guarded(*plan_, FaultyMethod::kWaitForFinishedResult, std::nullopt,
                   [&] { return inner_->WaitForFinishedResult(execution_id, wait); });
  }
  Result<void, DbErrorReadWithTimeout> WaitForPublish(const ExecutionId& execution_id,
                                                      Version since,
                                                      const WaitOptions& wait) override {
    return Guarded(*plan_, FaultyMethod::kWaitForFinishedResult, std::nullopt,
                   [&] { return inner_->WaitForPublish(execution_id, since, wait); });
  }
  // Watches are forwarded without faults: their callers re-read through
  // the faulty reads anyway.
  Result<WatchToken, DbErrorRead> WatchFinished(const ExecutionId& execution_id,
                                                WatchCallback on_change) override {
    return inner_->WatchFinished(execution_id, std::move(on_change));
  }
  Result<WatchToken, DbErrorRead> WatchPublish(const ExecutionId& execution_id, Version since,
                                               WatchCallback on_change) override {
    return inner_->WatchPublish(execution_id, since, std::move(on_change));
  }
  void Unwatch(WatchToken token) override { inner_->Unwatch(token); }
  Result<void, DbErrorWrite> AppendBacktrace(const core::BacktraceInfo& info) override {
    return Guarded(*plan_, FaultyMethod::kAppendBacktrace, std::nullopt,
                   [&] { return inner_->AppendBacktrace(info); });
  }
  Result<void, DbErrorWrite> AppendBacktraceBatch(
      const std::vector<core::BacktraceInfo>& batch) override {
    return Guarded(*plan_, FaultyMethod::kAppendBacktrace, std::nullopt,
                   [&] { return inner_->AppendBacktraceBatch(batch); });
  }
};

template <class Iface>
class FaultyExternalApiT : public FaultyConnectionT<Iface> {
 protected:
  using FaultyConnectionT<Iface>::inner_;
  using FaultyConnectionT<Iface>::plan_;

 public:
  using FaultyConnectionT<Iface>::FaultyConnectionT;

  Result<core::BacktraceInfo, DbErrorRead> GetBacktrace(const ExecutionId& execution_id,
                                                        BacktraceFilter filter) override {
    return Guarded(*plan_, FaultyMethod::kExternalReads, std::nullopt,
                   [&] { return inner_->GetBacktrace(execution_id, filter); });
  }
  Result<std::vector<ExecutionWithState>, DbErrorGeneric> ListExecutions(
      const std::optional<core::FunctionFqn>& ffqn, bool top_level_only,
      const core::ExecutionListPagination& pagination) override {
    return Guarded(*plan_, FaultyMethod::kExternalReads, std::nullopt,
                   [&] { return inner_->ListExecutions(ffqn, top_level_only, pagination); });
  }
  Result<std::vector<core::ExecutionEvent>, DbErrorRead> ListExecutionEvents(
      const ExecutionId& execution_id, Version since, Version::Type max_length,
      bool include_backtrace_id) override {
    return Guarded(*plan_, FaultyMethod::kExternalReads, std::nullopt, [&] {
      return inner_->ListExecutionEvents(execution_id, since, max_length, include_backtrace_id);
    });
  }
  Result<std::vector<ResponseWithCursor>, DbErrorRead> ListResponses(
      const ExecutionId& execution_id, const core::Pagination<uint32_t>& pagination) override {
    return Guarded(*plan_, FaultyMethod::kExternalReads, std::nullopt,
                   [&] { return inner_->ListResponses(execution_id, pagination); });
  }
  Result<ExecutionCounts, DbErrorGeneric> CountExecutionsByState() override {
    return Guarded(*plan_, FaultyMethod::kExternalReads, std::nullopt,
                   [&] { return inner_->CountExecutionsByState(); });
  }
  Result<PendingCounts, DbErrorGeneric> CountPendingByFfqns(
      const std::vector<core::FunctionFqn>& ffqns, DateTime now) override {
    return Guarded(*plan_, FaultyMethod::kExternalReads, std::nullopt,
                   [&] { return inner_->CountPendingByFfqns(ffqns, now); });
  }
  Result<std::vector<DigestCount>, DbErrorGeneric> CountPendingByComponentDigest() override {
    return Guarded(*plan_, FaultyMethod::kExternalReads, std::nullopt,
                   [&] { return inner_->CountPendingByComponentDigest(); });
  }
  Result<void, DbErrorWrite> UpgradeExecutionComponent(
      const ExecutionId& execution_id, const core::InputContentDigest& old_digest,
      const core::InputContentDigest& new_digest) override {
    return Guarded(*plan_, FaultyMethod::kUpgradeExecutionComponent, std::nullopt, [&] {
      return inner_->UpgradeExecutionComponent(execution_id, old_digest, new_digest);
    });
  }
  Result<DeletedExecutions, DbErrorWrite> DeleteFinishedExecutions(
      DateTime cutoff, uint32_t batch_size, const std::optional<RetentionCursor>& after) override {
    return Guarded(*plan_, FaultyMethod::kDeleteFinishedExecutions, std::nullopt,
                   [&] { return inner_->DeleteFinishedExecutions(cutoff, batch_size, after); });
  }
  // Schedules are passed through without faults.
  Result<Schedule, DbErrorWrite> CreateSchedule(const ScheduleDefinition& definition,
                                                DateTime at) override {
    return inner_->CreateSchedule(definition, at);
  }
  Result<Schedule, DbErrorWrite> UpsertSchedule(const ScheduleDefinition& definition,
                                                DateTime at) override {
    return inner_->UpsertSchedule(definition, at);
  }
  Result<Schedule, DbErrorRead> GetSchedule(const std::string& name) override {
    return inner_->GetSchedule(name);
  }
  Result<std::vector<Schedule>, DbErrorGeneric> ListSchedules() override {
    return inner_->ListSchedules();
  }
  Result<Schedule, DbErrorWrite> SetSchedulePaused(const std::string& name, bool paused,
                                                   DateTime at) override {
    return inner_->SetSchedulePaused(name, paused, at);
  }
  Result<void, DbErrorWrite> DeleteSchedule(const std::string& name) override {
    return inner_->DeleteSchedule(name);
  }
  Result<void, DbErrorWrite> RecordScheduleTick(
      const std::string& name, DateTime watermark,
      const std::optional<core::ExecutionId>& execution_id) override {
    return inner_->RecordScheduleTick(name, watermark, execution_id);
  }
};

class FaultyConnectionTest final : public FaultyExternalApiT<DbConnectionTest> {
 public:
  using FaultyExternalApiT<DbConnectionTest>::FaultyExternalApiT;

  Result<void, DbErrorWrite> AppendResponse(DateTime created_at, const ExecutionId& execution_id,
                                            const core::JoinSetResponseEvent& response) override {
    return Guarded(*plan_, FaultyMethod::kAppendResponse, std::nullopt,
                   [&] { return inner_->AppendResponse(created_at, execution_id, response); });
  }
  Result<ExecutionLog, DbErrorRead> Get(const ExecutionId& execution_id) override {
    return Guarded(*plan_, FaultyMethod::kGet, std::nullopt,
                   [&] { return inner_->Get(execution_id); });
  }
};

template <class Wrapper, class Iface>
Result<std::unique_ptr<Iface>, DbErrorGeneric> Wrap(
    Result<std::unique_ptr<Iface>, DbErrorGeneric> inner, const std::shared_ptr<FaultPlan>& plan) {
  if (!inner) return Unexpected(std::move(inner).error());
  return std::unique_ptr<Iface>(std::make_unique<Wrapper>(*std::move(inner), plan));
}

}  // namespace

std::string_view FaultyMethodName(FaultyMethod method) {
  switch (method) {
    case FaultyMethod::kLockPending:
      return "LockPending";
    case FaultyMethod::kLockOne:
      return "LockOne";
    case FaultyMethod::kAppend:
      return "Append";
    case FaultyMethod::kAppendBatchRespondToParent:
      return "AppendBatchRespondToParent";
    case FaultyMethod::kAppendBatch:
      return "AppendBatch";
    case FaultyMethod::kAppendBatchCreateNewExecution:
      return "AppendBatchCreateNewExecution";
    case FaultyMethod::kAppendDelayResponse:
      return "AppendDelayResponse";
    case FaultyMethod::kAppendMessage:
      return "AppendMessage";
    case FaultyMethod::kCreate:
      return "Create";
    case FaultyMethod::kGetLastExecutionEvent:
      return "GetLastExecutionEvent";
    case FaultyMethod::kGetExecutionEvent:
      return "GetExecutionEvent";
    case FaultyMethod::kGetPendingState:
      return "GetPendingState";
    case FaultyMethod::kGetExpiredTimers:
      return "GetExpiredTimers";
    case FaultyMethod::kSubscribeToNextResponses:
      return "SubscribeToNextResponses";
    case FaultyMethod::kWaitForFinishedResult:
      return "WaitForFinishedResult";
    case FaultyMethod::kWaitForPending:
      return "WaitForPending";
    case FaultyMethod::kAppendBacktrace:
      return "AppendBacktrace";
    case FaultyMethod::kExternalReads:
      return "ExternalReads";
    case FaultyMethod::kUpgradeExecutionComponent:
      return "UpgradeExecutionComponent";
    case FaultyMethod::kDeleteFinishedExecutions:
      return "DeleteFinishedExecutions";
    case FaultyMethod::kAppendResponse:
      return "AppendResponse";
    case FaultyMethod::kGet:
      return "Get";
  }
  return "unknown";
}

bool IsWrite(FaultyMethod method) {
  switch (method) {
    case FaultyMethod::kLockPending:
    case FaultyMethod::kLockOne:
    case FaultyMethod::kAppend:
    case FaultyMethod::kAppendBatchRespondToParent:
    case FaultyMethod::kAppendBatch:
    case FaultyMethod::kAppendBatchCreateNewExecution:
    case FaultyMethod::kAppendDelayResponse:
    case FaultyMethod::kAppendMessage:
    case FaultyMethod::kCreate:
    case FaultyMethod::kAppendBacktrace:
    case FaultyMethod::kUpgradeExecutionComponent:
    case FaultyMethod::kDeleteFinishedExecutions:
    case FaultyMethod::kAppendResponse:
      return true;
    default:
      return false;
  }
}

FaultyDbPool::FaultyDbPool(std::unique_ptr<DbPool> inner, FaultyOptions options)
    : inner_(std::move(inner)) {
  STELE_CHECK(inner_ != nullptr, "FaultyDbPool needs an inner pool");
  STELE_CHECK(options.rate >= 0.0 && options.rate <= 1.0, "FaultyOptions::rate out of [0, 1]");
  STELE_CHECK(options.after_commit_share >= 0.0 && options.after_commit_share <= 1.0,
              "FaultyOptions::after_commit_share out of [0, 1]");
  STELE_CHECK(options.rate == 0.0 || !options.kinds.empty(), "FaultyOptions::kinds is empty");
  plan_ = std::make_shared<FaultPlan>(std::move(options));
}

FaultyDbPool::~FaultyDbPool() = default;

Result<std::unique_ptr<DbExecutor>, DbErrorGeneric> FaultyDbPool::DbExecConn() {
  return Wrap<FaultyExecutorT<DbExecutor>>(inner_->DbExecConn(), plan_);
}
Result<std::unique_ptr<DbConnection>, DbErrorGeneric> FaultyDbPool::Connection() {
  return Wrap<FaultyConnectionT<DbConnection>>(inner_->Connection(), plan_);
}
Result<std::unique_ptr<DbExternalApi>, DbErrorGeneric> FaultyDbPool::ExternalApiConn() {
  return Wrap<FaultyExternalApiT<DbExternalApi>>(inner_->ExternalApiConn(), plan_);
}
Result<std::unique_ptr<DbConnectionTest>, DbErrorGeneric> FaultyDbPool::ConnectionTest() {
  return Wrap<FaultyConnectionTest>(inner_->ConnectionTest(), plan_);
}
void FaultyDbPool::Close() { inner_->Close(); }

void FaultyDbPool::FailNext(FaultyMethod method, FaultKind kind, uint32_t count,
                            bool after_commit) {
  plan_->FailNext(method, kind, count, after_commit);
}
void FaultyDbPool::SetEnabled(bool enabled) { plan_->SetEnabled(enabled); }
FaultyCounters FaultyDbPool::counters(FaultyMethod method) const { return plan_->counters(method); }
FaultyCounters FaultyDbPool::total() const { return plan_->total(); }

}  // namespace stele::storage::testing
