// Fixture of the end-to-end tests (e2e_test.cc, e2e_ops_test.cc): runs the
// real `stele` binary as a server process (a free 127.0.0.1 port, a temp
// SQLite file, a stele.toml written by the test: exec activities as small
// /bin/sh scripts, a stub activity, optionally the example wasm workflows
// durable_sleep and human_approval) and as the CLI, and talks raw HTTP to it.
//
// Every wait is bounded (kWait) and every child process is killed in
// teardown, so a broken server fails the test instead of hanging it.
// Synchronisation is on observable conditions (a line in the server log, a
// file an activity writes, the API's state), never on sleeps alone.
// Everything is in an anonymous namespace: each test file gets its own copy.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#ifndef STELE_BINARY
#error "STELE_BINARY must name the stele executable (set by src/cli/CMakeLists.txt)"
#endif

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The outcome a cancel answered: its 200 body's "outcome" ("cancelled"),
// or "already_finished" for the 409 of an execution that finished otherwise.
inline std::string CancelOutcomeOf(const httplib::Result& reply) {
  if (!reply) return "no reply";
  if (reply->status == 409 && reply->body.find("\"already_finished\"") != std::string::npos) {
    return "already_finished";
  }
  if (reply->status != 200) return "HTTP " + std::to_string(reply->status) + ": " + reply->body;
  json body = json::parse(reply->body, nullptr, false);
  return body.is_object() ? body.value("outcome", "") : "malformed: " + reply->body;
}

constexpr auto kWait = std::chrono::seconds(30);  // bound of every wait
constexpr const char* kEcho = "e2e:test/exec.echo";
constexpr const char* kFail = "e2e:test/exec.fail";
constexpr const char* kSlow = "e2e:test/exec.slow";
// Exits 3 after a long stderr (CrashStderr(), then a second line).
constexpr const char* kCrash = "e2e:test/exec.crash";
// Returns a record whose keys are not in alphabetical order (no declared
// return type: not checked).
constexpr const char* kRecord = "e2e:test/exec.record";
constexpr const char* kRecordResult = R"({"zeta":1,"alpha":{"y":2,"b":[3,{"d":4,"c":5}]}})";
// Records its processes (itself, a background job, one that left its
// process group with setsid), then waits for them: 300 s.
constexpr const char* kSleeper = "e2e:test/exec.sleeper";
// examples/wasm/human_approval.c: awaits the stub activity kApprove (a
// child execution), then on `true` calls the exec activity kPay.
constexpr const char* kExpense = "demo:expenses/flow.expense";
constexpr const char* kApprove = "demo:expenses/manager.approve";
constexpr const char* kPay = "demo:expenses/bank.pay";

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
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
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
  // `open_files`: the child's soft and hard RLIMIT_NOFILE.
  ::testing::AssertionResult Start(const fs::path& config, const fs::path& log,
                                   std::optional<rlim_t> open_files = std::nullopt) {
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
      if (open_files) {
        const rlimit limit{*open_files, *open_files};
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(126);
      }
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
    if (!healthy)
      return ::testing::AssertionFailure() << "/healthz never answered 200; log:\n" << Log();
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
  bool exec = true;             // the exec activity components (else only the stub one)
  bool wasm = false;            // durable_sleep (WasmDir() must hold it)
  bool approval = false;        // human_approval, its stub kApprove and the exec activity kPay
  bool sleeper = false;         // the exec activity kSleeper (lock_expiry 3 s, no retries)
  bool await_approval = false;  // await_approval: receives on "approvals", publishes "stage"
};
// A server with only the stub component: runs whatever the server supports.
[[maybe_unused]] Options NoExec(std::optional<std::string> token = std::nullopt) {
  return Options{std::move(token), false};
}
// The human approval example: a workflow whose child is a stub activity.
[[maybe_unused]] Options Approval() { return Options{std::nullopt, false, false, true}; }

