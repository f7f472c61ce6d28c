// Result and value waits that hold no thread (api_waits.cc): thousands of
// long polls on a real server over 127.0.0.1, a client that goes away
// mid-wait, a timeout, and a value wait. Raw sockets stand in for the
// clients, so that 5000 waits need no 5000 client threads.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "server/api_test_fixture.h"

namespace stele::server {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers
using core::Json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A client connection with one GET sent, read back whole once answered.
class RawWaitClient {
 public:
  RawWaitClient(int port, const std::string& path) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      Close();
      return;
    }
    const std::string request =
        "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      Close();
    }
  }
  ~RawWaitClient() { Close(); }
  RawWaitClient(const RawWaitClient&) = delete;
  RawWaitClient& operator=(const RawWaitClient&) = delete;
  bool ok() const { return fd_ >= 0; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // The whole response (the server closes after it); empty when none came
  // within a bound that only a lost answer reaches.
  std::string ReadAll() {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (fd_ >= 0 && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
};

size_t ThreadsOfThisProcess() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

class ApiAsyncWaitsTest : public ApiTest {
 protected:
  void SetUp() override {
    StartServer("max_connections = 12000\nmax_waiters = 11000\nmax_result_wait_secs = 3600\n");
  }
  // Whether /metrics shows `n` waiters within a bound that only a leak
  // reaches.
  bool WaitersBecome(size_t n) {
    const std::string line = "stele_http_waiters " + std::to_string(n) + "\n";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      auto m = Get("/metrics");
      if (m && m->body.find(line) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  std::string Parked() {
    return Submit({{"ffqn", kEcho}, {"params", {"x"}}, {"scheduled_at", "2999-01-01T00:00:00Z"}});
  }
};

TEST_F(ApiAsyncWaitsTest, ThousandsOfResultWaitsHoldNoThreadAndAllGetTheirResult) {
  constexpr int kExecutions = 50;
  constexpr int kWaitsEach = 100;  // 5000 waits in all
  std::vector<std::string> ids;
  for (int i = 0; i < kExecutions; ++i) ids.push_back(Parked());
  const size_t threads_before = ThreadsOfThisProcess();
  std::vector<std::unique_ptr<RawWaitClient>> clients;
  for (int i = 0; i < kExecutions * kWaitsEach; ++i) {
    clients.push_back(std::make_unique<RawWaitClient>(
        server_->port(), "/v1/executions/" + ids[i % kExecutions] + "/result?timeout=3600"));
    ASSERT_TRUE(clients.back()->ok()) << i;
  }
  ASSERT_TRUE(WaitersBecome(kExecutions * kWaitsEach));
  // A thread per wait would add 5000; the waits pool and the workers stay
  // far below that.
  EXPECT_LT(ThreadsOfThisProcess(), threads_before + 500);

  for (const std::string& id : ids) {
    EXPECT_EQ(Body(Put("/v1/executions/" + id + "/cancel", Json::object()))["outcome"],
              "cancelled");
  }
  for (int i = 0; i < kExecutions * kWaitsEach; ++i) {
    std::string response = clients[i]->ReadAll();
    ASSERT_THAT(response, StartsWith("HTTP/1.1 200")) << i;
    EXPECT_THAT(response, HasSubstr(ids[i % kExecutions])) << i;
    EXPECT_THAT(response, HasSubstr("\"cancelled\"")) << i;
  }
  EXPECT_TRUE(WaitersBecome(0));
}

// Follow streams (api_follow.cc) wait like result waits between their
// reads: more of them than the old pool of waits had threads (1,536),
// each ended by the execution's end; a client that leaves ends its own.
TEST_F(ApiAsyncWaitsTest, FollowStreamsHoldNoThreadAndEndWithTheExecution) {
  constexpr int kStreams = 1600;
  std::string id = Parked();
  const size_t threads_before = ThreadsOfThisProcess();
  std::vector<std::unique_ptr<RawWaitClient>> clients;
  for (int i = 0; i < kStreams; ++i) {
    clients.push_back(
        std::make_unique<RawWaitClient>(server_->port(), "/v1/executions/" + id + "/follow"));
    ASSERT_TRUE(clients.back()->ok()) << i;
  }
  ASSERT_TRUE(WaitersBecome(kStreams));
  EXPECT_THAT(Get("/metrics")->body,
              HasSubstr("stele_follow_streams " + std::to_string(kStreams) + "\n"));
  EXPECT_LT(ThreadsOfThisProcess(), threads_before + 500);
  clients.back().reset();  // this client leaves: its stream ends, its slot goes
  ASSERT_TRUE(WaitersBecome(kStreams - 1));

  EXPECT_EQ(Body(Put("/v1/executions/" + id + "/cancel", Json::object()))["outcome"], "cancelled");
  for (int i = 0; i + 1 < kStreams; ++i) {
    std::string response = clients[i]->ReadAll();
    ASSERT_THAT(response, StartsWith("HTTP/1.1 200")) << i;
    EXPECT_THAT(response, HasSubstr("event: state\ndata: {\"status\":\"pending_at\"")) << i;
    EXPECT_THAT(response, HasSubstr("event: finished\ndata: ")) << i;
    EXPECT_THAT(response, HasSubstr("\"cancelled\"")) << i;
  }
  EXPECT_TRUE(WaitersBecome(0));
  EXPECT_THAT(Get("/metrics")->body, HasSubstr("stele_follow_streams 0\n"));
}

TEST_F(ApiAsyncWaitsTest, AClientThatLeavesReleasesItsWait) {
  std::string id = Parked();
  {
    RawWaitClient result(server_->port(), "/v1/executions/" + id + "/result?timeout=3600");
    RawWaitClient value(server_->port(), "/v1/executions/" + id + "/values/k?timeout=3600");
    ASSERT_TRUE(result.ok() && value.ok());
    ASSERT_TRUE(WaitersBecome(2));
  }
  // Gone long before the hour is up: the slots (and their watches) are
  // released by the abandonment, not by the timeout.
  EXPECT_TRUE(WaitersBecome(0));
  // The execution still answers a new wait.
  EXPECT_EQ(Body(Put("/v1/executions/" + id + "/cancel", Json::object()))["outcome"], "cancelled");
  EXPECT_EQ(Get("/v1/executions/" + id + "/result?timeout=5")->status, 200);
}

TEST_F(ApiAsyncWaitsTest, AWaitTimesOut) {
  std::string id = Parked();
  auto result = Get("/v1/executions/" + id + "/result?timeout=1");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 408);
  auto value = Get("/v1/executions/" + id + "/values/k?timeout=1");
  ASSERT_TRUE(value);
  EXPECT_EQ(value->status, 408);
  EXPECT_TRUE(WaitersBecome(0));
}

TEST_F(ApiAsyncWaitsTest, AValueWaitEndsWhenTheExecutionFinishesWithoutIt) {
  std::string id = Parked();
  RawWaitClient value(server_->port(), "/v1/executions/" + id + "/values/k?timeout=3600");
  ASSERT_TRUE(value.ok());
  ASSERT_TRUE(WaitersBecome(1));
  EXPECT_EQ(Body(Put("/v1/executions/" + id + "/cancel", Json::object()))["outcome"], "cancelled");
  std::string response = value.ReadAll();
  EXPECT_THAT(response, StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(response, HasSubstr("finished without publishing"));
  EXPECT_TRUE(WaitersBecome(0));
}

}  // namespace
}  // namespace stele::server
