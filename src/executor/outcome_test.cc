// The retry policy as a pure function: every WorkerResult case of
// docs/model.md §5.4 and the expired-lock rules of docs/model.md §5.5.
#include "executor/outcome.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "executor/executor_test_util.h"

namespace stele::executor {
namespace {

using core::ExecutionFailureKind;
using core::FinishedExecutionError;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::kT0;
using testing::OkValue;
using testing::Retries;
using namespace std::chrono_literals;  // NOLINT

const ExecutionId& TopId() {
  static const ExecutionId* id = new ExecutionId(ExecutionId::Generate());
  return *id;
}

core::ExecutionIdDerived ChildOf(const ExecutionId& parent) {
  return parent.NextLevel(core::JoinSetId::Create(core::JoinSetKind::kOneOff, "1-x").value(), 1);
}

RunInfo Activity(uint32_t count, std::optional<uint32_t> max_retries = 3,
                 std::chrono::milliseconds backoff = 100ms) {
  return RunInfo{TopId(), count, Retries(max_retries, backoff)};
}

const Version kV{2};

// The single event of a planned write. Takes the write by reference so the
// returned reference lives as long as the caller's write.
template <class E>
const E& EventAs(const PlannedWrite& write) {
  const E* event = std::get_if<E>(&write.request.event);
  EXPECT_NE(event, nullptr) << core::ExecutionRequestToString(write.request.event);
  static const E kEmpty{};
  return event ? *event : kEmpty;
}

template <class E>
const E& EventAs(const std::optional<PlannedWrite>& write) {
  EXPECT_TRUE(write.has_value());
  static const E kEmpty{};
  return write ? EventAs<E>(*write) : kEmpty;
}

FinishedExecutionError FailureOf(const std::optional<PlannedWrite>& write) {
  const auto& finished = EventAs<core::Finished>(write);
  const auto* failure = std::get_if<FinishedExecutionError>(&finished.result);
  EXPECT_NE(failure, nullptr);
  return failure ? *failure : FinishedExecutionError{};
}

TEST(OutcomeTest, OkFinishesAtTheWorkersVersion) {
  auto write = ComputeOutcome(WorkerResult::Ok(OkValue(7), Version(5)), Activity(0), kT0);
  ASSERT_TRUE(write);
  EXPECT_EQ(write->execution_id, TopId());
  EXPECT_EQ(write->version, Version(5));
  EXPECT_EQ(write->request.created_at, kT0);
  EXPECT_EQ(EventAs<core::Finished>(write).result, OkValue(7));
  EXPECT_FALSE(write->parent_response) << "a top-level execution has no parent";
}

TEST(OutcomeTest, FinishedChildCarriesTheParentResponse) {
  const ExecutionId parent = ExecutionId::Generate();
  const core::ExecutionIdDerived child = ChildOf(parent);
  RunInfo run{child, 0, Retries(3, 100ms)};
  auto write = ComputeOutcome(WorkerResult::Ok(OkValue(1), kV), run, kT0);
  ASSERT_TRUE(write && write->parent_response);
  const storage::AppendResponseToExecution& response = *write->parent_response;
  EXPECT_EQ(response.parent_execution_id, parent);
  EXPECT_EQ(response.join_set_id.ToString(), "o:1-x");
  EXPECT_EQ(response.child_execution_id, child);
  EXPECT_EQ(response.finished_version, kV);
  EXPECT_EQ(response.created_at, kT0);
  EXPECT_EQ(response.result, OkValue(1));
}

TEST(OutcomeTest, NothingToWriteForDbUpdatedOrDbError) {
  EXPECT_FALSE(ComputeOutcome(WorkerResult::DbUpdated(), Activity(0), kT0));
  EXPECT_FALSE(ComputeOutcome(
      WorkerResult::Err(kV, WorkerDbError{storage::DbErrorGeneric::Uncategorized("x")}),
      Activity(0), kT0));
}

TEST(OutcomeTest, ActivityTrapRetriesWithExponentialBackoff) {
  // n = count + 1: delays 100, 200, 400 ms for n = 1, 2, 3.
  for (uint32_t count : {0u, 1u, 2u}) {
    auto write = ComputeOutcome(WorkerResult::Err(kV, ActivityTrap{"boom", "trace", std::nullopt}),
                                Activity(count), kT0);
    const auto& failed = EventAs<core::TemporarilyFailed>(write);
    EXPECT_EQ(failed.backoff_expires_at, kT0 + 100ms * (1 << count)) << "count " << count;
    EXPECT_EQ(failed.reason, "activity trap: boom");
    EXPECT_EQ(failed.detail, "trace");
    EXPECT_EQ(write->version, kV);
    EXPECT_FALSE(write->parent_response);
  }
}

TEST(OutcomeTest, ActivityTrapWithRetriesExhaustedIsFinal) {
  const ExecutionId parent = ExecutionId::Generate();
  RunInfo run{ChildOf(parent), 3, Retries(3, 100ms)};  // n = 4 > 3
  auto write =
      ComputeOutcome(WorkerResult::Err(kV, ActivityTrap{"boom", "trace", std::nullopt}), run, kT0);
  EXPECT_EQ(FailureOf(write), (FinishedExecutionError{ExecutionFailureKind::kUncategorized,
                                                      "activity trap: boom", "trace"}));
  ASSERT_TRUE(write->parent_response) << "a final failure notifies the parent";
  EXPECT_EQ(write->parent_response->result, EventAs<core::Finished>(write).result);
}

TEST(OutcomeTest, NoRetriesMeansTheFirstFailureIsFinal) {
  auto write = ComputeOutcome(WorkerResult::Err(kV, ActivityTrap{"boom", std::nullopt, {}}),
                              Activity(0, 0u, 0ms), kT0);
  EXPECT_EQ(FailureOf(write).kind, ExecutionFailureKind::kUncategorized);
}

TEST(OutcomeTest, WorkflowsRetryForever) {
  // max_retries unset; the backoff factor saturates instead of overflowing.
  auto write = ComputeOutcome(WorkerResult::Err(kV, ActivityTrap{"boom", std::nullopt, {}}),
                              Activity(1000, std::nullopt, 100ms), kT0);
  const auto& failed = EventAs<core::TemporarilyFailed>(write);
  EXPECT_GT(failed.backoff_expires_at, kT0 + 24h * 365);
}

TEST(OutcomeTest, TemporaryTimeoutRetriesThenTimesOut) {
  core::HttpClientTraces traces = std::vector<core::HttpClientTrace>{
      {core::HttpRequestTrace{kT0, "http://x", "GET"}, std::nullopt}};
  auto retried = ComputeOutcome(WorkerResult::Err(kV, TemporaryTimeout{traces}), Activity(1), kT0);
  const auto& timed_out = EventAs<core::TemporarilyTimedOut>(retried);
  EXPECT_EQ(timed_out.backoff_expires_at, kT0 + 200ms);
  EXPECT_EQ(timed_out.http_client_traces, traces);

  auto final_write = ComputeOutcome(
      WorkerResult::Err(kV, TemporaryTimeout{traces, "over its 2 s limit"}), Activity(3), kT0);
  EXPECT_EQ(FailureOf(final_write), (FinishedExecutionError{ExecutionFailureKind::kTimedOut,
                                                            "over its 2 s limit", std::nullopt}));
  EXPECT_EQ(EventAs<core::Finished>(final_write).http_client_traces, traces);
}

// Every timeout event says why (issue 16: they said "reason": null).
TEST(OutcomeTest, TimeoutEventsCarryTheirReason) {
  auto retried = ComputeOutcome(WorkerResult::Err(kV, TemporaryTimeout{{}, "over its 2 s limit"}),
                                Activity(1), kT0);
  EXPECT_EQ(EventAs<core::TemporarilyTimedOut>(retried).reason, "over its 2 s limit");
  // Without one a generic reason still says what happened.
  auto generic = ComputeOutcome(WorkerResult::Err(kV, TemporaryTimeout{}), Activity(3), kT0);
  EXPECT_THAT(FailureOf(generic).reason.value_or(""), HasSubstr("time limit"));

  EXPECT_EQ(DeadlineReason(30s, "lock_expiry of the component"),
            "the activity ran past its time limit of 30 s (lock_expiry of the component)");
  EXPECT_EQ(FormatLimit(1500ms), "1.5 s");
  EXPECT_EQ(FormatLimit(250ms), "250 ms");
  EXPECT_EQ(FormatLimit(2050ms), "2.05 s");
  EXPECT_THAT(ExpiredLockReason(false, 3s, "S"),
              AllOf(HasSubstr("the activity's lock of 3 s expired"), HasSubstr("(S)")));
  EXPECT_THAT(ExpiredLockReason(true, std::nullopt, "S"),
              AllOf(HasSubstr("the workflow run's lease expired"), HasSubstr("(S)")));
}

TEST(OutcomeTest, ActivityErrIsRetriedThenStoredAsTheResult) {
  const core::ReturnValueErr err{core::Json{{"code", 42}}};
  auto retried =
      ComputeOutcome(WorkerResult::Err(kV, ActivityReturnedError{err, std::nullopt, std::nullopt}),
                     Activity(0), kT0);
  const auto& failed = EventAs<core::TemporarilyFailed>(retried);
  EXPECT_EQ(failed.reason, "activity returned error");
  EXPECT_EQ(failed.detail, R"({"code":42})") << "detail defaults to the err as JSON";
  EXPECT_EQ(failed.backoff_expires_at, kT0 + 100ms);

  auto exhausted = ComputeOutcome(
      WorkerResult::Err(kV, ActivityReturnedError{err, "custom", std::nullopt}), Activity(3), kT0);
  EXPECT_EQ(EventAs<core::Finished>(exhausted).result, core::SupportedFunctionReturnValue(err));
}

TEST(OutcomeTest, LimitReachedUnlocksWithoutCounting) {
  // Unlocked(now + backoff * 2^count), even when no retries are left.
  auto write =
      ComputeOutcome(WorkerResult::Err(kV, LimitReached{"pool exhausted"}), Activity(2, 0u), kT0);
  const auto& unlocked = EventAs<core::Unlocked>(write);
  EXPECT_EQ(unlocked.backoff_expires_at, kT0 + 400ms);
  EXPECT_EQ(unlocked.reason, "limit reached: pool exhausted");
  EXPECT_FALSE(core::IsTemporaryEvent(write->request.event));
}

TEST(OutcomeTest, FatalErrorsFinishWithTheirKind) {
  struct Case {
    FatalErrorKind fatal;
    ExecutionFailureKind kind;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {FatalErrorKind::kNondeterminismDetected, ExecutionFailureKind::kNondeterminismDetected,
       "why"},
      {FatalErrorKind::kOutOfFuel, ExecutionFailureKind::kOutOfFuel, "why"},
      {FatalErrorKind::kWorkflowTrap, ExecutionFailureKind::kUncategorized, "workflow trap: why"},
      {FatalErrorKind::kParamsParsingError, ExecutionFailureKind::kUncategorized,
       "params parsing error: why"},
      {FatalErrorKind::kCannotInstantiate, ExecutionFailureKind::kUncategorized,
       "cannot instantiate: why"},
      {FatalErrorKind::kResultParsingError, ExecutionFailureKind::kUncategorized,
       "result parsing error: why"},
      {FatalErrorKind::kImportedFunctionCallError, ExecutionFailureKind::kUncategorized,
       "imported function call error: why"},
      {FatalErrorKind::kConstraintViolation, ExecutionFailureKind::kUncategorized,
       "constraint violation: why"},
  };
  for (const Case& c : cases) {
    // Retries left, and still final: fatal errors are never retried.
    auto write = ComputeOutcome(WorkerResult::Fatal(kV, c.fatal, "why", "d"),
                                Activity(0, std::nullopt), kT0);
    EXPECT_EQ(FailureOf(write), (FinishedExecutionError{c.kind, c.reason, "d"}))
        << FatalErrorKindName(c.fatal);
    EXPECT_FALSE(write->is_activity_cancel);
  }
}

TEST(OutcomeTest, CancelledFinishesAsCancelledIdempotently) {
  auto write = ComputeOutcome(WorkerResult::Fatal(kV, FatalErrorKind::kCancelled, "by user"),
                              Activity(0), kT0);
  EXPECT_EQ(FailureOf(write).kind, ExecutionFailureKind::kCancelled);
  EXPECT_TRUE(write->is_activity_cancel);
}

// A wasm worker's engine id reaches whichever event records the run; other
// workers' results name none and their events stay as they were.
TEST(OutcomeTest, TheResultsEngineIsOnTheRecordedEvent) {
  const std::string engine = "v8 10.2.154.26-node.36";
  auto with_engine = [&](WorkerResult result) {
    result.engine = engine;
    return result;
  };
  auto ok = ComputeOutcome(with_engine(WorkerResult::Ok(OkValue(1), kV)), Activity(0), kT0);
  EXPECT_EQ(EventAs<core::Finished>(ok).engine, engine);
  auto trap = ComputeOutcome(with_engine(WorkerResult::Err(kV, ActivityTrap{"boom", {}, {}})),
                             Activity(0), kT0);
  EXPECT_EQ(EventAs<core::TemporarilyFailed>(trap).engine, engine);
  auto timeout =
      ComputeOutcome(with_engine(WorkerResult::Err(kV, TemporaryTimeout{})), Activity(0), kT0);
  EXPECT_EQ(EventAs<core::TemporarilyTimedOut>(timeout).engine, engine);
  auto limit =
      ComputeOutcome(with_engine(WorkerResult::Err(kV, LimitReached{"oom"})), Activity(0), kT0);
  EXPECT_EQ(EventAs<core::Unlocked>(limit).engine, engine);
  auto exhausted = ComputeOutcome(with_engine(WorkerResult::Err(kV, ActivityTrap{"boom", {}, {}})),
                                  Activity(3, 3), kT0);
  EXPECT_EQ(EventAs<core::Finished>(exhausted).engine, engine);
  auto fatal =
      ComputeOutcome(with_engine(WorkerResult::Fatal(kV, FatalErrorKind::kWorkflowTrap, "trap")),
                     Activity(0), kT0);
  EXPECT_EQ(EventAs<core::Finished>(fatal).engine, engine);

  auto native = ComputeOutcome(WorkerResult::Ok(OkValue(1), kV), Activity(0), kT0);
  EXPECT_EQ(EventAs<core::Finished>(native).engine, std::nullopt);
}

storage::ExpiredLock Expired(std::optional<uint32_t> max_retries, uint32_t locked_at, uint32_t next,
                             uint32_t count = 0) {
  return storage::ExpiredLock{
      TopId(),
      Version(locked_at),
      Version(next),
      count,
      max_retries,
      core::Duration::FromMillis(100),
      core::LockedBy{core::ExecutorId::Generate(), core::RunId::Generate()}};
}

TEST(OutcomeTest, ExpiredLockOfAWorkflowThatMadeProgressIsUnlocked) {
  auto write = ComputeExpiredLockOutcome(Expired(std::nullopt, 1, 3), kT0, "why");
  EXPECT_EQ(write.version, Version(3));
  const auto& unlocked = EventAs<core::Unlocked>(write);
  EXPECT_EQ(unlocked, (core::Unlocked{kT0, "made progress"}));
}

TEST(OutcomeTest, ExpiredLockWithoutProgressIsTimedOut) {
  // A workflow that wrote nothing after its Locked (1 + 1 == 2).
  auto workflow = ComputeExpiredLockOutcome(Expired(std::nullopt, 1, 2, 5), kT0, "lease");
  EXPECT_EQ(EventAs<core::TemporarilyTimedOut>(workflow).backoff_expires_at, kT0 + 100ms * 32);
  EXPECT_EQ(EventAs<core::TemporarilyTimedOut>(workflow).reason, "lease");
  // Progress does not matter for activities (max_retries set).
  auto activity = ComputeExpiredLockOutcome(Expired(2u, 1, 3, 0), kT0, "why");
  EXPECT_EQ(activity.version, Version(3));
  EXPECT_EQ(EventAs<core::TemporarilyTimedOut>(activity).backoff_expires_at, kT0 + 100ms);
}

TEST(OutcomeTest, ExpiredLockWithRetriesExhaustedFinishesTimedOutAndRespondsToParent) {
  const ExecutionId parent = ExecutionId::Generate();
  storage::ExpiredLock lock = Expired(1u, 1, 2, 1);
  lock.execution_id = ChildOf(parent);
  auto write = ComputeExpiredLockOutcome(lock, kT0, "the lock expired");
  EXPECT_EQ(FailureOf(write).kind, ExecutionFailureKind::kTimedOut);
  EXPECT_EQ(FailureOf(write).reason, "the lock expired");
  ASSERT_TRUE(write.parent_response);
  EXPECT_EQ(write.parent_response->parent_execution_id, parent);
  EXPECT_EQ(write.parent_response->finished_version, Version(2));
}

// Each retry names its attempt of how many the policy allows; a
// non-retryable trap is final whatever retries remain.
TEST(OutcomeTest, RetriesNameTheirAttemptAndNonRetryableTrapsAreFinal) {
  auto first = ComputeOutcome(WorkerResult::Err(kV, ActivityTrap{"boom", std::nullopt, {}}),
                              Activity(0, 5u), kT0);
  EXPECT_EQ(EventAs<core::TemporarilyFailed>(first).attempt, (core::RetryAttempt{1, 6u}));
  auto timeout =
      ComputeOutcome(WorkerResult::Err(kV, TemporaryTimeout{{}, "slow"}), Activity(2, 5u), kT0);
  EXPECT_EQ(EventAs<core::TemporarilyTimedOut>(timeout).attempt, (core::RetryAttempt{3, 6u}));
  auto forever = ComputeOutcome(WorkerResult::Err(kV, ActivityTrap{"boom", std::nullopt, {}}),
                                Activity(7, std::nullopt), kT0);
  EXPECT_EQ(EventAs<core::TemporarilyFailed>(forever).attempt,
            (core::RetryAttempt{8, std::nullopt}));

  ActivityTrap permanent{"exit status 2", "stderr", {}};
  permanent.non_retryable = true;
  auto final_write = ComputeOutcome(WorkerResult::Err(kV, permanent), Activity(0, 5u), kT0);
  EXPECT_EQ(FailureOf(final_write),
            (FinishedExecutionError{ExecutionFailureKind::kUncategorized,
                                    "activity trap: exit status 2 (non-retryable)", "stderr"}));
}

// The policy's cap and jitter apply to every retry's wait: at most
// max_backoff, at least (1 - jitter) of it.
TEST(OutcomeTest, BackoffIsCappedAndJittered) {
  RunInfo run = Activity(9, 20u, 100ms);  // uncapped: 100 ms * 2^9 = 51.2 s
  run.retry_config.max_backoff = core::Duration::FromSecs(10);
  run.retry_config.jitter_percent = 20;
  auto write =
      ComputeOutcome(WorkerResult::Err(kV, ActivityTrap{"boom", std::nullopt, {}}), run, kT0);
  const DateTime at = EventAs<core::TemporarilyFailed>(write).backoff_expires_at;
  EXPECT_LE(at, kT0 + 10s);
  EXPECT_GE(at, kT0 + 8s);
  // A workflow's "limit reached" unlock is capped too.
  auto unlocked = ComputeOutcome(WorkerResult::Err(kV, LimitReached{"pool"}), run, kT0);
  EXPECT_LE(EventAs<core::Unlocked>(unlocked).backoff_expires_at, kT0 + 10s);
}

// The watcher applies the run's own policy (its Locked event), not the
// lock row's bare columns: a workflow with a retry limit is still told
// apart from an activity, and runs out of retries.
TEST(OutcomeTest, ExpiredLockUsesTheRunsPolicy) {
  const storage::ExpiredLock lock = Expired(3u, 1, 2, 3);  // no progress, 3 failures before
  ExpiredRun workflow{true, Retries(3, 100ms)};
  EXPECT_EQ(FailureOf(ComputeExpiredLockOutcome(lock, workflow, kT0, "lease")).kind,
            ExecutionFailureKind::kTimedOut);
  storage::ExpiredLock progressed = Expired(3u, 1, 4, 3);
  EXPECT_EQ(EventAs<core::Unlocked>(ComputeExpiredLockOutcome(progressed, workflow, kT0, "lease")),
            (core::Unlocked{kT0, "made progress"}));
  ExpiredRun activity{false, Retries(3, 100ms)};
  EXPECT_EQ(FailureOf(ComputeExpiredLockOutcome(progressed, activity, kT0, "lease")).kind,
            ExecutionFailureKind::kTimedOut);
}

TEST(OutcomeTest, AddSaturatingStopsAtTheLastRfc3339Instant) {
  EXPECT_EQ(AddSaturating(kT0, core::Duration::FromMillis(1)), kT0 + 1ms);
  const DateTime max = AddSaturating(kT0, core::Duration::Max());
  EXPECT_EQ(FormatRfc3339(max), "9999-12-31T23:59:59.999999Z");
}

}  // namespace
}  // namespace stele::executor
