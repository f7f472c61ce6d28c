// HttpServer on Boost.Beast (server.h). The only file of Stele that
// includes Beast or Asio: the rest of the code sees http/message.h.
#include "http/server.h"

#include <array>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/thread_name.h"

namespace stele::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

// At most this many connections over max_connections are kept open at
// once to be answered 503; beyond, a connection is closed at once.
constexpr size_t kMaxRefusing = 64;
// How long Stop lets connections end on their own.
constexpr std::chrono::milliseconds kStopGrace{2000};
// A lingering close (Session::Linger): how long, and how many bytes, the
// input of a connection is read and discarded after its last response.
constexpr std::chrono::seconds kLingerTime{5};
constexpr size_t kLingerMaxBytes = size_t{64} << 20;

bool MethodHasBody(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

// The bytes of a response's head (status line, headers, empty line).
std::string Head(const Response& res, bool keep_alive, bool chunked,
                 std::optional<size_t> content_length) {
  std::string out = "HTTP/1.1 " + std::to_string(res.status) + " ";
  out += std::string_view(bhttp::obsolete_reason(static_cast<bhttp::status>(res.status)));
  out += "\r\n";
  for (const auto& [name, value] : res.headers) {
    // The layer frames the response itself.
    if (CaseInsensitiveLess::Equal(name, "Content-Length") ||
        CaseInsensitiveLess::Equal(name, "Transfer-Encoding") ||
        CaseInsensitiveLess::Equal(name, "Connection")) {
      continue;
    }
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  if (content_length) out += "Content-Length: " + std::to_string(*content_length) + "\r\n";
  if (chunked) out += "Transfer-Encoding: chunked\r\n";
  if (!keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  return out;
}

}  // namespace

struct HttpServer::Impl {
  explicit Impl(ServerOptions o) : options(std::move(o)), acceptor(asio::make_strand(ioc)) {}

  class Session;
  class SessionResponder;

  void Accept();
  void OnAccept(beast::error_code ec, tcp::socket socket);

  // Declared before the I/O objects: a session still queued in `ioc` when
  // it is destroyed (its last Responder was dropped after Stop) unregisters
  // itself from `sessions` then.
  ServerOptions options;
  ServerStats stats;
  std::mutex mu;
  uint64_t next_session = 0;                            // guarded by mu
  std::map<uint64_t, std::weak_ptr<Session>> sessions;  // guarded by mu
  size_t exited = 0;                                    // I/O threads that returned; guarded by mu
  std::condition_variable exited_cv;
  std::atomic<bool> stopping{false};
  std::atomic<size_t> refusing{0};
  std::condition_variable sessions_cv;  // a session ended

  asio::io_context ioc;
  tcp::acceptor acceptor;
  std::unique_ptr<asio::steady_timer> accept_retry;
  std::chrono::steady_clock::time_point last_accept_warning;  // on the acceptor's strand
  std::vector<std::thread> threads;
  // Keeps the I/O threads running while connections finish their
  // responses (Stop), even when no operation is pending.
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
};

// One connection. Every member is used on the session's strand only.
class HttpServer::Impl::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Impl& server, tcp::socket socket, bool refused)
      : server_(server), stream_(std::move(socket)), refused_(refused) {}
  ~Session() {
    if (refused_) {
      --server_.refusing;
    } else {
      --server_.stats.open;
    }
    std::lock_guard lock(server_.mu);
    server_.sessions.erase(id_);
    server_.sessions_cv.notify_all();
  }

  void Start(uint64_t id) {
    id_ = id;
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->ReadHead(); });
  }

  // From any thread: ends the connection (Stop).
  void CloseFromOutside() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->Close(); });
  }

  // From any thread (Stop): ends the connection now if it waits for a
  // request, else once the response in progress is written.
  void Drain() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->state_ == State::kReading) return self->Close();
      self->close_after_ = true;
    });
  }

  // ---- Responder calls, on the strand --------------------------------------
  void Send(uint64_t request, Response res) {
    if (closed_ || request != request_ || state_ != State::kHandling) return;
    state_ = State::kDone;
    if (res.close) close_after_ = true;
    const bool keep_alive = !close_after_;
    const size_t length = res.body.size();
    std::string bytes = Head(res, keep_alive, false, length);
    if (!head_only_) bytes += res.body;
    Count(res.status);
    Enqueue(std::move(bytes), nullptr, /*last=*/true);
  }
  void StartStream(uint64_t request, Response head) {
    if (closed_ || request != request_ || state_ != State::kHandling) return;
    state_ = State::kStreaming;
    if (head.close) close_after_ = true;
    Count(head.status);
    Enqueue(Head(head, !close_after_, !head_only_, std::nullopt), nullptr, false);
  }
  void Write(uint64_t request, std::string chunk, std::function<void(bool)> done) {
    if (closed_ || request != request_ || state_ != State::kStreaming || head_only_) {
      if (done) done(!closed_ && request == request_ && head_only_);
      return;
    }
    if (chunk.empty()) {  // an empty chunk would end the body
      if (done) done(true);
      return;
    }
    std::ostringstream size;
    size << std::hex << chunk.size();
    std::string bytes = size.str() + "\r\n" + std::move(chunk) + "\r\n";
    Enqueue(std::move(bytes), std::move(done), false);
  }
  void EndStream(uint64_t request) {
    if (closed_ || request != request_ || state_ != State::kStreaming) return;
    state_ = State::kDone;
    Enqueue(head_only_ ? std::string() : std::string("0\r\n\r\n"), nullptr, true);
  }
  void OnAbandoned(uint64_t request, std::function<void()> fn) {
    if (request != request_ || state_ == State::kDone) return;
    if (closed_) {
      fn();
      return;
    }
    abandoned_.push_back(std::move(fn));
    WatchForHangUp();
  }

  asio::any_io_executor executor() { return stream_.get_executor(); }

 private:
  enum class State { kReading, kHandling, kStreaming, kDone };

  struct Pending {
    std::string bytes;
    std::function<void(bool)> done;
    bool last = false;  // the end of the response
  };

  void Count(int status) {
    if (server_.options.on_response) server_.options.on_response(status);
  }

  void ReadHead() {
    if (closed_) return;
    if (server_.stopping) return Close();
    state_ = State::kReading;
    ++request_;
    abandoned_.clear();
    head_only_ = false;
    close_after_ = false;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(server_.options.max_head_bytes));
    parser_->body_limit(server_.options.max_body_bytes);
    // Waiting for the next request of a keep-alive connection, or for the
    // rest of the current one (pipelined bytes already buffered).
    stream_.expires_after(buffer_.size() > 0 || request_ == 1 ? server_.options.io_timeout
                                                              : server_.options.idle_timeout);
    bhttp::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHead(ec); });
  }

  // Answers with the layer's error and ends the connection.
  void Fail(int status, std::string kind, std::string message) {
    state_ = State::kHandling;
    Response res = server_.options.error(status, std::move(kind), std::move(message));
    res.close = true;
    Send(request_, std::move(res));
  }

  void OnHead(beast::error_code ec) {
    if (closed_) return;
    if (ec) {
      if (ec == bhttp::error::header_limit) {
        return Fail(431, "too_large", "request headers are too large");
      }
      // A Content-Length over the limit fails with the head.
      if (ec == bhttp::error::body_limit) {
        return Fail(413, "too_large", "request body is over the limit");
      }
      // A parse error with bytes received: a malformed request. Anything
      // else (the client left, a timeout, end of stream) ends silently.
      if (ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category() &&
          ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
        return Fail(400, "bad_request", "malformed request: " + ec.message());
      }
      return Close();
    }
    auto& head = parser_->get();
    auto req = std::make_shared<Request>();
    req->method = std::string(head.method_string());
    req->target = std::string(head.target());
    head_only_ = head.method() == bhttp::verb::head;
    if (!head.keep_alive()) close_after_ = true;
    if (refused_) {
      ++server_.stats.refused;
      return Fail(503, "overloaded",
                  "too many concurrent connections (the limit is " +
                      std::to_string(server_.options.max_connections) +
                      ", max_connections); retry later");
    }
    if (req->target.size() > server_.options.max_target_bytes) {
      return Fail(414, "too_large",
                  "request URI is too long (" + std::to_string(req->target.size()) +
                      " bytes; the limit is " + std::to_string(server_.options.max_target_bytes) +
                      ")");
    }
    for (const auto& field : head) {
      if (field.name_string().size() + field.value().size() >
          server_.options.max_header_line_bytes) {
        return Fail(400, "bad_request",
                    "a header line is over " +
                        std::to_string(server_.options.max_header_line_bytes) + " bytes");
      }
      req->headers.emplace(std::string(field.name_string()), std::string(field.value()));
    }
    const std::string_view target = req->target;
    const size_t q = target.find('?');
    req->path = PercentDecode(target.substr(0, q), false);
    if (q != std::string_view::npos) ParseQuery(target.substr(q + 1), req->params);
    const bool has_body = parser_->chunked() || parser_->content_length().value_or(0) > 0;
    state_ = State::kHandling;
    if (server_.options.precheck) {
      if (auto res = server_.options.precheck(*req)) {
        if (has_body) res->close = true;
        return Send(request_, std::move(*res));
      }
    }
    if (!has_body || !MethodHasBody(req->method)) {
      if (has_body) close_after_ = true;  // the body is left unread
      return Handle(std::move(req));
    }
    state_ = State::kReading;
    if (CaseInsensitiveLess::Equal(req->get_header_value("Expect"), "100-continue")) {
      Enqueue("HTTP/1.1 100 Continue\r\n\r\n", nullptr, false);
    }
    stream_.expires_after(server_.options.io_timeout);
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = shared_from_this(), req](beast::error_code body_ec, size_t) mutable {
                        self->OnBody(body_ec, std::move(req));
                      });
  }

  void OnBody(beast::error_code ec, RequestPtr req) {
    if (closed_) return;
    if (ec) {
      if (ec == bhttp::error::body_limit) {
        return Fail(413, "too_large", "request body is over the limit");
      }
      if (ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category() &&
          ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
        return Fail(400, "bad_request", "malformed request body: " + ec.message());
      }
      return Close();
    }
    req->body = std::move(parser_->get().body());
    state_ = State::kHandling;
    Handle(std::move(req));
  }

  void Handle(RequestPtr req);

  void Enqueue(std::string bytes, std::function<void(bool)> done, bool last) {
    queue_.push_back(Pending{std::move(bytes), std::move(done), last});
    if (queue_.size() == 1) WriteNext();
  }

  void WriteNext() {
    if (closed_ || queue_.empty()) return;
    stream_.expires_after(server_.options.io_timeout);
    asio::async_write(
        stream_, asio::buffer(queue_.front().bytes),
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnWritten(ec); });
  }

  void OnWritten(beast::error_code ec) {
    if (closed_) return;
    if (ec) return Close();
    Pending done = std::move(queue_.front());
    queue_.pop_front();
    if (done.done) done.done(true);
    if (done.last) {
      if (close_after_) {
        beast::error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        return Linger();
      }
      ReadHead();
      return;
    }
    WriteNext();
  }

  // A lingering close: the peer may still be sending what was not read (a
  // body refused with 413 before it was read, the rest of a pipeline).
  // Closing a socket with unread input makes the kernel reset the
  // connection, and the peer, still writing, then loses the response it
  // has not read yet. So after the last response (the write side is shut
  // down) the input is read and discarded until the peer closes, for at
  // most kLingerTime and kLingerMaxBytes, then the socket is closed.
  void Linger() {
    if (closed_) return;
    if (!drain_) drain_ = std::make_unique<std::array<char, 16384>>();
    if (lingered_ == 0) stream_.expires_after(kLingerTime);
    stream_.async_read_some(asio::buffer(*drain_),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (self->closed_) return;
                              self->lingered_ += n;
                              if (ec || n == 0 || self->lingered_ > kLingerMaxBytes) {
                                return self->Close();
                              }
                              self->Linger();
                            });
  }

  // While a handler answers later, nothing reads the socket, so a client
  // that leaves would go unnoticed until the answer is written: wait for
  // the socket to turn readable, and close (running the abandonment
  // callbacks) when that is its end (EOF or an error). Bytes of a next,
  // pipelined request are left for ReadHead.
  void WatchForHangUp() {
    if (watching_hangup_ || closed_ || state_ == State::kReading || state_ == State::kDone) return;
    watching_hangup_ = true;
    stream_.socket().async_wait(
        tcp::socket::wait_read, [self = shared_from_this(), r = request_](beast::error_code ec) {
          self->watching_hangup_ = false;
          if (self->closed_ || r != self->request_ || self->state_ == State::kDone) return;
          if (ec == asio::error::operation_aborted) return;
          if (ec) return self->Close();
          char byte = 0;
          beast::error_code peek;
          const size_t n = self->stream_.socket().receive(asio::buffer(&byte, 1),
                                                          tcp::socket::message_peek, peek);
          if (peek == asio::error::would_block) return self->WatchForHangUp();
          if (peek || n == 0) self->Close();
        });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    for (auto& p : queue_) {
      if (p.done) p.done(false);
    }
    queue_.clear();
    auto abandoned = std::move(abandoned_);
    abandoned_.clear();
    if (state_ != State::kDone) {
      for (auto& fn : abandoned) fn();
    }
  }

  Impl& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  const bool refused_;
  uint64_t id_ = 0;
  uint64_t request_ = 0;  // which request of the connection is current
  State state_ = State::kReading;
  bool head_only_ = false;
  bool close_after_ = false;
  bool closed_ = false;
  std::unique_ptr<std::array<char, 16384>> drain_;  // Linger's discard buffer
  size_t lingered_ = 0;                             // bytes Linger discarded
  std::deque<Pending> queue_;
  std::vector<std::function<void()>> abandoned_;
  bool watching_hangup_ = false;  // a WatchForHangUp wait is pending
};

