// WorkflowContext::join_next_try: a non-blocking join_next whose answer —
// nothing yet, or the response — is recorded, so a replay after the
// response arrived still answers "nothing yet" where the first run did.
#include <gtest/gtest.h>

#include <string>

#include "engine/sdk_test_util.h"
#include "stele/stele.h"

namespace stele {
namespace {

using testing::OkOrDie;

class JoinNextTryTest : public testing::PoolEngineTest {};

TEST_F(JoinNextTryTest, ATryAnswersAtOnceAndAReplayAnswersTheSame) {
  EngineOptions options = Options();
  options.workflow_keep_warm = false;  // unloaded at the sleep: the end is a replay
  Engine& engine = Open(std::move(options));
  ASSERT_TRUE(engine.RegisterStub("test:try/stub.answer"));
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:try/wf.poll", [](WorkflowContext& ctx, Json) -> Task<Json> {
        JoinSet set = co_await ctx.new_join_set();
        const std::string child = co_await ctx.submit(set, "test:try/stub.answer", Params());
        auto first = co_await ctx.join_next_try(set);
        // The answer arrives: the workflow writes it itself.
        co_await ctx.stub("test:try/stub.answer", child, ExecutionResult::Ok(Json(42)));
        auto second = co_await ctx.join_next_try(set);
        auto third = co_await ctx.join_next_try(set);
        co_await ctx.sleep(std::chrono::milliseconds(10));
        Json out;
        out["first"] = first ? (*first ? "response" : "nothing yet") : "error";
        out["second"] = second && *second ? (*second)->result.value : Json("no response");
        out["third"] = !third && third.error().kind == JoinNextError::Kind::kAllProcessed;
        co_return out;
      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:try/wf.poll", Params()), "submit");
  ExecutionResult result = Await(id);
  ASSERT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(result.value, (Json{{"first", "nothing yet"}, {"second", 42}, {"third", true}}));
  size_t tries = 0;
  for (const core::ExecutionEvent& event : Events(id)) {
    const auto* history = std::get_if<core::HistoryEventRequest>(&event.event);
    tries += history != nullptr && std::holds_alternative<core::HistoryJoinNextTry>(history->event);
  }
  EXPECT_EQ(tries, 1u) << "only the empty try is a JoinNextTry; the other is a JoinNext";
}

}  // namespace
}  // namespace stele
