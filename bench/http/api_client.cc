// ApiClient and the fan-out over client threads.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/http/http_bench.h"

namespace stele::http_bench {
namespace {

constexpr int kResultWaitS = 30;  // per /result call; below max_result_wait_secs (60)
constexpr double kResultLimitS = 600;

}  // namespace

struct ApiClient::Impl {
  explicit Impl(int port) : http("127.0.0.1", port) {
    http.set_keep_alive(true);
    // httplib sends a POST's headers and body in two writes: with Nagle on,
    // the body waits for the server's delayed ACK (~40 ms per submission).
    // Every real client sets it (the CLI does, api_client.cc).
    http.set_tcp_nodelay(true);
    http.set_connection_timeout(std::chrono::seconds(5));
    http.set_read_timeout(std::chrono::seconds(kResultWaitS + 30));
    http.set_write_timeout(std::chrono::seconds(30));
  }
  httplib::Client http;
};

ApiClient::ApiClient(int port) : impl_(new Impl(port)) {}
ApiClient::~ApiClient() { delete impl_; }

std::string ApiClient::Submit(const char* ffqn, const Json& params) {
  const Json body = {{"ffqn", ffqn}, {"params", params}};
  auto res = impl_->http.Post("/v1/executions", body.dump(), "application/json");
  if (!res) Die(std::string("POST /v1/executions: ") + httplib::to_string(res.error()));
  if (res->status != 201) {
    Die("POST /v1/executions: " + std::to_string(res->status) + " " + res->body);
  }
  auto reply = Json::parse(res->body, nullptr, false);
  if (reply.is_discarded() || !reply.contains("execution_id")) {
    Die("POST /v1/executions: unexpected reply " + res->body);
  }
  return reply["execution_id"].get<std::string>();
}

std::optional<Json> ApiClient::WaitResult(const std::string& id, double limit_s) {
  const double deadline = NowSeconds() + limit_s;
  const std::string path =
      "/v1/executions/" + id + "/result?timeout=" + std::to_string(kResultWaitS);
  while (NowSeconds() < deadline) {
    auto res = impl_->http.Get(path);
    if (!res) {  // the server is down (W5) or restarting: retry until the limit
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    if (res->status == 408) continue;
    if (res->status != 200) Die("GET " + path + ": " + std::to_string(res->status) + " " + res->body);
    auto reply = Json::parse(res->body, nullptr, false);
    if (reply.is_discarded() || !reply.contains("result")) {
      Die("GET " + path + ": unexpected reply " + res->body);
    }
    return reply["result"];
  }
  return std::nullopt;
}

FanOut SubmitAndWaitAll(const Knobs& knobs, int port, const char* ffqn, const Json& params,
                        uint32_t n) {
  const uint32_t threads = std::clamp<uint32_t>(knobs.connections, 1, std::max(n, 1u));
  FanOut out;
  out.ids.resize(n);
  out.values.resize(n);
  std::atomic<uint32_t> next{0};
  std::atomic<uint32_t> submitting{threads};
  std::mutex mu;
  out.first_submit = NowSeconds();
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (uint32_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      ApiClient client(port);
      std::vector<uint32_t> mine;
      for (uint32_t i = next++; i < n; i = next++) {
        out.ids[i] = client.Submit(ffqn, params);
        mine.push_back(i);
      }
      if (--submitting == 0) out.all_acknowledged = NowSeconds();
      double local_last = 0;
      for (uint32_t i : mine) {
        auto result = client.WaitResult(out.ids[i], kResultLimitS);
        if (!result) Die(out.ids[i] + " did not finish within 600 s");
        out.values[i] = OkValue(*result, out.ids[i]);
        local_last = NowSeconds();
      }
      std::lock_guard lock(mu);
      out.last_result = std::max(out.last_result, local_last);
    });
  }
  for (auto& thread : pool) thread.join();
  return out;
}

}  // namespace stele::http_bench
