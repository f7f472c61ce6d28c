// stele_http_bench [--stele PATH] [--guests DIR] [warmup] [W1] ... [W5] [idle]:
// the workloads of bench/README.md through the HTTP API of the `stele`
// server (all by default). Knobs are the environment variables named there,
// plus STELE_BENCH_REPEAT (3), STELE_BENCH_DIR (scratch),
// STELE_HTTP_CONNECTIONS (all: a connection per workflow; or a number),
// STELE_HTTP_SETTINGS (defaults | tuned), STELE_HTTP_EXECUTOR (more [executor]
// lines, `;` between them) and STELE_HTTP_GUESTS (wasm, or js: the same
// workflows and activities in JavaScript, guests/*.js). Run through
// `scripts/bench.sh http`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench/http/http_bench.h"

#ifndef STELE_HTTP_BENCH_STELE
#define STELE_HTTP_BENCH_STELE ""
#endif
#ifndef STELE_HTTP_BENCH_GUESTS
#define STELE_HTTP_BENCH_GUESTS ""
#endif
#ifndef STELE_HTTP_BENCH_JS_GUESTS
#define STELE_HTTP_BENCH_JS_GUESTS ""
#endif

namespace stele::http_bench {
namespace {

uint32_t EnvU32(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
}

void Report(const std::string& workload, const std::vector<Metrics>& runs) {
  if (runs.empty()) return;
  for (const auto& [name, first] : runs.front()) {
    std::vector<double> values;
    for (const auto& run : runs) values.push_back(run.at(name).value);
    std::printf("stele-http %s %s %.3f %s\n", workload.c_str(), name.c_str(),
                Percentile(values, 50), first.unit.c_str());
    if (runs.size() > 1) {
      std::printf("stele-http %s %s_range %.3f-%.3f %s\n", workload.c_str(), name.c_str(),
                  Percentile(values, 0), Percentile(values, 100), first.unit.c_str());
    }
  }
  std::fflush(stdout);
}

}  // namespace

Knobs Knobs::FromEnv() {
  Knobs k;
  k.warmup_n = EnvU32("WARMUP_N", k.warmup_n);
  k.w1_n = std::max(1u, EnvU32("W1_N", k.w1_n));
  k.w2_steps = std::max(1u, EnvU32("W2_STEPS", k.w2_steps));
  k.w3_children = std::max(1u, EnvU32("W3_CHILDREN", k.w3_children));
  k.w4_n = std::max(1u, EnvU32("W4_N", k.w4_n));
  k.w4_sleep_ms = EnvU32("W4_SLEEP_MS", k.w4_sleep_ms);
  k.w5_n = std::max(1u, EnvU32("W5_N", k.w5_n));
  k.w5_sleep_ms = EnvU32("W5_SLEEP_MS", k.w5_sleep_ms);
  k.w5_kill_after_ms = EnvU32("W5_KILL_AFTER_MS", k.w5_kill_after_ms);
  k.w5_down_ms = EnvU32("W5_DOWN_MS", k.w5_down_ms);
  k.repeat = std::max(1u, EnvU32("STELE_BENCH_REPEAT", k.repeat));
  const char* connections = std::getenv("STELE_HTTP_CONNECTIONS");
  if (connections != nullptr && *connections != '\0' && std::string(connections) != "all") {
    k.connections = std::max(1u, EnvU32("STELE_HTTP_CONNECTIONS", 1));
  }
  const char* settings = std::getenv("STELE_HTTP_SETTINGS");
  const std::string settings_name = (settings && *settings) ? settings : "defaults";
  if (settings_name != "defaults" && settings_name != "tuned") {
    Die("STELE_HTTP_SETTINGS: expected defaults or tuned, got `" + settings_name + "`");
  }
  k.tuned = settings_name == "tuned";
  const char* dir = std::getenv("STELE_BENCH_DIR");
  k.dir = (dir && *dir) ? dir : (std::filesystem::temp_directory_path() / "stele-http-bench");
  k.dir = std::filesystem::absolute(k.dir).string();
  k.stele = STELE_HTTP_BENCH_STELE;
  k.guests = STELE_HTTP_BENCH_GUESTS;
  k.js_guests = STELE_HTTP_BENCH_JS_GUESTS;
  const char* kind = std::getenv("STELE_HTTP_GUESTS");
  k.js = kind != nullptr && std::string(kind) == "js";
  return k;
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "stele_http_bench: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);  // a running server gets SIGKILL (PR_SET_PDEATHSIG, server_process.cc)
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string FreshRunDir(const Knobs& knobs, const std::string& name) {
  const std::filesystem::path path = std::filesystem::path(knobs.dir) / name;
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path.string();
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(rank);
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

uint32_t ClientThreads(const Knobs& knobs, uint32_t n) {
  n = std::max(n, 1u);
  return knobs.connections == 0 ? n : std::min(knobs.connections, n);
}

Json OkValue(const Json& result, const std::string& what) {
  if (!result.is_object() || !result.contains("ok")) {
    Die(what + ": expected an ok result, got " + result.dump());
  }
  return result["ok"];
}

}  // namespace stele::http_bench

int main(int argc, char** argv) {
  using namespace stele::http_bench;
  Knobs knobs = Knobs::FromEnv();
  std::vector<std::string> selected;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--stele" || arg == "--guests") && i + 1 < argc) {
      (arg == "--stele" ? knobs.stele : knobs.guests) = argv[++i];
    } else {
      selected.push_back(arg);
    }
  }
  if (knobs.stele.empty() || knobs.guests.empty()) {
    std::fprintf(stderr, "stele_http_bench: --stele PATH and --guests DIR are required\n");
    return 2;
  }
  const std::map<std::string, std::function<Metrics(const Knobs&)>> workloads = {
      {"W1", RunW1}, {"W2", RunW2}, {"W3", RunW3}, {"W4", RunW4}, {"W5", RunW5}, {"idle", RunIdle},
  };
  if (selected.empty()) selected = {"warmup", "W1", "W2", "W3", "W4", "W5", "idle"};
  for (const auto& name : selected) {
    if (name != "warmup" && !workloads.count(name)) {
      std::fprintf(stderr, "unknown workload `%s` (warmup W1 W2 W3 W4 W5 idle)\n", name.c_str());
      return 2;
    }
  }
  std::printf("# stele-http settings=%s connections=%s repeat=%u guests=%s\n",
              knobs.tuned ? "tuned" : "defaults",
              knobs.connections == 0 ? "all" : std::to_string(knobs.connections).c_str(),
              knobs.repeat, knobs.js ? "js" : "wasm");
  for (const auto& name : selected) {
    if (name == "warmup") {
      RunWarmup(knobs);  // not reported
      continue;
    }
    std::vector<Metrics> runs;
    for (uint32_t r = 0; r < knobs.repeat; ++r) runs.push_back(workloads.at(name)(knobs));
    Report(name, runs);
  }
  return 0;
}
