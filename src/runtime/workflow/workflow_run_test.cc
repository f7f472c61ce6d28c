// Scenarios of the workflow worker and its event history (docs/model.md
// §6–§8) that need no WASM, on every backend and under both blocking
// strategies, driven through the real executor and watcher on a ManualClock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <tuple>

#include "runtime/workflow/workflow_test_util.h"
#include "storage/operations.h"

namespace stele::runtime::workflow::testing {
namespace {

using ::testing::ElementsAre;
using namespace std::chrono_literals;  // NOLINT

using Param = std::tuple<Backend, BlockingStrategy>;

class WorkflowRunTest : public ::testing::TestWithParam<Param> {
 protected:
  std::unique_ptr<TestEnv> Env(Script script, std::optional<WorkflowRunOptions> options = {}) {
    return std::make_unique<TestEnv>(std::get<0>(GetParam()),
                                     options.value_or(TestOptions(std::get<1>(GetParam()))),
                                     std::move(script));
  }
  const core::ExecutionId id_ = core::ExecutionId::Generate();
  core::SupportedFunctionReturnValue result_holder;
};

core::Json OkJson(const core::SupportedFunctionReturnValue& value) {
  const auto* ok = std::get_if<core::ReturnValueOk>(&value);
  return ok != nullptr && ok->ok ? *ok->ok : core::Json();
}

TEST_P(WorkflowRunTest, CallActivityHappyPath) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto result, run.Call(ActivityFfqn(), core::Json::array({21})));
    return run.Finish(result);
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(OkJson(env->Result(id_)), core::Json(42));
  const auto history = env->History(id_);
  ASSERT_EQ(history.size(), 3u) << Describe(history);
  const auto& create = std::get<core::HistoryJoinSetCreate>(history[0]);
  EXPECT_EQ(create.join_set_id.ToString(), "o:1-activity");
  const auto& request = std::get<core::HistoryJoinSetRequest>(history[1]);
  const auto& child = std::get<core::ChildExecutionRequest>(request.request);
  EXPECT_EQ(child.child_execution_id.ToString(), id_.ToString() + ".o:1-activity_1");
  EXPECT_EQ(std::get<core::HistoryJoinNext>(history[2]).requested_ffqn, ActivityFfqn());
  EXPECT_EQ(env->activity_runs(), 1u);
}

TEST_P(WorkflowRunTest, SequentialCallsReplayWithoutRerunningActivities) {
  auto env = Env([](WorkflowRun& run) {
    int64_t acc = 1;
    for (int i = 0; i < 3; ++i) {
      WF_TRY(auto result, run.Call(ActivityFfqn(), core::Json::array({acc})));
      acc = OkJson(result).get<int64_t>();
    }
    return run.Finish(OkValue(acc));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(OkJson(env->Result(id_)), core::Json(8));
  EXPECT_EQ(env->activity_runs(), 3u);
  EXPECT_EQ(env->History(id_).size(), 9u);
}

TEST_P(WorkflowRunTest, Sleep2HappyPath) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto slept, run.Sleep(core::HistoryEventScheduleAt::In(core::Duration::FromSecs(2))));
    if (!slept) return run.Finish(core::ReturnValueErr{});
    return run.Finish(OkValue(FormatRfc3339(*slept)));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(OkJson(env->Result(id_)), core::Json(FormatRfc3339(kT0 + 2s)));
  const auto names = env->EventNames(id_);
  EXPECT_EQ(names[2], "join_set_create");
  EXPECT_EQ(names[3], "join_set_request");
  EXPECT_EQ(names[4], "join_next");
  EXPECT_EQ(std::get<core::HistoryJoinSetCreate>(env->History(id_)[0]).join_set_id.ToString(),
            "o:1-sleep");
}

