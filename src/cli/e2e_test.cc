// End-to-end tests through the real `stele` binary (the fixture:
// e2e_fixture.h): the CLI's commands and exit codes, idempotent submit,
// follow, cancel, lists, hostile input, the token, SIGKILL and SIGTERM.
// Scheduling, limits, races and the wasm operations (backtrace, delay
// cancel, upgrade) are in e2e_ops_test.cc.
#include "e2e_fixture.h"

namespace {

// The binary without a server: help, version and usage errors.
TEST(E2eBinary, HelpVersionAndUsage) {
  CliRun help = RunStele({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("Exit codes"), std::string::npos) << help.out;
  CliRun sub = RunStele({"execution", "submit", "--help"});
  EXPECT_EQ(sub.code, 0);
  EXPECT_NE(sub.out.find("--follow"), std::string::npos) << sub.out;
  CliRun version = RunStele({"--version"});
  EXPECT_EQ(version.code, 0);
  EXPECT_EQ(version.out.rfind("stele ", 0), 0u) << version.out;
  CliRun server_help = RunStele({"server", "--help"});
  EXPECT_EQ(server_help.code, 0) << server_help.err;
  EXPECT_NE(server_help.out.find("run"), std::string::npos) << server_help.out;
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {}, {"bogus"}, {"server", "bogus"}, {"execution", "get", "E_1"}, {"--json"}}) {
    CliRun r = RunStele(args);
    EXPECT_EQ(r.code, 2) << (args.empty() ? "" : args[0]) << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_FALSE(r.err.empty());
  }
  // A bad URL from the environment is a usage error too.
  EXPECT_EQ(RunStele({"component", "list"}, {{"STELE_API_URL", "127.0.0.1:5005"}}).code, 2);
}

TEST_F(E2eTest, SubmitGetResult) {
  START_SERVER();
  std::string id = Submit(kEcho, R"(["hi"])");
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(result.out, "ok \"hi\"\n");

  json doc = CliJson({"execution", "get", id});
  EXPECT_EQ(doc["execution_id"], id);
  EXPECT_EQ(doc["ffqn"], kEcho);
  EXPECT_EQ(doc["pending_state"]["status"], "finished");
  EXPECT_EQ(doc["result"], json({{"ok", "hi"}}));

  CliRun human = Cli({"execution", "get", id});
  EXPECT_EQ(human.code, 0);
  EXPECT_NE(human.out.find("ok \"hi\""), std::string::npos) << human.out;
  EXPECT_NE(human.out.find(kEcho), std::string::npos) << human.out;

  // The CLI shows what the API holds.
  auto raw = Http().Get("/v1/executions/" + id);
  ASSERT_TRUE(raw);
  EXPECT_EQ(json::parse(raw->body)["result"], doc["result"]);

  // Params are type-checked against the declared signature: 400, exit 2.
  CliRun typed = Cli({"execution", "submit", kEcho, "[42]"});
  EXPECT_EQ(typed.code, 2) << typed.err;
  EXPECT_NE(typed.err.find("HTTP 400"), std::string::npos) << typed.err;
}

TEST_F(E2eTest, IdempotentSubmitAndConflict) {
  START_SERVER();
  const std::string id = "E_01J0E2E0000000000000000001";
  CliRun first = Cli({"execution", "submit", kEcho, R"(["same"])", "--id", id});
  EXPECT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(first.out, id + "\n");
  CliRun again = Cli({"execution", "submit", kEcho, R"(["same"])", "--id", id});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, id + "\n");
  CliRun other = Cli({"execution", "submit", kEcho, R"(["different"])", "--id", id});
  EXPECT_EQ(other.code, 5) << other.out << other.err;
  EXPECT_TRUE(other.out.empty());

  // Raw HTTP: 200 for the idempotent repeat, 409 for other params.
  auto http = Http();
  json same = {{"ffqn", kEcho}, {"params", {"same"}}, {"execution_id", id}};
  auto repeat = http.Post("/v1/executions", same.dump(), "application/json");
  ASSERT_TRUE(repeat);
  EXPECT_EQ(repeat->status, 200);
  json diff = same;
  diff["params"] = {"x"};
  auto conflict = http.Post("/v1/executions", diff.dump(), "application/json");
  ASSERT_TRUE(conflict);
  EXPECT_EQ(conflict->status, 409);
  EXPECT_EQ(json::parse(conflict->body)["error"]["kind"].is_string(), true);

  // Exactly one execution exists under that id, and it ran with the first params.
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.out, "ok \"same\"\n");
  json list = CliJson({"execution", "list", "--id-prefix", id});
  EXPECT_EQ(list["executions"].size(), 1u) << list.dump();
}

