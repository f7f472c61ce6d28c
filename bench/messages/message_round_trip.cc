// Message round trip on libstele (BENCHMARKS.md, "Message round trip"): a
// workflow loops receive("ping") → publish("pong", n); the bench sends a
// ping and waits (Engine::GetValue with after_version) until it reads the
// pong, STELE_BENCH_MESSAGES times (default 500) after 20 warm-up round
// trips. Prints p50 / p99 / max of send → reader sees the value, as
// `stele messages <metric> <value> <unit>` lines. SQLite synchronous=FULL
// in STELE_BENCH_DIR (default /tmp); the workflow waits warm (the default).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "stele/stele.h"

namespace {

using Clock = std::chrono::steady_clock;

stele::Task<stele::Json> PingPong(stele::WorkflowContext& ctx, stele::Json params) {
  const int n = params[0].get<int>();
  for (int i = 0; i < n; ++i) {
    auto ping = co_await ctx.receive("ping");
    if (!ping) co_return stele::Json("receive failed");
    co_await ctx.publish("pong", ping->body);
  }
  co_return stele::Json(n);
}

int Env(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

}  // namespace

int main() {
  const int measured = Env("STELE_BENCH_MESSAGES", 500);
  const int warmup = 20;
  const char* dir_env = std::getenv("STELE_BENCH_DIR");
  const std::filesystem::path dir = std::filesystem::path(dir_env ? dir_env : "/tmp") /
                                    ("stele_messages_bench_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  stele::EngineOptions options;
  options.sqlite_path = (dir / "bench.sqlite").string();
  auto engine = stele::Engine::Open(options);
  if (!engine) {
    std::fprintf(stderr, "open: %s\n", engine.error().ToString().c_str());
    return 1;
  }
  auto& e = **engine;
  if (!e.RegisterWorkflow("bench:messages/wf.ping-pong", PingPong) || !e.Start()) return 1;
  auto id = e.Submit("bench:messages/wf.ping-pong", stele::Params(measured + warmup));
  if (!id) return 1;
  std::vector<double> ms;
  std::optional<uint32_t> after;
  for (int i = 0; i < measured + warmup; ++i) {
    const auto start = Clock::now();
    if (!e.SendMessage(*id, "ping", stele::Json(i))) return 1;
    for (;;) {
      auto pong = e.GetValue(*id, "pong", after, std::chrono::seconds(30));
      if (!pong) {
        std::fprintf(stderr, "pong %d: %s\n", i, pong.error().ToString().c_str());
        return 1;
      }
      after = pong->version;
      if (pong->value == stele::Json(i)) break;
    }
    const double elapsed = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (i >= warmup) ms.push_back(elapsed);
  }
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    return ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))];
  };
  std::printf("stele messages round_trips %zu count\n", ms.size());
  std::printf("stele messages round_trip_p50 %.2f ms\n", at(0.50));
  std::printf("stele messages round_trip_p99 %.2f ms\n", at(0.99));
  std::printf("stele messages round_trip_max %.2f ms\n", ms.back());
  e.Stop();
  std::filesystem::remove_all(dir);
  return 0;
}
