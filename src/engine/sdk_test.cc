// SDK scenarios on a real SQLite file: direct calls, sleeps, fan-out,
// named join sets, stubs, schedule, random, join-set close semantics,
// activity retries, traps, timeouts and cancellation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/clock.h"
#include "engine/sdk_test_util.h"
#include "stele/stele.h"

namespace stele {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::EngineTest;
using testing::OkOrDie;
using testing::WaitForState;

constexpr const char* kAdd = "test:sdk/api.add";
constexpr const char* kApprove = "test:sdk/human.approve";

ActivityResult Add(ActivityContext&, const Json& params) {
  auto a = Param<int>(params, 0);
  auto b = Param<int>(params, 1);
  if (!a || !b) return Unexpected(Json(a ? b.error() : a.error()));
  return Json(*a + *b);
}

constexpr const char* kNap = "test:sdk/wf.nap";
constexpr const char* kLong = "test:sdk/api.long";

// Sleeps an hour: "woke" when the timer fired, "cancelled" when it did not.
Task<Json> Nap(WorkflowContext& ctx, Json) {
  bool expired = co_await ctx.sleep(hours(1));
  co_return Json(expired ? "woke" : "cancelled");
}

// An activity that runs until its token fires (30 s at most). `started` is
// set when an attempt begins; `saw_cancel`, when given, when the token cut
// the attempt short.
ActivityFn LongActivity(std::atomic<bool>& started, std::atomic<bool>* saw_cancel = nullptr) {
  return [&started, saw_cancel](ActivityContext& ctx, const Json&) -> ActivityResult {
    started = true;
    if (!ctx.SleepFor(seconds(30)) && saw_cancel != nullptr) *saw_cancel = true;
    return Json("finished anyway");
  };
}
constexpr ActivityOptions kLongOptions{.timeout = seconds(60)};

class SdkTest : public EngineTest {
 protected:
  // An engine on clock_, a frozen manual clock: timers fire only through
  // FireExpiredTimersForTest (no watcher), and a waiting workflow is
  // unloaded at once (no keep-warm).
  Engine& OpenOnManualClock() {
    EngineOptions options = Options();
    options.clock = clock_;
    options.start_watcher = false;
    options.workflow_keep_warm = false;
    return Open(options);
  }

  std::shared_ptr<ManualClock> clock_ =
      std::make_shared<ManualClock>(DateTimeFromMillis(1'700'000'000'000));
};

TEST_F(SdkTest, CallActivityReturnsItsValue) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterActivity(kAdd, Add));
  ASSERT_TRUE(engine.RegisterWorkflow("test:sdk/wf.sum",
                                      [](WorkflowContext& ctx, Json params) -> Task<Json> {
                                        auto first = co_await ctx.call_as<int>(kAdd, params);
                                        if (!first) co_return Json("error: " + first.error());
                                        auto second = co_await ctx.call(kAdd, Params(*first, 100));
                                        co_return second.value;
                                      }));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit("test:sdk/wf.sum", Params(2, 3)), "submit");
  auto result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(result.value, Json(105));
}

Task<int> Double(WorkflowContext& ctx, int value) {
  auto r = co_await ctx.call_as<int>(kAdd, Params(value, value));
  co_return r.value_or(-1);
}

Task<void> AddInto(WorkflowContext& ctx, int& total, int value) {
  auto r = co_await ctx.call_as<int>(kAdd, Params(total, value));
  total = r.value_or(-1000);
}

TEST_F(SdkTest, NestedTasksCompose) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterActivity(kAdd, Add));
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:sdk/wf.nested", [](WorkflowContext& ctx, Json) -> Task<Json> {
        int x = co_await Double(ctx, 3);
        int y = co_await Double(ctx, x);
        int total = y;
        co_await AddInto(ctx, total, 30);
        co_return Json(total);
      }));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit("test:sdk/wf.nested", Json::array()), "submit");
  EXPECT_EQ(Await(id).value, Json(42));
}