TEST_F(E2eTest, FailedExecutionsExitWithOne) {
  START_SERVER();
  std::string id = Submit(kFail, "[]");
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 1) << result.err;
  EXPECT_EQ(result.out, "err \"nope\"\n");
  CliRun follow = Cli({"execution", "get", id, "--follow"});
  EXPECT_EQ(follow.code, 1) << follow.err;
  EXPECT_NE(follow.out.find("result: err \"nope\""), std::string::npos) << follow.out;
  // A plain get reports the state successfully whatever the outcome.
  EXPECT_EQ(Cli({"execution", "get", id}).code, 0);

  CliRun ok = Cli({"execution", "submit", kEcho, R"(["x"])", "--follow"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("result: ok \"x\""), std::string::npos) << ok.out;
}

TEST_F(E2eTest, FollowStreamsStateChangesToCompletion) {
  START_SERVER();
  WriteFile(dir_ / "hold", "");
  std::string held = Submit(kSlow, "[]");
  ASSERT_TRUE(WaitFor([&] { return RunCount() >= 1; })) << server_.Log();
  CliRun follow;
  std::thread t([&] { follow = Cli({"execution", "get", held, "--follow"}); });
  // The follower has printed the locked state once its SSE stream is open.
  bool streaming = WaitFor([&] {
    auto metrics = Http().Get("/metrics");
    return metrics && metrics->body.find("stele_follow_streams 1") != std::string::npos;
  });
  fs::remove(dir_ / "hold");
  t.join();
  ASSERT_TRUE(streaming) << server_.Log();
  EXPECT_EQ(follow.code, 0) << follow.err;
  EXPECT_NE(follow.out.find("state: locked"), std::string::npos) << follow.out;
  EXPECT_NE(follow.out.find("state: finished"), std::string::npos) << follow.out;
  EXPECT_NE(follow.out.find("result: ok \"done\""), std::string::npos) << follow.out;

  // An unfinished execution: `result` without waiting times out with 7.
  WriteFile(dir_ / "hold", "");
  std::string id = Submit(kSlow, "[]");
  CliRun early = Cli({"execution", "result", id});
  EXPECT_EQ(early.code, 7) << early.out << early.err;
  fs::remove(dir_ / "hold");
  EXPECT_EQ(Cli({"execution", "result", id, "--timeout", "30"}).code, 0);
}

TEST_F(E2eTest, CancelARunningActivity) {
  START_SERVER();
  WriteFile(dir_ / "hold", "");
  std::string id = Submit(kSlow, "[]");
  ASSERT_TRUE(WaitFor([&] { return RunCount() >= 1; })) << server_.Log();
  CliRun cancel = Cli({"execution", "cancel", id});
  EXPECT_EQ(cancel.code, 0) << cancel.err;
  EXPECT_EQ(cancel.out, "cancelled\n");
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 1) << result.out << result.err;
  EXPECT_NE(result.out.find("execution error"), std::string::npos) << result.out;
  // Cancelling again is idempotent; the outcome is reported, not an error.
  CliRun again = Cli({"--json", "execution", "cancel", id});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_TRUE(json::parse(again.out).contains("outcome")) << again.out;
  // Unknown execution and unknown delay: not found.
  EXPECT_EQ(Cli({"execution", "cancel", "E_01J0E2E00000000000000000ZZ"}).code, 3);
  EXPECT_EQ(Cli({"execution", "cancel", "Delay_01J0E2E00000000000000000ZZ.o:1_1"}).code, 3);
}