TEST_P(WorkflowRunTest, SleepBeyondTheLeaseUnloadsAtOnceUnderEitherStrategy) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto slept, run.Sleep(core::HistoryEventScheduleAt::In(core::Duration::FromSecs(100))));
    return run.Finish(OkValue(slept.has_value()));
  });
  env->CreateWorkflow(id_);
  env->Round();
  // Waiting warm could not see the delay before the lease ends, so even a
  // kAwait run gives its lease up at once and frees the executor slot.
  std::optional<core::HistoryJoinNext> join_next;
  for (const auto& event : env->Log(id_).events) {
    const auto* history = std::get_if<core::HistoryEventRequest>(&event.event);
    if (history == nullptr) continue;
    if (const auto* next = std::get_if<core::HistoryJoinNext>(&history->event)) join_next = *next;
  }
  ASSERT_TRUE(join_next.has_value());
  EXPECT_EQ(join_next->run_expires_at, kT0);
  EXPECT_EQ(env->Log(id_).pending_state.StateName(), "BlockedByJoinSet");
  ASSERT_TRUE(env->RunToCompletion(id_, 100, 10s));
  EXPECT_EQ(OkJson(env->Result(id_)), core::Json(true));
}

TEST_P(WorkflowRunTest, CancelledSleepReturnsErr) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto slept, run.Sleep(core::HistoryEventScheduleAt::In(core::Duration::FromSecs(100))));
    return run.Finish(slept ? OkValue("slept") : core::ReturnValueErr{core::Json("cancelled")});
  });
  env->CreateWorkflow(id_);
  env->Round();
  const core::DelayId delay(id_, *(core::JoinSetId::Parse("o:1-sleep")), 1);
  Must(storage::CancelDelay(env->db(), delay, env->clock().Now()));
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_TRUE(std::holds_alternative<core::ReturnValueErr>(env->Result(id_)));
}

TEST_P(WorkflowRunTest, TwoDelaysInSameJoinSetArriveInExpiryOrder) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto js, run.CreateJoinSet());
    WF_TRY(auto late,
           run.SubmitDelay(js, core::HistoryEventScheduleAt::In(core::Duration::FromSecs(3))));
    WF_TRY(auto early,
           run.SubmitDelay(js, core::HistoryEventScheduleAt::In(core::Duration::FromSecs(1))));
    WF_TRY(auto first, run.JoinNext(js));
    WF_TRY(auto second, run.JoinNext(js));
    if (!first || !second) return run.Trap("join next failed");
    const bool ordered = std::get<DelayResponse>(*first).delay_id == early &&
                         std::get<DelayResponse>(*second).delay_id == late;
    return run.Finish(OkValue(ordered));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(OkJson(env->Result(id_)), core::Json(true));
  EXPECT_EQ(std::get<core::HistoryJoinSetCreate>(env->History(id_)[0]).join_set_id.ToString(),
            "g:1");
}

TEST_P(WorkflowRunTest, JoinNextProducesAllProcessedError) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto js, run.CreateNamedJoinSet("batch"));
    if (!js) return run.Trap("named join set");
    WF_TRY(auto child, run.SubmitChild(*js, ActivityFfqn(), core::Json::array({5})));
    WF_TRY(auto first, run.JoinNext(*js, ActivityFfqn()));
    WF_TRY(auto second, run.JoinNext(*js, ActivityFfqn()));
    if (!first || second || second.error().kind != JoinNextError::Kind::kAllProcessed) {
      return run.Trap("unexpected join next outcome");
    }
    WF_TRY(auto got, run.Get(child, ActivityFfqn()));
    if (!got) return run.Trap("get failed");
    return run.Finish(*got);
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(OkJson(env->Result(id_)), core::Json(10));
  const auto history = env->History(id_);
  ASSERT_EQ(history.size(), 4u) << Describe(history);
  EXPECT_TRUE(std::holds_alternative<core::HistoryJoinNextTooMany>(history[3]));
}

TEST_P(WorkflowRunTest, AwaitNextFunctionMismatchConsumesTheResponse) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto js, run.CreateJoinSet());
    WF_TRY(auto delay, run.SubmitDelay(js, core::HistoryEventScheduleAt::Now()));
    WF_TRY(auto next, run.JoinNext(js, ActivityFfqn()));
    if (next || next.error().kind != JoinNextError::Kind::kFunctionMismatch ||
        !next.error().actual || std::get<DelayResponse>(*next.error().actual).delay_id != delay) {
      return run.Trap("expected a function mismatch");
    }
    WF_TRY(auto get, run.JoinNext(js));
    return run.Finish(OkValue(!get ? "all processed" : "more"));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(OkJson(env->Result(id_)), core::Json("all processed"));
}