TEST_F(SdkTest, DurableSleepWakesWhenTheTimerFires) {
  Engine& engine = OpenOnManualClock();
  ASSERT_TRUE(engine.RegisterWorkflow(kNap, Nap));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit(kNap, Json::array()), "submit");
  ASSERT_TRUE(WaitForState(engine, id, "BlockedByJoinSet"));
  // Not due yet: nothing fires.
  EXPECT_EQ(OkOrDie(engine.FireExpiredTimersForTest(clock_->Now() + std::chrono::minutes(59)), "f"),
            0u);
  clock_->Advance(hours(1));
  EXPECT_EQ(OkOrDie(engine.FireExpiredTimersForTest(clock_->Now()), "fire"), 1u);
  auto result = Await(id);
  EXPECT_EQ(result.value, Json("woke")) << result.ToString();
}

TEST_F(SdkTest, CancelledSleepReturnsFalse) {
  Engine& engine = OpenOnManualClock();
  ASSERT_TRUE(engine.RegisterWorkflow(kNap, Nap));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit(kNap, Json::array()), "submit");
  ASSERT_TRUE(WaitForState(engine, id, "BlockedByJoinSet"));
  std::string delay_id = "Delay_" + id.substr(2) + ".o:1-sleep_1";
  EXPECT_EQ(OkOrDie(engine.Cancel(delay_id), "cancel"), CancelOutcome::kCancelled);
  // Idempotent: a cancelled delay stays cancelled.
  EXPECT_EQ(OkOrDie(engine.Cancel(delay_id), "cancel again"), CancelOutcome::kCancelled);
  EXPECT_EQ(Await(id).value, Json("cancelled"));
}

TEST_F(SdkTest, CatchAllCannotKeepABlockedWorkflowLoaded) {
  Engine& engine = OpenOnManualClock();
  std::atomic<int> catches{0};
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:sdk/wf.greedy", [&](WorkflowContext& ctx, Json) -> Task<Json> {
        try {
          co_await ctx.sleep(hours(1));
        } catch (...) {
          ++catches;  // unloading throws nothing to catch
          co_return Json("swallowed");
        }
        co_return Json("woke");
      }));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit("test:sdk/wf.greedy", Json::array()), "submit");
  ASSERT_TRUE(WaitForState(engine, id, "BlockedByJoinSet"));
  clock_->Advance(hours(2));
  EXPECT_EQ(OkOrDie(engine.FireExpiredTimersForTest(clock_->Now()), "fire"), 1u);
  EXPECT_EQ(Await(id).value, Json("woke"));
  EXPECT_EQ(catches.load(), 0);
}

TEST_F(SdkTest, SuspendingOnAForeignAwaitableFailsTheWorkflow) {
  Engine& engine = Open();
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:sdk/wf.foreign", [](WorkflowContext&, Json) -> Task<Json> {
        co_await std::suspend_always{};
        co_return Json("unreachable");
      }));
  ASSERT_TRUE(engine.Start());
  auto result = Await(OkOrDie(engine.Submit("test:sdk/wf.foreign", Json::array()), "submit"));
  ASSERT_TRUE(result.failed());
  EXPECT_NE(result.failure_reason.find("not a stele operation"), std::string::npos)
      << result.ToString();
}

TEST_F(SdkTest, FanOutFanIn) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterActivity(kAdd, Add));
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:sdk/wf.fan", [](WorkflowContext& ctx, Json params) -> Task<Json> {
        int n = params.at(0).get<int>();
        JoinSet js = co_await ctx.new_join_set();
        std::vector<std::string> ids;
        for (int i = 1; i <= n; ++i) ids.push_back(co_await ctx.submit(js, kAdd, Params(i, 0)));
        int sum = 0;
        for (int i = 0; i < n; ++i) {
          auto next = co_await ctx.join_next(js);
          if (!next) co_return Json("join_next failed: " + next.error().message);
          sum += next->result.value.get<int>();
        }
        auto extra = co_await ctx.join_next(js);
        if (extra || extra.error().kind != JoinNextError::Kind::kAllProcessed) {
          co_return Json("expected all-processed");
        }
        // Results of processed children stay readable by id.
        auto first = co_await ctx.get(kAdd, ids.front());
        if (!first || first->value != Json(1)) co_return Json("get failed");
        co_return Json{{"sum", sum}, {"join_set", js.id()}};
      }));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit("test:sdk/wf.fan", Params(20)), "submit");
  auto result = Await(id);
  EXPECT_EQ(result.value, (Json{{"sum", 210}, {"join_set", "g:1"}})) << result.ToString();
}

