// Fuzzes the HTTP/JSON API (docs/api.md) in process: the input is the raw
// bytes of one HTTP request (possibly malformed), sent on a loopback
// connection to the server's HTTP layer (src/http), which parses it and
// dispatches to the real routes of server/api.cc, api_ops.cc and
// ui_routes.cc (InstallRoutes), which run on a real SQLite database in a
// temporary folder. No executors: submitted executions stay pending. Every
// response must be a complete HTTP response with a status; 5xx is allowed
// only for 503 (the database).
//
// Registered functions: a workflow fuzz:app/api.wf(a: u8, b: list<string>)
// -> result<string, string> and an activity fuzz:app/api.act(x: string).
// The fixed executions E_01KBNHM5FQW81KP5Y3XMNX31K4 (workflow) and
// E_01ARZ3NDEKTSV4RRFFQ69G5FAV (activity) exist from the start.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "fuzz_check.h"
#include "server/server_impl.h"
#include "storage/sqlite/sqlite_pool.h"

namespace {

using namespace stele;  // NOLINT(google-build-using-namespace): fuzz target

core::FunctionSignature Signature(std::string_view ffqn,
                                  std::vector<std::pair<std::string, std::string>> params,
                                  std::string_view return_type) {
  core::FunctionSignature sig{
      *core::FunctionFqn::Parse(ffqn), {}, *core::TypeDesc::Parse(return_type)};
  for (auto& [name, type] : params) sig.params.push_back({name, *core::TypeDesc::Parse(type)});
  return sig;
}

server::ServerImpl& Server() {
  static server::ServerImpl* d = [] {
    auto* impl = new server::ServerImpl();
    char dir_template[] = "/tmp/stele-fuzz-api-XXXXXX";
    const char* dir = mkdtemp(dir_template);
    FUZZ_CHECK(dir != nullptr);
    // The database goes when the process exits (libFuzzer calls exit()).
    static std::string temp_dir = dir;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(temp_dir, ec);
    });
    impl->config.database.sqlite = std::string(dir) + "/stele.sqlite";
    impl->config.api.max_result_wait = std::chrono::seconds(0);
    impl->config.api.max_follow = std::chrono::seconds(0);
    impl->config.api.max_list_length = 50;
    impl->config.api.max_body_bytes = 64 * 1024;
    impl->clock = SystemClock::Shared();

    server::LoadedComponent wf;
    wf.config.kind = server::ComponentKind::kWorkflowWasm;
    wf.config.name = "fuzz_wf";
    wf.component_id = core::ComponentId::DummyWorkflow();
    wf.kind = runtime::workflow::FunctionKind::kWorkflow;
    wf.functions.push_back(Signature("fuzz:app/api.wf", {{"a", "u8"}, {"b", "list<string>"}},
                                     "result<string, string>"));
    server::LoadedComponent act;
    act.config.kind = server::ComponentKind::kActivityExec;
    act.config.name = "fuzz_act";
    act.component_id = core::ComponentId::DummyActivity();
    act.kind = runtime::workflow::FunctionKind::kActivity;
    act.functions.push_back(Signature("fuzz:app/api.act", {{"x", "string"}}, "string"));
    storage::sqlite::SqliteOptions options;
    options.path = *impl->config.database.sqlite;
    options.synchronous = storage::sqlite::SqliteOptions::Synchronous::kNormal;
    auto pool = storage::sqlite::SqlitePool::Open(options);
    FUZZ_CHECK(pool.has_value());
    impl->pool = std::move(*pool);
    service::ServiceOptions service_options;
    service_options.pool = impl->pool;
    service_options.clock = impl->clock;
    service_options.max_list_length = impl->config.api.max_list_length;
    auto service = service::ExecutionService::Create(service_options);
    FUZZ_CHECK(service.has_value());
    impl->service = std::move(*service);
    for (auto* c : {&wf, &act}) {
      service::ComponentSpec spec;
      spec.component_id = c->component_id;
      spec.kind = c->kind;
      for (const auto& f : c->functions) spec.functions.push_back(f.ffqn);
      spec.signatures = c->functions;
      FUZZ_CHECK(impl->service->AddComponent(std::move(spec)).has_value());
      impl->components.push_back(*c);
    }
    impl->workers = std::make_unique<http::WorkerPool>(2);
    impl->waits = std::make_unique<http::WorkerPool>(4);
    server::InstallRoutes(*impl, impl->http);
    auto port = impl->http.server->Bind("127.0.0.1", 0, "fuzz");
    FUZZ_CHECK(port.has_value());
    impl->http.port = *port;
    impl->http.server->Start();
    return impl;
  }();
  return *d;
}

