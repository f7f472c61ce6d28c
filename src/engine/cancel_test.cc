// Cancelling and terminating workflows through libstele (docs/sdk.md,
// "Cancelling a workflow"; docs/model.md §9.5): the request is an event in
// the workflow's log, the workflow sees it at its next blocking call and
// may clean up within the grace period, and it finishes `cancelled` with
// its open subtree cancelled.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/sdk_test_util.h"
#include "stele/stele.h"

namespace stele {
namespace {

using testing::OkOrDie;
using testing::WaitUntil;

// What the workflows of a test tell it: child ids, cleanup steps taken.
struct Seen {
  std::mutex mu;
  std::vector<std::string> children;
  std::vector<std::string> notes;
  void Child(std::string id) {
    std::lock_guard lock(mu);
    children.push_back(std::move(id));
  }
  void Note(std::string note) {
    std::lock_guard lock(mu);
    notes.push_back(std::move(note));
  }
  std::vector<std::string> Notes() {
    std::lock_guard lock(mu);
    return notes;
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

CancelOptions Reason(std::string reason) {
  CancelOptions options;
  options.reason = std::move(reason);
  return options;
}
CancelOptions Terminate() {
  CancelOptions options;
  options.terminate = true;
  return options;
}
CancelOptions Grace(std::chrono::milliseconds grace) {
  CancelOptions options;
  options.grace = grace;
  return options;
}

class CancelTest : public testing::PoolEngineTest {
 protected:
  // Whether `id` finished with the `cancelled` execution error.
  bool FinishedCancelled(const std::string& id) {
    auto result = engine_->WaitForResult(id, std::chrono::seconds(30));
    if (!result) {
      ADD_FAILURE() << id << ": " << result.error().ToString();
      return false;
    }
    EXPECT_TRUE(result->failed() && result->failure_kind == "cancelled") << result->ToString();
    return result->failed() && result->failure_kind == "cancelled";
  }
  size_t EventCount(const std::string& id) { return Events(id).size(); }
  bool Blocked(const std::string& id) {
    return testing::WaitForState(*engine_, id, "BlockedByJoinSet");
  }
  size_t CountCancelRequests(const std::string& id) {
    size_t n = 0;
    for (const core::ExecutionEvent& event : Events(id)) {
      const auto* history = std::get_if<core::HistoryEventRequest>(&event.event);
      n += history != nullptr && std::holds_alternative<core::HistoryCancelRequest>(history->event);
    }
    return n;
  }
  EngineOptions Unloading() {
    EngineOptions options = Options();
    options.workflow_keep_warm = false;  // blocked workflows unload: replay after the request
    return options;
  }
};

// Blocked on a stub that never comes, the workflow sees the cancellation
// as its call's result, compensates with an activity, and finishes
// `cancelled`; the stub child is cancelled with it.
TEST_F(CancelTest, AWorkflowBlockedOnAStubCompensatesAndFinishesCancelled) {
  auto seen = std::make_shared<Seen>();
  Engine& engine = Open(Unloading());
  ASSERT_TRUE(engine.RegisterStub("test:cancel/stub.approve"));
  ASSERT_TRUE(engine.RegisterActivity("test:cancel/act.refund",
                                      [seen](ActivityContext&, const Json&) -> ActivityResult {
                                        seen->Note("refund");
                                        return Json("refunded");
                                      }));
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:cancel/wf.order", [seen](WorkflowContext& ctx, Json) -> Task<Json> {
        JoinSet approvals = co_await ctx.new_join_set();
        seen->Child(co_await ctx.submit(approvals, "test:cancel/stub.approve", Params()));
        auto next = co_await ctx.join_next(approvals);
        if (!next && next.error().kind == JoinNextError::Kind::kCancelled) {
          ExecutionResult refund = co_await ctx.call("test:cancel/act.refund", Params());
          co_return Json{{"compensated", refund.value}};
        }
        co_return Json("approved");
      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:cancel/wf.order", Params()), "submit");
  ASSERT_TRUE(Blocked(id));
  EXPECT_EQ(OkOrDie(engine.Cancel(id, Reason("customer left")), "cancel"),
            CancelOutcome::kCancelling);
  EXPECT_TRUE(FinishedCancelled(id));
  EXPECT_EQ(seen->Notes(), std::vector<std::string>{"refund"}) << "compensated exactly once";
  EXPECT_TRUE(FinishedCancelled(seen->ChildAt(0))) << "the open stub child is cancelled";
  // Idempotent afterwards: the same answer, nothing written.
  const size_t events = EventCount(id);
  EXPECT_EQ(OkOrDie(engine.Cancel(id), "second cancel"), CancelOutcome::kCancelled);
  EXPECT_EQ(EventCount(id), events);
}

// A sleeping workflow wakes with its sleep cancelled; whatever it returns,
// the result is `cancelled`, and the sleep's timer is gone.
TEST_F(CancelTest, ASleepingWorkflowWakesAtOnceAndFinishesCancelled) {
  auto seen = std::make_shared<Seen>();
  Engine& engine = Open(Unloading());
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:cancel/wf.nap", [seen](WorkflowContext& ctx, Json) -> Task<Json> {
        const bool expired = co_await ctx.sleep(std::chrono::hours(24 * 365));
        seen->Note(expired ? "expired" : "woken");
        co_return Json("rested");
      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:cancel/wf.nap", Params()), "submit");
  ASSERT_TRUE(Blocked(id));
  EXPECT_EQ(OkOrDie(engine.Cancel(id), "cancel"), CancelOutcome::kCancelling);
  EXPECT_TRUE(FinishedCancelled(id));
  EXPECT_EQ(seen->Notes().back(), "woken");
}

// Terminate reaches three levels of child workflows and the stub the
// deepest one waits on; every one of them finishes `cancelled`, the
// children before their parents.
TEST_F(CancelTest, TerminateCascadesThroughThreeLevelsOfChildren) {
  auto seen = std::make_shared<Seen>();
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterStub("test:cancel/stub.never"));
  auto level = [seen](std::string child_ffqn) {
    return [seen, child_ffqn](WorkflowContext& ctx, Json) -> Task<Json> {
      JoinSet set = co_await ctx.new_join_set();
      seen->Child(co_await ctx.submit(set, child_ffqn, Params()));
      auto next = co_await ctx.join_next(set);
      co_return Json(next.has_value());
    };
  };
  ASSERT_TRUE(engine.RegisterWorkflow("test:cancel/wf.one", level("test:cancel/wf.two")));
  ASSERT_TRUE(engine.RegisterWorkflow("test:cancel/wf.two", level("test:cancel/wf.three")));
  ASSERT_TRUE(engine.RegisterWorkflow("test:cancel/wf.three", level("test:cancel/stub.never")));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:cancel/wf.one", Params()), "submit");
  ASSERT_TRUE(WaitUntil([&] { return seen->ChildCount() == 3; }));
  ASSERT_TRUE(Blocked(seen->ChildAt(1)));
  EXPECT_EQ(OkOrDie(engine.Cancel(id, Terminate()), "terminate"), CancelOutcome::kCancelling);
  EXPECT_TRUE(FinishedCancelled(id));
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(FinishedCancelled(seen->ChildAt(i))) << i;
  // The parent's log holds the child's response before its own end.
  EXPECT_EQ(CountCancelRequests(seen->ChildAt(0)), 1u);
}

// During cleanup the workflow waits on a stub nobody writes: the grace
// period ends the cleanup, and the stub is cancelled.
TEST_F(CancelTest, TheGracePeriodEndsACleanupThatWaitsForever) {
  auto seen = std::make_shared<Seen>();
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterStub("test:cancel/stub.never"));
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:cancel/wf.stubborn", [seen](WorkflowContext& ctx, Json) -> Task<Json> {
        const bool expired = co_await ctx.sleep(std::chrono::hours(1));
        seen->Note(expired ? "expired" : "cleanup");
        JoinSet cleanup = co_await ctx.new_join_set();
        seen->Child(co_await ctx.submit(cleanup, "test:cancel/stub.never", Params()));
        auto next = co_await ctx.join_next(cleanup);
        seen->Note(next ? "cleaned up" : "join next failed");
        co_return Json("done");
      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:cancel/wf.stubborn", Params()), "submit");
  ASSERT_TRUE(Blocked(id));
  ASSERT_EQ(OkOrDie(engine.Cancel(id, Grace(std::chrono::milliseconds(300))), "cancel"),
            CancelOutcome::kCancelling);
  EXPECT_TRUE(FinishedCancelled(id));
  EXPECT_EQ(seen->Notes(), std::vector<std::string>{"cleanup"}) << "the cleanup never returned";
  EXPECT_TRUE(FinishedCancelled(seen->ChildAt(0)));
}

TEST_F(CancelTest, ASecondRequestWritesNothingAndATerminateAfterACancelIsWritten) {
  Engine& engine = Open(Unloading());
  ASSERT_TRUE(engine.RegisterStub("test:cancel/stub.never"));
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:cancel/wf.wait", [](WorkflowContext& ctx, Json) -> Task<Json> {
        JoinSet set = co_await ctx.new_join_set();
        co_await ctx.submit(set, "test:cancel/stub.never", Params());
        auto first = co_await ctx.join_next(set);
        // Cleanup that waits forever: only terminate (or the grace) ends it.
        auto second = co_await ctx.join_next(set);
        co_return Json(first.has_value() && second.has_value());
      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:cancel/wf.wait", Params()), "submit");
  ASSERT_TRUE(Blocked(id));
  engine.Stop();
  // Stopped: nothing runs the workflow, so the log only grows by requests.
  Engine& again = Open(Unloading());
  ASSERT_TRUE(again.RegisterStub("test:cancel/stub.never"));
  ASSERT_TRUE(again.RegisterWorkflow(
      "test:cancel/wf.wait", [](WorkflowContext&, Json) -> Task<Json> { co_return Json(); }));
  EXPECT_EQ(OkOrDie(again.Cancel(id, Grace(std::chrono::hours(1))), "cancel"),
            CancelOutcome::kCancelling);
  const size_t events = EventCount(id);
  EXPECT_EQ(OkOrDie(again.Cancel(id), "again"), CancelOutcome::kCancelling);
  EXPECT_EQ(EventCount(id), events) << "a second cancel writes nothing";
  EXPECT_EQ(OkOrDie(again.Cancel(id, Terminate()), "terminate"), CancelOutcome::kCancelling);
  EXPECT_EQ(CountCancelRequests(id), 2u);
  EXPECT_EQ(OkOrDie(again.Cancel(id, Terminate()), "terminate again"), CancelOutcome::kCancelling);
  EXPECT_EQ(CountCancelRequests(id), 2u);
}

TEST_F(CancelTest, CancellingAFinishedWorkflowIsAConflictAndWritesNothing) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:cancel/wf.quick", [](WorkflowContext&, Json) -> Task<Json> { co_return Json(1); }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:cancel/wf.quick", Params()), "submit");
  ASSERT_TRUE(Await(id).ok());
  const size_t events = EventCount(id);
  auto cancelled = engine.Cancel(id);
  ASSERT_FALSE(cancelled);
  EXPECT_EQ(cancelled.error().kind, Error::Kind::kConflict);
  EXPECT_NE(cancelled.error().message.find("already finished"), std::string::npos);
  EXPECT_EQ(EventCount(id), events);
  auto bad_grace = engine.Cancel(id, Grace(std::chrono::milliseconds(-1)));
  ASSERT_FALSE(bad_grace);
}