TEST_P(WorkflowRunTest, ChildExecutionErrorSurfacesToTheCaller) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto result, run.Call(FailingFfqn(), core::Json::array()));
    const auto* error = std::get_if<core::FinishedExecutionError>(&result);
    return run.Finish(OkValue(error != nullptr ? "execution-failed" : "ok"));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(OkJson(env->Result(id_)), core::Json("execution-failed"));
}

TEST_P(WorkflowRunTest, SchedulingCreatesTopLevelExecutionScheduledByTheWorkflow) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto scheduled,
           run.Schedule(core::HistoryEventScheduleAt::In(core::Duration::FromSecs(5)),
                        ActivityFfqn(), core::Json::array({1})));
    return run.Finish(OkValue(scheduled.ToString()));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  auto scheduled = *(core::ExecutionId::Parse(OkJson(env->Result(id_)).get<std::string>()));
  EXPECT_TRUE(scheduled.IsTopLevel());
  EXPECT_EQ(scheduled.root().TimestampMs(), id_.root().TimestampMs());
  const auto log = env->Log(scheduled);
  const auto& created = std::get<core::Created>(log.events[0].event);
  EXPECT_EQ(created.scheduled_by, id_);
  EXPECT_EQ(created.scheduled_at, kT0 + 5s);
  ASSERT_TRUE(env->RunToCompletion(scheduled, 10));
}

TEST_P(WorkflowRunTest, StubbingShouldWorkAndBeIdempotent) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto js, run.CreateJoinSet());
    WF_TRY(auto child, run.SubmitChild(js, StubFfqn(), core::Json::array()));
    WF_TRY(auto first, run.Stub(StubFfqn(), child, OkValue("approved")));
    WF_TRY(auto same, run.Stub(StubFfqn(), child, OkValue("approved")));
    WF_TRY(auto other, run.Stub(StubFfqn(), child, OkValue("rejected")));
    if (!first || !same || other) return run.Trap("stub outcomes");
    WF_TRY(auto next, run.JoinNext(js, StubFfqn()));
    if (!next) return run.Trap("join next");
    return run.Finish(std::get<ChildResponse>(*next).result);
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(OkJson(env->Result(id_)), core::Json("approved"));
  const auto history = env->History(id_);
  ASSERT_EQ(history.size(), 6u) << Describe(history);
  EXPECT_FALSE(std::get<core::HistoryStub>(history[4]).persist_result_ok);
}

TEST_P(WorkflowRunTest, NamedJoinSetConflictAndInvalidName) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto first, run.CreateNamedJoinSet("orders"));
    WF_TRY(auto again, run.CreateNamedJoinSet("orders"));
    WF_TRY(auto bad, run.CreateNamedJoinSet("no spaces"));
    const bool ok = first && !again && again.error().kind == JoinSetCreateError::Kind::kConflict &&
                    !bad && bad.error().kind == JoinSetCreateError::Kind::kInvalidName;
    return run.Finish(OkValue(ok));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(OkJson(env->Result(id_)), core::Json(true));
  EXPECT_EQ(env->History(id_).size(), 1u);
}

TEST_P(WorkflowRunTest, CreatingOneOffAndGeneratedJoinSetsWithSameIndexShouldWork) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto js, run.CreateJoinSet());
    WF_TRY(auto result, run.Call(ActivityFfqn(), core::Json::array({1})));
    WF_TRY(auto js2, run.CreateJoinSet());
    return run.Finish(OkValue(js.ToString() + "," + js2.ToString()));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(OkJson(env->Result(id_)), core::Json("g:1,g:2"));
}

TEST_P(WorkflowRunTest, SubmittingToClosedJoinSetIsPermanentFailure) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto js, run.CreateJoinSet());
    WF_TRY_VOID(run.CloseJoinSet(js));
    WF_TRY(auto child, run.SubmitChild(js, ActivityFfqn(), core::Json::array()));
    return run.Finish(OkValue(child.ToString()));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  const auto* error =
      std::get_if<core::FinishedExecutionError>(&(result_holder = env->Result(id_)));
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->kind, core::ExecutionFailureKind::kUncategorized);
  EXPECT_THAT(error->reason.value_or(""), ::testing::HasSubstr("closed"));
}

