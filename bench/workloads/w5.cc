// W5 (recovery): the engine runs in a child process that is SIGKILLed
// mid-run and restarted; the driver reads the effects file to count steps
// that ran twice or never. Also the idle probe, which needs a fresh process.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/workloads/workloads.h"

namespace stele::bench {
namespace {

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A child process running `argv`, its stdout readable line by line.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv) {
    int fds[2];
    if (pipe(fds) != 0) std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fdopen(fds[0], "r");
  }
  ~Child() {
    Kill();
    if (out_) fclose(out_);
  }

  // The next line of output, or nullopt at EOF.
  std::optional<std::string> ReadLine() {
    char buf[4096];
    if (!fgets(buf, sizeof(buf), out_)) return std::nullopt;
    std::string line(buf);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    return line;
  }
  // Reads lines until one starts with `prefix`; returns it.
  std::optional<std::string> WaitFor(const std::string& prefix) {
    while (auto line = ReadLine()) {
      if (line->rfind(prefix, 0) == 0) return line;
    }
    return std::nullopt;
  }
  void Kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
};

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

double FieldAfter(const std::string& line, const std::string& key) {
  auto pos = line.find(key + "=");
  if (pos == std::string::npos) return 0;
  return std::strtod(line.c_str() + pos + key.size() + 1, nullptr);
}

}  // namespace

Metrics RunW5(const Knobs& knobs) {
  const std::string db = FreshPath(knobs, "w5");
  const std::string effects = knobs.dir + "/w5.effects";
  const std::string ids_file = knobs.dir + "/w5.ids";
  std::remove(effects.c_str());
  std::remove(ids_file.c_str());
  auto engine_argv = [&](uint32_t n) {
    return std::vector<std::string>{knobs.self, "--w5-engine", db, effects, ids_file,
                                    std::to_string(n), std::to_string(knobs.w5_sleep_ms)};
  };

  const double first_submit = WallSeconds();
  double kill_at = 0;
  {
    Child first(engine_argv(knobs.w5_n));
    if (!first.WaitFor("submitted")) {
      std::fprintf(stderr, "W5: the engine process died before acknowledging\n");
      std::exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(knobs.w5_kill_after_ms));
    kill_at = WallSeconds();
    first.Kill();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(knobs.w5_down_ms));
  const double restart_at = WallSeconds();
  Child second(engine_argv(0));
  auto done = second.WaitFor("done");
  const double done_at = done ? FieldAfter(*done, "at") : WallSeconds();
  const double finished = done ? FieldAfter(*done, "finished") : 0;
  second.Kill();

  std::map<std::string, int> ran;
  for (const auto& id : ReadLines(effects)) ++ran[id];
  const auto ids = ReadLines(ids_file);
  int twice = 0, never = 0;
  for (const auto& id : ids) {
    const int count = ran.count(id) ? ran[id] : 0;
    if (count > 1) ++twice;
    if (count == 0) ++never;
  }
  return {
      {"after_restart", {done_at - restart_at, "s"}},
      {"after_kill", {done_at - kill_at, "s"}},
      {"after_first_submit", {done_at - first_submit, "s"}},
      {"lost", {static_cast<double>(ids.size()) - finished, "wf"}},
      {"step_ran_twice", {static_cast<double>(twice), "wf"}},
      {"step_never_ran", {static_cast<double>(never), "wf"}},
  };
}

int W5EngineMain(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: --w5-engine <db> <effects> <ids-file> <n> <sleep_ms>\n");
    return 2;
  }
  const std::string db = argv[2], effects = argv[3], ids_file = argv[4];
  const uint32_t n = static_cast<uint32_t>(std::strtoul(argv[5], nullptr, 10));
  const int64_t sleep_ms = std::strtoll(argv[6], nullptr, 10);
  auto engine = OpenBenchEngine(db, effects);
  if (!engine) {
    std::fprintf(stderr, "w5 engine: %s\n", engine.error().ToString().c_str());
    return 1;
  }
  std::vector<std::string> ids;
  if (n > 0) {
    // Submitted from several threads so that group commit batches them.
    std::vector<std::thread> submitters;
    std::vector<std::vector<std::string>> per_thread(16);
    for (uint32_t t = 0; t < per_thread.size(); ++t) {
      submitters.emplace_back([&, t] {
        for (uint32_t i = t; i < n; i += static_cast<uint32_t>(per_thread.size())) {
          auto id = (*engine)->Submit(kW5, Json::array({sleep_ms}));
          if (!id) {
            std::fprintf(stderr, "w5 submit: %s\n", id.error().ToString().c_str());
            std::_Exit(1);
          }
          per_thread[t].push_back(std::move(*id));
        }
      });
    }
    for (auto& s : submitters) s.join();
    std::ofstream out(ids_file, std::ios::trunc);
    for (auto& list : per_thread) {
      for (auto& id : list) {
        out << id << "\n";
        ids.push_back(std::move(id));
      }
    }
    out.close();
    std::printf("submitted\n");
    std::fflush(stdout);
  } else {
    ids = ReadLines(ids_file);
  }
  uint32_t finished = 0;
  for (const auto& id : ids) {
    auto result = (*engine)->WaitForResult(id, std::chrono::minutes(5));
    if (result) ++finished;
  }
  std::printf("done at=%.6f finished=%u\n", WallSeconds(), finished);
  std::fflush(stdout);
  // Stay up until the driver kills us (it reads "done" first).
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

Metrics RunIdleInFreshProcess(const Knobs& knobs) {
  Child child({knobs.self, "--idle-probe"});
  auto line = child.WaitFor("rss");
  return {{"rss", {line ? FieldAfter(*line, "mib") : 0, "MiB"}}};
}

}  // namespace stele::bench
