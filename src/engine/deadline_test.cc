// Whole-execution deadlines through libstele (docs/sdk.md, "Deadlines";
// docs/model.md §9.7), on a manual clock: past its deadline a workflow
// ends `timed_out` with its open subtree cancelled, an activity ends
// `timed_out` and its running attempt is stopped, children inherit the
// deadline, and the deadline is in the database, not in a process.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "engine/sdk_test_util.h"
#include "stele/stele.h"

namespace stele {
namespace {

using std::chrono::seconds;
using testing::OkOrDie;
using testing::WaitUntil;

struct DeadlineSeen {
  std::mutex mu;
  std::vector<std::string> children;
  std::atomic<bool> activity_started{false};
  std::atomic<bool> activity_saw_cancel{false};
  void Child(std::string id) {
    std::lock_guard lock(mu);
    children.push_back(std::move(id));
  }
  std::string ChildAt(size_t i) {
    std::lock_guard lock(mu);
    return i < children.size() ? children[i] : "";
  }
  size_t ChildCount() {
    std::lock_guard lock(mu);
    return children.size();
  }
};

class DeadlineTest : public testing::PoolEngineTest {
 protected:
  void SetUp() override {
    PoolEngineTest::SetUp();
    clock_ = std::make_shared<ManualClock>(DateTimeFromMillis(1'700'000'000'000));
  }
  EngineOptions ManualOptions() {
    EngineOptions options = Options();
    options.clock = clock_;
    options.workflow_keep_warm = false;  // blocked workflows hold no lease
    options.start_cron = false;
    return options;
  }
  // Registers: a parent that starts a child workflow blocked on a stub and
  // a long activity, then waits for both; the activity runs until stopped.
  void Register(Engine& engine, std::shared_ptr<DeadlineSeen> seen) {
    ASSERT_TRUE(engine.RegisterStub("test:deadline/stub.never"));
    ActivityOptions slow;
    slow.timeout = std::chrono::hours(1);
    ASSERT_TRUE(engine.RegisterActivity(
        "test:deadline/act.slow",
        [seen](ActivityContext& ctx, const Json&) -> ActivityResult {
          seen->activity_started = true;
          // Stopped by the deadline (the token fires), never by the clock.
          for (int i = 0; i < 60'000 && !ctx.cancelled(); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
          seen->activity_saw_cancel = ctx.cancelled();
          return Json("slow");
        },
        slow));
    ASSERT_TRUE(engine.RegisterWorkflow(
        "test:deadline/wf.child", [seen](WorkflowContext& ctx, Json) -> Task<Json> {
          JoinSet set = co_await ctx.new_join_set();
          seen->Child(co_await ctx.submit(set, "test:deadline/stub.never", Params()));
          auto next = co_await ctx.join_next(set);
          co_return Json(next.has_value());
        }));
    ASSERT_TRUE(engine.RegisterWorkflow(
        "test:deadline/wf.parent", [seen](WorkflowContext& ctx, Json) -> Task<Json> {
          JoinSet set = co_await ctx.new_join_set();
          seen->Child(co_await ctx.submit(set, "test:deadline/wf.child", Params()));
          seen->Child(co_await ctx.submit(set, "test:deadline/act.slow", Params()));
          auto first = co_await ctx.join_next(set);
          auto second = co_await ctx.join_next(set);
          co_return Json(first.has_value() && second.has_value());
        }));
  }
  std::optional<DateTime> DeadlineOf(const std::string& id) {
    auto parsed = core::ExecutionId::Parse(id);
    EXPECT_TRUE(parsed.has_value()) << id;
    return OkOrDie(api_->GetCreateRequest(*parsed), "create request").policy.deadline;
  }
  bool FinishedWith(const std::string& id, std::initializer_list<const char*> kinds) {
    const ExecutionResult result = Await(id);
    for (const char* kind : kinds) {
      if (result.failed() && result.failure_kind == kind) return true;
    }
    ADD_FAILURE() << id << ": " << result.ToString();
    return false;
  }

  std::shared_ptr<ManualClock> clock_;
};

TEST_F(DeadlineTest, AWorkflowPastItsDeadlineEndsTimedOutWithItsSubtree) {
  auto seen = std::make_shared<DeadlineSeen>();
  Engine& engine = Open(ManualOptions());
  Register(engine, seen);
  ASSERT_TRUE(engine.Start());
  SubmitOptions submit;
  submit.timeout = std::chrono::minutes(1);
  const DateTime submitted_at = clock_->Now();
  const std::string id =
      OkOrDie(engine.Submit("test:deadline/wf.parent", Params(), submit), "submit");
  ASSERT_TRUE(WaitUntil([&] { return seen->ChildCount() == 3 && seen->activity_started; }));
  // Children: 0 the child workflow, 1 the activity, 2 the child's stub.
  ASSERT_TRUE(testing::WaitForState(engine, seen->ChildAt(0), "BlockedByJoinSet"));
  ASSERT_TRUE(testing::WaitForState(engine, id, "BlockedByJoinSet"));

  // Children inherit the parent's deadline.
  const std::optional<DateTime> deadline = DeadlineOf(id);
  ASSERT_TRUE(deadline.has_value());
  EXPECT_EQ(*deadline, submitted_at + std::chrono::minutes(1));
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(DeadlineOf(seen->ChildAt(i)), deadline) << i;

  // Not a moment before it.
  clock_->Advance(seconds(59));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(OkOrDie(engine.GetStatus(id), "status").finished);

  clock_->Advance(seconds(2));
  const ExecutionResult result = Await(id);
  ASSERT_TRUE(result.failed()) << result.ToString();
  EXPECT_EQ(result.failure_kind, "timed_out");
  EXPECT_NE(result.failure_reason.find("deadline"), std::string::npos) << result.failure_reason;
  // The child workflow, its stub and the running activity end too: by the
  // parent's cascade (cancelled) or their own inherited deadline (timed_out).
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(FinishedWith(seen->ChildAt(i), {"cancelled", "timed_out"})) << i;
  }
  EXPECT_TRUE(WaitUntil([&] { return seen->activity_saw_cancel.load(); }))
      << "the running activity was stopped";
}

TEST_F(DeadlineTest, AnActivityPastItsDeadlineIsTimedOutAndStopped) {
  auto seen = std::make_shared<DeadlineSeen>();
  Engine& engine = Open(ManualOptions());
  Register(engine, seen);
  ASSERT_TRUE(engine.Start());
  SubmitOptions submit;
  submit.deadline =
      std::chrono::system_clock::time_point(std::chrono::milliseconds(1'700'000'030'000));
  const std::string id =
      OkOrDie(engine.Submit("test:deadline/act.slow", Params(), submit), "submit");
  ASSERT_TRUE(WaitUntil([&] { return seen->activity_started.load(); }));

  clock_->Advance(seconds(31));
  EXPECT_TRUE(FinishedWith(id, {"timed_out"}));
  EXPECT_TRUE(WaitUntil([&] { return seen->activity_saw_cancel.load(); }));
}

// The deadline is stored with the execution: an engine opened after the
// one that accepted the submission ends it.
TEST_F(DeadlineTest, ADeadlineSurvivesARestart) {
  auto seen = std::make_shared<DeadlineSeen>();
  std::string id;
  {
    Engine& engine = Open(ManualOptions());
    Register(engine, seen);
    ASSERT_TRUE(engine.Start());
    SubmitOptions submit;
    submit.timeout = std::chrono::minutes(1);
    id = OkOrDie(engine.Submit("test:deadline/wf.child", Params(), submit), "submit");
    ASSERT_TRUE(testing::WaitForState(engine, id, "BlockedByJoinSet"));
    engine_.reset();  // stopped before the deadline
  }
  clock_->Advance(std::chrono::minutes(2));
  auto seen_again = std::make_shared<DeadlineSeen>();
  Engine& engine = Open(ManualOptions());
  Register(engine, seen_again);
  ASSERT_TRUE(engine.Start());
  EXPECT_TRUE(FinishedWith(id, {"timed_out"}));
}

// A child's own timeout (ChildOptions) gives it an earlier deadline; a
// later one is clamped to its parent's: a child never outlives it.
TEST_F(DeadlineTest, AChildsOwnTimeoutNeverOutlivesItsParentsDeadline) {
  auto seen = std::make_shared<DeadlineSeen>();
  Engine& engine = Open(ManualOptions());
  Register(engine, seen);
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:deadline/wf.own", [seen](WorkflowContext& ctx, Json) -> Task<Json> {
        JoinSet set = co_await ctx.new_join_set();
        ChildOptions short_timeout;
        short_timeout.timeout = seconds(10);
        seen->Child(co_await ctx.submit(set, "test:deadline/wf.child", Params(), short_timeout));
        ChildOptions long_timeout;
        long_timeout.timeout = std::chrono::hours(1);
        long_timeout.max_retries = 0;
        // An activity: cancelled when the parent finishes without awaiting it.
        seen->Child(co_await ctx.submit(set, "test:deadline/act.slow", Params(), long_timeout));
        auto first = co_await ctx.join_next(set);
        co_return Json(first.has_value() && first->result.failed() ? first->result.failure_kind
                                                                   : "unexpected");
      }));
  ASSERT_TRUE(engine.Start());
  const DateTime submitted_at = clock_->Now();
  SubmitOptions submit;
  submit.timeout = std::chrono::minutes(1);
  const std::string id = OkOrDie(engine.Submit("test:deadline/wf.own", Params(), submit), "submit");
  ASSERT_TRUE(WaitUntil([&] { return seen->ChildCount() >= 2; }));
  // The children are created with the parent's write that blocks it.
  ASSERT_TRUE(testing::WaitForState(engine, id, "BlockedByJoinSet"));
  const std::string short_child = seen->ChildAt(0);
  const std::string long_child = seen->ChildAt(1);
  EXPECT_EQ(DeadlineOf(short_child), submitted_at + seconds(10));
  EXPECT_EQ(DeadlineOf(long_child), submitted_at + std::chrono::minutes(1)) << "clamped";
  auto parsed = core::ExecutionId::Parse(long_child);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(OkOrDie(api_->GetCreateRequest(*parsed), "create").policy.retry.max_retries, 0u);

  clock_->Advance(seconds(11));
  EXPECT_TRUE(FinishedWith(short_child, {"timed_out"}));
  EXPECT_EQ(Await(id).value, Json("timed_out")) << "the parent goes on with the child's result";
}

TEST_F(DeadlineTest, BadDeadlinesAreRefusedAndNothingIsWritten) {
  Engine& engine = Open(ManualOptions());
  ASSERT_TRUE(engine.RegisterStub("test:deadline/stub.never"));
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:deadline/wf.noop", [](WorkflowContext&, Json) -> Task<Json> { co_return Json(1); }));
  ASSERT_TRUE(engine.Start());
  SubmitOptions past;
  past.deadline =
      std::chrono::system_clock::time_point(std::chrono::milliseconds(1'600'000'000'000));
  SubmitOptions negative;
  negative.timeout = std::chrono::milliseconds(-5);
  SubmitOptions both;
  both.timeout = seconds(5);
  both.deadline =
      std::chrono::system_clock::time_point(std::chrono::milliseconds(1'800'000'000'000));
  for (const SubmitOptions& options : {past, negative, both}) {
    auto refused = engine.Submit("test:deadline/wf.noop", Params(), options);
    ASSERT_FALSE(refused.has_value());
    EXPECT_EQ(refused.error().kind, Error::Kind::kInvalidArgument) << refused.error().message;
  }
  EXPECT_TRUE(OkOrDie(engine.List(), "list").executions.empty());
}

}  // namespace
}  // namespace stele
