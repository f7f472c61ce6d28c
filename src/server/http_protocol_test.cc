// HTTP/1.1 framing of the API over raw sockets (src/http/server.h,
// docs/api.md Connections): a POST or PUT without Content-Length has an
// empty body and is answered at once, the connection staying usable; after
// a 414 and a malformed request's 400, and after answering a request whose
// body was not read, the server closes the connection; pipelined requests
// are answered in order, and thousands of connections hold no thread each.
// Every read is bounded by kPrompt, under the layer's 5 s idle timeout.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/reliability_test_util.h"

namespace stele::server {
namespace {

using ::testing::HasSubstr;
using testing::kEcho;
using ::testing::Not;

constexpr auto kPrompt = std::chrono::milliseconds(2000);
constexpr const char* kToken = "s3cret";
constexpr const char* kAuth = "Authorization: Bearer s3cret\r\n";

struct RawResponse {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;
};

// One client connection to 127.0.0.1 that sends bytes as given.
class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawConnection() { ::close(fd_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }

  bool Send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }

  // One response (head, then Content-Length bytes of body), or nullopt when
  // it is not complete within `limit`.
  std::optional<RawResponse> Read(std::chrono::milliseconds limit = kPrompt) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    size_t head_end = std::string::npos;
    while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Receive(deadline)) return std::nullopt;
    }
    RawResponse res;
    res.head = buffer_.substr(0, head_end + 2);
    if (res.head.rfind("HTTP/1.1 ", 0) != 0) return std::nullopt;
    res.status = std::atoi(res.head.c_str() + 9);
    size_t length = 0;
    if (size_t at = res.head.find("Content-Length: "); at != std::string::npos) {
      length = std::strtoul(res.head.c_str() + at + 16, nullptr, 10);
    }
    while (buffer_.size() < head_end + 4 + length) {
      if (!Receive(deadline)) return std::nullopt;
    }
    res.body = buffer_.substr(head_end + 4, length);
    buffer_.erase(0, head_end + 4 + length);
    return res;
  }

  // True when the server closes the connection (recv returns 0, or a reset)
  // within `limit` and sent nothing more before.
  bool ClosedByServer(std::chrono::milliseconds limit = kPrompt) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (true) {
      int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      deadline - std::chrono::steady_clock::now())
                                      .count());
      if (left <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, left) <= 0) continue;
      char c;
      ssize_t n = ::recv(fd_, &c, 1, 0);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) return buffer_.empty();
      if (n > 0) buffer_ += c;
    }
  }

 private:
  bool Receive(std::chrono::steady_clock::time_point deadline) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    if (left <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) return false;
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    buffer_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
};

class HttpFramingTest : public testing::ServerTest {
 protected:
  void SetUp() override {
    testing::ServerTest::SetUp();
    ASSERT_TRUE(StartServer("token = \"" + std::string(kToken) + "\"\n"));
    client_->set_bearer_token_auth(kToken);
  }

  // Sends `head` (a request without its final empty line) on a new
  // connection, with and without `Content-Length: 0`: both answers, each
  // read within kPrompt.
  std::pair<std::optional<RawResponse>, std::optional<RawResponse>> WithoutAndWithLength(
      const std::string& head) {
    RawConnection without(server_->port());
    RawConnection with(server_->port());
    EXPECT_TRUE(without.connected() && with.connected());
    EXPECT_TRUE(without.Send(head + "\r\n"));
    EXPECT_TRUE(with.Send(head + "Content-Length: 0\r\n\r\n"));
    return {without.Read(), with.Read()};
  }
};

