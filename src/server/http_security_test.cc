// The HTTP API against hostile input (docs/reliability.md): limits answer
// with their clear error and leave the database untouched; ids, ffqns and
// query parameters carrying SQL fragments are a 400 (or simply match
// nothing), values carrying them round-trip exactly; the bearer token
// guards every endpoint but /healthz.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "server/reliability_test_util.h"

namespace stele::server {
namespace {

using core::Json;
using ::testing::HasSubstr;
using testing::kAny;
using testing::kEcho;
using ::testing::SizeIs;

const std::vector<std::string>& Hostile() {
  static const std::vector<std::string> values = {
      "'",  "\"",  "'; DROP TABLE t_state;--",     "' OR 1=1 --", "' OR '1'='1",
      "\\", "\\'", std::string("nul\0inside", 10), "%",           "_",
      "$1", "?1",  "\u00e9\u4e2d\U0001F600",       ");--"};
  return values;
}

// Every byte but [A-Za-z0-9] as %XX, so the value reaches the server intact.
std::string PercentEncode(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

class HttpLimitsTest : public testing::ServerTest {
 protected:
  void SetUp() override {
    testing::ServerTest::SetUp();
    ASSERT_TRUE(StartServer("max_body_bytes = 4096\nmax_list_length = 50\n"));
  }
  size_t CountExecutions() {
    return Body(Get("/v1/executions?length=50&show_derived=true"))["executions"].size();
  }
};

TEST_F(HttpLimitsTest, BodyOverTheLimitIs413AndWritesNothing) {
  auto res = Post("/v1/executions", {{"ffqn", kEcho}, {"params", {std::string(5000, 'x')}}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_EQ(ErrorKind(res), "too_large");
  EXPECT_EQ(CountExecutions(), 0u);
  // Just under the limit passes.
  auto ok = Post("/v1/executions", {{"ffqn", kEcho}, {"params", {std::string(3900, 'x')}}});
  EXPECT_EQ(ok->status, 201) << ok->body;
  EXPECT_EQ(CountExecutions(), 1u);
}

TEST_F(HttpLimitsTest, ListLengthOverTheLimitIs400) {
  auto res = Get("/v1/executions?length=51");
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(ErrorKind(res), "validation");
  EXPECT_THAT(ErrorMessage(res), HasSubstr("length"));
  EXPECT_EQ(Get("/v1/executions?length=50")->status, 200);
  const std::string id = core::ExecutionId::Generate().ToString();
  ASSERT_EQ(
      Post("/v1/executions", {{"ffqn", kEcho}, {"params", {"x"}}, {"execution_id", id}})->status,
      201);
  EXPECT_EQ(Get("/v1/executions/" + id + "/events?length=1001")->status, 400);
  EXPECT_EQ(Get("/v1/executions/" + id + "/responses?length=1001")->status, 400);
  EXPECT_EQ(Get("/v1/executions/" + id + "/result?timeout=100000")->status, 400);
}

TEST_F(HttpLimitsTest, HeadersAndUriOverTheLimitAreRefused) {
  auto expect = [&](const httplib::Result& res, int status, const std::string& kind,
                    const std::string& what) {
    ASSERT_TRUE(res) << what;
    EXPECT_EQ(res->status, status) << what << ": " << res->body;
    EXPECT_EQ(ErrorKind(res), kind) << what;
  };
  // httplib refuses a header line over 8 KiB (CPPHTTPLIB_HEADER_MAX_LENGTH)
  // as a malformed request, before it is parsed: a 400 without detail.
  expect(client_->Get("/v1/executions", {{"X-Big", std::string(9000, 'h')}}), 400, "bad_request",
         "a 9000-byte header line");
  // Many lines, each under the line limit: the server's own caps.
  httplib::Headers many;
  for (int i = 0; i < 101; ++i) many.emplace("X-H" + std::to_string(i), "v");
  expect(client_->Get("/v1/executions", many), 431, "too_large", "101 headers");
  httplib::Headers big;
  for (int i = 0; i < 20; ++i) big.emplace("X-H" + std::to_string(i), std::string(4000, 'h'));
  auto sum = client_->Get("/v1/executions", big);
  expect(sum, 431, "too_large", "80 KB of headers");
  EXPECT_THAT(ErrorMessage(sum), HasSubstr("the limits are 100 headers and 65536 bytes"));
  // Just under both: served.
  httplib::Headers under;
  for (int i = 0; i < 90; ++i) under.emplace("X-H" + std::to_string(i), std::string(600, 'h'));
  auto ok = client_->Get("/v1/executions", under);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  // A request target over 8 KiB (CPPHTTPLIB_REQUEST_URI_MAX_LENGTH).
  expect(Get("/v1/executions/E_" + std::string(9000, 'A')), 414, "too_large", "a 9 KiB URI");
  auto long_id = Get("/v1/executions/E_" + std::string(600, 'A'));
  EXPECT_EQ(long_id->status, 400);
  EXPECT_THAT(ErrorMessage(long_id), HasSubstr("too long"));
  // A path over 1 KiB is refused before the routes' regular expressions
  // see it (their matcher recurses per character, on the thread's stack);
  // the query string does not count.
  auto long_path = Get("/v1/executions/E_" + std::string(1100, 'A') + "/result");
  expect(long_path, 414, "too_large", "a 1 KiB path");
  EXPECT_THAT(ErrorMessage(long_path),
              HasSubstr("request path is too long (1124 bytes; the limit is 1024)"));
  EXPECT_EQ(Get("/v1/executions?ffqn_prefix=" + std::string(2000, 'a'))->status, 400)
      << "a long query is no long path";
  // Refused requests wrote nothing, and the auth-free health check is
  // under the same header caps.
  expect(client_->Get("/healthz", many), 431, "too_large", "101 headers on /healthz");
  EXPECT_EQ(CountExecutions(), 0u);
}

class HttpConnectionLimitTest : public testing::ServerTest {
 protected:
  static constexpr int kMax = 4;
  void SetUp() override {
    testing::ServerTest::SetUp();
    ASSERT_TRUE(StartServer("max_connections = " + std::to_string(kMax) + "\nmax_waiters = 2\n"));
  }
};

// A connection that sends a request head one byte every 20 ms and never
// finishes it, until Close.
class SlowClient {
 public:
  explicit SlowClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    thread_ = std::thread([this] {
      std::string head = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
      (void)!::send(fd_, head.data(), head.size(), MSG_NOSIGNAL);
      std::unique_lock lock(mu_);
      while (!cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return closing_; })) {
        (void)!::send(fd_, "a", 1, MSG_NOSIGNAL);
      }
    });
  }
  ~SlowClient() { Close(); }
  bool connected() const { return connected_; }
  void Close() {
    {
      std::lock_guard lock(mu_);
      if (closing_) return;
      closing_ = true;
    }
    cv_.notify_all();
    thread_.join();
    ::close(fd_);
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool closing_ = false;  // guarded by mu_
  std::thread thread_;
};

TEST_F(HttpConnectionLimitTest, ConnectionsOverTheLimitGet503AndTheServerRecovers) {
  std::vector<std::unique_ptr<SlowClient>> slow;
  for (int i = 0; i < kMax; ++i) {
    slow.push_back(std::make_unique<SlowClient>(server_->port()));
    ASSERT_TRUE(slow.back()->connected());
  }
  // Accepted after the slow ones (the accept queue is FIFO): over the limit.
  for (const std::string& path : {std::string("/healthz"), std::string("/v1/executions")}) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(30, 0);
    auto res = c.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 503) << path << ": " << res->body;
    EXPECT_EQ(ErrorKind(res), "overloaded") << path;
    EXPECT_THAT(ErrorMessage(res), HasSubstr("max_connections")) << path;
    EXPECT_EQ(res->get_header_value("Connection"), "close") << path;
    EXPECT_EQ(res->get_header_value("Retry-After"), "1") << path;
  }
  // The slow clients leave; their threads are free again.
  for (auto& s : slow) s->Close();
  bool recovered = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!recovered && std::chrono::steady_clock::now() < deadline) {
    httplib::Client c("127.0.0.1", server_->port());
    auto res = c.Get("/healthz");
    recovered = res && res->status == 200;
    if (!recovered) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(recovered);
  auto ok = Post("/v1/executions", {{"ffqn", kEcho}, {"params", {"after"}}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 201) << ok->body;
  auto metrics = Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body, HasSubstr("stele_http_max_connections 4\n"));
  EXPECT_THAT(metrics->body,
              ::testing::ContainsRegex("stele_http_connections_refused_total [2-9]"));
}

class HttpInjectionTest : public testing::ServerTest {
 protected:
  void SetUp() override {
    testing::ServerTest::SetUp();
    ASSERT_TRUE(StartServer());
  }
};

TEST_F(HttpInjectionTest, HostileIdsAndFfqnsAre400AndTouchNothing) {
  for (const std::string& s : Hostile()) {
    const std::string escaped = PercentEncode(s);
    for (const std::string& path :
         {"/v1/executions/E_" + escaped, "/v1/executions/" + escaped,
          "/v1/executions/E_" + escaped + "/events", "/v1/executions/E_" + escaped + "/result"}) {
      auto res = Get(path);
      ASSERT_TRUE(res) << path;
      EXPECT_THAT(res->status, ::testing::AnyOf(400, 404)) << path << ": " << res->body;
    }
    auto cancel = Put("/v1/executions/E_" + escaped + "/cancel", Json::object());
    EXPECT_THAT(cancel->status, ::testing::AnyOf(400, 404)) << s;
    auto delay = Put("/v1/delays/Delay_" + escaped + "/cancel", Json::object());
    EXPECT_THAT(delay->status, ::testing::AnyOf(400, 404)) << s;
    auto bad_ffqn =
        Post("/v1/executions", {{"ffqn", "test:rel/act." + s}, {"params", Json::array()}});
    // 404 for "_", a legal ffqn character: no such function.
    EXPECT_THAT(bad_ffqn->status, ::testing::AnyOf(400, 404)) << s << ": " << bad_ffqn->body;
    auto bad_id = Post("/v1/executions",
                       {{"ffqn", kAny}, {"params", Json::array()}, {"execution_id", "E_" + s}});
    EXPECT_EQ(bad_id->status, 400) << s << ": " << bad_id->body;
    // Filters are compared, never spliced into SQL: they match nothing.
    auto listed = Get("/v1/executions?ffqn_prefix=" + escaped + "&execution_id_prefix=" + escaped);
    ASSERT_TRUE(listed);
    if (listed->status == 200) {
      EXPECT_THAT(Body(listed)["executions"], SizeIs(0)) << s;
    } else {
      EXPECT_EQ(listed->status, 400) << s;
    }
  }
  EXPECT_THAT(Body(Get("/v1/executions?show_derived=true"))["executions"], SizeIs(0));
}

TEST_F(HttpInjectionTest, HostileValuesRoundTripExactly) {
  Json object = Json::object();
  for (const std::string& s : Hostile()) object[s] = s;
  std::vector<std::pair<std::string, Json>> submitted;
  for (const std::string& s : Hostile()) submitted.emplace_back("", Json(s));
  // echo takes a string: the object with hostile keys goes as its JSON text.
  submitted.emplace_back("", Json(core::SerializeJson(object)));
  for (auto& [id, value] : submitted) {
    auto res = Post("/v1/executions", {{"ffqn", kEcho}, {"params", {value}}});
    ASSERT_EQ(res->status, 201) << res->body;
    id = Body(res)["execution_id"].get<std::string>();
  }
  for (const auto& [id, value] : submitted) {
    auto res = Get("/v1/executions/" + id + "/result?timeout=30");
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(Body(res)["result"], Json({{"ok", value}})) << id;
    auto events = Body(Get("/v1/executions/" + id + "/events"))["events"];
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events[0]["event"]["created"]["params"], Json::array({value})) << events[0].dump();
  }
  EXPECT_THAT(Body(Get("/v1/executions?length=100"))["executions"], SizeIs(submitted.size()));
}