// A runaway workflow ends with a clear reason instead of growing its log
// (or one join set) without bound.
TEST_P(WorkflowRunTest, EventLimitPerExecutionEndsARunawayWorkflow) {
  WorkflowRunOptions options = TestOptions(std::get<1>(GetParam()));
  options.max_events_per_execution = 50;
  auto env = Env(
      [](WorkflowRun& run) {
        for (;;) {
          WF_TRY(auto drawn, run.RandomU64(0, 10));
          (void)drawn;
        }
      },
      options);
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  const auto* error =
      std::get_if<core::FinishedExecutionError>(&(result_holder = env->Result(id_)));
  ASSERT_NE(error, nullptr);
  EXPECT_THAT(error->reason.value_or(""), ::testing::HasSubstr("limit of 50 events"));
  EXPECT_LE(env->Log(id_).events.size(), 52u) << "Created + the limit + Finished";
}

TEST_P(WorkflowRunTest, JoinSetSizeLimitEndsTheWorkflow) {
  WorkflowRunOptions options = TestOptions(std::get<1>(GetParam()));
  options.max_join_set_size = 3;
  auto env = Env(
      [](WorkflowRun& run) {
        WF_TRY(auto js, run.CreateJoinSet());
        for (int i = 0; i < 4; ++i) {
          WF_TRY(auto child, run.SubmitChild(js, ActivityFfqn(), core::Json::array({i})));
          (void)child;
        }
        return run.Finish(OkValue("submitted four"));
      },
      options);
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  const auto* error =
      std::get_if<core::FinishedExecutionError>(&(result_holder = env->Result(id_)));
  ASSERT_NE(error, nullptr);
  EXPECT_THAT(error->reason.value_or(""), ::testing::HasSubstr("limit of 3 submissions"));
}

// Children and scheduled executions a workflow creates obey the same params
// limit as top-level submissions: over it the workflow ends with a
// constraint violation naming the limit, and nothing is created.
TEST_P(WorkflowRunTest, ChildParamsOverTheLimitEndTheWorkflow) {
  for (const std::string verb : {"submit", "call", "schedule"}) {
    SCOPED_TRACE(verb);
    WorkflowRunOptions options = TestOptions(std::get<1>(GetParam()));
    options.max_params_bytes = 64;
    TestEnv env(std::get<0>(GetParam()), options, [verb](WorkflowRun& run) {
      const core::Json small = core::Json::array({std::string(40, 'a')});  // 46 bytes
      const core::Json large = core::Json::array({std::string(80, 'a')});  // 86 bytes
      WF_TRY(auto js, run.CreateJoinSet());
      WF_TRY(auto fits, run.SubmitChild(js, ActivityFfqn(), small));
      if (verb == "submit") {
        WF_TRY(auto child, run.SubmitChild(js, ActivityFfqn(), large));
      } else if (verb == "call") {
        WF_TRY(auto result, run.Call(ActivityFfqn(), large));
      } else {
        WF_TRY(auto id, run.Schedule(core::HistoryEventScheduleAt::Now(), ActivityFfqn(), large));
      }
      return run.Finish(OkValue("created it"));
    });
    const core::ExecutionId id = core::ExecutionId::Generate();
    env.CreateWorkflow(id);
    ASSERT_TRUE(env.RunToCompletion(id));
    const auto* error =
        std::get_if<core::FinishedExecutionError>(&(result_holder = env.Result(id)));
    ASSERT_NE(error, nullptr);
    EXPECT_EQ(error->kind, core::ExecutionFailureKind::kUncategorized);
    EXPECT_THAT(error->reason.value_or(""), ::testing::HasSubstr("constraint violation"));
    EXPECT_THAT(error->reason.value_or(""), ::testing::HasSubstr("over the limit of 64"));
    size_t requests = 0;
    for (const auto& event : env.History(id)) {
      requests += std::holds_alternative<core::HistoryJoinSetRequest>(event) ? 1 : 0;
      EXPECT_FALSE(std::holds_alternative<core::HistorySchedule>(event));
    }
    EXPECT_EQ(requests, 1u) << "only the child within the limit";
  }
}

