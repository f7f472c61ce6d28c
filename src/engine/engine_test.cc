// Engine API: bad input gets a clear error and loses nothing — malformed
// and unknown ffqns, params that are not an array or are too large, bad
// execution ids, resubmission with other params, wrong kinds of targets.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "engine/sdk_test_util.h"
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
  EXPECT_TRUE(FailsWith(engine.RegisterActivity("not an ffqn", Echo), Error::Kind::kInvalidArgument,
                        "invalid ffqn `not an ffqn`"));
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
  EXPECT_TRUE(
      FailsWith(engine.Submit(kEcho, Json(5)), Error::Kind::kInvalidArgument, "got number"));
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
  EXPECT_TRUE(
      FailsWith(engine.Cancel("Delay_zzz"), Error::Kind::kInvalidArgument, "invalid delay id"));
  EXPECT_TRUE(
      FailsWith(engine.Cancel("bogus"), Error::Kind::kInvalidArgument, "invalid execution id"));
  EXPECT_TRUE(FailsWith(engine.Stub("bogus", ExecutionResult::Ok()), Error::Kind::kInvalidArgument,
                        "invalid execution id"));
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
  EXPECT_TRUE(FailsWith(engine.Cancel("E_not-an-id"), Error::Kind::kInvalidArgument, ""));
  EXPECT_TRUE(FailsWith(engine.Stub(flow, ExecutionResult::Ok()), Error::Kind::kInvalidArgument,
                        "top-level"));
  ASSERT_TRUE(engine.Start());
  ASSERT_TRUE(Await(flow).ok());
  EXPECT_TRUE(FailsWith(engine.Cancel(flow), Error::Kind::kConflict, "already finished"));
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
  EXPECT_EQ(all.executions.size(), 3u);  // a, its child, b
  EXPECT_EQ(all.next_cursor, std::nullopt);
  auto top = OkOrDie(engine.List({.top_level_only = true}), "list top");
  EXPECT_EQ(top.executions.size(), 2u);
  auto flows = OkOrDie(engine.List({.ffqn = std::string(kFlow)}), "list flows");
  ASSERT_EQ(flows.executions.size(), 1u);
  EXPECT_EQ(flows.executions[0].execution_id, a);
  EXPECT_TRUE(flows.executions[0].finished);
  EXPECT_EQ(flows.executions[0].state, "Finished");
  EXPECT_TRUE(FailsWith(engine.List({.ffqn = std::string("??")}), Error::Kind::kInvalidArgument,
                        "invalid ffqn"));
}

// The ids of every page of a listing, following next_cursor.
std::vector<std::vector<std::string>> AllPages(Engine& engine, ListOptions options) {
  std::vector<std::vector<std::string>> pages;
  for (int guard = 0; guard < 100; ++guard) {
    ListPage page = OkOrDie(engine.List(options), "list");
    std::vector<std::string> ids;
    for (const ExecutionStatus& row : page.executions) ids.push_back(row.execution_id);
    pages.push_back(std::move(ids));
    if (!page.next_cursor) return pages;
    options.cursor = page.next_cursor;
  }
  ADD_FAILURE() << "next_cursor never ran out";
  return pages;
}

TEST_F(EngineApiTest, ListPagesOlderAndNewerWithACursor) {
  Engine& engine = OpenRegistered();  // not started: the executions stay pending
  std::vector<std::string> ids;
  for (int i = 0; i < 45; ++i) ids.push_back(OkOrDie(engine.Submit(kEcho, Params(i)), "submit"));
  std::sort(ids.rbegin(), ids.rend());  // newest first, as List orders them
  auto slice = [&](size_t from, size_t to) {
    return std::vector<std::string>(ids.begin() + static_cast<ptrdiff_t>(from),
                                    ids.begin() + static_cast<ptrdiff_t>(to));
  };

  // Older: from the newest down; the last page is short and ends the list.
  EXPECT_EQ(AllPages(engine, {.limit = 20}),
            (std::vector<std::vector<std::string>>{slice(0, 20), slice(20, 40), slice(40, 45)}));
  // Newer: from the oldest up; every page is still newest first.
  EXPECT_EQ(AllPages(engine, {.limit = 20, .direction = ListDirection::kNewer}),
            (std::vector<std::vector<std::string>>{slice(25, 45), slice(5, 25), slice(0, 5)}));
  // A full last page has no cursor: there is nothing after it.
  EXPECT_EQ(AllPages(engine, {.limit = 15}),
            (std::vector<std::vector<std::string>>{slice(0, 15), slice(15, 30), slice(30, 45)}));
  EXPECT_EQ(AllPages(engine, {.limit = 45}), (std::vector<std::vector<std::string>>{slice(0, 45)}));
  // Back from a cursor: newer than the 20th newest are the 19 before it.
  EXPECT_EQ(AllPages(engine, {.limit = 20, .cursor = ids[19], .direction = ListDirection::kNewer}),
            (std::vector<std::vector<std::string>>{slice(0, 19)}));
  EXPECT_EQ(AllPages(engine, {.limit = 5, .cursor = ids[19]}),
            (std::vector<std::vector<std::string>>{slice(20, 25), slice(25, 30), slice(30, 35),
                                                   slice(35, 40), slice(40, 45)}));
  // Filters hold across pages.
  std::vector<std::string> flows;
  for (int i = 0; i < 6; ++i) flows.push_back(OkOrDie(engine.Submit(kFlow, Params(i)), "flow"));
  std::sort(flows.rbegin(), flows.rend());
  EXPECT_EQ(AllPages(engine, {.ffqn = std::string(kFlow), .limit = 4}),
            (std::vector<std::vector<std::string>>{{flows.begin(), flows.begin() + 4},
                                                   {flows.begin() + 4, flows.end()}}));
}