class HttpAuthTest : public testing::ServerTest {
 protected:
  void SetUp() override {
    testing::ServerTest::SetUp();
    ASSERT_TRUE(StartServer("token_sha256 = \"" + Sha256Hex("s3cret") + "\"\n"));
  }
};

// Every route but /healthz (and the UI's static files) needs the token;
// a rejected request reads and writes nothing.
TEST_F(HttpAuthTest, EveryEndpointNeedsTheToken) {
  const std::string id = core::ExecutionId::Generate().ToString();
  const std::string delay = "Delay_" + id.substr(2) + ".n:js_1";
  auto expect_401 = [](const httplib::Result& res, const std::string& what) {
    ASSERT_TRUE(res) << what;
    EXPECT_EQ(res->status, 401) << what << ": " << res->body;
    EXPECT_EQ(res->get_header_value("WWW-Authenticate"), "Bearer") << what;
  };
  for (const std::string& token : {std::string(), std::string("wrong"), std::string("S3CRET"),
                                   std::string("s3cre"), Sha256Hex("s3cret")}) {
    if (token.empty()) {
      client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    } else {
      client_->set_bearer_token_auth(token.c_str());
    }
    for (const std::string& path :
         {std::string("/v1/executions"), "/v1/executions/" + id, "/v1/executions/" + id + "/result",
          "/v1/executions/" + id + "/events", "/v1/executions/" + id + "/responses",
          "/v1/executions/" + id + "/follow", "/v1/executions/" + id + "/backtrace",
          std::string("/v1/components"), std::string("/metrics")}) {
      expect_401(Get(path), token + " GET " + path);
    }
    expect_401(Post("/v1/executions", {{"ffqn", kEcho}, {"params", {"x"}}, {"execution_id", id}}),
               token + " POST");
    expect_401(Put("/v1/executions/" + id + "/cancel", Json::object()), token + " cancel");
    expect_401(Put("/v1/executions/" + id + "/stub", {{"result", {{"ok", nullptr}}}}),
               token + " stub");
    expect_401(Put("/v1/executions/" + id + "/upgrade", Json::object()), token + " upgrade");
    expect_401(Put("/v1/delays/" + delay + "/cancel", Json::object()), token + " delay cancel");
  }
  // Other schemes are not accepted either.
  httplib::Headers basic = {{"Authorization", "Basic czNjcmV0"}};
  EXPECT_EQ(client_->Get("/v1/executions", basic)->status, 401);
  EXPECT_EQ(Get("/healthz")->status, 200);
  client_->set_bearer_token_auth("s3cret");
  EXPECT_EQ(Get("/v1/executions/" + id)->status, 404) << "nothing was written";
  // With the token the delay route is reached: a valid id of no execution.
  EXPECT_EQ(Put("/v1/delays/" + delay + "/cancel", Json::object())->status, 404);
  EXPECT_THAT(Body(Get("/v1/executions"))["executions"], SizeIs(0));
}