TEST_F(E2eTest, StubOfATopLevelOrNonStubExecutionIsRejected) {
  START_SERVER();
  // Stub activities are not submittable: their executions are children.
  CliRun submit = Cli({"execution", "submit", "e2e:test/stub.approve", "[]"});
  EXPECT_EQ(submit.code, 2) << submit.out << submit.err;
  std::string id = Submit(kEcho, R"(["x"])");
  CliRun stub = Cli({"execution", "stub", id, R"({"ok": true})"});
  EXPECT_EQ(stub.code, 2) << stub.out << stub.err;
  EXPECT_EQ(
      Cli({"execution", "stub", "E_01J0E2E00000000000000000ZZ.o:1_1", R"({"ok": true})"}).code, 3);
}

TEST_F(E2eTest, ListWithFiltersAndPagination) {
  START_SERVER();
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(Submit(kEcho, "[\"n" + std::to_string(i) + "\"]"));
  std::string failed = Submit(kFail, "[]");
  for (const auto& id : ids) EXPECT_EQ(Cli({"execution", "result", id, "--timeout", "30"}).code, 0);
  EXPECT_EQ(Cli({"execution", "result", failed, "--timeout", "30"}).code, 1);

  json echo = CliJson({"execution", "list", "--ffqn-prefix", kEcho});
  ASSERT_EQ(echo["executions"].size(), 3u) << echo.dump();
  EXPECT_EQ(echo["executions"][0]["execution_id"], ids[2]);  // newest first
  EXPECT_FALSE(echo.contains("next_cursor"));

  // Page through with --length 2.
  json page1 = CliJson({"execution", "list", "--ffqn-prefix", kEcho, "--length", "2"});
  ASSERT_EQ(page1["executions"].size(), 2u);
  ASSERT_TRUE(page1.contains("next_cursor")) << page1.dump();
  json page2 = CliJson({"execution", "list", "--ffqn-prefix", kEcho, "--length", "2", "--cursor",
                        page1["next_cursor"].get<std::string>()});
  ASSERT_EQ(page2["executions"].size(), 1u) << page2.dump();
  EXPECT_EQ(page2["executions"][0]["execution_id"], ids[0]);

  // Human output: a table with the ids and the next cursor.
  CliRun table = Cli({"execution", "list", "--ffqn-prefix", kEcho, "--length", "2"});
  EXPECT_EQ(table.code, 0);
  EXPECT_NE(table.out.find(ids[2]), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("--cursor"), std::string::npos) << table.out;

  json by_id = CliJson({"execution", "list", "--id-prefix", failed});
  ASSERT_EQ(by_id["executions"].size(), 1u);
  EXPECT_EQ(by_id["executions"][0]["ffqn"], kFail);
  json unfinished = CliJson({"execution", "list", "--hide-finished"});
  EXPECT_EQ(unfinished["executions"].size(), 0u) << unfinished.dump();
}