TEST_F(HttpFramingTest, PutAndPostWithoutContentLengthHaveAnEmptyBody) {
  auto submitted = Post("/v1/executions", {{"ffqn", kEcho}, {"params", {"x"}}});
  ASSERT_EQ(submitted->status, 201) << submitted->body;
  const std::string id = Body(submitted)["execution_id"].get<std::string>();
  ASSERT_EQ(Get("/v1/executions/" + id + "/result?timeout=30")->status, 200);

  // `curl -X PUT .../cancel`: no body, no Content-Length.
  auto [cancel, cancel_0] =
      WithoutAndWithLength("PUT /v1/executions/" + id + "/cancel HTTP/1.1\r\nHost: t\r\n" + kAuth);
  ASSERT_TRUE(cancel) << "no answer within " << kPrompt.count() << " ms";
  ASSERT_TRUE(cancel_0);
  EXPECT_EQ(cancel->status, 409) << cancel->body;
  EXPECT_EQ(cancel->body, cancel_0->body);
  EXPECT_THAT(cancel->body, HasSubstr("already_finished"));

  auto [submit, submit_0] =
      WithoutAndWithLength(std::string("POST /v1/executions HTTP/1.1\r\nHost: t\r\n") + kAuth);
  ASSERT_TRUE(submit) << "no answer within " << kPrompt.count() << " ms";
  ASSERT_TRUE(submit_0);
  EXPECT_EQ(submit->status, 400);
  EXPECT_EQ(submit->body, submit_0->body);
  EXPECT_THAT(submit->body, HasSubstr("request body is empty"));

  // The connection stays usable: the next request on it is served.
  RawConnection c(server_->port());
  ASSERT_TRUE(
      c.Send("PUT /v1/executions/" + id + "/cancel HTTP/1.1\r\nHost: t\r\n" + kAuth + "\r\n"));
  auto first = c.Read();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 409) << first->body;  // finished: already_finished
  ASSERT_TRUE(c.Send(std::string("GET /v1/executions HTTP/1.1\r\nHost: t\r\n") + kAuth + "\r\n"));
  auto second = c.Read();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 200) << second->body;
}

TEST_F(HttpFramingTest, The414AndMalformed400CloseTheConnection) {
  const std::string long_path = "/v1/executions/E_" + std::string(9000, 'A');
  for (const std::string& request :
       {"GET " + long_path + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        "GET " + long_path + " HTTP/1.1\r\nHost: t\r\n\r\n"}) {
    RawConnection c(server_->port());
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.Send(request));
    auto res = c.Read();
    ASSERT_TRUE(res) << "no 414 within " << kPrompt.count() << " ms";
    EXPECT_EQ(res->status, 414);
    EXPECT_THAT(res->body, HasSubstr("too_large"));
    EXPECT_THAT(res->head, HasSubstr("Connection: close\r\n"));
    EXPECT_THAT(res->head, Not(HasSubstr("Keep-Alive")));
    EXPECT_TRUE(c.ClosedByServer()) << "the connection stayed open after the 414";
  }
  // A request line httplib cannot parse: 400, and closed too.
  RawConnection c(server_->port());
  ASSERT_TRUE(c.Send("NONSENSE\r\nHost: t\r\n\r\n"));
  auto res = c.Read();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_THAT(res->body, HasSubstr("bad_request"));
  EXPECT_TRUE(c.ClosedByServer()) << "the connection stayed open after the 400";
  // The server is fine.
  EXPECT_EQ(Get("/healthz")->status, 200);
}

// A request answered without reading its body (a wrong token, a GET with
// a body) ends the connection: the body is never taken for the next
// request. Here the body is itself a request, which used to be answered.
TEST_F(HttpFramingTest, RequestAnsweredWithoutItsBodyEndsTheConnection) {
  const std::string smuggled = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
  const std::string length = "Content-Length: " + std::to_string(smuggled.size()) + "\r\n";
  struct Case {
    std::string head;
    int status;
  };
  for (const Case& c :
       {Case{"POST /v1/executions HTTP/1.1\r\nHost: t\r\n", 401},
        Case{"PUT /v1/executions/E_x/cancel HTTP/1.1\r\nHost: t\r\n"
             "Authorization: Bearer wrong\r\n",
             401},
        Case{std::string("GET /v1/executions HTTP/1.1\r\nHost: t\r\n") + kAuth, 200}}) {
    RawConnection conn(server_->port());
    ASSERT_TRUE(conn.Send(c.head + length + "\r\n" + smuggled));
    auto res = conn.Read();
    ASSERT_TRUE(res) << c.head;
    EXPECT_EQ(res->status, c.status) << c.head << res->body;
    EXPECT_THAT(res->head, HasSubstr("Connection: close\r\n")) << c.head;
    EXPECT_TRUE(conn.ClosedByServer()) << c.head << ": the body was answered as a request";
  }
  // With its body read, a request keeps its connection.
  RawConnection conn(server_->port());
  const std::string body = R"({"ffqn": "nope"})";
  ASSERT_TRUE(conn.Send(std::string("POST /v1/executions HTTP/1.1\r\nHost: t\r\n") + kAuth +
                        "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
  auto res = conn.Read();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_THAT(res->head, Not(HasSubstr("Connection: close")));
  ASSERT_TRUE(conn.Send("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto next = conn.Read();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
}

// A body over the limit is answered 413 before it is read; a client that
// keeps sending it (as httplib's client and curl do) still gets the 413:
// the server reads and discards the rest before it closes (a lingering
// close), instead of resetting the connection under the client's write.
TEST_F(HttpFramingTest, AClientStillSendingARefusedBodyReadsThe413) {
  RawConnection c(server_->port());
  ASSERT_TRUE(c.connected());
  const std::string body(8 << 20, 'a');  // 8 MiB, over max_body_bytes (1 MiB)
  ASSERT_TRUE(c.Send("POST /v1/executions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " +
                     std::string(kToken) + "\r\nContent-Type: application/json\r\n" +
                     "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n"));
  EXPECT_TRUE(c.Send(body));
  auto res = c.Read(std::chrono::seconds(10));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413) << res->body;
  EXPECT_TRUE(c.ClosedByServer(std::chrono::seconds(10)));
}

// The accept queue of this process's socket listening on 127.0.0.1:`port`
// (TCP_INFO of a listener reports its backlog in tcpi_sacked), or -1.
int ListenBacklogOfPort(int port) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    int listening = 0;
    socklen_t flag_len = sizeof listening;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        addr.sin_family != AF_INET || ntohs(addr.sin_port) != port ||
        ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &flag_len) != 0 || !listening) {
      continue;
    }
    tcp_info info{};
    socklen_t info_len = sizeof info;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &info_len) != 0) return -1;
    return static_cast<int>(info.tcpi_sacked);
  }
  return -1;
}

