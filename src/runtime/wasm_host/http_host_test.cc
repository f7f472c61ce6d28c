// The HTTP client host function of wasm activities against a real HTTP
// server on 127.0.0.1 (httplib), through the real executor on SQLite: what
// the guest receives, what is refused before any byte is sent, and the
// HttpClientTraces stored on the attempt's events.
#include "runtime/wasm_host/http_host.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/wasm_host/wasm_host_test_util.h"

namespace stele::runtime::wasm_host::testing {
namespace {

using core::Json;

TEST(HostAllowedTest, EmptyListAllowsEverything) {
  EXPECT_TRUE(HostAllowed({}, "example.com", 443));
}

TEST(HostAllowedTest, ExactHostsPortsAndSubdomains) {
  const std::vector<std::string> allowed = {"api.test", "db.test:5432", "*.cdn.test", "[::1]:8080",
                                            "127.0.0.1"};
  EXPECT_TRUE(HostAllowed(allowed, "api.test", 80));
  EXPECT_TRUE(HostAllowed(allowed, "api.test", 443));
  EXPECT_FALSE(HostAllowed(allowed, "evil-api.test", 80));
  EXPECT_FALSE(HostAllowed(allowed, "api.test.evil", 80));
  EXPECT_TRUE(HostAllowed(allowed, "db.test", 5432));
  EXPECT_FALSE(HostAllowed(allowed, "db.test", 5433));
  EXPECT_TRUE(HostAllowed(allowed, "a.cdn.test", 443));
  EXPECT_TRUE(HostAllowed(allowed, "a.b.cdn.test", 443));
  EXPECT_FALSE(HostAllowed(allowed, "cdn.test", 443));
  EXPECT_FALSE(HostAllowed(allowed, "xcdn.test", 443));
  EXPECT_TRUE(HostAllowed(allowed, "::1", 8080));
  EXPECT_FALSE(HostAllowed(allowed, "::1", 8081));
  EXPECT_TRUE(HostAllowed(allowed, "127.0.0.1", 9));
  EXPECT_TRUE(HostAllowed({"API.Test"}, "api.test", 80));
}

// A loopback HTTP server whose /hang handler blocks until the test ends.
class LocalServer {
 public:
  LocalServer() {
    server_.Get("/hello", [this](const httplib::Request& req, httplib::Response& res) {
      ++hits_;
      res.set_header("X-Reply", "yes");
      res.set_content("hi " + req.get_header_value("X-Name"), "text/plain");
    });
    server_.Post("/echo", [this](const httplib::Request& req, httplib::Response& res) {
      ++hits_;
      res.status = 201;
      res.set_content(req.body, "application/json");
    });
    server_.Get("/big", [this](const httplib::Request&, httplib::Response& res) {
      ++hits_;
      res.set_content(std::string(5000, 'x'), "text/plain");
    });
    server_.Get("/hang", [this](const httplib::Request&, httplib::Response& res) {
      ++hits_;
      std::unique_lock lock(mu_);
      released_cv_.wait_for(lock, std::chrono::seconds(30), [&] { return released_; });
      res.set_content("late", "text/plain");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LocalServer() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    released_cv_.notify_all();
    server_.stop();
    thread_.join();
  }
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  int port() const { return port_; }
  int hits() const { return hits_; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> hits_{0};
  std::mutex mu_;
  std::condition_variable released_cv_;
  bool released_ = false;
};

// A loopback port with no listener: bound (so the kernel picks a free one)
// and closed again before anyone connects.
int UnusedLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "cannot bind a loopback socket";
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

class HttpHostTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override {
    env_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  Env& Start(HttpClientConfig http = {}, uint32_t max_retries = 0,
             std::chrono::milliseconds lock = std::chrono::milliseconds(5000)) {
    EnvConfig config;
    config.workflows = LoadOrDie(STELE_TEST_WORKFLOWS_WASM, "test_workflows", GuestKind::kWorkflow);
    config.activities =
        LoadOrDie(STELE_TEST_ACTIVITIES_WASM, "test_activities", GuestKind::kActivity);
    config.activity_max_retries = max_retries;
    config.activity_lock = lock;
    config.activity_options.http = std::move(http);
    env_ = std::make_unique<Env>(dir_, std::move(config));
    return *env_;
  }
  // Runs testing:wasm/act.fetch with `request` and returns its result.
  core::SupportedFunctionReturnValue Fetch(const Json& request,
                                           core::ExecutionId* id_out = nullptr) {
    auto id = env_->Submit("testing:wasm/act.fetch", Json::array({request.dump()}));
    if (id_out != nullptr) *id_out = id;
    return env_->Await(id, std::chrono::seconds(60));
  }
  // The traces on every event of `id` that carries some.
  std::vector<core::HttpClientTrace> Traces(const core::ExecutionId& id) {
    std::vector<core::HttpClientTrace> out;
    for (const auto& e : env_->Events(id)) {
      std::visit(
          [&](const auto& request) {
            if constexpr (requires { request.http_client_traces; }) {
              if (request.http_client_traces) {
                out.insert(out.end(), request.http_client_traces->begin(),
                           request.http_client_traces->end());
              }
            }
          },
          e.event);
    }
    return out;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Env> env_;
  LocalServer server_;
};

Json OkResponse(const core::SupportedFunctionReturnValue& v) {
  const auto* ok = std::get_if<core::ReturnValueOk>(&v);
  if (ok == nullptr || !ok->ok) {
    ADD_FAILURE() << "not ok";
    return nullptr;
  }
  return Json::parse(ok->ok->get<std::string>());
}
std::string ErrMessage(const core::SupportedFunctionReturnValue& v) {
  const auto* err = std::get_if<core::ReturnValueErr>(&v);
  if (err == nullptr || !err->err || !err->err->is_string()) {
    ADD_FAILURE() << "not an err string";
    return "";
  }
  return err->err->get<std::string>();
}

TEST_F(HttpHostTest, GetReturnsStatusHeadersAndBodyAndIsTraced) {
  Start();
  core::ExecutionId id = core::ExecutionId::Generate();
  Json response = OkResponse(
      Fetch(Json{{"url", server_.Url("/hello")}, {"headers", {{"X-Name", "Ada"}}}}, &id));
  EXPECT_EQ(response["status"], 200);
  EXPECT_EQ(response["body"], "hi Ada");
  bool saw_header = false;
  for (const auto& h : response["headers"]) saw_header |= h[0] == "x-reply" && h[1] == "yes";
  EXPECT_TRUE(saw_header) << response.dump();
  auto traces = Traces(id);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].req.method, "GET");
  EXPECT_EQ(traces[0].req.uri, server_.Url("/hello"));
  ASSERT_TRUE(traces[0].resp);
  EXPECT_EQ(std::get<uint16_t>(traces[0].resp->status), 200);
  EXPECT_LE(traces[0].req.sent_at, traces[0].resp->finished_at);
}

TEST_F(HttpHostTest, PostSendsTheBody) {
  Start();
  Json response = OkResponse(Fetch(
      Json{{"method", "POST"}, {"url", server_.Url("/echo")}, {"body", R"({"a": "<b>\"q\""})"}}));
  EXPECT_EQ(response["status"], 201);
  EXPECT_EQ(response["body"], R"({"a": "<b>\"q\""})");
}

TEST_F(HttpHostTest, HostOffTheAllowListIsRefusedBeforeAnyRequest) {
  Start(HttpClientConfig{.allowed_hosts = {"api.example.com"}});
  std::string message = ErrMessage(Fetch(Json{{"url", server_.Url("/hello")}}));
  EXPECT_NE(message.find("not on the activity's allowed_hosts"), std::string::npos) << message;
  EXPECT_EQ(server_.hits(), 0);
}

TEST_F(HttpHostTest, AllowListWithTheHostAndPortPasses) {
  Start(HttpClientConfig{.allowed_hosts = {"127.0.0.1:" + std::to_string(server_.port())}});
  EXPECT_EQ(OkResponse(Fetch(Json{{"url", server_.Url("/hello")}}))["status"], 200);
}

TEST_F(HttpHostTest, MalformedRequestsAreErrorsNotTraps) {
  Start();
  EXPECT_NE(ErrMessage(Fetch(Json("just a string"))).find("JSON object"), std::string::npos);
  EXPECT_NE(ErrMessage(Fetch(Json{{"method", "GET"}})).find("`url`"), std::string::npos);
  EXPECT_NE(ErrMessage(Fetch(Json{{"url", "ftp://127.0.0.1/x"}})).find("only http and https"),
            std::string::npos);
  EXPECT_NE(ErrMessage(Fetch(Json{{"url", "file:///etc/passwd"}})).find("only http and https"),
            std::string::npos);
  EXPECT_NE(ErrMessage(Fetch(Json{{"url", "http://"}})).find("url"), std::string::npos);
  EXPECT_NE(
      ErrMessage(Fetch(Json{{"url", server_.Url("/hello")}, {"method", "GE T"}})).find("method"),
      std::string::npos);
  EXPECT_NE(ErrMessage(Fetch(Json{{"url", server_.Url("/hello")},
                                  {"headers", {{"X-A", "b\r\nInjected: yes"}}}}))
                .find("invalid header"),
            std::string::npos);
  EXPECT_NE(ErrMessage(Fetch(Json{{"url", server_.Url("/hello")}, {"timeout_ms", -5}}))
                .find("timeout_ms"),
            std::string::npos);
  EXPECT_EQ(server_.hits(), 0);
}

TEST_F(HttpHostTest, ConnectionRefusedIsAnErrRetriedWithItsTrace) {
  // A port nobody listens on: bind, note the port, close.
  const int closed_port = UnusedLoopbackPort();
  Start({}, /*max_retries=*/1);
  core::ExecutionId id = core::ExecutionId::Generate();
  std::string url = "http://127.0.0.1:" + std::to_string(closed_port) + "/x";
  std::string message = ErrMessage(Fetch(Json{{"url", url}}, &id));
  EXPECT_FALSE(message.empty());
  // One failed attempt (TemporarilyFailed) and the final one (Finished),
  // each with the request and its transport error.
  auto traces = Traces(id);
  ASSERT_EQ(traces.size(), 2u);
  for (const auto& t : traces) {
    EXPECT_EQ(t.req.uri, url);
    ASSERT_TRUE(t.resp);
    EXPECT_TRUE(std::holds_alternative<std::string>(t.resp->status));
  }
  EXPECT_EQ(CountEvents<core::TemporarilyFailed>(env_->Events(id)), 1u);
}

TEST_F(HttpHostTest, ResponseOverTheCapIsAnErr) {
  Start(HttpClientConfig{.allowed_hosts = {}, .max_response_body_bytes = 1000});
  std::string message = ErrMessage(Fetch(Json{{"url", server_.Url("/big")}}));
  EXPECT_NE(message.find("over 1000 bytes"), std::string::npos) << message;
}

TEST_F(HttpHostTest, HungServerIsCutOffAtTheLockDeadline) {
  Start({}, /*max_retries=*/0, /*lock=*/std::chrono::milliseconds(300));
  core::ExecutionId id = core::ExecutionId::Generate();
  auto result = Fetch(Json{{"url", server_.Url("/hang")}}, &id);
  const auto* failure = std::get_if<core::FinishedExecutionError>(&result);
  ASSERT_NE(failure, nullptr);
  EXPECT_EQ(failure->kind, core::ExecutionFailureKind::kTimedOut);
  EXPECT_GE(server_.hits(), 1);
}

TEST_F(HttpHostTest, RequestTimeoutIsAnErr) {
  Start();
  std::string message = ErrMessage(Fetch(Json{{"url", server_.Url("/hang")}, {"timeout_ms", 200}}));
  EXPECT_NE(message.find("imeout"), std::string::npos) << message;
}

}  // namespace
}  // namespace stele::runtime::wasm_host::testing