class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stele_e2e_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    sqlite_ = dir_ / "stele.sqlite";
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
              "p=$(cat)\nv=${p#[}\nv=${v%]}\necho \"echo got $v\" >&2\n"
              "printf '{\"ok\": %s}\\n' \"$v\"\n");
    WriteFile(dir_ / "crash.sh",
              "cat >/dev/null\necho '" + CrashStderr() + "' >&2\necho 'second line' >&2\nexit 3\n");
    WriteFile(dir_ / "record.sh",
              "cat >/dev/null\nprintf '%s\\n' '{\"ok\": " + std::string(kRecordResult) + "}'\n");
    WriteFile(dir_ / "fail.sh", "cat >/dev/null\nprintf '{\"err\": \"nope\"}\\n'\n");
    // Records "pid attempt", then holds while the `hold` file exists
    // (bounded, so an orphan never outlives the test by much).
    WriteFile(dir_ / "slow.sh",
              "cat >/dev/null\necho \"$$ $STELE_ATTEMPT\" >> \"$RUNS\"\ni=0\n"
              "while [ -e \"$HOLD\" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n"
              "printf '{\"ok\": \"done\"}\\n'\n");
    WriteFile(dir_ / "pay.sh", "cat >/dev/null\nprintf '{\"ok\": \"paid\"}\\n'\n");
    const std::string sleeper = (dir_ / "sleeper").string();
    WriteFile(dir_ / "sleeper.sh", "cat >/dev/null\necho $$ > " + sleeper +
                                       ".leader\nsleep 300 &\necho $! > " + sleeper +
                                       ".background\nsetsid sleep 300 &\necho $! > " + sleeper +
                                       ".escapee\nwait\n");
  }

  // The stderr line of kCrash: longer than any line the CLI once cut.
  static std::string CrashStderr() {
    return "crash: cannot open /data/ledger: " + std::string(300, 'x') + " end of reason";
  }

  std::string ExecComponent(const std::string& name, const std::string& ffqn,
                            const std::string& params, const std::string& extra,
                            const std::string& return_type = "result<string, string>") {
    return "[[activity_exec]]\nname = \"" + name + "\"\ncommand = [\"/bin/sh\", \"" +
           (dir_ / (name + ".sh")).string() + "\"]\nenv = { PATH = \"/usr/bin:/bin\", RUNS = \"" +
           (dir_ / "runs").string() + "\", HOLD = \"" + (dir_ / "hold").string() + "\" }\n" +
           extra + "[[activity_exec.functions]]\nffqn = \"" + ffqn + "\"\nparams = " + params +
           (return_type.empty() ? "" : "\nreturn_type = \"" + return_type + "\"") + "\n\n";
  }

  void WriteConfig(const Options& options) {
    std::string toml =
        "data_dir = \"" + (dir_ / "data").string() + "\"\n\n[api]\nlisten = \"127.0.0.1:0\"\n";
    if (options.token) toml += "token = \"" + *options.token + "\"\n";
    toml += "\n[database]\nsqlite = \"" + sqlite_.string() +
            "\"\n\n[executor]\ntick_sleep = \"50ms\"\nlock_expiry = \"5s\"\n\n"
            "[watcher]\ntick_sleep = \"50ms\"\nleeway = \"100ms\"\n\n";
    if (options.exec) {
      toml += ExecComponent("echo", kEcho, "[{ name = \"x\", type = \"string\" }]",
                            "max_retries = 0\n");
      toml += ExecComponent("fail", kFail, "[]", "max_retries = 0\n");
      // A short lease, so that a run orphaned by a killed server expires soon.
      toml += ExecComponent("slow", kSlow, "[]",
                            "max_retries = 5\nretry_backoff = \"100ms\"\nlock_expiry = \"2s\"\n");
      toml += ExecComponent("crash", kCrash, "[]", "max_retries = 0\n");
      toml += ExecComponent("record", kRecord, "[]", "max_retries = 0\n", "");
    }
    if (options.sleeper) {
      toml += ExecComponent("sleeper", kSleeper, "[]", "max_retries = 0\nlock_expiry = \"3s\"\n");
    }
    if (options.wasm) {
      // durable_sleep from a copy in the test folder, which the upgrade test
      // replaces with other bytes (another digest).
      if (!fs::exists(dir_ / "durable_sleep.wasm")) {
        fs::copy_file(fs::path(WasmDir()) / "e2e_durable_sleep.wasm", dir_ / "durable_sleep.wasm");
      }
      toml += "[[workflow_wasm]]\nname = \"durable_sleep\"\nlocation = \"" +
              (dir_ / "durable_sleep.wasm").string() + "\"\n\n";
    }
    if (options.approval) {
      toml += "[[workflow_wasm]]\nname = \"human_approval\"\nlocation = \"" + WasmDir() +
              "/e2e_human_approval.wasm\"\n\n";
      toml += ExecComponent(
          "pay", kPay,
          "[{ name = \"amount\", type = \"u64\" }, { name = \"payee\", type = \"string\" }]",
          "max_retries = 0\n");
    }
    if (options.await_approval) {
      toml += "[[workflow_wasm]]\nname = \"await_approval\"\nlocation = \"" + WasmDir() +
              "/e2e_await_approval.wasm\"\n\n";
    }
    toml +=
        "[[activity_stub]]\nname = \"approvals\"\n[[activity_stub.functions]]\n"
        "ffqn = \"e2e:test/stub.approve\"\nparams = []\nreturn_type = \"result<bool, string>\"\n";
    if (options.approval) {
      toml += "[[activity_stub.functions]]\nffqn = \"" + std::string(kApprove) +
              "\"\nparams = [{ name = \"amount\", type = \"u64\" }, { name = \"payee\", type = "
              "\"string\" }]\nreturn_type = \"result<bool, string>\"\n";
    }
    WriteFile(dir_ / "stele.toml", toml);
  }

  // Verifies and starts the server; skips the test when this build of the
  // server does not support exec activities yet.
  void StartServer(const Options& options = {}) {
    // CI sets STELE_REQUIRE_WASM=1: there the wasm tests must run, not skip.
    const char* required = std::getenv("STELE_REQUIRE_WASM");
    const bool wants_wasm = options.wasm || options.approval || options.await_approval;
    const bool require_wasm = wants_wasm && required != nullptr && std::string(required) == "1";
    if (wants_wasm && !HaveWasmGuests()) {
      if (require_wasm) {
        FAIL() << "STELE_REQUIRE_WASM=1 but the example wasm guests were not built: " << WasmDir();
      }
      GTEST_SKIP() << "the example wasm guests were not built (no clang/wasm-ld for wasm32): "
                   << WasmDir();
    }
    WriteConfig(options);
    CliRun verify = RunStele({"server", "verify", "--config", (dir_ / "stele.toml").string()});
    if (verify.code != 0 && verify.err.find("not supported") != std::string::npos) {
      if (require_wasm) {
        FAIL() << "STELE_REQUIRE_WASM=1 but the server cannot load wasm: " << verify.err;
      }
      GTEST_SKIP() << "server build does not support these components: " << verify.err;
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

  // The guests built for these tests (src/cli/CMakeLists.txt), or "".
  static std::string WasmDir() {
#ifdef STELE_E2E_WASM_DIR
    return STELE_E2E_WASM_DIR;
#else
    return "";
#endif
  }
  static bool HaveWasmGuests() {
    const std::string d = WasmDir();
    return !d.empty() && fs::exists(d + "/e2e_durable_sleep.wasm") &&
           fs::exists(d + "/e2e_human_approval.wasm") && fs::exists(d + "/e2e_await_approval.wasm");
  }

  // `stele db check` of the server's SQLite file (it may run while the
  // server does): exit 0 when consistent.
  CliRun DbCheck() { return RunStele({"db", "check", "--sqlite", sqlite_.string()}); }

  // GET `path` as JSON (null when the request failed or the body is not JSON).
  json HttpJson(const std::string& path) {
    auto res = Http().Get(path);
    if (!res) return json();
    return json::parse(res->body, nullptr, false);
  }

  // Waits until the execution's pending state has `status`.
  bool WaitForStatus(const std::string& id, const std::string& status) {
    return WaitFor([&] {
      json doc = HttpJson("/v1/executions/" + id);
      return doc.is_object() && doc.contains("pending_state") &&
             doc["pending_state"]["status"] == status;
    });
  }

  // The first delay id in the execution's events ("" when none).
  std::string DelayIdOf(const std::string& id) {
    auto res = Http().Get("/v1/executions/" + id + "/events?length=1000");
    if (!res) return "";
    const std::string key = "\"delay_id\":\"";
    size_t at = res->body.find(key);
    if (at == std::string::npos) return "";
    at += key.size();
    return res->body.substr(at, res->body.find('"', at) - at);
  }

  fs::path dir_;
  fs::path sqlite_;  // the database file (dir_/stele.sqlite unless a test moves it)
  ServerProcess server_;
  std::string api_;
};

// Skips the rest of a test when the server cannot run this config.
#define START_SERVER(...)   \
  StartServer(__VA_ARGS__); \
  if (IsSkipped() || HasFatalFailure()) return

[[maybe_unused]] size_t Count(const std::vector<std::string>& v, const std::string& x) {
  return static_cast<size_t>(std::count(v.begin(), v.end(), x));
}

}  // namespace