TEST_F(E2eTest, EventsAndResponses) {
  START_SERVER();
  std::string id = Submit(kEcho, R"(["ev"])");
  ASSERT_EQ(Cli({"execution", "result", id, "--timeout", "30"}).code, 0);
  std::vector<std::string> types = EventTypes(id);
  ASSERT_GE(types.size(), 3u);
  EXPECT_EQ(types.front(), "created");
  EXPECT_EQ(types.back(), "finished");
  EXPECT_EQ(Count(types, "finished"), 1u);
  CliRun human = Cli({"execution", "events", id});
  EXPECT_EQ(human.code, 0);
  EXPECT_NE(human.out.find("created"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("finished"), std::string::npos) << human.out;
  json since = CliJson({"execution", "events", id, "--since-version", "1", "--length", "1"});
  EXPECT_EQ(since["events"].size(), 1u) << since.dump();

  json responses = CliJson({"execution", "responses", id});
  EXPECT_EQ(responses["responses"].size(), 0u);
  EXPECT_EQ(Cli({"execution", "events", "E_01J0E2E00000000000000000ZZ"}).code, 3);
}

TEST_F(E2eTest, ComponentList) {
  START_SERVER(NoExec());
  CliRun human = Cli({"component", "list"});
  EXPECT_EQ(human.code, 0) << human.err;
  for (const char* s : {"approvals", "activity_stub", "e2e:test/stub.approve"}) {
    EXPECT_NE(human.out.find(s), std::string::npos) << s << " in " << human.out;
  }
  json j = CliJson({"component", "list"});
  ASSERT_EQ(j["components"].size(), 1u) << j.dump();
  EXPECT_EQ(j["components"][0]["functions"][0]["ffqn"], "e2e:test/stub.approve");
}

TEST_F(E2eTest, ComponentListWithExecActivities) {
  START_SERVER();
  CliRun human = Cli({"component", "list"});
  EXPECT_EQ(human.code, 0) << human.err;
  for (const char* s : {"echo", "slow", "approvals", kEcho, "e2e:test/stub.approve"}) {
    EXPECT_NE(human.out.find(s), std::string::npos) << s << " in " << human.out;
  }
  EXPECT_EQ(CliJson({"component", "list"})["components"].size(), 6u);
}

TEST_F(E2eTest, HostileInput) {
  START_SERVER(NoExec());
  auto count = [&] {
    return CliJson({"execution", "list", "--length", "1000"})["executions"].size();
  };
  size_t before = count();
  EXPECT_EQ(before, 0u);
  // Rejected locally, nothing sent: exit 2.
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"execution", "submit", kEcho, "[\"unterminated"},
           {"execution", "submit", kEcho, "{\"not\": \"an array\"}"},
           {"execution", "submit", "not an ffqn", "[]"},
           {"execution", "submit", kEcho, "[]", "--id", "E_../../etc/passwd"},
           {"execution", "submit", kEcho, "[\"x\"]", "--bogus"},
           {"execution", "get", "E_01J0E2E0000000000000000001%2F.."},
           {"execution", "explode"},
           {"execution", "submit", kEcho},
       }) {
    CliRun r = Cli(args);
    EXPECT_EQ(r.code, 2) << args[1] << ": " << r.out << r.err;
    EXPECT_TRUE(r.out.empty());
    EXPECT_FALSE(r.err.empty());
  }
  // Rejected by the server: unknown function (3), a stub activity is not
  // submittable (2: 400), a body over max_body_bytes (2: 413).
  EXPECT_EQ(Cli({"execution", "submit", "e2e:test/exec.nothing", "[]"}).code, 3);
  CliRun stub = Cli({"execution", "submit", "e2e:test/stub.approve", "[]"});
  EXPECT_EQ(stub.code, 2) << stub.err;
  EXPECT_NE(stub.err.find("HTTP 400"), std::string::npos) << stub.err;
  fs::path big = dir_ / "big.json";
  WriteFile(big, "[\"" + std::string(2 << 20, 'a') + "\"]");
  CliRun huge = Cli({"execution", "submit", kEcho, "@" + big.string()});
  EXPECT_EQ(huge.code, 2) << huge.err;
  EXPECT_EQ(count(), before);

  // Raw HTTP garbage gets JSON errors, and the server keeps serving.
  auto http = Http();
  for (const std::string& body : {std::string("{"), std::string("[]"), std::string("\xff\xfe"),
                                  std::string(R"({"ffqn": 1})"), std::string(100000, '[')}) {
    auto res = http.Post("/v1/executions", body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << body.substr(0, 20);
    EXPECT_TRUE(json::parse(res->body, nullptr, false).contains("error")) << res->body;
  }
  EXPECT_EQ(count(), before);
  // An unreachable server is exit code 4.
  CliRun down = RunStele({"--api-url", "http://127.0.0.1:1", "component", "list"});
  EXPECT_EQ(down.code, 4) << down.err;
  EXPECT_EQ(Cli({"component", "list"}).code, 0);
}