// The Responder of one request: forwards to its session's strand.
class HttpServer::Impl::SessionResponder final : public Responder {
 public:
  SessionResponder(std::shared_ptr<Session> session, uint64_t request)
      : session_(std::move(session)), request_(request) {}

  void Send(Response response) override {
    asio::post(session_->executor(),
               [s = session_, r = request_, res = std::move(response)]() mutable {
                 s->Send(r, std::move(res));
               });
  }
  void StartStream(Response head) override {
    asio::post(session_->executor(), [s = session_, r = request_, res = std::move(head)]() mutable {
      s->StartStream(r, std::move(res));
    });
  }
  void Write(std::string chunk, std::function<void(bool)> done) override {
    asio::post(session_->executor(),
               [s = session_, r = request_, c = std::move(chunk), d = std::move(done)]() mutable {
                 s->Write(r, std::move(c), std::move(d));
               });
  }
  void EndStream() override {
    asio::post(session_->executor(), [s = session_, r = request_] { s->EndStream(r); });
  }
  void OnAbandoned(std::function<void()> fn) override {
    asio::post(session_->executor(), [s = session_, r = request_, f = std::move(fn)]() mutable {
      s->OnAbandoned(r, std::move(f));
    });
  }

 private:
  std::shared_ptr<Session> session_;
  uint64_t request_;
};

