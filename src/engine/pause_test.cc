// Pausing and resuming executions through libstele (docs/sdk.md, "Pausing
// an execution"; docs/model.md §9.6): a paused execution is never run, a
// run in progress is stopped and counted as no retry, what arrives
// meanwhile is kept, and a resume runs it on from its log.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "engine/sdk_test_util.h"
#include "stele/stele.h"

namespace stele {
namespace {

using testing::OkOrDie;
using testing::WaitUntil;

class PauseTest : public testing::PoolEngineTest {
 protected:
  size_t Count(const std::string& id, std::string_view tag) {
    size_t n = 0;
    for (const core::ExecutionEvent& event : Events(id)) {
      n += core::ExecutionRequestVariantTag(event.event) == tag;
    }
    return n;
  }
  std::string Description(const std::string& id) {
    auto status = engine_->GetStatus(id);
    return status ? status->description : status.error().ToString();
  }
};

// The sleep of a paused workflow ends while it is paused: the workflow is
// due but does not run until the resume, and then finishes from its log.
TEST_F(PauseTest, ASleepThatEndsWhilePausedIsSeenAfterTheResume) {
  auto woken = std::make_shared<std::atomic<int>>(0);
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterWorkflow("test:pause/wf.nap",
                                      [woken](WorkflowContext& ctx, Json) -> Task<Json> {
                                        co_await ctx.sleep(std::chrono::milliseconds(300));
                                        ++*woken;
                                        co_return Json("rested");
                                      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:pause/wf.nap", Params()), "submit");
  ASSERT_TRUE(testing::WaitForState(engine, id, "BlockedByJoinSet"));

  ASSERT_TRUE(engine.Pause(id, "maintenance"));
  EXPECT_EQ(OkOrDie(engine.GetStatus(id), "status").state, "Paused");
  // The delay fires while paused: pending underneath, still paused.
  ASSERT_TRUE(WaitUntil([&] { return Description(id).starts_with("PendingAt("); }))
      << Description(id);
  EXPECT_EQ(OkOrDie(engine.GetStatus(id), "status").state, "Paused");
  ListOptions paused;
  paused.status = "paused";
  auto listed = OkOrDie(engine.List(paused), "list paused");
  ASSERT_EQ(listed.executions.size(), 1u);
  EXPECT_EQ(listed.executions[0].execution_id, id);
  EXPECT_EQ(woken->load(), 0);
  EXPECT_FALSE(engine.WaitForResult(id, std::chrono::milliseconds(300))) << "paused: not run";

  ASSERT_TRUE(engine.Resume(id, "done"));
  auto result = engine.WaitForResult(id, std::chrono::seconds(30));
  ASSERT_TRUE(result) << result.error().ToString();
  EXPECT_EQ(result->value, Json("rested"));
  EXPECT_EQ(Count(id, "paused"), 1u);
  EXPECT_EQ(Count(id, "resumed"), 1u);
}

// A running activity's attempt is stopped at once by a pause; it counts as
// no retry, and after the resume the activity runs again and its result
// is recorded once.
TEST_F(PauseTest, ARunningActivityIsStoppedAndRunsAgainAfterTheResume) {
  auto attempts = std::make_shared<std::atomic<int>>(0);
  auto stopped = std::make_shared<std::atomic<int>>(0);
  Engine& engine = Open();
  ActivityOptions options;
  options.timeout = std::chrono::seconds(60);
  options.max_retries = 0;  // a counted retry would fail it for good
  ASSERT_TRUE(engine.RegisterActivity(
      "test:pause/act.slow",
      [attempts, stopped](ActivityContext& ctx, const Json&) -> ActivityResult {
        if (++*attempts > 1) return Json("second attempt");
        for (int i = 0; i < 30'000 && !ctx.cancelled(); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (ctx.cancelled()) ++*stopped;
        return Json("first attempt");
      },
      options));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:pause/act.slow", Params()), "submit");
  ASSERT_TRUE(testing::WaitForState(engine, id, "Locked"));

  ASSERT_TRUE(engine.Pause(id));
  ASSERT_TRUE(WaitUntil([&] { return stopped->load() == 1; })) << "the attempt is stopped";
  EXPECT_EQ(OkOrDie(engine.GetStatus(id), "status").state, "Paused");
  EXPECT_EQ(attempts->load(), 1);

  ASSERT_TRUE(engine.Resume(id));
  auto result = engine.WaitForResult(id, std::chrono::seconds(30));
  ASSERT_TRUE(result) << result.error().ToString();
  EXPECT_EQ(result->value, Json("second attempt"));
  EXPECT_EQ(Count(id, "finished"), 1u);
  EXPECT_EQ(Count(id, "temporarily_failed") + Count(id, "temporarily_timed_out"), 0u);
}

TEST_F(PauseTest, PauseIsIdempotentAndRefusedForFinishedOrUnknownExecutions) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterStub("test:pause/stub.never"));
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:pause/wf.quick", [](WorkflowContext&, Json) -> Task<Json> { co_return Json(1); }));
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:pause/wf.wait", [](WorkflowContext& ctx, Json) -> Task<Json> {
        ExecutionResult approved = co_await ctx.call("test:pause/stub.never", Params());
        co_return approved.value;
      }));
  ASSERT_TRUE(engine.Start());
  const std::string waiting = OkOrDie(engine.Submit("test:pause/wf.wait", Params()), "submit");
  ASSERT_TRUE(testing::WaitForState(engine, waiting, "BlockedByJoinSet"));
  ASSERT_TRUE(engine.Pause(waiting));
  const size_t events = Events(waiting).size();
  ASSERT_TRUE(engine.Pause(waiting, "again"));
  EXPECT_EQ(Events(waiting).size(), events) << "a second pause writes nothing";
  ASSERT_TRUE(engine.Resume(waiting));
  ASSERT_TRUE(engine.Resume(waiting));
  EXPECT_EQ(Events(waiting).size(), events + 1) << "a second resume writes nothing";