TEST_F(SdkTest, NamedJoinSets) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterActivity(kAdd, Add));
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:sdk/wf.named", [](WorkflowContext& ctx, Json) -> Task<Json> {
        auto batch = co_await ctx.new_join_set("batch-1");
        if (!batch) co_return Json(batch.error());
        auto duplicate = co_await ctx.new_join_set("batch-1");
        auto invalid = co_await ctx.new_join_set("no_underscores");
        std::string child = co_await ctx.submit(*batch, kAdd, Params(40, 2));
        auto next = co_await ctx.join_next(*batch, kAdd);
        co_return Json{{"id", batch->id()},
                       {"duplicate_refused", !duplicate.has_value()},
                       {"invalid_refused", !invalid.has_value()},
                       {"child", child},
                       {"value", next ? next->result.value : Json("error")}};
      }));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit("test:sdk/wf.named", Json::array()), "submit");
  auto result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(result.value["id"], Json("n:batch-1"));
  EXPECT_EQ(result.value["duplicate_refused"], Json(true));
  EXPECT_EQ(result.value["invalid_refused"], Json(true));
  EXPECT_EQ(result.value["child"], Json(id + ".n:batch-1_1"));
  EXPECT_EQ(result.value["value"], Json(42));
}

TEST_F(SdkTest, HumanApprovalCompletedByStub) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterStub(kApprove));
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:sdk/wf.approval", [](WorkflowContext& ctx, Json params) -> Task<Json> {
        auto decision = co_await ctx.call(kApprove, params);
        co_return Json{{"approved", decision.ok() && decision.value == Json(true)}};
      }));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit("test:sdk/wf.approval", Params("order-7")), "submit");
  ASSERT_TRUE(WaitForState(engine, id, "BlockedByJoinSet"));
  std::string child = id + ".o:1-approve_1";
  auto status = OkOrDie(engine.GetStatus(child), "child status");
  EXPECT_EQ(status.ffqn, kApprove);
  EXPECT_EQ(status.state, "PendingAt");
  ASSERT_TRUE(engine.Stub(child, ExecutionResult::Ok(true)));
  // Idempotent for the same value, a conflict for another.
  EXPECT_TRUE(engine.Stub(child, ExecutionResult::Ok(true)));
  auto conflict = engine.Stub(child, ExecutionResult::Ok(false));
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().kind, Error::Kind::kConflict);
  EXPECT_EQ(Await(id).value, (Json{{"approved", true}}));
}

TEST_F(SdkTest, WorkflowStubsItsOwnChild) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterStub(kApprove));
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:sdk/wf.selfstub", [](WorkflowContext& ctx, Json) -> Task<Json> {
        JoinSet js = co_await ctx.new_join_set();
        std::string child = co_await ctx.submit(js, kApprove, Params("x"));
        auto stubbed = co_await ctx.stub(kApprove, child, ExecutionResult::Ok(5));
        auto again = co_await ctx.stub(kApprove, child, ExecutionResult::Ok(5));
        auto other = co_await ctx.stub(kApprove, child, ExecutionResult::Ok(6));
        auto next = co_await ctx.join_next(js);
        co_return Json{{"stubbed", stubbed.has_value()},
                       {"again", again.has_value()},
                       {"other_refused", !other.has_value()},
                       {"value", next ? next->result.value : Json("error")}};
      }));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit("test:sdk/wf.selfstub", Json::array()), "submit");
  auto result = Await(id);
  EXPECT_EQ(result.value,
            (Json{{"stubbed", true}, {"again", true}, {"other_refused", true}, {"value", 5}}))
      << result.ToString();
}