// A cancel request while the workflow runs warm, waiting on an activity:
// the run's next write conflicts, a replay sees the request at the wait
// it was in, and the workflow ends `cancelled` with the activity cancelled.
TEST_F(CancelTest, AWarmWorkflowWaitingOnAnActivityIsCancelled) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto seen = std::make_shared<Seen>();
  Engine& engine = Open();
  ActivityOptions slow;
  slow.timeout = std::chrono::seconds(60);
  ASSERT_TRUE(engine.RegisterActivity(
      "test:cancel/act.slow",
      [release](ActivityContext& ctx, const Json&) -> ActivityResult {
        for (int i = 0; i < 20'000 && !release->load() && !ctx.cancelled(); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return Json("slow");
      },
      slow));
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:cancel/wf.warm", [seen](WorkflowContext& ctx, Json) -> Task<Json> {
        JoinSet set = co_await ctx.new_join_set();
        seen->Child(co_await ctx.submit(set, "test:cancel/act.slow", Params()));
        auto next = co_await ctx.join_next(set);
        seen->Note(next ? "done" : "cancelled");
        co_return Json("finished");
      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:cancel/wf.warm", Params()), "submit");
  ASSERT_TRUE(WaitUntil([&] { return seen->ChildCount() == 1; }));
  ASSERT_TRUE(testing::WaitForState(engine, seen->ChildAt(0), "Locked"));
  EXPECT_EQ(OkOrDie(engine.Cancel(id), "cancel"), CancelOutcome::kCancelling);
  EXPECT_TRUE(FinishedCancelled(id));
  release->store(true);
  EXPECT_TRUE(FinishedCancelled(seen->ChildAt(0))) << "the running activity is cancelled";
  // The run that replays after the request sees it at its wait (a run
  // fenced out by the request may still have noted what it saw).
  const std::vector<std::string> notes = seen->Notes();
  EXPECT_NE(std::find(notes.begin(), notes.end(), "cancelled"), notes.end());
}

}  // namespace
}  // namespace stele