void HttpServer::Impl::Session::Handle(RequestPtr req) {
  server_.options.handler(std::move(req),
                          std::make_shared<SessionResponder>(shared_from_this(), request_));
}

void HttpServer::Impl::Accept() {
  acceptor.async_accept(asio::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    OnAccept(ec, std::move(socket));
  });
}

void HttpServer::Impl::OnAccept(beast::error_code ec, tcp::socket socket) {
  if (stopping || !acceptor.is_open()) return;
  if (ec) {
    // Out of file descriptors (or another transient error): try again
    // shortly instead of spinning.
    const auto now = std::chrono::steady_clock::now();
    if (now - last_accept_warning >= std::chrono::seconds(10)) {  // once per burst
      last_accept_warning = now;
      STELE_LOG(kWarn, "HTTP accept failed: " << ec.message() << " (retrying every 100 ms)");
    }
    accept_retry->expires_after(std::chrono::milliseconds(100));
    accept_retry->async_wait([this](beast::error_code) {
      if (!stopping) Accept();
    });
    return;
  }
  socket.set_option(tcp::no_delay(true), ec);
  bool refused = false;
  if (stats.open.load() >= options.max_connections) {
    if (refusing.load() >= kMaxRefusing) {
      ++stats.refused;
      socket.close(ec);
      Accept();
      return;
    }
    refused = true;
    ++refusing;
  } else {
    ++stats.open;
  }
  auto session = std::make_shared<Session>(*this, std::move(socket), refused);
  uint64_t id;
  {
    std::lock_guard lock(mu);
    id = ++next_session;
    sessions[id] = session;
  }
  session->Start(id);
  Accept();
}