// Children and scheduled executions a workflow creates are type-checked
// against the callee's declared params, as submissions are: a mismatch
// ends the workflow naming the function and the offending param, and
// nothing is created (a u64 activity called with a string once ran as 0).
TEST_P(WorkflowRunTest, ChildParamsOfTheWrongTypeEndTheWorkflow) {
  for (const std::string verb : {"submit", "call", "schedule"}) {
    SCOPED_TRACE(verb);
    TestEnv env(
        std::get<0>(GetParam()), TestOptions(std::get<1>(GetParam())), [verb](WorkflowRun& run) {
          const core::Json good = core::Json::array({7});
          const core::Json bad = core::Json::array({"not a number"});
          WF_TRY(auto js, run.CreateJoinSet());
          WF_TRY(auto fits, run.SubmitChild(js, ActivityFfqn(), good));
          if (verb == "submit") {
            WF_TRY(auto child, run.SubmitChild(js, ActivityFfqn(), bad));
          } else if (verb == "call") {
            WF_TRY(auto result, run.Call(ActivityFfqn(), bad));
          } else {
            WF_TRY(auto id, run.Schedule(core::HistoryEventScheduleAt::Now(), ActivityFfqn(), bad));
          }
          return run.Finish(OkValue("created it"));
        });
    core::FunctionSignature signature{ActivityFfqn(), {}, std::nullopt};
    signature.params.push_back({"n", *core::TypeDesc::Parse("u64")});
    env.DeclareActivitySignature(std::move(signature));
    const core::ExecutionId id = core::ExecutionId::Generate();
    env.CreateWorkflow(id);
    ASSERT_TRUE(env.RunToCompletion(id));
    const auto* error =
        std::get_if<core::FinishedExecutionError>(&(result_holder = env.Result(id)));
    ASSERT_NE(error, nullptr);
    EXPECT_THAT(error->reason.value_or(""),
                ::testing::HasSubstr("do not match its declared types"));
    EXPECT_THAT(error->reason.value_or(""), ::testing::HasSubstr(ActivityFfqn().ToString()));
    size_t requests = 0;
    for (const auto& event : env.History(id)) {
      requests += std::holds_alternative<core::HistoryJoinSetRequest>(event) ? 1 : 0;
      EXPECT_FALSE(std::holds_alternative<core::HistorySchedule>(event));
    }
    EXPECT_EQ(requests, 1u) << "only the well-typed child";
  }
}