TEST_F(E2eTest, TokenRequiredWhenConfigured) {
  START_SERVER(NoExec("e2e-secret"));
  auto anonymous = Http().Get("/v1/executions");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  EXPECT_TRUE(json::parse(anonymous->body, nullptr, false).contains("error")) << anonymous->body;
  auto health = Http().Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);

  CliRun no_token = Cli({"execution", "list"});
  EXPECT_EQ(no_token.code, 6) << no_token.err;
  EXPECT_TRUE(no_token.out.empty());
  EXPECT_EQ(Cli({"execution", "list", "--token", "e2e-wrong"}).code, 6);
  EXPECT_EQ(Cli({"execution", "list"}, {{"STELE_TOKEN", "e2e-secret-not"}}).code, 6);
  EXPECT_EQ(Cli({"component", "list"}).code, 6);

  EXPECT_EQ(Cli({"execution", "list", "--token", "e2e-secret"}).code, 0);
  CliRun with_env = Cli({"--json", "component", "list"}, {{"STELE_TOKEN", "e2e-secret"}});
  EXPECT_EQ(with_env.code, 0) << with_env.err;
  EXPECT_EQ(json::parse(with_env.out)["components"].size(), 1u) << with_env.out;
  // Past authentication the request is judged on its merits: unknown ffqn.
  EXPECT_EQ(
      Cli({"execution", "submit", "e2e:test/exec.nothing", "[]", "--token", "e2e-secret"}).code, 3);
  EXPECT_EQ(Cli({"execution", "submit", "e2e:test/exec.nothing", "[]"}).code, 6);
}

// SIGTERM on an idle server: exit 0, and it serves again after a restart.
TEST_F(E2eTest, SigtermExitsZero) {
  START_SERVER(NoExec());
  server_.Kill(SIGTERM);
  std::optional<int> status = server_.WaitExit();
  ASSERT_TRUE(status.has_value()) << "server did not exit after SIGTERM; log:\n" << server_.Log();
  EXPECT_TRUE(WIFEXITED(*status)) << *status;
  EXPECT_EQ(WEXITSTATUS(*status), 0) << server_.Log();
  ASSERT_TRUE(server_.Start(dir_ / "stele.toml", dir_ / "server.log"));
  api_ = server_.url();
  EXPECT_EQ(Cli({"component", "list"}).code, 0);
}

// SIGKILL while an exec activity runs: after a restart the execution is
// picked up again (its lock expires) and finishes exactly once.
TEST_F(E2eTest, KilledServerLosesNothing) {
  START_SERVER();
  WriteFile(dir_ / "hold", "");
  std::string id = Submit(kSlow, "[]");
  std::string done = Submit(kEcho, R"(["before"])");
  ASSERT_EQ(Cli({"execution", "result", done, "--timeout", "30"}).code, 0);
  ASSERT_TRUE(WaitFor([&] { return RunCount() >= 1; })) << server_.Log();
  server_.Kill(SIGKILL);
  fs::remove(dir_ / "hold");

  ASSERT_TRUE(server_.Start(dir_ / "stele.toml", dir_ / "server.log"));
  api_ = server_.url();
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 0) << result.out << result.err << server_.Log();
  EXPECT_EQ(result.out, "ok \"done\"\n");
  EXPECT_GE(RunCount(), 2u);  // the activity ran again after the crash
  std::vector<std::string> types = EventTypes(id);
  EXPECT_EQ(Count(types, "created"), 1u);
  EXPECT_EQ(Count(types, "finished"), 1u);
  // What finished before the crash is still there.
  EXPECT_EQ(Cli({"execution", "result", done}).out, "ok \"before\"\n");
  json all = CliJson({"execution", "list"});
  EXPECT_EQ(all["executions"].size(), 2u) << all.dump();
}

