// ServerProcess: the generated stele.toml and the `stele server run` child.
#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/http/http_bench.h"

namespace stele::http_bench {
namespace {

namespace fs = std::filesystem;

constexpr double kStartLimitS = 60;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The exec activity of W5: appends the workflow's id (the execution id of
// this child up to its first '.') to $EFFECTS_FILE; O_APPEND keeps the
// concurrent lines whole.
constexpr const char* kEffectScript =
    "#!/bin/sh\n"
    "cat >/dev/null\n"
    "printf '%s\\n' \"${STELE_EXECUTION_ID%%.*}\" >> \"$EFFECTS_FILE\"\n"
    "echo '{\"ok\": 1}'\n";

// Writes `lines` (`;` between lines) to `toml`; nothing for nullptr.
void AppendLines(std::ostream& toml, const char* lines) {
  if (lines == nullptr) return;
  for (const char* c = lines; *c != '\0'; ++c) toml << (*c == ';' ? '\n' : *c);
  toml << "\n";
}

}  // namespace

ServerProcess::ServerProcess(const Knobs& knobs, std::string run_dir)
    : knobs_(knobs), run_dir_(std::move(run_dir)) {
  WriteFiles();
}

ServerProcess::~ServerProcess() { Kill(); }

// STELE_HTTP_SETTINGS=tuned mirrors the in-process engine of
// bench/workloads (engine_setup.cc): workflows kept warm while blocked
// (`await`) with a 2 s lease, 256 workflow slots, 4096 activity slots,
// batches of 256. The default (`defaults`) sets nothing of the executors:
// the figures a new user gets.
void ServerProcess::WriteFiles() const {
  const std::string script = run_dir_ + "/effect.sh";
  {
    std::ofstream out(script, std::ios::trunc);
    out << kEffectScript;
  }
  fs::permissions(script, fs::perms::owner_all);
  const char* kind = knobs_.js ? "js" : "wasm";
  const std::string workflows =
      knobs_.js ? knobs_.js_guests + "/workflows.js" : knobs_.guests + "/http_bench_workflows.wasm";
  const std::string activities = knobs_.js ? knobs_.js_guests + "/activities.js"
                                           : knobs_.guests + "/http_bench_activities.wasm";
  std::ofstream toml(run_dir_ + "/stele.toml", std::ios::trunc);
  toml << "data_dir = \"" << run_dir_ << "/data\"\n"
       << "\n[api]\nlisten = \"127.0.0.1:0\"\nui = false\n";
  // STELE_HTTP_API: more [api] lines for experiments, `;` between them.
  AppendLines(toml, std::getenv("STELE_HTTP_API"));
  // STELE_HTTP_DATABASE: [database] lines for experiments, `;` between
  // them ("sqlite_synchronous = \"normal\"").
  if (const char* database = std::getenv("STELE_HTTP_DATABASE")) {
    toml << "\n[database]\n";
    AppendLines(toml, database);
  }
  toml << "\n[executor]\n";
  if (knobs_.tuned) {
    toml << "batch_size = 256\nmax_concurrency = 4096\nmax_workflow_concurrency = 256\n";
  }
  // STELE_HTTP_EXECUTOR: more [executor] lines for experiments, `;`
  // between them ("max_workflow_concurrency = 1024;batch_size = 64").
  AppendLines(toml, std::getenv("STELE_HTTP_EXECUTOR"));
  toml << "\n[[workflow_" << kind << "]]\nname = \"bench_workflows\"\n"
       << "location = \"" << workflows << "\"\n";
  if (knobs_.tuned) toml << "blocking_strategy = \"await\"\nlock_expiry = \"2s\"\n";
  // STELE_HTTP_WORKFLOW: more lines for the workflow component, `;`
  // between them ("blocking_strategy = \"interrupt\"").
  AppendLines(toml, std::getenv("STELE_HTTP_WORKFLOW"));
  toml << "\n[[activity_" << kind << "]]\nname = \"bench_activities\"\n"
       << "location = \"" << activities << "\"\n"
       << "\n[[activity_exec]]\nname = \"bench_effects\"\n"
       << "command = [\"" << script << "\"]\n"
       << "env = { EFFECTS_FILE = \"" << effects_path() << "\" }\n";
  if (knobs_.tuned) toml << "lock_expiry = \"10s\"\n";
  toml << "\n[[activity_exec.functions]]\nffqn = \"bench:http/effects.append\"\n"
       << "params = []\nreturn_type = \"u64\"\n";
}

void ServerProcess::Start() {
  const std::string log = run_dir_ + "/server.log";
  const size_t log_offset = fs::exists(log) ? fs::file_size(log) : 0;
  const std::string config = run_dir_ + "/stele.toml";
  std::vector<std::string> args = {knobs_.stele, "server", "run", "--config", config};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) Die("cannot open " + log);
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // no server outlives the driver (Die)
    dup2(fd, 1);
    dup2(fd, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fd);
  port_ = 0;
  const double deadline = NowSeconds() + kStartLimitS;
  while (port_ <= 0) {
    if (NowSeconds() > deadline) Die("the server did not start; log:\n" + LogTail());
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      Die("the server exited at start; log:\n" + LogTail());
    }
    const std::string text = ReadFile(log).substr(log_offset);
    const size_t at = text.find("listening on port ");
    if (at != std::string::npos) port_ = std::atoi(text.c_str() + at + 18);
    if (port_ <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  httplib::Client http("127.0.0.1", port_);
  http.set_connection_timeout(std::chrono::seconds(2));
  for (;;) {
    auto res = http.Get("/healthz");
    if (res && res->status == 200) return;
    if (NowSeconds() > deadline) Die("/healthz never answered 200; log:\n" + LogTail());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void ServerProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

void ServerProcess::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const double deadline = NowSeconds() + 30;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) != pid_) {
    if (NowSeconds() > deadline) {
      std::fprintf(stderr, "stele_http_bench: the server ignored SIGTERM for 30 s; killing\n");
      Kill();
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
}

double ServerProcess::CpuSeconds() const {
  if (pid_ <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name may hold spaces: fields are counted after its ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  // Fields 3.. of proc(5): utime and stime are the 14th and 15th.
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::strtod(field.c_str(), nullptr);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

uint64_t ServerProcess::StatusBytes(const char* field) const {
  if (pid_ <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  const std::string prefix = std::string(field) + ":";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) {
      return std::strtoull(line.c_str() + prefix.size(), nullptr, 10) * 1024;  // kB
    }
  }
  return 0;
}

uint64_t ServerProcess::DatabaseBytes() const {
  uint64_t total = 0;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    const auto size = fs::file_size(run_dir_ + "/data/stele.sqlite" + suffix, ec);
    if (!ec) total += size;
  }
  return total;
}

uint64_t ServerProcess::WalBytes() const {
  std::error_code ec;
  const auto size = fs::file_size(run_dir_ + "/data/stele.sqlite-wal", ec);
  return ec ? 0 : size;
}

std::string ServerProcess::LogTail() const {
  const std::string text = ReadFile(run_dir_ + "/server.log");
  return text.size() > 4000 ? text.substr(text.size() - 4000) : text;
}

}  // namespace stele::http_bench