// libFuzzer's -timeout alarm (SIGALRM, installed without SA_RESTART)
// interrupts whatever system call the main thread is in: EINTR is retried,
// never taken for the server's answer.
template <class F>
auto RetryOnSignal(F call) {
  decltype(call()) r;
  do {
    r = call();
  } while (r < 0 && errno == EINTR);
  return r;
}

// A connection to the server. An interrupted connect() goes on in the
// background: wait until the socket is writable and read its outcome.
int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  FUZZ_CHECK(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int error = 0;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    error = errno;
    if (error == EINTR) {
      pollfd p{fd, POLLOUT, 0};
      FUZZ_CHECK(RetryOnSignal([&] { return ::poll(&p, 1, 10000); }) == 1);
      socklen_t len = sizeof error;
      FUZZ_CHECK(::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0);
    }
  }
  if (error != 0) std::fprintf(stderr, "connect: %s\n", std::strerror(error));
  FUZZ_CHECK(error == 0);
  return fd;
}

// Sends `request` on a new connection, ends the sending side and returns
// everything the server writes until it closes (or 10 s pass).
std::string Handle(std::string_view request) {
  const int fd = Connect(Server().http.port);
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = RetryOnSignal(
        [&] { return ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL); });
    if (n <= 0) break;  // the server closed early (e.g. after a 400)
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[8192];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (RetryOnSignal([&] { return ::poll(&p, 1, 10000); }) <= 0) break;
    ssize_t n = RetryOnSignal([&] { return ::recv(fd, buf, sizeof buf, 0); });
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The fixed executions the seeds refer to.
  for (
      const char* body :
      {R"({"ffqn":"fuzz:app/api.wf","params":[1,["x"]],"execution_id":"E_01KBNHM5FQW81KP5Y3XMNX31K4"})",
       R"({"ffqn":"fuzz:app/api.act","params":["y"],"execution_id":"E_01ARZ3NDEKTSV4RRFFQ69G5FAV"})"}) {
    std::string request =
        "POST /v1/executions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(std::strlen(body)) + "\r\n\r\n" + body;
    std::string response = Handle(request);
    FUZZ_CHECK(response.rfind("HTTP/1.1 20", 0) == 0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string response = Handle(std::string_view(reinterpret_cast<const char*>(data), size));
  if (response.empty()) return 0;  // an incomplete request: closed without an answer
  // The interim answer to `Expect: 100-continue` precedes the response.
  if (response.rfind("HTTP/1.1 100 ", 0) == 0) {
    size_t end = response.find("\r\n\r\n");
    FUZZ_CHECK(end != std::string::npos);
    response.erase(0, end + 4);
    if (response.empty()) return 0;
  }
  FUZZ_CHECK(response.rfind("HTTP/1.1 ", 0) == 0);
  FUZZ_CHECK(response.size() >= 12);
  const int status = std::atoi(response.substr(9, 3).c_str());
  FUZZ_CHECK(status >= 200 && status < 600);
  // A 5xx other than 503 (database busy) is a bug in a handler.
  FUZZ_CHECK(status < 500 || status == 503);
  return 0;
}
