// Warm-up, W1–W4 and idle through the HTTP API: one fresh server per run.
#include <cstdio>
#include <string>
#include <vector>

#include "bench/http/http_bench.h"

namespace stele::http_bench {
namespace {

constexpr double kResultLimitS = 600;

// The ok value of `ffqn(params)`, submitted and awaited on one connection,
// and the milliseconds from submit to result.
struct Single {
  Json value;
  double total_ms = 0;
};
Single SubmitOne(const ServerProcess& server, const char* ffqn, const Json& params) {
  ApiClient client(server.port());
  const double start = NowSeconds();
  const std::string id = client.Submit(ffqn, params);
  auto result = client.WaitResult(id, kResultLimitS);
  const double total_ms = (NowSeconds() - start) * 1000;
  if (!result) Die(id + " did not finish within 600 s");
  return {OkValue(*result, id), total_ms};
}

void ExpectU64(const Json& value, uint64_t expected, const std::string& what) {
  if (!value.is_number_unsigned() || value.get<uint64_t>() != expected) {
    Die(what + ": expected " + std::to_string(expected) + ", got " + value.dump());
  }
}

}  // namespace

Metrics RunWarmup(const Knobs& knobs) {
  ServerProcess server(knobs, FreshRunDir(knobs, "warmup"));
  server.Start();
  auto fan = SubmitAndWaitAll(knobs, server.port(), kW1, Json::array(), knobs.warmup_n);
  for (const auto& v : fan.values) ExpectU64(v, 1, "warm-up W1 result");
  server.Stop();
  return {{"elapsed", {fan.last_result - fan.first_submit, "s"}}};
}

Metrics RunW1(const Knobs& knobs) {
  ServerProcess server(knobs, FreshRunDir(knobs, "w1"));
  server.Start();
  ApiClient::TakeRefusals();
  auto fan = SubmitAndWaitAll(knobs, server.port(), kW1, Json::array(), knobs.w1_n);
  for (size_t i = 0; i < fan.values.size(); ++i) ExpectU64(fan.values[i], 1, "W1 " + fan.ids[i]);
  const double elapsed = fan.last_result - fan.first_submit;
  const double peak_rss = static_cast<double>(server.StatusBytes("VmHWM")) / (1 << 20);
  // As bench/workloads: the file once the server's close has checkpointed
  // and removed the WAL (reused, not shrunk, so its size while open is the
  // run's high-water mark, not the rows), the WAL apart.
  const double wal = static_cast<double>(server.WalBytes()) / (1 << 20);
  const double cpu = server.CpuSeconds();
  server.Stop();
  const double disk = static_cast<double>(server.DatabaseBytes()) / knobs.w1_n;
  return {
      {"server_cpu", {cpu, "s"}},
      {"throughput", {knobs.w1_n / elapsed, "wf/s"}},
      {"elapsed", {elapsed, "s"}},
      {"submit", {fan.all_acknowledged - fan.first_submit, "s"}},
      {"peak_rss", {peak_rss, "MiB"}},
      {"disk_per_workflow", {disk, "B"}},
      {"wal_at_end", {wal, "MiB"}},
      {"refused_503", {static_cast<double>(ApiClient::TakeRefusals()), "answers"}},
  };
}

Metrics RunW2(const Knobs& knobs) {
  ServerProcess server(knobs, FreshRunDir(knobs, "w2"));
  server.Start();
  auto run = SubmitOne(server, kW2, Json::array({knobs.w2_steps}));
  ExpectU64(run.value, knobs.w2_steps, "W2 result");
  server.Stop();
  return {{"total", {run.total_ms, "ms"}}, {"per_step", {run.total_ms / knobs.w2_steps, "ms"}}};
}

Metrics RunW3(const Knobs& knobs) {
  ServerProcess server(knobs, FreshRunDir(knobs, "w3"));
  server.Start();
  auto run = SubmitOne(server, kW3, Json::array({knobs.w3_children}));
  ExpectU64(run.value, knobs.w3_children, "W3 result");
  server.Stop();
  return {{"total", {run.total_ms, "ms"}}, {"per_child", {run.total_ms / knobs.w3_children, "ms"}}};
}

Metrics RunW4(const Knobs& knobs) {
  ServerProcess server(knobs, FreshRunDir(knobs, "w4"));
  server.Start();
  ApiClient::TakeRefusals();
  auto fan =
      SubmitAndWaitAll(knobs, server.port(), kW4, Json::array({knobs.w4_sleep_ms}), knobs.w4_n);
  std::vector<double> lateness_ms;
  lateness_ms.reserve(fan.values.size());
  for (size_t i = 0; i < fan.values.size(); ++i) {
    const Json& v = fan.values[i];
    // t1 - t0 - sleep: negative would mean the sleep ended early.
    if (!v.is_number_integer() || v.get<int64_t>() < 0) {
      Die("W4 " + fan.ids[i] + ": expected a lateness >= 0 µs, got " + v.dump());
    }
    lateness_ms.push_back(static_cast<double>(v.get<int64_t>()) / 1000.0);
  }
  const double elapsed = fan.last_result - fan.first_submit;
  const double cpu = server.CpuSeconds();
  server.Stop();
  return {
      {"server_cpu", {cpu, "s"}},
      {"p50", {Percentile(lateness_ms, 50), "ms"}},
      {"p99", {Percentile(lateness_ms, 99), "ms"}},
      {"max", {Percentile(lateness_ms, 100), "ms"}},
      {"elapsed", {elapsed, "s"}},
      {"submit", {fan.all_acknowledged - fan.first_submit, "s"}},
      {"refused_503", {static_cast<double>(ApiClient::TakeRefusals()), "answers"}},
  };
}

Metrics RunIdle(const Knobs& knobs) {
  ServerProcess server(knobs, FreshRunDir(knobs, "idle"));
  server.Start();
  auto run = SubmitOne(server, kW1, Json::array());
  ExpectU64(run.value, 1, "idle W1 result");
  const double rss = static_cast<double>(server.StatusBytes("VmRSS")) / (1 << 20);
  server.Stop();
  return {{"rss", {rss, "MiB"}}};
}

}  // namespace stele::http_bench
