// W5 (recovery): the engine runs in a child process that is SIGKILLed
// mid-run and restarted; the driver reads the effects file to count steps
// that ran twice or never. With two processes the second engine process
// runs throughout (it is not killed: one node of two crashes). Also the
// idle probe, which needs a fresh process.
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

#include "bench/workloads/child_process.h"
#include "bench/workloads/workloads.h"

namespace stele::bench {
namespace {

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

}  // namespace

Metrics RunW5(const Knobs& knobs) {
  FreshDb db(knobs, "w5");
  const std::string effects = knobs.dir + "/w5.effects";
  const std::string ids_file = knobs.dir + "/w5.ids";
  std::remove(effects.c_str());
  std::remove(ids_file.c_str());
  auto engine_argv = [&](uint32_t n) {
    return std::vector<std::string>{knobs.self,
                                    "--w5-engine",
                                    db.target().Encode(),
                                    effects,
                                    ids_file,
                                    std::to_string(n),
                                    std::to_string(knobs.w5_sleep_ms)};
  };
  SecondEngine second(knobs, db.target(), effects);

  const double first_submit = WallSeconds();
  double kill_at = 0;
  {
    ChildProcess first(engine_argv(knobs.w5_n));
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
  ChildProcess restarted(engine_argv(0));
  auto done = restarted.WaitFor("done");
  const double done_at = done ? FieldAfter(*done, "at") : WallSeconds();
  const double finished = done ? FieldAfter(*done, "finished") : 0;
  restarted.Kill();
  second.Stop();

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
  auto engine = OpenBenchEngine(DbTarget::Decode(db), effects);
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
  ChildProcess child({knobs.self, "--idle-probe"});
  auto line = child.WaitFor("rss");
  return {{"rss", {line ? FieldAfter(*line, "mib") : 0, "MiB"}}};
}

}  // namespace stele::bench
