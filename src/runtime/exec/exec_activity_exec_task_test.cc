// ExecActivityWorker behind a real executor::ExecTask on SQLite: the
// worker's mapping, end to end into the execution log (ok, err retried then
// final, trap, timeout that kills the running command).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "executor/exec_task.h"
#include "executor/executor_test_util.h"
#include "runtime/exec/exec_activity_worker.h"
#include "runtime/exec/exec_test_util.h"

namespace stele::runtime::exec {
namespace {

using core::ExecutionId;
using executor::testing::Backend;
using executor::testing::BackendTest;
using executor::testing::CreateReq;
using executor::testing::kT0;
using executor::testing::Must;
using executor::testing::Retries;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace std::chrono_literals;  // NOLINT

const core::FunctionFqn& Ffqn() {
  static const core::FunctionFqn ffqn = *core::FunctionFqn::Parse("testing:exec/orders.place");
  return ffqn;
}

class ExecActivityExecTaskTest : public BackendTest {
 protected:
  std::unique_ptr<executor::ExecTask> Task(const std::string& script_body,
                                           core::ComponentRetryConfig retry) {
    ExecActivityConfig config;
    core::FunctionSignature sig{Ffqn(), {}, *core::TypeDesc::Parse("result<u64, string>")};
    sig.params.push_back({"customer", *core::TypeDesc::Parse("string")});
    config.functions.push_back(std::move(sig));
    config.argv = {scratch_.Script("activity.sh", script_body)};
    auto worker = ExecActivityWorker::Create(std::move(config), clock_);
    EXPECT_TRUE(worker.has_value()) << worker.error();
    executor::ExecutorOptions options;
    // Also a real time limit: the supervisor enforces the lease measured on
    // the (manual) clock in steady time; long enough for any script here.
    options.lock_expiry = 5s;
    options.retry_config = retry;
    return std::make_unique<executor::ExecTask>(*worker, ExecConn(), clock_, options);
  }
  ExecutionId Submit(core::Json params) {
    const ExecutionId id = ExecutionId::Generate();
    storage::CreateRequest request = CreateReq(id, kT0, Ffqn());
    request.params = std::move(params);
    Must(db().Create(request));
    return id;
  }
  template <class E>
  E LastEventAs(const ExecutionId& id) {
    const core::ExecutionEvent event = Log(id).events.back();
    const E* typed = std::get_if<E>(&event.event);
    if (!typed) throw std::runtime_error(core::ExecutionRequestToString(event.event));
    return *typed;
  }

  testing::ScratchDir scratch_;
};

TEST_P(ExecActivityExecTaskTest, OkResultIsRecordedAsFinished) {
  const ExecutionId id = Submit(core::Json::array({"bob"}));
  auto task = Task("read params; [ \"$params\" = '[\"bob\"]' ] || exit 9; echo '{\"ok\": 42}'",
                   Retries(3, 100ms));
  EXPECT_THAT(Must(task->TickForTest(kT0)), ElementsAre(id));
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "Finished"));
  EXPECT_EQ(LastEventAs<core::Finished>(id).result,
            core::SupportedFunctionReturnValue(core::ReturnValueOk{core::Json(42)}));
}

TEST_P(ExecActivityExecTaskTest, ErrIsRetriedThenFinal) {
  const ExecutionId id = Submit(core::Json::array({"bob"}));
  auto task = Task("echo '{\"err\": \"attempt '$STELE_ATTEMPT'\"}'", Retries(1, 100ms));
  Must(task->TickForTest(kT0));
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "TemporarilyFailed"));
  EXPECT_EQ(LastEventAs<core::TemporarilyFailed>(id).reason, "activity returned error");
  Must(task->TickForTest(kT0 + 100ms));
  EXPECT_THAT(EventNames(id),
              ElementsAre("Created", "Locked", "TemporarilyFailed", "Locked", "Finished"));
  EXPECT_EQ(LastEventAs<core::Finished>(id).result,
            core::SupportedFunctionReturnValue(core::ReturnValueErr{core::Json("attempt 2")}));
}

TEST_P(ExecActivityExecTaskTest, TrapBecomesAnExecutionErrorWhenRetriesRunOut) {
  const ExecutionId id = Submit(core::Json::array({"bob"}));
  auto task = Task("echo oops >&2; exit 3", Retries(0, 100ms));
  Must(task->TickForTest(kT0));
  const auto result = LastEventAs<core::Finished>(id).result;
  const auto* error = std::get_if<core::FinishedExecutionError>(&result);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->kind, core::ExecutionFailureKind::kUncategorized);
  EXPECT_THAT(error->reason.value_or(""), HasSubstr("exit status 3"));
  EXPECT_THAT(error->detail.value_or(""), HasSubstr("oops"));
}

TEST_P(ExecActivityExecTaskTest, DeadlineKillsTheCommandAndRecordsATimeout) {
  const ExecutionId id = Submit(core::Json::array({"bob"}));
  auto task = Task("echo $$ > " + scratch_.File("leader") + "; sh -c 'sleep 1000 & echo $! > " +
                       scratch_.File("bg") + "; sleep 1000'",
                   Retries(1, 100ms));
  EXPECT_THAT(Must(task->SpawnForTest(kT0)), ElementsAre(id));
  const pid_t leader = std::stoi(testing::WaitForLine(scratch_.File("leader")));
  const pid_t background = std::stoi(testing::WaitForLine(scratch_.File("bg")));
  // The deadline (lock expiry) passes: the watchdog fires the run's token.
  clock_->Set(kT0 + 5s);
  Must(task->TickForTest(kT0 + 5s));
  EXPECT_EQ(task->InFlightCountForTest(), 0u);
  EXPECT_THAT(EventNames(id), ElementsAre("Created", "Locked", "TemporarilyTimedOut"));
  EXPECT_TRUE(testing::EventuallyDead(leader));
  EXPECT_TRUE(testing::EventuallyDead(background));
  EXPECT_TRUE(testing::EventuallyEmptyGroup(leader));
}

INSTANTIATE_TEST_SUITE_P(Sqlite, ExecActivityExecTaskTest, ::testing::Values(Backend::kSqlite),
                         executor::testing::BackendName);

}  // namespace
}  // namespace stele::runtime::exec