HttpServer::HttpServer(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() { Stop(); }

Result<int, std::string> HttpServer::Bind(const std::string& host, int port, std::string_view key) {
  auto fail = [&](const beast::error_code& ec) -> Result<int, std::string> {
    std::string cause;
    if (ec == asio::error::address_in_use) {
      cause = "the address is already in use (is another server running on it?)";
    } else if (ec.value() == EADDRNOTAVAIL) {
      cause = "the address is not one of this host";
    } else if (ec == asio::error::access_denied) {
      cause = "permission denied (ports below 1024 need privileges)";
    } else {
      cause = ec.message();
    }
    return Unexpected("cannot listen on " + host + ":" + std::to_string(port) + " (" +
                      std::string(key) + "): " + cause);
  };
  beast::error_code ec;
  tcp::resolver resolver(impl_->ioc);
  auto endpoints = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || endpoints.empty()) {
    return Unexpected("cannot listen on " + host + ":" + std::to_string(port) + " (" +
                      std::string(key) + "): is the address one of this host?");
  }
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  auto& a = impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  if (ec) return fail(ec);
  // SO_REUSEADDR alone (no SO_REUSEPORT): a restarted server binds past
  // TIME_WAIT, and never shares an address another socket listens on.
  a.set_option(asio::socket_base::reuse_address(true), ec);
  a.bind(endpoint, ec);
  if (ec) {
    beast::error_code ignored;
    a.close(ignored);
    return fail(ec);
  }
  a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    beast::error_code ignored;
    a.close(ignored);
    return fail(ec);
  }
  return static_cast<int>(a.local_endpoint().port());
}

