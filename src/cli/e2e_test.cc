// End-to-end tests through the real `stele` binary: a server process on a
// free 127.0.0.1 port with a temp SQLite file and a stele.toml written here
// (exec activities are small /bin/sh scripts, plus a stub activity), driven
// by the CLI binary and by raw HTTP.
//
// Every wait is bounded (kWait) and every child process is killed in
// teardown, so a broken server fails the test instead of hanging it.
// Synchronisation is on observable conditions (a line in the server log, a
// file an activity writes, the API's state), never on sleeps alone.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#ifndef STELE_BINARY
#error "STELE_BINARY must name the stele executable (set by src/cli/CMakeLists.txt)"
#endif

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr auto kWait = std::chrono::seconds(30);  // bound of every wait
constexpr const char* kEcho = "e2e:test/exec.echo";
constexpr const char* kFail = "e2e:test/exec.fail";
constexpr const char* kSlow = "e2e:test/exec.slow";

extern "C" char** environ;

// The binary under test: STELE_E2E_BINARY overrides the one CMake built
// (to run these tests against another build of `stele`).
std::string SteleBinary() {
  const char* path = std::getenv("STELE_E2E_BINARY");
  return path != nullptr && *path != '\0' ? path : STELE_BINARY;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

// Polls `cond` every 20 ms until it holds or `limit` passes.
template <class F>
bool WaitFor(F cond, std::chrono::milliseconds limit = kWait) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

// The environment of a child: ours without STELE_*, plus `extra`. Built
// before fork so the child only calls async-signal-safe functions.
std::vector<std::string> ChildEnv(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view kv = *e;
    if (kv.rfind("STELE_", 0) == 0) continue;
    env.emplace_back(kv);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

struct CliRun {
  int code = -1;  // exit status, or -1 when killed
  std::string out;
  std::string err;
};

// Runs `stele args...`, capturing stdout and stderr; killed after `limit`.
CliRun RunStele(std::vector<std::string> args, const std::map<std::string, std::string>& env = {},
                std::chrono::milliseconds limit = kWait) {
  args.insert(args.begin(), SteleBinary());
  std::vector<std::string> envs = ChildEnv(env);
  std::vector<char*> argv = CStrings(args);
  std::vector<char*> envp = CStrings(envs);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  CliRun run;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  int open_fds = 2;
  auto deadline = Clock::now() + limit;
  bool killed = false;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      kill(pid, SIGKILL);
      killed = true;
      break;
    }
    if (poll(fds, 2, static_cast<int>(left)) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[4096];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  run.code = (!killed && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
  return run;
}

// A `stele server run` child process whose output goes to a log file.
class ServerProcess {
 public:
  ~ServerProcess() { Kill(SIGKILL); }

  // Starts the server and waits until it listens and /healthz answers.
  ::testing::AssertionResult Start(const fs::path& config, const fs::path& log) {
    log_ = log;
    log_offset_ = fs::exists(log) ? fs::file_size(log) : 0;
    std::vector<std::string> args = {SteleBinary(), "server", "run", "--config", config.string()};
    std::vector<std::string> envs = ChildEnv({});
    std::vector<char*> argv = CStrings(args);
    std::vector<char*> envp = CStrings(envs);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return ::testing::AssertionFailure() << "cannot open " << log;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    close(fd);
    std::optional<int> port;
    bool ok = WaitFor([&] {
      if (!Running()) return true;
      std::string text = ReadFile(log_).substr(log_offset_);
      size_t at = text.find("listening on port ");
      if (at == std::string::npos) return false;
      port = std::atoi(text.c_str() + at + 18);
      return true;
    });
    if (!ok || !port || *port <= 0) {
      return ::testing::AssertionFailure() << "server did not start; log:\n" << Log();
    }
    port_ = *port;
    httplib::Client http("127.0.0.1", port_);
    http.set_connection_timeout(std::chrono::seconds(2));
    bool healthy = WaitFor([&] {
      auto res = http.Get("/healthz");
      return res && res->status == 200;
    });
    if (!healthy) return ::testing::AssertionFailure() << "/healthz never answered 200; log:\n" << Log();
    return ::testing::AssertionSuccess();
  }

  bool Running() {
    if (pid_ <= 0) return false;
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_status_ = status;
      pid_ = -1;
      return false;
    }
    return true;
  }

  void Kill(int sig) {
    if (pid_ > 0) kill(pid_, sig);
    if (sig == SIGKILL && pid_ > 0) {
      int status = 0;
      waitpid(pid_, &status, 0);
      exit_status_ = status;
      pid_ = -1;
    }
  }

  // Waits for the process to exit; its wait status, or nullopt on timeout.
  std::optional<int> WaitExit(std::chrono::milliseconds limit = kWait) {
    if (!WaitFor([&] { return !Running(); }, limit)) return std::nullopt;
    return exit_status_;
  }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string Log() const { return ReadFile(log_).substr(log_offset_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int exit_status_ = 0;
  fs::path log_;
  size_t log_offset_ = 0;
};

struct Options {
  std::optional<std::string> token;
  bool exec = true;  // the exec activity components (else only the stub one)
};
// A server with only the stub component: runs whatever the server supports.
Options NoExec(std::optional<std::string> token = std::nullopt) { return Options{std::move(token), false}; }

class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stele_e2e_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    WriteScripts();
  }

  void TearDown() override {
    server_.Kill(SIGKILL);
    // Activity processes run in their own process groups and outlive a
    // killed server; each script records its pid.
    std::istringstream runs(ReadFile(dir_ / "runs"));
    for (std::string line; std::getline(runs, line);) {
      pid_t pid = std::atoi(line.c_str());
      // Only if the pid still is our script (pids are reused).
      std::string cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
      if (pid > 1 && cmdline.find(dir_.string()) != std::string::npos) kill(pid, SIGKILL);
    }
    std::error_code ec;
    if (!HasFailure()) fs::remove_all(dir_, ec);
  }

  void WriteScripts() {
    WriteFile(dir_ / "echo.sh",
              "p=$(cat)\nv=${p#[}\nv=${v%]}\nprintf '{\"ok\": %s}\\n' \"$v\"\n");
    WriteFile(dir_ / "fail.sh", "cat >/dev/null\nprintf '{\"err\": \"nope\"}\\n'\n");
    // Records "pid attempt", then holds while the `hold` file exists
    // (bounded, so an orphan never outlives the test by much).
    WriteFile(dir_ / "slow.sh",
              "cat >/dev/null\necho \"$$ $STELE_ATTEMPT\" >> \"$RUNS\"\ni=0\n"
              "while [ -e \"$HOLD\" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n"
              "printf '{\"ok\": \"done\"}\\n'\n");
  }

  std::string ExecComponent(const std::string& name, const std::string& ffqn,
                            const std::string& params, const std::string& extra) {
    return "[[activity_exec]]\nname = \"" + name + "\"\ncommand = [\"/bin/sh\", \"" +
           (dir_ / (name + ".sh")).string() + "\"]\nenv = { PATH = \"/usr/bin:/bin\", RUNS = \"" +
           (dir_ / "runs").string() + "\", HOLD = \"" + (dir_ / "hold").string() + "\" }\n" + extra +
           "[[activity_exec.functions]]\nffqn = \"" + ffqn + "\"\nparams = " + params +
           "\nreturn_type = \"result<string, string>\"\n\n";
  }

  void WriteConfig(const Options& options) {
    std::string toml = "data_dir = \"" + (dir_ / "data").string() + "\"\n\n[api]\nlisten = \"127.0.0.1:0\"\n";
    if (options.token) toml += "token = \"" + *options.token + "\"\n";
    toml += "\n[database]\nsqlite = \"" + (dir_ / "stele.sqlite").string() +
            "\"\n\n[executor]\ntick_sleep = \"50ms\"\nlock_expiry = \"5s\"\n\n"
            "[watcher]\ntick_sleep = \"50ms\"\nleeway = \"100ms\"\n\n";
    if (options.exec) {
      toml += ExecComponent("echo", kEcho, "[{ name = \"x\", type = \"string\" }]", "max_retries = 0\n");
      toml += ExecComponent("fail", kFail, "[]", "max_retries = 0\n");
      // A short lease, so that a run orphaned by a killed server expires soon.
      toml += ExecComponent("slow", kSlow, "[]",
                            "max_retries = 5\nretry_backoff = \"100ms\"\nlock_expiry = \"2s\"\n");
    }
    toml += "[[activity_stub]]\nname = \"approvals\"\n[[activity_stub.functions]]\n"
            "ffqn = \"e2e:test/stub.approve\"\nparams = []\nreturn_type = \"result<bool, string>\"\n";
    WriteFile(dir_ / "stele.toml", toml);
  }

  // Verifies and starts the server; skips the test when this build of the
  // server does not support exec activities yet.
  void StartServer(const Options& options = {}) {
    WriteConfig(options);
    CliRun verify = RunStele({"server", "verify", "--config", (dir_ / "stele.toml").string()});
    if (verify.code != 0 && verify.err.find("not supported") != std::string::npos) {
      GTEST_SKIP() << "server build does not support exec activities yet: " << verify.err;
    }
    // A tree where src/server is absent or still a placeholder.
    if (verify.code != 0 && (verify.err.find("not built yet") != std::string::npos ||
                             verify.err.find("not implemented") != std::string::npos)) {
      GTEST_SKIP() << "this build has no working server: " << verify.err;
    }
    ASSERT_EQ(verify.code, 0) << verify.out << verify.err;
    ASSERT_TRUE(server_.Start(dir_ / "stele.toml", dir_ / "server.log"));
    api_ = server_.url();
  }

  CliRun Cli(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), {"--api-url", api_});
    return RunStele(std::move(args), env);
  }

  json CliJson(std::vector<std::string> args) {
    args.insert(args.begin(), "--json");
    CliRun r = Cli(std::move(args));
    EXPECT_EQ(r.code, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }

  std::string Submit(const std::string& ffqn, const std::string& params) {
    CliRun r = Cli({"execution", "submit", ffqn, params});
    EXPECT_EQ(r.code, 0) << r.err;
    std::string id = r.out.substr(0, r.out.find('\n'));
    EXPECT_EQ(id.rfind("E_", 0), 0u) << r.out;
    return id;
  }

  httplib::Client Http(std::optional<std::string> token = std::nullopt) {
    httplib::Client http("127.0.0.1", server_.port());
    http.set_read_timeout(kWait);
    if (token) http.set_bearer_token_auth(*token);
    return http;
  }

  size_t RunCount() {
    std::istringstream in(ReadFile(dir_ / "runs"));
    size_t n = 0;
    for (std::string line; std::getline(in, line);) n += !line.empty();
    return n;
  }

  // The type (externally tagged key) of every event of `id`.
  std::vector<std::string> EventTypes(const std::string& id) {
    json events = CliJson({"execution", "events", id, "--length", "1000"});
    std::vector<std::string> types;
    for (const json& item : events["events"]) {
      const json& e = item.contains("event") ? item["event"] : item;
      types.push_back(e.is_object() && !e.empty() ? e.begin().key() : e.dump());
    }
    return types;
  }

  fs::path dir_;
  ServerProcess server_;
  std::string api_;
};

// Skips the rest of a test when the server cannot run this config.
#define START_SERVER(...)                      \
  StartServer(__VA_ARGS__);                    \
  if (IsSkipped() || HasFatalFailure()) return

size_t Count(const std::vector<std::string>& v, const std::string& x) {
  return static_cast<size_t>(std::count(v.begin(), v.end(), x));
}

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
  EXPECT_EQ(Cli({"execution", "stub", "E_01J0E2E00000000000000000ZZ.o:1_1", R"({"ok": true})"}).code, 3);
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
  EXPECT_EQ(CliJson({"component", "list"})["components"].size(), 4u);
}

TEST_F(E2eTest, HostileInput) {
  START_SERVER(NoExec());
  auto count = [&] { return CliJson({"execution", "list", "--length", "1000"})["executions"].size(); };
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
  EXPECT_EQ(Cli({"execution", "submit", "e2e:test/exec.nothing", "[]", "--token", "e2e-secret"}).code, 3);
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
