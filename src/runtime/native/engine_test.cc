// Engine API: bad input gets a clear error and loses nothing — malformed
// and unknown ffqns, params that are not an array or are too large, bad
// execution ids, resubmission with other params, wrong kinds of targets.
#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "runtime/native/sdk_test_util.h"
#include "stele/stele.h"

namespace stele {
namespace {

using std::chrono::milliseconds;
using testing::EngineTest;
using testing::OkOrDie;

constexpr const char* kEcho = "test:engine/api.echo";
constexpr const char* kFlow = "test:engine/wf.flow";
constexpr const char* kStubFn = "test:engine/human.ok";

ActivityResult Echo(ActivityContext&, const Json& params) { return params; }

class EngineApiTest : public EngineTest {
 protected:
  Engine& OpenRegistered(EngineOptions options) {
    Engine& engine = Open(std::move(options));
    EXPECT_TRUE(engine.RegisterActivity(kEcho, Echo));
    EXPECT_TRUE(engine.RegisterStub(kStubFn));
    EXPECT_TRUE(engine.RegisterWorkflow(kFlow, [](WorkflowContext& ctx, Json p) -> Task<Json> {
      auto r = co_await ctx.call(kEcho, p);
      co_return r.value;
    }));
    return engine;
  }
  Engine& OpenRegistered() { return OpenRegistered(Options()); }
};

template <class T>
::testing::AssertionResult FailsWith(const Result<T, Error>& result, Error::Kind kind,
                                     const std::string& fragment) {
  if (result) return ::testing::AssertionFailure() << "expected an error, got a value";
  if (result.error().kind != kind) {
    return ::testing::AssertionFailure() << "wrong kind: " << result.error().ToString();
  }
  if (result.error().message.find(fragment) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message lacks `" << fragment << "`: " << result.error().ToString();
  }
  return ::testing::AssertionSuccess();
}

TEST_F(EngineApiTest, RegistrationRejectsBadAndDuplicateFfqns) {
  Engine& engine = OpenRegistered();
  EXPECT_TRUE(FailsWith(engine.RegisterActivity("not an ffqn", Echo),
                        Error::Kind::kInvalidArgument, "invalid ffqn `not an ffqn`"));
  EXPECT_TRUE(FailsWith(engine.RegisterActivity("Bad:Case/x.y", Echo),
                        Error::Kind::kInvalidArgument, "invalid ffqn"));
  EXPECT_TRUE(FailsWith(engine.RegisterActivity(kEcho, Echo), Error::Kind::kConflict,
                        "registered already"));
  EXPECT_TRUE(FailsWith(engine.RegisterStub(kFlow), Error::Kind::kConflict, "registered already"));
  ASSERT_TRUE(engine.Start());
  EXPECT_TRUE(FailsWith(engine.RegisterActivity("test:engine/api.late", Echo),
                        Error::Kind::kFailedPrecondition, "has started"));
  EXPECT_TRUE(FailsWith(engine.Start(), Error::Kind::kFailedPrecondition, "started before"));
}

TEST_F(EngineApiTest, SubmitRejectsBadFfqns) {
  Engine& engine = OpenRegistered();
  EXPECT_TRUE(FailsWith(engine.Submit("nonsense", Json::array()), Error::Kind::kInvalidArgument,
                        "invalid ffqn `nonsense`"));
  EXPECT_TRUE(FailsWith(engine.Submit("test:engine/api.missing", Json::array()),
                        Error::Kind::kNotFound, "unknown ffqn `test:engine/api.missing`"));
  EXPECT_TRUE(FailsWith(engine.Submit(kStubFn, Json::array()), Error::Kind::kInvalidArgument,
                        "stub activity"));
}

TEST_F(EngineApiTest, SubmitRejectsParamsThatAreNotAnArray) {
  Engine& engine = OpenRegistered();
  EXPECT_TRUE(FailsWith(engine.Submit(kEcho, Json{{"a", 1}}), Error::Kind::kInvalidArgument,
                        "params must be a JSON array"));
  EXPECT_TRUE(FailsWith(engine.Submit(kEcho, Json(5)), Error::Kind::kInvalidArgument,
                        "got number"));
  EXPECT_TRUE(FailsWith(engine.Submit(kEcho, Json()), Error::Kind::kInvalidArgument, "got null"));
}

// A workflow passing something other than an array as a child's params
// fails at once with a clear reason, instead of writing a child that
// could never be read back (or retrying a failing write forever).
TEST_F(EngineApiTest, WorkflowCallWithParamsThatAreNotAnArrayFailsTheWorkflow) {
  Engine& engine = Open();
  ASSERT_TRUE(engine.RegisterActivity(kEcho, Echo));
  ASSERT_TRUE(engine.RegisterWorkflow(kFlow, [](WorkflowContext& ctx, Json) -> Task<Json> {
    auto r = co_await ctx.call(kEcho, Json(5));
    co_return r.value;
  }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit(kFlow, Json::array()), "submit");
  ExecutionResult result = Await(id);
  ASSERT_TRUE(result.failed()) << result.ToString();
  EXPECT_NE(result.ToString().find("params must be a JSON array, got number"), std::string::npos)
      << result.ToString();
}

TEST_F(EngineApiTest, SubmitRejectsOversizedParams) {
  EngineOptions options = Options();
  options.max_params_bytes = 64;
  Engine& engine = OpenRegistered(options);
  EXPECT_TRUE(engine.Submit(kEcho, Params(std::string(40, 'x'))));
  EXPECT_TRUE(FailsWith(engine.Submit(kEcho, Params(std::string(100, 'x'))),
                        Error::Kind::kInvalidArgument, "over the limit of 64"));
}

TEST_F(EngineApiTest, BadExecutionIds) {
  Engine& engine = OpenRegistered();
  EXPECT_TRUE(FailsWith(engine.Submit(kEcho, Json::array(), {.execution_id = "E_nope"}),
                        Error::Kind::kInvalidArgument, "invalid execution id `E_nope`"));
  std::string top = OkOrDie(engine.Submit(kEcho, Json::array()), "submit");
  EXPECT_TRUE(FailsWith(engine.Submit(kEcho, Json::array(), {.execution_id = top + ".g:1_1"}),
                        Error::Kind::kInvalidArgument, "child id"));
  EXPECT_TRUE(FailsWith(engine.GetStatus("garbage"), Error::Kind::kInvalidArgument,
                        "invalid execution id `garbage`"));
  EXPECT_TRUE(FailsWith(engine.GetStatus("E_01KBNHM5FQW81KP5Y3XMNX31K4"), Error::Kind::kNotFound,
                        "no such execution"));
  EXPECT_TRUE(FailsWith(engine.WaitForResult("x", milliseconds(1)), Error::Kind::kInvalidArgument,
                        "invalid execution id"));
  EXPECT_TRUE(FailsWith(engine.Cancel("Delay_zzz"), Error::Kind::kInvalidArgument,
                        "invalid delay id"));
  EXPECT_TRUE(FailsWith(engine.Cancel("bogus"), Error::Kind::kInvalidArgument,
                        "invalid execution id"));
  EXPECT_TRUE(FailsWith(engine.Stub("bogus", ExecutionResult::Ok()),
                        Error::Kind::kInvalidArgument, "invalid execution id"));
}

TEST_F(EngineApiTest, ResubmissionIsIdempotentOrAConflict) {
  Engine& engine = OpenRegistered();
  const std::string id = "E_01KBNHM5FQW81KP5Y3XMNX31K4";
  EXPECT_EQ(OkOrDie(engine.Submit(kEcho, Params(1, 2), {.execution_id = id}), "first"), id);
  EXPECT_EQ(OkOrDie(engine.Submit(kEcho, Params(1, 2), {.execution_id = id}), "again"), id);
  EXPECT_TRUE(FailsWith(engine.Submit(kEcho, Params(1, 3), {.execution_id = id}),
                        Error::Kind::kConflict, "other params"));
  EXPECT_TRUE(FailsWith(engine.Submit(kFlow, Params(1, 2), {.execution_id = id}),
                        Error::Kind::kConflict, "another ffqn"));
  ASSERT_TRUE(engine.Start());
  auto result = Await(id);
  EXPECT_EQ(result.value, Params(1, 2));
  // Still idempotent after it finished.
  EXPECT_EQ(OkOrDie(engine.Submit(kEcho, Params(1, 2), {.execution_id = id}), "after"), id);
}

TEST_F(EngineApiTest, WrongTargetsOfCancelAndStub) {
  Engine& engine = OpenRegistered();
  std::string flow = OkOrDie(engine.Submit(kFlow, Params(1)), "submit");
  EXPECT_TRUE(FailsWith(engine.Cancel(flow), Error::Kind::kInvalidArgument, "is a workflow"));
  EXPECT_TRUE(FailsWith(engine.Stub(flow, ExecutionResult::Ok()), Error::Kind::kInvalidArgument,
                        "top-level"));
  ASSERT_TRUE(engine.Start());
  ASSERT_TRUE(Await(flow).ok());
  EXPECT_TRUE(FailsWith(engine.Stub(flow + ".o:1-echo_1", ExecutionResult::Ok()),
                        Error::Kind::kInvalidArgument, "not a stub activity"));
}

TEST_F(EngineApiTest, WaitTimesOutWithoutLosingTheExecution) {
  Engine& engine = OpenRegistered();
  std::string id = OkOrDie(engine.Submit(kEcho, Params("later")), "submit");
  EXPECT_TRUE(FailsWith(engine.WaitForResult(id, milliseconds(20)), Error::Kind::kTimeout,
                        "did not finish"));
  EXPECT_EQ(OkOrDie(engine.GetStatus(id), "status").state, "PendingAt");
  ASSERT_TRUE(engine.Start());
  EXPECT_EQ(Await(id).value, Params("later"));
}

TEST_F(EngineApiTest, ScheduledSubmissionWaitsForItsTime) {
  Engine& engine = OpenRegistered();
  ASSERT_TRUE(engine.Start());
  std::string id = OkOrDie(
      engine.Submit(kEcho, Params("tomorrow"),
                    {.scheduled_at = std::chrono::system_clock::now() + std::chrono::hours(24)}),
      "submit");
  EXPECT_TRUE(FailsWith(engine.WaitForResult(id, milliseconds(100)), Error::Kind::kTimeout,
                        "did not finish"));
  EXPECT_EQ(OkOrDie(engine.GetStatus(id), "status").state, "PendingAt");
}

TEST_F(EngineApiTest, ListAndStatus) {
  Engine& engine = OpenRegistered();
  ASSERT_TRUE(engine.Start());
  std::string a = OkOrDie(engine.Submit(kFlow, Params("a")), "a");
  std::string b = OkOrDie(engine.Submit(kEcho, Params("b")), "b");
  ASSERT_TRUE(Await(a).ok());
  ASSERT_TRUE(Await(b).ok());
  auto all = OkOrDie(engine.List({.limit = 10}), "list");
  EXPECT_EQ(all.size(), 3u);  // a, its child, b
  auto top = OkOrDie(engine.List({.top_level_only = true}), "list top");
  EXPECT_EQ(top.size(), 2u);
  auto flows = OkOrDie(engine.List({.ffqn = std::string(kFlow)}), "list flows");
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(flows[0].execution_id, a);
  EXPECT_TRUE(flows[0].finished);
  EXPECT_EQ(flows[0].state, "Finished");
  EXPECT_TRUE(FailsWith(engine.List({.ffqn = std::string("??")}), Error::Kind::kInvalidArgument,
                        "invalid ffqn"));
}

TEST_F(EngineApiTest, OpenReportsAnUnusablePath) {
  EngineOptions options = Options();
  options.sqlite_path = (dir_ / "missing-dir" / "x.sqlite").string();
  auto engine = Engine::Open(options);
  ASSERT_FALSE(engine);
  EXPECT_EQ(engine.error().kind, Error::Kind::kStorage);
  EXPECT_NE(engine.error().message.find("missing-dir"), std::string::npos)
      << engine.error().ToString();
}

TEST_F(EngineApiTest, RestartContinuesUnfinishedWork) {
  std::string id;
  {
    Engine& engine = OpenRegistered();
    id = OkOrDie(engine.Submit(kFlow, Params("persisted")), "submit");  // never started
    engine_.reset();
  }
  Engine& engine = OpenRegistered();
  ASSERT_TRUE(engine.Start());
  EXPECT_EQ(Await(id).value, Params("persisted"));
}

}  // namespace
}  // namespace stele