// Regression (issue 21, W5): httplib listened with a backlog of 5, so 500
// clients reconnecting after a restart overflowed the accept queue and
// waited through SYN retransmissions for up to a minute and a half. The
// HTTP layer asks for SOMAXCONN (4096), which the kernel caps by its
// net.core.somaxconn.
TEST_F(HttpFramingTest, ListensWithAWideBacklog) {
  int somaxconn = 0;
  std::ifstream("/proc/sys/net/core/somaxconn") >> somaxconn;
  ASSERT_GT(somaxconn, 0);
  EXPECT_EQ(ListenBacklogOfPort(server_->port()), std::min(SOMAXCONN, somaxconn));
}

}  // namespace
}  // namespace stele::server

namespace stele::server {
namespace {

size_t ProcessThreads() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

class HttpManyConnectionsTest : public testing::ServerTest {
 protected:
  void SetUp() override {
    testing::ServerTest::SetUp();
    ASSERT_TRUE(StartServer("max_connections = 4000\n"));
  }
};

// Connections hold no thread (src/http): 2,000 open at once, each with two
// pipelined requests, are all answered in order, none refused, while the
// process gains only a few threads; then the server still serves.
TEST_F(HttpManyConnectionsTest, TwoThousandPipelinedConnectionsAreServedWithoutAThreadEach) {
  constexpr int kConnections = 2000;
  const size_t threads_before = ProcessThreads();
  std::vector<std::unique_ptr<RawConnection>> conns;
  for (int i = 0; i < kConnections; ++i) {
    conns.push_back(std::make_unique<RawConnection>(server_->port()));
    ASSERT_TRUE(conns.back()->connected()) << i;
  }
  const std::string two =
      "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"
      "GET /v1/executions/E_x HTTP/1.1\r\nHost: t\r\n\r\n";
  for (auto& c : conns) ASSERT_TRUE(c->Send(two));
  for (int i = 0; i < kConnections; ++i) {
    auto first = conns[i]->Read(std::chrono::seconds(60));
    ASSERT_TRUE(first) << i;
    EXPECT_EQ(first->status, 200) << i << ": " << first->body;
    auto second = conns[i]->Read(std::chrono::seconds(60));
    ASSERT_TRUE(second) << i;
    EXPECT_EQ(second->status, 400) << i << ": " << second->body;  // a malformed id, in order
  }
  // Every connection is still open: the process serves them on its I/O
  // thread and pools, not a thread each.
  EXPECT_LT(ProcessThreads(), threads_before + 100);
  auto metrics = Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body, HasSubstr("stele_http_connections_refused_total 0\n"));
  conns.clear();
  EXPECT_EQ(Get("/healthz")->status, 200);
}

}  // namespace
}  // namespace stele::server