TEST_P(WorkflowRunTest, ClosingCancelsActivitiesAndDelaysAndAwaitsChildWorkflows) {
  auto env = Env([](WorkflowRun& run) {
    if (run.ffqn() == ChildWorkflowFfqn()) {
      WF_TRY(auto slept, run.Sleep(core::HistoryEventScheduleAt::In(core::Duration::FromSecs(3))));
      return run.Finish(OkValue("child done"));
    }
    WF_TRY(auto first, run.CreateNamedJoinSet("first"));
    WF_TRY(auto second, run.CreateNamedJoinSet("second"));
    if (!first || !second) return run.Trap("join sets");
    WF_TRY(
        auto delay,
        run.SubmitDelay(*first, core::HistoryEventScheduleAt::In(core::Duration::FromSecs(100))));
    WF_TRY(auto child_wf, run.SubmitChild(*second, ChildWorkflowFfqn(), core::Json::array()));
    WF_TRY(auto stub, run.SubmitChild(*second, StubFfqn(), core::Json::array()));
    return run.Finish(OkValue("parent done"));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(OkJson(env->Result(id_)), core::Json("parent done"));
  const auto history = env->History(id_);
  // Closing in reverse creation order: `second` (two closing JoinNexts),
  // then `first` (one).
  std::vector<std::string> closing;
  for (const auto& event : history) {
    if (const auto* next = std::get_if<core::HistoryJoinNext>(&event)) {
      EXPECT_TRUE(next->closing);
      closing.push_back(next->join_set_id.ToString());
    }
  }
  EXPECT_THAT(closing, ElementsAre("n:second", "n:second", "n:first"));
  // The stub activity was cancelled, the child workflow ran to its end.
  const auto stub_id = id_.NextLevel(*(core::JoinSetId::Parse("n:second")), 2);
  const auto* cancelled =
      std::get_if<core::FinishedExecutionError>(&(result_holder = env->Result(stub_id)));
  ASSERT_NE(cancelled, nullptr);
  EXPECT_EQ(cancelled->kind, core::ExecutionFailureKind::kCancelled);
  const auto child_id = id_.NextLevel(*(core::JoinSetId::Parse("n:second")), 1);
  EXPECT_EQ(OkJson(env->Result(child_id)), core::Json("child done"));
  // The delay was cancelled, not fired.
  bool delay_cancelled = false;
  for (const auto& response : env->Log(id_).responses) {
    if (const auto* d = std::get_if<core::DelayFinished>(&response.event.event)) {
      delay_cancelled = !d->ok;
    }
  }
  EXPECT_TRUE(delay_cancelled);
}

TEST_P(WorkflowRunTest, RandomValuesArePersistedAndReplayed) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(uint64_t a, run.RandomU64(10, 20));
    WF_TRY(std::string s, run.RandomString(5, 6));
    WF_TRY(auto slept, run.Sleep(core::HistoryEventScheduleAt::In(core::Duration::FromSecs(1))));
    WF_TRY(uint64_t b, run.RandomU64Inclusive(0, UINT64_MAX));
    if (a < 10 || a >= 20 || s.size() != 5) return run.Trap("out of range");
    return run.Finish(OkValue(std::to_string(a) + s + std::to_string(b)));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_TRUE(std::holds_alternative<core::ReturnValueOk>(env->Result(id_)));
  const auto history = env->History(id_);
  ASSERT_EQ(history.size(), 6u) << Describe(history);
  EXPECT_TRUE(std::holds_alternative<core::HistoryPersist>(history[0]));
  EXPECT_TRUE(std::holds_alternative<core::HistoryPersist>(history[5]));
}

// Date.now() of JS workflows: one Persist(time) per step that reads the
// time, returned as recorded on replay.
TEST_P(WorkflowRunTest, StepTimeIsRecordedOncePerStepAndReplayed) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(DateTime a, run.Now());
    WF_TRY(DateTime b, run.Now());
    WF_TRY(auto slept, run.Sleep(core::HistoryEventScheduleAt::In(core::Duration::FromSecs(1))));
    WF_TRY(DateTime c, run.Now());
    return run.Finish(OkValue(core::Json::array({ToMicros(a), ToMicros(b), ToMicros(c)})));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  const core::Json times = OkJson(env->Result(id_));
  ASSERT_EQ(times.size(), 3u);
  EXPECT_EQ(times[0], times[1]);
  EXPECT_GE(times[2].get<int64_t>(), times[0].get<int64_t>() + 1'000'000);
  EXPECT_EQ(times[0].get<int64_t>() % 1000, 0);  // whole milliseconds
  const auto history = env->History(id_);
  ASSERT_EQ(history.size(), 5u) << Describe(history);
  for (size_t i : {0u, 4u}) {
    const auto* persist = std::get_if<core::HistoryPersist>(&history[i]);
    ASSERT_NE(persist, nullptr) << i;
    EXPECT_TRUE(std::holds_alternative<core::PersistKindTime>(persist->kind));
  }
  // A replay of the whole log, an hour later, sees the recorded times.
  env->clock().Advance(1h);
  auto conn = Must(env->pool().Connection());
  WorkflowRun run(env->ReplayContext(id_),
                  WorkflowRunDeps{conn.get(), &env->clock(), &env->registry()}, env->options());
  auto a = run.Now();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(ToMicros(*a), times[0].get<int64_t>());
  ASSERT_TRUE(run.Sleep(core::HistoryEventScheduleAt::In(core::Duration::FromSecs(1))));
  auto c = run.Now();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(ToMicros(*c), times[2].get<int64_t>());
}

TEST_P(WorkflowRunTest, EmptyRandomRangeTraps) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(uint64_t a, run.RandomU64(5, 5));
    return run.Finish(OkValue(a));
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_TRUE(std::holds_alternative<core::FinishedExecutionError>(env->Result(id_)));
}