void HttpServer::Start() {
  impl_->accept_retry = std::make_unique<asio::steady_timer>(impl_->acceptor.get_executor());
  impl_->work.emplace(impl_->ioc.get_executor());
  impl_->Accept();
  for (size_t i = 0; i < std::max<size_t>(1, impl_->options.io_threads); ++i) {
    impl_->threads.emplace_back([this] {
      NameThisThread("stele-http-io");
      impl_->ioc.run();
      std::lock_guard lock(impl_->mu);
      ++impl_->exited;
      impl_->exited_cv.notify_all();
    });
  }
}

void HttpServer::Stop() {
  if (impl_->stopping.exchange(true)) return;
  asio::post(impl_->acceptor.get_executor(), [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
    if (impl_->accept_retry) impl_->accept_retry->cancel();
  });
  auto each_session = [&](auto fn) {
    std::vector<std::shared_ptr<Impl::Session>> open;
    {
      std::lock_guard lock(impl_->mu);
      for (auto& [id, weak] : impl_->sessions) {
        if (auto s = weak.lock()) open.push_back(std::move(s));
      }
    }
    for (auto& s : open) fn(*s);
  };
  if (impl_->threads.empty()) {
    // Never started: run what was posted (the acceptor's close) here.
    each_session([](Impl::Session& s) { s.CloseFromOutside(); });
    impl_->ioc.restart();
    impl_->ioc.poll();
    return;
  }
  // Idle connections end now; the others once their response is written
  // (a wait the caller ended before Stop answers), for at most kStopGrace.
  each_session([](Impl::Session& s) { s.Drain(); });
  {
    std::unique_lock lock(impl_->mu);
    impl_->sessions_cv.wait_for(lock, kStopGrace, [&] { return impl_->sessions.empty(); });
  }
  each_session([](Impl::Session& s) { s.CloseFromOutside(); });
  impl_->work.reset();
  // With the acceptor and every socket closed, the I/O threads run out of
  // work and return; should an operation still be pending after
  // kStopGrace, stopping the context cuts it off.
  {
    std::unique_lock lock(impl_->mu);
    if (!impl_->exited_cv.wait_for(lock, kStopGrace,
                                   [&] { return impl_->exited == impl_->threads.size(); })) {
      impl_->ioc.stop();
    }
  }
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

const ServerStats& HttpServer::stats() const { return impl_->stats; }

}  // namespace stele::http