// The scheme is case-insensitive and may be followed by several spaces
// (docs/api.md, Authentication); the token itself is compared exactly.
TEST_F(HttpAuthTest, BearerSchemeInAnyCaseAndSpacing) {
  for (const std::string& header :
       {std::string("Bearer s3cret"), std::string("bearer s3cret"), std::string("BEARER s3cret"),
        std::string("bEaReR s3cret"), std::string("Bearer    s3cret"),
        std::string("Bearer \t s3cret"), std::string("  Bearer s3cret  ")}) {
    auto res = client_->Get("/v1/executions", {{"Authorization", header}});
    ASSERT_TRUE(res) << header;
    EXPECT_EQ(res->status, 200) << "`" << header << "`: " << res->body;
  }
  for (const std::string& header :
       {std::string("Bearers3cret"), std::string("Bearer"), std::string("Bearer "),
        std::string("Bearer s3cret x"), std::string("Bearer S3CRET"), std::string("Beare s3cret"),
        std::string("Bearer: s3cret"), std::string("Basic s3cret"), std::string("s3cret")}) {
    auto res = client_->Get("/v1/executions", {{"Authorization", header}});
    ASSERT_TRUE(res) << header;
    EXPECT_EQ(res->status, 401) << "`" << header << "`: " << res->body;
  }
}

// Without a `listen` key the server binds to loopback only.
TEST(HttpListenTest, DefaultListenAddressIsLoopback) {
  auto config = ParseConfig("", "stele.toml", "/tmp", ProcessEnv());
  ASSERT_TRUE(config) << FormatErrors(config.error());
  EXPECT_EQ(config->api.listen_host, "127.0.0.1");
  EXPECT_FALSE(config->api.token);
  EXPECT_FALSE(config->api.token_sha256);
}

}  // namespace
}  // namespace stele::server