// A second version of the code that does less than the recorded history.
TEST_P(WorkflowRunTest, TrimmedSecondExecutionShouldResultInNondeterminismDetected) {
  auto calls = std::make_shared<int>(2);
  auto env = Env([calls](WorkflowRun& run) {
    for (int i = 0; i < *calls; ++i) {
      WF_TRY(auto result, run.Call(ActivityFfqn(), core::Json::array({i})));
    }
    return run.Finish(OkValue("done"));
  });
  env->CreateWorkflow(id_);
  env->Round();  // first call written, blocked
  env->clock().Advance(1s);
  env->Round();  // response; second call written
  *calls = 1;    // "deploy" code doing less
  ASSERT_TRUE(env->RunToCompletion(id_));
  const auto* error =
      std::get_if<core::FinishedExecutionError>(&(result_holder = env->Result(id_)));
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->kind, core::ExecutionFailureKind::kNondeterminismDetected);
}

TEST_P(WorkflowRunTest, DivergingReplayIsNondeterminism) {
  auto ffqn = std::make_shared<core::FunctionFqn>(ActivityFfqn());
  auto env = Env([ffqn](WorkflowRun& run) {
    WF_TRY(auto result, run.Call(*ffqn, core::Json::array({1})));
    return run.Finish(result);
  });
  env->CreateWorkflow(id_);
  env->Round();
  *ffqn = FailingFfqn();
  ASSERT_TRUE(env->RunToCompletion(id_));
  const auto* error =
      std::get_if<core::FinishedExecutionError>(&(result_holder = env->Result(id_)));
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->kind, core::ExecutionFailureKind::kNondeterminismDetected);
  EXPECT_THAT(error->reason.value_or(""), ::testing::HasSubstr("version"));
}

TEST_P(WorkflowRunTest, UnknownFunctionIsPermanentFailure) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto result,
           run.Call(*(core::FunctionFqn::Parse("testing:workflow/ifc.nope")), core::Json::array()));
    return run.Finish(result);
  });
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_TRUE(std::holds_alternative<core::FinishedExecutionError>(env->Result(id_)));
  EXPECT_EQ(env->History(id_).size(), 0u);
}

TEST_P(WorkflowRunTest, SubmissionsAndTheirJoinNextShareOneCommit) {
  auto env = Env([](WorkflowRun& run) {
    WF_TRY(auto js, run.CreateJoinSet());
    for (int i = 0; i < 5; ++i) {
      WF_TRY(auto child, run.SubmitChild(js, ActivityFfqn(), core::Json::array({i})));
    }
    for (int i = 0; i < 5; ++i) {
      WF_TRY(auto next, run.JoinNext(js));
    }
    return run.Finish(OkValue("done"));
  });
  env->CreateWorkflow(id_);
  const std::optional<uint64_t> before = env->CommittedTransactions();
  env->TickWorkflows();
  const std::optional<uint64_t> after = env->CommittedTransactions();
  // Everything up to the first JoinNext went in with it: the JoinSetCreate,
  // five requests with their children's Created, and the JoinNext.
  EXPECT_THAT(
      env->EventNames(id_),
      ElementsAre("Created", "Locked", "join_set_create", "join_set_request", "join_set_request",
                  "join_set_request", "join_set_request", "join_set_request", "join_next"));
  for (int i = 1; i <= 5; ++i) {
    EXPECT_TRUE(env->db().Get(id_.NextLevel(*core::JoinSetId::Parse("g:1"), i)).has_value());
  }
  if (before) {  // SQLite counts its write transactions
    EXPECT_EQ(*after - *before, 2u) << "the lock, and one commit for the whole batch";
  }
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_EQ(env->activity_runs(), 5u);
}

TEST_P(WorkflowRunTest, LockIsExtendedBeforeItExpires) {
  ManualClock* clock = nullptr;
  auto env = Env([&clock](WorkflowRun& run) {
    WF_TRY(uint64_t a, run.RandomU64(0, 10));
    clock->Advance(950ms);  // within the 100 ms leeway of the 1 s lease
    WF_TRY(uint64_t b, run.RandomU64(0, 10));
    return run.Finish(OkValue(a + b));
  });
  clock = &env->clock();
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  EXPECT_THAT(env->EventNames(id_),
              ElementsAre("Created", "Locked", "Locked", "persist", "persist", "Finished"));
}