TEST_F(EngineApiTest, ListRefusesBadLimitsAndCursors) {
  Engine& engine = OpenRegistered();
  OkOrDie(engine.Submit(kEcho, Params(1)), "submit");
  EXPECT_TRUE(FailsWith(engine.List({.limit = 0}), Error::Kind::kInvalidArgument,
                        "limit must be 1..1000, got 0"));
  EXPECT_TRUE(FailsWith(engine.List({.limit = ListOptions::kMaxLimit + 1}),
                        Error::Kind::kInvalidArgument, "got 1001"));
  EXPECT_TRUE(FailsWith(engine.List({.limit = 4'000'000'000u}), Error::Kind::kInvalidArgument,
                        "got 4000000000"));
  EXPECT_EQ(OkOrDie(engine.List({.limit = ListOptions::kMaxLimit}), "max").executions.size(), 1u);
  EXPECT_TRUE(FailsWith(engine.List({.cursor = std::string("E_not-a-ulid")}),
                        Error::Kind::kInvalidArgument, "invalid list cursor `E_not-a-ulid`"));
  EXPECT_TRUE(FailsWith(engine.List({.cursor = std::string("")}), Error::Kind::kInvalidArgument,
                        "invalid list cursor"));
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

// Issue 16: a delay id next to a real one — the workflow's sleep is
// `..o:1-sleep_1` — names nothing the workflow requested: NotFound, and the
// workflow's log and responses are as before (it used to get a response
// for it, and then failed with a nondeterminism error).
class EngineRequestTest : public testing::PoolEngineTest {};

TEST_F(EngineRequestTest, CancellingADelayThatWasNeverRequestedIsNotFoundAndWritesNothing) {
  Engine& engine = Open(Options());
  ASSERT_TRUE(
      engine.RegisterWorkflow("test:engine/wf.nap", [](WorkflowContext& ctx, Json) -> Task<Json> {
        bool expired = co_await ctx.sleep(std::chrono::hours(1));
        co_return Json(expired ? "woke" : "cancelled");
      }));
  ASSERT_TRUE(engine.Start());
  const std::string id = OkOrDie(engine.Submit("test:engine/wf.nap", Json::array()), "submit");
  ASSERT_TRUE(testing::WaitForState(engine, id, "BlockedByJoinSet"));
  const core::ExecutionId parsed = *core::ExecutionId::Parse(id);
  auto log = [&] {
    return std::make_pair(
        OkOrDie(api_->ListExecutionEvents(parsed, core::Version(0), 1000, false), "events"),
        OkOrDie(api_->ListResponses(parsed, core::Pagination<uint32_t>::NewerThan(100, 0, true)),
                "responses"));
  };
  const auto before = log();
  const std::string delay = "Delay_" + id.substr(2) + ".o:1-sleep_";
  EXPECT_TRUE(FailsWith(engine.Cancel(delay + "9"), Error::Kind::kNotFound, "not found"));
  EXPECT_TRUE(FailsWith(engine.Cancel("Delay_" + id.substr(2) + ".o:1-nap_1"),
                        Error::Kind::kNotFound, "not found"));
  EXPECT_EQ(log(), before);
  EXPECT_EQ(OkOrDie(engine.Cancel(delay + "1"), "cancel"), CancelOutcome::kCancelled);
  EXPECT_EQ(Await(id).value, Json("cancelled"));
}

}  // namespace
}  // namespace stele
