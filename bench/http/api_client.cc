// ApiClient and the fan-out over client threads.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/http/http_bench.h"

namespace stele::http_bench {
namespace {

constexpr int kResultWaitS = 30;  // per /result call; below max_result_wait_secs (60)
constexpr double kResultLimitS = 600;
constexpr double kSubmitLimitS = 600;

std::atomic<uint64_t> g_refusals{0};

// After a 503: counts it and waits what its Retry-After asks (seconds; 1 s
// when absent or unreadable), as a well-behaved client does.
void BackOff(const httplib::Result& res) {
  ++g_refusals;
  long seconds = 1;
  if (res->has_header("Retry-After")) {
    seconds =
        std::clamp(std::strtol(res->get_header_value("Retry-After").c_str(), nullptr, 10), 0L, 60L);
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
}

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

namespace {

// A fresh top-level id, E_<ULID>: 48 bits of milliseconds, 80 random bits,
// in Crockford's base32. With the id chosen here a submission can be
// retried after any failure: the server answers the same id again (200)
// instead of creating a second execution (docs/api.md).
std::string NewExecutionId() {
  static constexpr char kAlphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  thread_local std::mt19937_64 random{std::random_device{}()};
  const auto ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                            .count());
  const uint64_t r1 = random(), r2 = random();
  // 130 bits: 2 zero bits, 48 of time, 80 of randomness.
  auto bit = [&](int i) -> unsigned {  // i in [0, 130), most significant first
    if (i < 2) return 0;
    if (i < 50) return (ms >> (49 - i)) & 1;
    if (i < 114) return (r1 >> (113 - i)) & 1;
    return (r2 >> (129 - i)) & 1;
  };
  std::string id = "E_";
  for (int c = 0; c < 26; ++c) {
    unsigned v = 0;
    for (int b = 0; b < 5; ++b) v = (v << 1) | bit(c * 5 + b);
    id += kAlphabet[v];
  }
  return id;
}

}  // namespace

std::string ApiClient::Submit(const char* ffqn, const Json& params) {
  const std::string id = NewExecutionId();
  const Json body = {{"ffqn", ffqn}, {"params", params}, {"execution_id", id}};
  const double deadline = NowSeconds() + kSubmitLimitS;
  auto res = impl_->http.Post("/v1/executions", body.dump(), "application/json");
  while (NowSeconds() < deadline) {
    if (!res) {  // not sent, or the answer was lost: the same id is safe to send again
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } else if (res->status == 503) {
      BackOff(res);
    } else {
      break;
    }
    res = impl_->http.Post("/v1/executions", body.dump(), "application/json");
  }
  if (!res) Die(std::string("POST /v1/executions: ") + httplib::to_string(res.error()));
  if (res->status != 201 && res->status != 200) {
    Die("POST /v1/executions: " + std::to_string(res->status) + " " + res->body);
  }
  auto reply = Json::parse(res->body, nullptr, false);
  if (reply.is_discarded() || !reply.contains("execution_id") || reply["execution_id"] != id) {
    Die("POST /v1/executions: unexpected reply " + res->body);
  }
  return id;
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
    if (res->status == 503) {
      BackOff(res);
      continue;
    }
    if (res->status != 200)
      Die("GET " + path + ": " + std::to_string(res->status) + " " + res->body);
    auto reply = Json::parse(res->body, nullptr, false);
    if (reply.is_discarded() || !reply.contains("result")) {
      Die("GET " + path + ": unexpected reply " + res->body);
    }
    return reply["result"];
  }
  return std::nullopt;
}

uint64_t ApiClient::TakeRefusals() { return g_refusals.exchange(0); }

FanOut SubmitAndWaitAll(const Knobs& knobs, int port, const char* ffqn, const Json& params,
                        uint32_t n) {
  const uint32_t threads = ClientThreads(knobs, n);
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
