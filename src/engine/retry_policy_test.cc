// Retry policy through libstele (docs/sdk.md, "Retries"; docs/model.md
// §5.3): workflows have a retry limit too, an activity can fail for good
// at once, and every wait is capped and jittered within its bounds. The
// limit is in the events ("attempt n of m").
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/sdk_test_util.h"
#include "stele/stele.h"

namespace stele {
namespace {

using std::chrono::milliseconds;
using testing::OkOrDie;

class RetryPolicyTest : public testing::PoolEngineTest {
 protected:
  // The TemporarilyFailed events of `id`, in order.
  std::vector<std::pair<DateTime, core::TemporarilyFailed>> Failures(const std::string& id) {
    std::vector<std::pair<DateTime, core::TemporarilyFailed>> out;
    for (const core::ExecutionEvent& event : Events(id)) {
      if (const auto* failed = std::get_if<core::TemporarilyFailed>(&event.event)) {
        out.emplace_back(event.created_at, *failed);
      }
    }
    return out;
  }
};

std::atomic<int> g_step_runs{0};

Result<Json, Json> FailingStep() {
  ++g_step_runs;
  throw std::runtime_error("the step always fails");
}

// A workflow whose run fails every time (a step that throws) was retried
// forever before; with max_retries 2 it ends after 3 runs with the last
// failure, and each retry names its attempt.
TEST_F(RetryPolicyTest, AWorkflowFailingInALoopEndsAfterItsMaxRetries) {
  g_step_runs = 0;
  Engine& engine = Open();
  WorkflowOptions options;
  options.max_retries = 2;
  options.retry_backoff = milliseconds(10);
  ASSERT_TRUE(engine.RegisterWorkflow(
      "test:retry/wf.loop",
      [](WorkflowContext& ctx, Json) -> Task<Json> {
        ExecutionResult r = co_await ctx.step("fail", FailingStep);
        co_return r.value;
      },
      options));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:retry/wf.loop", Params()), "submit");

  const ExecutionResult result = Await(id);
  ASSERT_TRUE(result.failed()) << result.ToString();
  EXPECT_EQ(result.failure_kind, "uncategorized");
  EXPECT_NE(result.failure_reason.find("the step always fails"), std::string::npos)
      << result.failure_reason;
  EXPECT_EQ(g_step_runs.load(), 3);
  const auto failures = Failures(id);
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0].second.attempt, (core::RetryAttempt{1, 3u}));
  EXPECT_EQ(failures[1].second.attempt, (core::RetryAttempt{2, 3u}));
}

// An err returned through ctx.NonRetryable finishes the execution with it at
// the first attempt, whatever retries remain; a plain err is retried.
TEST_F(RetryPolicyTest, ANonRetryableErrorFinishesAtOnce) {
  auto attempts = std::make_shared<std::atomic<int>>(0);
  Engine& engine = Open();
  ActivityOptions options;
  options.max_retries = 5;
  options.backoff = milliseconds(10);
  ASSERT_TRUE(engine.RegisterActivity(
      "test:retry/act.charge",
      [attempts](ActivityContext& ctx, const Json& params) -> ActivityResult {
        ++*attempts;
        if (params[0] == "declined") return ctx.NonRetryable(Json{{"code", "declined"}});
        if (ctx.attempt() < 3) return Unexpected(Json("try again"));
        return Json("charged");
      },
      options));
  ASSERT_TRUE(engine.Start());

  const std::string declined =
      OkOrDie(engine.Submit("test:retry/act.charge", Params("declined")), "submit");
  const ExecutionResult result = Await(declined);
  EXPECT_TRUE(result.err()) << result.ToString();
  EXPECT_EQ(result.value, (Json{{"code", "declined"}}));
  EXPECT_EQ(attempts->load(), 1);
  EXPECT_TRUE(Failures(declined).empty());

  const std::string flaky = OkOrDie(engine.Submit("test:retry/act.charge", Params("ok")), "submit");
  EXPECT_EQ(Await(flaky).value, Json("charged"));
  EXPECT_EQ(Failures(flaky).size(), 2u);
}

// Each retry waits backoff * 2^(n-1), at most max_backoff, shortened by at
// most jitter_percent: read from the events' own instants, not from a
// wall clock.
TEST_F(RetryPolicyTest, BackoffIsCappedAndJitteredWithinItsBounds) {
  Engine& engine = Open();
  ActivityOptions options;
  options.max_retries = 4;
  options.backoff = milliseconds(40);
  options.max_backoff = milliseconds(100);
  options.jitter_percent = 50;
  ASSERT_TRUE(engine.RegisterActivity(
      "test:retry/act.flaky",
      [](ActivityContext&, const Json&) -> ActivityResult { return Unexpected(Json("no")); },
      options));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:retry/act.flaky", Params()), "submit");
  EXPECT_TRUE(Await(id).err());

  const auto failures = Failures(id);
  ASSERT_EQ(failures.size(), 4u);
  const int64_t full_ms[] = {40, 80, 100, 100};  // 160 capped at 100
  for (size_t i = 0; i < failures.size(); ++i) {
    const auto& [at, failed] = failures[i];
    const auto wait =
        std::chrono::duration_cast<std::chrono::microseconds>(failed.backoff_expires_at - at);
    EXPECT_LE(wait.count(), full_ms[i] * 1000) << "retry " << i + 1;
    EXPECT_GE(wait.count(), full_ms[i] * 1000 / 2) << "retry " << i + 1;
    EXPECT_EQ(failed.attempt, (core::RetryAttempt{static_cast<uint32_t>(i + 1), 5u}));
  }
}

// Submit options override the function's policy for one execution.
TEST_F(RetryPolicyTest, SubmitOptionsOverrideTheRetryPolicyOfOneExecution) {
  auto attempts = std::make_shared<std::atomic<int>>(0);
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterActivity("test:retry/act.no",
                                      [attempts](ActivityContext&, const Json&) -> ActivityResult {
                                        ++*attempts;
                                        return Unexpected(Json("no"));
                                      }));
  ASSERT_TRUE(engine.Start());
  SubmitOptions submit;
  submit.retry.max_retries = 0;
  const std::string id = OkOrDie(engine.Submit("test:retry/act.no", Params(), submit), "submit");
  EXPECT_TRUE(Await(id).err());
  EXPECT_EQ(attempts->load(), 1);

  submit.retry.jitter_percent = 101;
  auto refused = engine.Submit("test:retry/act.no", Params(), submit);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().kind, Error::Kind::kInvalidArgument);
}

}  // namespace
}  // namespace stele