TEST_F(SdkTest, ScheduleCreatesATopLevelExecution) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterActivity(kAdd, Add));
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:sdk/wf.scheduler", [](WorkflowContext& ctx, Json) -> Task<Json> {
        std::string id = co_await ctx.schedule(kAdd, Params(20, 22));
        co_return Json(id);
      }));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit("test:sdk/wf.scheduler", Json::array()), "submit");
  auto result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  std::string scheduled = result.value.get<std::string>();
  EXPECT_EQ(scheduled.rfind("E_", 0), 0u);
  EXPECT_EQ(scheduled.find('.'), std::string::npos);  // top level
  EXPECT_EQ(Await(scheduled).value, Json(42));
}

TEST_F(SdkTest, RandomValuesSurviveReplay) {
  Engine& engine = Open([&] {
    EngineOptions o = Options();
    o.workflow_keep_warm = false;  // every wait replays
    return o;
  }());
  ASSERT_TRUE(engine.RegisterActivity(kAdd, Add));
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:sdk/wf.random", [](WorkflowContext& ctx, Json) -> Task<Json> {
        uint64_t a = co_await ctx.random_u64(10, 20);
        std::string s = co_await ctx.random_string(5, 6);
        (void)co_await ctx.call(kAdd, Params(1, 1));  // unloaded and replayed here
        uint64_t b = co_await ctx.random_u64_inclusive(7, 7);
        co_return Json{{"a", a}, {"s", s}, {"b", b}};
      }));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit("test:sdk/wf.random", Json::array()), "submit");
  auto result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  uint64_t a = result.value["a"].get<uint64_t>();
  EXPECT_GE(a, 10u);
  EXPECT_LT(a, 20u);
  EXPECT_EQ(result.value["s"].get<std::string>().size(), 5u);
  EXPECT_EQ(result.value["b"], Json(7));
}

TEST_F(SdkTest, ReturningClosesJoinSetsAndCancelsUnawaitedDelays) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterActivity(kAdd, Add));
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:sdk/wf.child", [](WorkflowContext& ctx, Json) -> Task<Json> {
        auto r = co_await ctx.call(kAdd, Params(1, 2));
        co_return r.value;
      }));
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:sdk/wf.leaky", [](WorkflowContext& ctx, Json) -> Task<Json> {
        JoinSet js = co_await ctx.new_join_set();
        std::string delay = co_await ctx.submit_delay(js, hours(24));
        std::string child = co_await ctx.submit(js, "test:sdk/wf.child", Json::array());
        co_return Json{{"delay", delay}, {"child", child}};  // neither awaited
      }));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit("test:sdk/wf.leaky", Json::array()), "submit");
  auto result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  // The child workflow was awaited by the close, so it is finished.
  auto child = OkOrDie(engine.GetStatus(result.value["child"].get<std::string>()), "child");
  EXPECT_TRUE(child.finished) << child.description;
  // The delay was cancelled by the close (cancelling it again says so; a
  // fired delay would be kAlreadyFinished).
  EXPECT_EQ(OkOrDie(engine.Cancel(result.value["delay"].get<std::string>()), "cancel"),
            CancelOutcome::kCancelled);
}

TEST_F(SdkTest, SubmittingToAClosedJoinSetFailsTheWorkflow) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterActivity(kAdd, Add));
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:sdk/wf.closed", [](WorkflowContext& ctx, Json) -> Task<Json> {
        JoinSet js = co_await ctx.new_join_set();
        (void)co_await ctx.submit(js, kAdd, Params(1, 1));
        co_await ctx.close(js);
        (void)co_await ctx.submit(js, kAdd, Params(2, 2));
        co_return Json("unreachable");
      }));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit("test:sdk/wf.closed", Json::array()), "submit");
  auto result = Await(id);
  EXPECT_TRUE(result.failed()) << result.ToString();
}