// Whether `pid` exists and is not a zombie (/proc/<pid>/stat's state).
bool ProcessAlive(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  const char state = stat[close + 2];
  return state != 'Z' && state != 'X';
}

// The parent of `pid` (the 4th field of /proc/<pid>/stat), or -1.
pid_t ParentOf(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  std::string state;
  pid_t parent = -1;
  rest >> state >> parent;
  return parent;
}

// SIGKILL of the server while an exec activity runs (issue 16): none of the
// activity's processes — the command, its background job, one that left
// the process group with setsid — nor their supervisor outlives the
// server, so none can run past its deadline beside the retry a restarted
// server starts. Every wait is bounded; by its end the 3 s deadline has
// passed.
TEST_F(E2eTest, KilledServerLeavesNoActivityProcessBehind) {
  Options options;
  options.sleeper = true;
  START_SERVER(options);
  Submit(kSleeper, "[]");
  const fs::path files = dir_ / "sleeper";
  auto pid_in = [&](const std::string& suffix) -> pid_t {
    const std::string text = ReadFile(files.string() + suffix);
    return !text.empty() && text.back() == '\n' ? std::atoi(text.c_str()) : -1;
  };
  ASSERT_TRUE(WaitFor([&] { return pid_in(".escapee") > 0; })) << server_.Log();
  const std::vector<pid_t> pids = {pid_in(".leader"), pid_in(".background"), pid_in(".escapee")};
  const pid_t supervisor = ParentOf(pids[0]);
  for (pid_t pid : pids) ASSERT_TRUE(ProcessAlive(pid)) << pid;
  ASSERT_GT(supervisor, 1);

  server_.Kill(SIGKILL);
  auto alive = [&] {
    std::vector<pid_t> left;
    for (pid_t pid : pids) {
      if (ProcessAlive(pid)) left.push_back(pid);
    }
    if (ProcessAlive(supervisor)) left.push_back(supervisor);
    return left;
  };
  EXPECT_TRUE(WaitFor([&] { return alive().empty(); }))
      << "still running: " << ::testing::PrintToString(alive()) << "; log:\n"
      << server_.Log();
  for (pid_t pid : alive()) kill(pid, SIGKILL);  // a failed run leaves nothing behind
}

// SIGTERM: the server exits 0 and unlocks the running execution, so that a
// restarted server runs it at once instead of waiting for the lease.
TEST_F(E2eTest, GracefulShutdownReleasesLocks) {
  START_SERVER();
  WriteFile(dir_ / "hold", "");
  std::string id = Submit(kSlow, "[]");
  ASSERT_TRUE(WaitFor([&] { return RunCount() >= 1; })) << server_.Log();
  server_.Kill(SIGTERM);
  std::optional<int> status = server_.WaitExit();
  ASSERT_TRUE(status.has_value()) << "server did not exit after SIGTERM; log:\n" << server_.Log();
  EXPECT_TRUE(WIFEXITED(*status)) << *status;
  EXPECT_EQ(WEXITSTATUS(*status), 0) << server_.Log();
  fs::remove(dir_ / "hold");

  ASSERT_TRUE(server_.Start(dir_ / "stele.toml", dir_ / "server.log"));
  api_ = server_.url();
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 0) << result.out << result.err << server_.Log();
  std::vector<std::string> types = EventTypes(id);
  // The run was released on shutdown (unlocked), not abandoned to expire.
  EXPECT_EQ(Count(types, "unlocked"), 1u) << ::testing::PrintToString(types);
  EXPECT_EQ(Count(types, "temporarily_timed_out"), 0u) << ::testing::PrintToString(types);
  EXPECT_EQ(Count(types, "finished"), 1u);
}

}  // namespace
