// W5 (recovery): submit, SIGKILL the server mid-sleep, restart it on the
// same data dir, wait for every result; the effects file written by the
// exec activity tells which steps ran twice or never.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/http/http_bench.h"

namespace stele::http_bench {
namespace {

constexpr double kResultLimitS = 120;  // a workflow not done by then is lost

// Runs body(i, client) for i in [0, n) over `threads` connections.
template <class F>
void OverConnections(uint32_t threads, int port, uint32_t n, F body) {
  std::atomic<uint32_t> next{0};
  std::vector<std::thread> pool;
  for (uint32_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      ApiClient client(port);
      for (uint32_t i = next++; i < n; i = next++) body(i, client);
    });
  }
  for (auto& thread : pool) thread.join();
}

}  // namespace

Metrics RunW5(const Knobs& knobs) {
  ServerProcess server(knobs, FreshRunDir(knobs, "w5"));
  server.Start();
  ApiClient::TakeRefusals();
  const uint32_t n = knobs.w5_n;
  const uint32_t threads = ClientThreads(knobs, n);
  std::vector<std::string> ids(n);

  const double first_submit = NowSeconds();
  OverConnections(threads, server.port(), n, [&](uint32_t i, ApiClient& client) {
    ids[i] = client.Submit(kW5, Json::array({knobs.w5_sleep_ms}));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(knobs.w5_kill_after_ms));
  const double kill_at = NowSeconds();
  server.Kill();
  std::this_thread::sleep_for(std::chrono::milliseconds(knobs.w5_down_ms));
  const double restart_at = NowSeconds();
  const auto restart_wall = std::chrono::system_clock::now();
  server.Start();

  std::atomic<uint32_t> finished{0};
  std::mutex mu;
  double done_at = restart_at;
  std::vector<double> result_at;  // seconds after the restart
  OverConnections(threads, server.port(), n, [&](uint32_t i, ApiClient& client) {
    auto result = client.WaitResult(ids[i], kResultLimitS);
    if (!result) return;  // lost
    const Json value = OkValue(*result, ids[i]);
    if (!value.is_number_unsigned() || value.get<uint64_t>() != 1) {
      Die("W5 " + ids[i] + ": expected 1, got " + value.dump());
    }
    ++finished;
    const double now = NowSeconds();
    std::lock_guard lock(mu);
    done_at = std::max(done_at, now);
    result_at.push_back(now - restart_at);
  });
  server.Stop();
  // When the last step ran, on the server's side: the effects file's last
  // write (each workflow finishes right after its step), whatever its
  // client's backoffs.
  std::error_code ec;
  const auto effects_written = std::filesystem::last_write_time(server.effects_path(), ec);
  const double steps_done =
      ec ? -1
         : std::chrono::duration<double>(std::chrono::file_clock::to_sys(effects_written) -
                                         restart_wall)
               .count();

  std::map<std::string, int> ran;
  std::ifstream effects(server.effects_path());
  for (std::string line; std::getline(effects, line);) {
    if (!line.empty()) ++ran[line];
  }
  int twice = 0, never = 0;
  for (const auto& id : ids) {
    auto it = ran.find(id);
    const int count = it == ran.end() ? 0 : it->second;
    if (count > 1) ++twice;
    if (count == 0) ++never;
  }
  if (ran.size() > ids.size() - static_cast<size_t>(never)) {
    Die("W5: the effects file names workflows that were not submitted");
  }
  return {
      {"after_restart", {done_at - restart_at, "s"}},
      {"after_restart_p50", {Percentile(result_at, 50), "s"}},
      {"last_step_after_restart", {steps_done, "s"}},
      {"after_kill", {done_at - kill_at, "s"}},
      {"after_first_submit", {done_at - first_submit, "s"}},
      {"lost", {static_cast<double>(n - finished.load()), "wf"}},
      {"step_ran_twice", {static_cast<double>(twice), "wf"}},
      {"step_never_ran", {static_cast<double>(never), "wf"}},
      {"refused_503", {static_cast<double>(ApiClient::TakeRefusals()), "answers"}},
  };
}

}  // namespace stele::http_bench