TEST_F(SdkTest, WorkflowExceptionIsAPermanentTrap) {
  Engine& engine = Open();
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:sdk/wf.throws", [](WorkflowContext&, Json) -> Task<Json> {
        throw std::runtime_error("boom");
        co_return Json();
      }));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit("test:sdk/wf.throws", Json::array()), "submit");
  auto result = Await(id);
  ASSERT_TRUE(result.failed());
  EXPECT_NE(result.failure_reason.find("boom"), std::string::npos) << result.ToString();
}

TEST_F(SdkTest, WorkflowCanReturnErr) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:sdk/wf.err", WorkflowFnWithErr([](WorkflowContext&, Json) -> Task<WorkflowResult> {
        co_return Unexpected(Json("declined"));
      })));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit("test:sdk/wf.err", Json::array()), "submit");
  auto result = Await(id);
  EXPECT_TRUE(result.err());
  EXPECT_EQ(result.value, Json("declined"));
}

TEST_F(SdkTest, BadFfqnInAWorkflowFailsItWithAClearReason) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:sdk/wf.typo", [](WorkflowContext& ctx, Json params) -> Task<Json> {
        auto r = co_await ctx.call(params.at(0).get<std::string>(), Json::array());
        co_return r.value;
      }));
  ASSERT_TRUE(engine.Start());
  auto malformed = Await(OkOrDie(engine.Submit("test:sdk/wf.typo", Params("no-dot")), "submit"));
  ASSERT_TRUE(malformed.failed());
  EXPECT_NE(malformed.failure_reason.find("invalid ffqn `no-dot`"), std::string::npos)
      << malformed.ToString();
  auto unknown =
      Await(OkOrDie(engine.Submit("test:sdk/wf.typo", Params("test:sdk/api.nope")), "submit"));
  ASSERT_TRUE(unknown.failed());
  EXPECT_NE(unknown.failure_reason.find("test:sdk/api.nope"), std::string::npos)
      << unknown.ToString();
}

// --- Activities ---------------------------------------------------------------

// One activity, its options, and how its execution must end: the five
// ways an attempt's outcome meets the retry policy.
struct ActivityCase {
  const char* name;
  ActivityOptions options;
  std::function<ActivityResult(ActivityContext&)> attempt;
  // ok / err: the kind and value; failed: the failure kind, and a fragment
  // of the reason (empty: any reason).
  ExecutionResult expected;
  int attempts;
  bool deadline_fires;  // the attempt's token fires (its deadline passed)
};
void PrintTo(const ActivityCase& c, std::ostream* out) { *out << c.name; }

const ActivityCase kActivityCases[] = {
    {"ErrIsRetriedThenSucceeds",
     {.max_retries = 5, .backoff = milliseconds(1)},
     [](ActivityContext& ctx) -> ActivityResult {
       if (ctx.attempt() < 3) return Unexpected(Json("not yet"));
       return Json(ctx.attempt());
     },
     ExecutionResult::Ok(3),
     3,
     false},
    {"ErrIsFinalWithoutRetryOnErr",
     {.max_retries = 5, .backoff = milliseconds(1), .retry_on_err = false},
     [](ActivityContext&) -> ActivityResult { return Unexpected(Json("insufficient funds")); },
     ExecutionResult::Err("insufficient funds"),
     1,
     false},
    {"ErrIsTheResultOnceRetriesRunOut",
     {.max_retries = 2, .backoff = milliseconds(1)},
     [](ActivityContext&) -> ActivityResult { return Unexpected(Json("still no")); },
     ExecutionResult::Err("still no"),
     3,
     false},
    {"ExceptionIsATrapRetriedThenFinal",
     {.max_retries = 1, .backoff = milliseconds(1)},
     [](ActivityContext&) -> ActivityResult { throw std::runtime_error("disk on fire"); },
     ExecutionResult::Failed("uncategorized", "disk on fire"),
     2,
     false},
    // Returns as soon as the deadline fires the token.
    {"PastItsDeadlineTimesOut",
     {.max_retries = 0, .timeout = milliseconds(100)},
     [](ActivityContext& ctx) -> ActivityResult {
       ctx.SleepFor(seconds(30));
       return Json("late");
     },
     ExecutionResult::Failed("timed_out"),
     1,
     true},
};

