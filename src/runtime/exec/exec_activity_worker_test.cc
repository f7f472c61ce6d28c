// ExecActivityWorker::Run on real processes: how a command's behaviour maps
// to a WorkerResult.
#include "runtime/exec/exec_activity_worker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "runtime/exec/exec_test_util.h"

namespace stele::runtime::exec {
namespace {

using testing::EventuallyDead;
using testing::EventuallyEmptyGroup;
using ::testing::HasSubstr;
using testing::IsAlive;
using ::testing::IsEmpty;
using testing::LiveMembersOfGroup;
using testing::ReadFile;
using testing::ScratchDir;
using ::testing::StartsWith;
using testing::WaitForLine;

const core::FunctionFqn& Ffqn() {
  static const core::FunctionFqn ffqn = *core::FunctionFqn::Parse("testing:exec/ifc.run");
  return ffqn;
}

core::FunctionSignature Signature(std::vector<std::pair<std::string, std::string>> params,
                                  std::optional<std::string> return_type,
                                  const core::FunctionFqn& ffqn = Ffqn()) {
  core::FunctionSignature sig{ffqn, {}, std::nullopt};
  for (auto& [name, type] : params) sig.params.push_back({name, *core::TypeDesc::Parse(type)});
  if (return_type) sig.return_type = *core::TypeDesc::Parse(*return_type);
  return sig;
}

const DateTime kNow = DateTime(std::chrono::seconds(1'767'225'600));

// The executor's clock, standing at kNow: the lock deadline of Context()
// is 10 s after it, which the supervisor enforces in real time.
SharedClock TestClock() { return std::make_shared<ManualClock>(kNow); }

executor::WorkerContext Context(core::Json params, bool can_be_retried = true,
                                const core::FunctionFqn& ffqn = Ffqn(),
                                std::chrono::milliseconds lease = std::chrono::seconds(10)) {
  core::Locked locked{core::ComponentId::DummyActivity(), core::ExecutorId::Generate(),
                      core::RunId::Generate(), kNow + lease,
                      core::ComponentRetryConfig{3u, core::Duration::FromMillis(100)}};
  return executor::WorkerContext{
      .execution_id = core::ExecutionId::Generate(),
      .ffqn = ffqn,
      .params = std::move(params),
      .metadata = {},
      .event_history = {},
      .responses = {},
      .version = core::Version(2),
      .locked_event = locked,
      .parent = std::nullopt,
      .intermittent_event_count = 1,
      .can_be_retried = can_be_retried,
      .execution_deadline = locked.lock_expires_at,
      .cancel = CancellationToken(),
      .run_id = locked.run_id,
      .executor_id = locked.executor_id,
  };
}

class ExecActivityWorkerTest : public ::testing::Test {
 protected:
  // A worker running `body` as a /bin/sh script, serving Ffqn() with no
  // params and `return_type`.
  std::shared_ptr<ExecActivityWorker> Worker(const std::string& body,
                                             std::optional<std::string> return_type = std::nullopt,
                                             bool retry_on_err = true) {
    ExecActivityConfig config;
    config.functions.push_back(Signature({}, std::move(return_type)));
    config.argv = {dir_.Script("activity.sh", body)};
    config.retry_on_err = retry_on_err;
    auto worker = ExecActivityWorker::Create(std::move(config), TestClock());
    EXPECT_TRUE(worker.has_value()) << worker.error();
    return *worker;
  }

  static executor::ActivityTrap TrapOf(const executor::WorkerResult& result) {
    const auto* err = std::get_if<executor::WorkerError>(&result.value);
    if (err && std::holds_alternative<executor::ActivityTrap>(err->error)) {
      return std::get<executor::ActivityTrap>(err->error);
    }
    ADD_FAILURE() << "expected a trap, got " << result.ToString();
    return executor::ActivityTrap{"<not a trap: " + result.ToString() + ">", {}, {}};
  }

  ScratchDir dir_;
};

TEST_F(ExecActivityWorkerTest, OkResultWithParamsOnStdinAndTheSteleEnvironment) {
  ExecActivityConfig config;
  config.functions.push_back(
      Signature({{"name", "string"}, {"blob", "string"}}, "result<list<u32>, string>"));
  config.argv = {dir_.Script("activity.sh", "cat > " + dir_.File("stdin") + "; env > " +
                                                dir_.File("env") +
                                                "; printf '{\"ok\": [1, 2, 3]}\\n\\n  '")};
  auto worker = *ExecActivityWorker::Create(std::move(config), TestClock());

  // Unicode and a large parameter arrive byte for byte.
  core::Json params =
      core::Json::array({"h\xC3\xA9llo \xF0\x9F\x98\x80 \"quoted\"\n", std::string(300000, 'z')});
  executor::WorkerContext ctx = Context(params);
  const std::string id = ctx.execution_id.ToString();
  executor::WorkerResult result = worker->Run(std::move(ctx));
  EXPECT_EQ(result, executor::WorkerResult::Ok(core::ReturnValueOk{core::Json::array({1, 2, 3})},
                                               core::Version(2)));
  const std::string stdin_text = ReadFile(dir_.File("stdin"));
  EXPECT_EQ(stdin_text, params.dump());
  EXPECT_EQ(core::Json::parse(stdin_text), params);

  const std::string env = ReadFile(dir_.File("env"));
  EXPECT_THAT(env, HasSubstr("STELE_FFQN=testing:exec/ifc.run\n"));
  EXPECT_THAT(env, HasSubstr("STELE_EXECUTION_ID=" + id + "\n"));
  EXPECT_THAT(env, HasSubstr("STELE_ATTEMPT=2\n"));  // one failure before this run
}

TEST_F(ExecActivityWorkerTest, OkWithoutValue) {
  auto result =
      Worker("echo '{\"ok\": null}'", "result<_, string>")->Run(Context(core::Json::array()));
  EXPECT_EQ(result,
            executor::WorkerResult::Ok(core::ReturnValueOk{std::nullopt}, core::Version(2)));
  // A typed side keeps an explicit null (option none).
  result = Worker("echo '{\"ok\": null}'", "result<option<u8>>")->Run(Context(core::Json::array()));
  EXPECT_EQ(result,
            executor::WorkerResult::Ok(core::ReturnValueOk{core::Json(nullptr)}, core::Version(2)));
}

TEST_F(ExecActivityWorkerTest, ErrIsRetriedWhileRetriesRemain) {
  const std::string body = "echo '{\"err\": \"no stock\"}'";
  const core::ReturnValueErr err{core::Json("no stock")};
  EXPECT_EQ(Worker(body)->Run(Context(core::Json::array(), /*can_be_retried=*/true)),
            executor::WorkerResult::Err(core::Version(2),
                                        executor::ActivityReturnedError{err, std::nullopt, {}}));
  EXPECT_EQ(Worker(body)->Run(Context(core::Json::array(), /*can_be_retried=*/false)),
            executor::WorkerResult::Ok(err, core::Version(2)));
  // retry_on_err = false: the err is final at once.
  EXPECT_EQ(Worker(body, std::nullopt, /*retry_on_err=*/false)
                ->Run(Context(core::Json::array(), /*can_be_retried=*/true)),
            executor::WorkerResult::Ok(err, core::Version(2)));
}

// Permanent failures: {"err": v, "retryable": false} is the result at once
// whatever retries remain; a listed exit status is a non-retryable trap.
TEST_F(ExecActivityWorkerTest, NonRetryableErrAndExitStatusAreFinal) {
  const core::ReturnValueErr err{core::Json("declined")};
  EXPECT_EQ(Worker("echo '{\"err\": \"declined\", \"retryable\": false}'")
                ->Run(Context(core::Json::array(), /*can_be_retried=*/true)),
            executor::WorkerResult::Ok(err, core::Version(2)));
  EXPECT_EQ(Worker("echo '{\"err\": \"declined\", \"retryable\": true}'")
                ->Run(Context(core::Json::array(), /*can_be_retried=*/true)),
            executor::WorkerResult::Err(core::Version(2),
                                        executor::ActivityReturnedError{err, std::nullopt, {}}));

  for (const auto& [status, permanent] : {std::pair{64, true}, std::pair{3, false}}) {
    ExecActivityConfig config;
    config.functions.push_back(Signature({}, std::nullopt));
    config.argv = {dir_.Script("exit" + std::to_string(status) + ".sh",
                               "cat >/dev/null; exit " + std::to_string(status))};
    config.non_retryable_exit_codes = {64};
    auto worker = ExecActivityWorker::Create(std::move(config), TestClock());
    ASSERT_TRUE(worker.has_value()) << worker.error();
    const auto trap = TrapOf((*worker)->Run(Context(core::Json::array())));
    EXPECT_EQ(trap.reason, "exit status " + std::to_string(status));
    EXPECT_EQ(trap.non_retryable, permanent) << status;
  }
}

TEST_F(ExecActivityWorkerTest, NonZeroExitIsATrapWithStderrTail) {
  auto result = Worker("echo '{\"ok\": 1}'; echo 'something broke' >&2; exit 3")
                    ->Run(Context(core::Json::array()));
  const auto trap = TrapOf(result);
  EXPECT_EQ(trap.reason, "exit status 3");
  ASSERT_TRUE(trap.detail.has_value());
  EXPECT_THAT(*trap.detail, HasSubstr("something broke"));

  std::string long_stderr =
      "i=0; while [ $i -lt 2000 ]; do echo line$i >&2; i=$((i+1)); done; exit 1";
  const auto long_trap = TrapOf(Worker(long_stderr)->Run(Context(core::Json::array())));
  ASSERT_TRUE(long_trap.detail.has_value());
  EXPECT_THAT(*long_trap.detail, HasSubstr("line1999"));
  EXPECT_THAT(*long_trap.detail, ::testing::Not(HasSubstr("line0\n")));
  EXPECT_LT(long_trap.detail->size(), 5000u);
}

TEST_F(ExecActivityWorkerTest, DeathBySignalIsATrap) {
  const auto trap = TrapOf(Worker("kill -9 $$")->Run(Context(core::Json::array())));
  EXPECT_EQ(trap.reason, "killed by signal 9");
}

TEST_F(ExecActivityWorkerTest, StdoutThatIsNotAResultIsATrap) {
  for (const std::string out : {"hello", "", "{\"ok\": 1, \"err\": 2}", "{\"value\": 1}",
                                "[\"ok\", 1]", "{\"ok\": 1} trailing", "{\"ok\": ", "null"}) {
    const auto trap =
        TrapOf(Worker("printf '%s' '" + out + "'")->Run(Context(core::Json::array())));
    EXPECT_THAT(trap.reason, StartsWith("stdout is not {\"ok\"}/{\"err\"} JSON: ")) << out;
  }
  const auto trap =
      TrapOf(Worker("head -c 5000 /dev/zero | tr '\\0' x")->Run(Context(core::Json::array())));
  EXPECT_LT(trap.reason.size(), 300u);
}

TEST_F(ExecActivityWorkerTest, HugeStdoutIsCappedAndTraps) {
  ExecActivityConfig config;
  config.functions.push_back(Signature({}, std::nullopt));
  config.argv = {"/bin/sh", "-c",
                 "while :; do echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; done"};
  config.max_stdout_bytes = 10000;
  auto worker = *ExecActivityWorker::Create(std::move(config), TestClock());
  const auto trap = TrapOf(worker->Run(Context(core::Json::array())));
  EXPECT_EQ(trap.reason, "stdout exceeded 10000 bytes; process group killed");
}

TEST_F(ExecActivityWorkerTest, MissingExecutableIsATrapWithAClearReason) {
  ExecActivityConfig config;
  config.functions.push_back(Signature({}, std::nullopt));
  config.argv = {dir_.File("does-not-exist")};
  auto worker = *ExecActivityWorker::Create(std::move(config), TestClock());
  const auto trap = TrapOf(worker->Run(Context(core::Json::array())));
  EXPECT_THAT(trap.reason, HasSubstr("cannot execute"));
  EXPECT_THAT(trap.reason, HasSubstr("does-not-exist"));
  EXPECT_THAT(trap.reason, HasSubstr("No such file or directory"));
}

TEST_F(ExecActivityWorkerTest, ReturnValueIsCheckedAgainstTheDeclaredType) {
  EXPECT_EQ(Worker("echo '{\"ok\": 7}'", "result<u8, string>")->Run(Context(core::Json::array())),
            executor::WorkerResult::Ok(core::ReturnValueOk{core::Json(7)}, core::Version(2)));
  const auto trap = TrapOf(
      Worker("echo '{\"ok\": 300}'", "result<u8, string>")->Run(Context(core::Json::array())));
  EXPECT_EQ(trap.reason,
            "return value does not match result<u8, string>: return.ok: expected u8, got 300");
  const auto err_trap = TrapOf(
      Worker("echo '{\"err\": 5}'", "result<u8, string>")->Run(Context(core::Json::array())));
  EXPECT_THAT(err_trap.reason, HasSubstr("return.err: expected string, got 5"));
  // Missing value for a typed side.
  TrapOf(Worker("echo '{\"ok\": null}'", "result<u8>")->Run(Context(core::Json::array())));
}

TEST_F(ExecActivityWorkerTest, EnvironmentIsTheAllowListPlusFixedValues) {
  ASSERT_EQ(::setenv("STELE_EXEC_TEST_VISIBLE", "seen", 1), 0);
  ASSERT_EQ(::setenv("STELE_EXEC_TEST_HIDDEN", "secret", 1), 0);
  ASSERT_EQ(::setenv("STELE_EXEC_TEST_OVERRIDDEN", "server", 1), 0);
  ExecActivityConfig config;
  config.functions.push_back(Signature({}, std::nullopt));
  config.argv = {"/bin/sh", "-c", "env > " + dir_.File("env") + "; echo '{\"ok\": null}'"};
  config.env_allow_list = {"STELE_EXEC_TEST_VISIBLE", "STELE_EXEC_TEST_OVERRIDDEN",
                           "STELE_EXEC_TEST_UNSET"};
  config.env = {{"FIXED", "a b=c"}, {"STELE_EXEC_TEST_OVERRIDDEN", "config"}};
  auto worker = *ExecActivityWorker::Create(std::move(config), TestClock());
  ::unsetenv("STELE_EXEC_TEST_VISIBLE");  // snapshot taken at Create
  ::unsetenv("STELE_EXEC_TEST_HIDDEN");
  ::unsetenv("STELE_EXEC_TEST_OVERRIDDEN");

  ASSERT_TRUE(
      std::holds_alternative<executor::WorkerOk>(worker->Run(Context(core::Json::array())).value));
  const std::string env = ReadFile(dir_.File("env"));
  EXPECT_THAT(env, HasSubstr("STELE_EXEC_TEST_VISIBLE=seen\n"));
  EXPECT_THAT(env, HasSubstr("FIXED=a b=c\n"));
  EXPECT_THAT(env, HasSubstr("STELE_EXEC_TEST_OVERRIDDEN=config\n"));
  EXPECT_THAT(env, ::testing::Not(HasSubstr("STELE_EXEC_TEST_HIDDEN")));
  EXPECT_THAT(env, ::testing::Not(HasSubstr("STELE_EXEC_TEST_UNSET")));
  EXPECT_THAT(env, ::testing::Not(HasSubstr("HOME=")));
}

TEST_F(ExecActivityWorkerTest, CancelKillsTheCommandAndItsChildren) {
  // Ignores stdin and sleeps forever, with a child of its own.
  auto worker = Worker("echo $$ > " + dir_.File("leader") + "; sh -c 'sleep 1000 & echo $! > " +
                       dir_.File("bg") + "; sleep 1000'");
  executor::WorkerContext ctx = Context(core::Json::array());
  CancellationToken cancel = ctx.cancel;
  executor::WorkerResult result;
  std::thread runner([&] { result = worker->Run(std::move(ctx)); });
  const pid_t leader = std::stoi(WaitForLine(dir_.File("leader")));
  const pid_t background = std::stoi(WaitForLine(dir_.File("bg")));
  cancel.Cancel();
  runner.join();
  const auto* err = std::get_if<executor::WorkerError>(&result.value);
  ASSERT_NE(err, nullptr) << result.ToString();
  const auto* fatal = std::get_if<executor::FatalError>(&err->error);
  ASSERT_NE(fatal, nullptr) << result.ToString();
  EXPECT_EQ(fatal->kind, executor::FatalErrorKind::kCancelled);
  EXPECT_TRUE(EventuallyDead(leader));
  EXPECT_TRUE(EventuallyDead(background));
  EXPECT_TRUE(EventuallyEmptyGroup(leader));
}

// The lock deadline reaches the process layer: the command is killed when
// it passes although nobody fires ctx.cancel (as when the executor is
// stuck), and the run is a timeout.
TEST_F(ExecActivityWorkerTest, TheLockDeadlineKillsTheCommandWithoutTheExecutor) {
  auto worker = Worker("echo $$ > " + dir_.File("leader") + "; sleep 1000 & echo $! > " +
                       dir_.File("bg") + "; sleep 30; echo '{\"ok\": null}'");
  executor::WorkerResult result =
      worker->Run(Context(core::Json::array(), true, Ffqn(), std::chrono::seconds(2)));
  EXPECT_EQ(result, executor::WorkerResult::Err(core::Version(2), executor::TemporaryTimeout{}));
  const pid_t leader = std::stoi(WaitForLine(dir_.File("leader")));
  EXPECT_TRUE(EventuallyDead(leader));
  EXPECT_TRUE(EventuallyDead(std::stoi(WaitForLine(dir_.File("bg")))));
  EXPECT_TRUE(EventuallyEmptyGroup(leader));
}

TEST_F(ExecActivityWorkerTest, UnknownFunctionAndBadParamsAreFatal) {
  auto worker = Worker("echo '{\"ok\": null}'");
  auto other = *core::FunctionFqn::Parse("testing:exec/ifc.other");
  auto result = worker->Run(Context(core::Json::array(), true, other));
  const auto& unknown =
      std::get<executor::FatalError>(std::get<executor::WorkerError>(result.value).error);
  EXPECT_EQ(unknown.kind, executor::FatalErrorKind::kCannotInstantiate);

  result = worker->Run(Context(core::Json::array({1})));
  const auto& bad =
      std::get<executor::FatalError>(std::get<executor::WorkerError>(result.value).error);
  EXPECT_EQ(bad.kind, executor::FatalErrorKind::kParamsParsingError);
  EXPECT_EQ(bad.reason, "testing:exec/ifc.run: expected 0 params, got 1");
}

TEST_F(ExecActivityWorkerTest, OneCommandServesSeveralFunctions) {
  auto second = *core::FunctionFqn::Parse("testing:exec/ifc.second");
  ExecActivityConfig config;
  config.functions = {Signature({}, "result<string>"), Signature({}, "result<string>", second)};
  config.argv = {"/bin/sh", "-c", "printf '{\"ok\": \"%s\"}' \"$STELE_FFQN\""};
  auto worker = *ExecActivityWorker::Create(std::move(config), TestClock());
  EXPECT_EQ(worker->ExportedFunctions(), (std::vector<core::FunctionFqn>{Ffqn(), second}));
  EXPECT_EQ(worker->Run(Context(core::Json::array(), true, second)),
            executor::WorkerResult::Ok(core::ReturnValueOk{core::Json("testing:exec/ifc.second")},
                                       core::Version(2)));
}

TEST_F(ExecActivityWorkerTest, CreateRejectsInvalidConfigs) {
  auto valid = [] {
    ExecActivityConfig config;
    config.functions.push_back(Signature({}, std::nullopt));
    config.argv = {"/bin/true"};
    return config;
  };
  EXPECT_TRUE(ExecActivityWorker::Create(valid(), TestClock()).has_value());
  std::vector<std::pair<std::string, ExecActivityConfig>> bad;
  bad.emplace_back("no functions", valid()).second.functions.clear();
  bad.emplace_back("duplicate", valid()).second.functions.push_back(Signature({}, std::nullopt));
  bad.emplace_back("empty argv", valid()).second.argv.clear();
  bad.emplace_back("empty argv[0]", valid()).second.argv = {""};
  bad.emplace_back("NUL in argv", valid()).second.argv.push_back(std::string("a\0b", 3));
  bad.emplace_back("reserved env", valid()).second.env["STELE_FFQN"] = "x";
  bad.emplace_back("env name with =", valid()).second.env["A=B"] = "x";
  bad.emplace_back("empty env name", valid()).second.env[""] = "x";
  bad.emplace_back("NUL in env value", valid()).second.env["A"] = std::string("a\0b", 3);
  bad.emplace_back("bad allow-list name", valid()).second.env_allow_list = {"A=B"};
  bad.emplace_back("zero stdout cap", valid()).second.max_stdout_bytes = 0;
  bad.emplace_back("zero stderr cap", valid()).second.max_stderr_bytes = 0;
  for (auto& [what, config] : bad) {
    EXPECT_FALSE(ExecActivityWorker::Create(std::move(config), TestClock()).has_value()) << what;
  }
}

}  // namespace
}  // namespace stele::runtime::exec