TEST_P(WorkflowRunTest, ExpiredLeaseStopsWithoutWriting) {
  ManualClock* clock = nullptr;
  auto env = Env([&clock](WorkflowRun& run) {
    clock->Advance(2s);
    WF_TRY(uint64_t a, run.RandomU64(0, 10));
    return run.Finish(OkValue(a));
  });
  clock = &env->clock();
  env->CreateWorkflow(id_);
  env->Round();
  EXPECT_THAT(env->EventNames(id_), ElementsAre("Created", "Locked"));
}

// Calls that write no event (logs, gets) still cannot keep a run past its
// lock: without lock extension the lease ends the run (nothing written,
// the watcher and a replay take over); with it, each extension is an event
// and the execution's event limit ends the workflow. Before, a workflow
// looping on logs ran on for ever.
TEST_P(WorkflowRunTest, ALoopOfCallsThatWriteNothingEndsAtTheLeaseOrTheEventLimit) {
  for (const bool extend : {false, true}) {
    for (const bool use_get : {false, true}) {
      SCOPED_TRACE(std::string(extend ? "extending" : "not extending") + ", " +
                   (use_get ? "get" : "log"));
      WorkflowRunOptions options = TestOptions(std::get<1>(GetParam()));
      if (!extend) options.lock_extension = 0ms;
      options.max_events_per_execution = 20;
      ManualClock* clock = nullptr;
      auto calls = std::make_shared<int>(0);
      TestEnv env(std::get<0>(GetParam()), options, [&clock, calls, use_get](WorkflowRun& run) {
        const auto child = run.execution_id().NextLevel(*core::JoinSetId::Parse("g:1"), 1);
        for (int i = 0; i < 100'000; ++i) {
          ++*calls;
          if (use_get) {
            WF_TRY(auto got, run.Get(child, ActivityFfqn()));
          } else {
            WF_TRY_VOID(run.Log(LogLevel::kDebug, "still looping"));
          }
          clock->Advance(100ms);
        }
        return run.Finish(OkValue("looped for ever"));
      });
      clock = &env.clock();
      const core::ExecutionId id = core::ExecutionId::Generate();
      env.CreateWorkflow(id);
      env.TickWorkflows();
      if (!extend) {
        // Locked at kT0 for 1 s: the call at kT0 + 1 s finds the lease over.
        EXPECT_EQ(*calls, 11);
        EXPECT_THAT(env.EventNames(id), ElementsAre("Created", "Locked"));
      } else {
        ASSERT_TRUE(env.Log(id).pending_state.IsFinished());
        const auto* error =
            std::get_if<core::FinishedExecutionError>(&(result_holder = env.Result(id)));
        ASSERT_NE(error, nullptr);
        EXPECT_THAT(error->reason.value_or(""), ::testing::HasSubstr("limit of 20 events"));
        EXPECT_LT(*calls, 1000);
      }
    }
  }
}

TEST_P(WorkflowRunTest, MaxEventsPerRunYields) {
  WorkflowRunOptions options = TestOptions(std::get<1>(GetParam()));
  options.max_events_per_run = 2;
  options.non_blocking_event_batching = 0;
  auto env = Env(
      [](WorkflowRun& run) {
        uint64_t sum = 0;
        for (int i = 0; i < 5; ++i) {
          WF_TRY(uint64_t a, run.RandomU64(0, 10));
          sum += a;
        }
        return run.Finish(OkValue(sum));
      },
      options);
  env->CreateWorkflow(id_);
  ASSERT_TRUE(env->RunToCompletion(id_));
  int unlocked = 0;
  for (const auto& name : env->EventNames(id_)) unlocked += name == "Unlocked";
  EXPECT_EQ(unlocked, 2);
  EXPECT_EQ(env->History(id_).size(), 5u);
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return std::string(std::get<0>(info.param) == Backend::kMemory ? "Memory" : "Sqlite") +
         StrategyName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Backends, WorkflowRunTest,
                         ::testing::Combine(::testing::ValuesIn(executor::testing::AllBackends()),
                                            ::testing::Values(BlockingStrategy::kInterrupt,
                                                              BlockingStrategy::kAwait)),
                         ParamName);

}  // namespace
}  // namespace stele::runtime::workflow::testing