class ActivityOutcomeTest : public EngineTest,
                            public ::testing::WithParamInterface<ActivityCase> {};

TEST_P(ActivityOutcomeTest, EndsAsItsOptionsSay) {
  const ActivityCase& c = GetParam();
  Engine& engine = Open();
  std::atomic<int> attempts{0};
  std::atomic<bool> token_fired{false};
  ASSERT_TRUE(engine.RegisterActivity(
      "test:sdk/api.attempt",
      [&](ActivityContext& ctx, const Json&) -> ActivityResult {
        ++attempts;
        // Looked at when the attempt ends, by a return or an exception.
        struct SeeToken {
          ActivityContext& ctx;
          std::atomic<bool>& fired;
          ~SeeToken() {
            if (ctx.cancelled()) fired = true;
          }
        } see{ctx, token_fired};
        return c.attempt(ctx);
      },
      c.options));
  ASSERT_TRUE(engine.Start());
  auto result = Await(OkOrDie(engine.Submit("test:sdk/api.attempt", Json::array()), "submit"));
  ASSERT_EQ(result.kind, c.expected.kind) << result.ToString();
  if (c.expected.failed()) {
    EXPECT_EQ(result.failure_kind, c.expected.failure_kind) << result.ToString();
    EXPECT_NE(result.failure_reason.find(c.expected.failure_reason), std::string::npos)
        << result.ToString();
  } else {
    EXPECT_EQ(result.value, c.expected.value) << result.ToString();
  }
  if (c.deadline_fires) {
    // The expired-timers watcher may record the timeout first; the token
    // fires at the deadline all the same.
    EXPECT_TRUE(testing::WaitUntil([&] { return token_fired.load(); }));
  } else {
    EXPECT_FALSE(token_fired.load());
  }
  EXPECT_EQ(attempts.load(), c.attempts);
}

INSTANTIATE_TEST_SUITE_P(Activities, ActivityOutcomeTest, ::testing::ValuesIn(kActivityCases),
                         [](const ::testing::TestParamInfo<ActivityCase>& param) {
                           return std::string(param.param.name);
                         });

TEST_F(SdkTest, CancellingARunningActivity) {
  Engine& engine = Open();
  std::atomic<bool> started{false};
  std::atomic<bool> saw_cancel{false};
  ASSERT_TRUE(engine.RegisterActivity(kLong, LongActivity(started, &saw_cancel), kLongOptions));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit(kLong, Json::array()), "submit");
  ASSERT_TRUE(testing::WaitUntil([&] { return started.load(); }));
  EXPECT_EQ(OkOrDie(engine.Cancel(id), "cancel"), CancelOutcome::kCancelled);
  auto result = Await(id);
  ASSERT_TRUE(result.failed());
  EXPECT_EQ(result.failure_kind, "cancelled");
  EXPECT_TRUE(testing::WaitUntil([&] { return saw_cancel.load(); }));
  EXPECT_EQ(OkOrDie(engine.Cancel(id), "again"), CancelOutcome::kCancelled);
}

TEST_F(SdkTest, WorkflowSeesACancelledChildActivity) {
  Engine& engine = Open();
  std::atomic<bool> started{false};
  ASSERT_TRUE(engine.RegisterActivity(kLong, LongActivity(started), kLongOptions));
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:sdk/wf.waits", [](WorkflowContext& ctx, Json) -> Task<Json> {
        auto r = co_await ctx.call(kLong, Json::array());
        co_return Json(r.failure_kind);
      }));
  ASSERT_TRUE(engine.Start());
  auto id = OkOrDie(engine.Submit("test:sdk/wf.waits", Json::array()), "submit");
  ASSERT_TRUE(testing::WaitUntil([&] { return started.load(); }));
  EXPECT_EQ(OkOrDie(engine.Cancel(id + ".o:1-long_1"), "cancel"), CancelOutcome::kCancelled);
  EXPECT_EQ(Await(id).value, Json("cancelled"));
}

}  // namespace
}  // namespace stele