  const std::string quick = OkOrDie(engine.Submit("test:pause/wf.quick", Params()), "submit");
  ASSERT_TRUE(Await(quick).ok());
  auto finished = engine.Pause(quick);
  ASSERT_FALSE(finished);
  EXPECT_EQ(finished.error().kind, Error::Kind::kConflict);
  EXPECT_EQ(Count(quick, "paused"), 0u);
  auto unknown = engine.Pause("E_01KCR3SKWK5W50MA4Z2GJ9SXD4");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().kind, Error::Kind::kNotFound);
  auto malformed = engine.Pause("not an id");
  ASSERT_FALSE(malformed);
  EXPECT_EQ(malformed.error().kind, Error::Kind::kInvalidArgument);
  auto long_reason = engine.Pause(waiting, std::string(2000, 'x'));
  ASSERT_FALSE(long_reason);
  EXPECT_EQ(long_reason.error().kind, Error::Kind::kInvalidArgument);
}

// A cancel request resumes a paused workflow so that it can end.
TEST_F(PauseTest, CancellingAPausedWorkflowEndsIt) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterStub("test:pause/stub.never"));
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:pause/wf.wait", [](WorkflowContext& ctx, Json) -> Task<Json> {
        ExecutionResult approved = co_await ctx.call("test:pause/stub.never", Params());
        co_return approved.value;
      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:pause/wf.wait", Params()), "submit");
  ASSERT_TRUE(testing::WaitForState(engine, id, "BlockedByJoinSet"));
  ASSERT_TRUE(engine.Pause(id));
  EXPECT_EQ(OkOrDie(engine.Cancel(id), "cancel"), CancelOutcome::kCancelling);
  auto result = engine.WaitForResult(id, std::chrono::seconds(30));
  ASSERT_TRUE(result) << result.error().ToString();
  EXPECT_TRUE(result->failed() && result->failure_kind == "cancelled") << result->ToString();
}

}  // namespace
}  // namespace stele
