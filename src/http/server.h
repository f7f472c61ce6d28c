// HttpServer: an event-driven HTTP/1.1 server (Boost.Beast on Asio; why:
// docs/architecture.md, "HTTP"). A few I/O threads serve every connection:
// they read requests, hand each to `handler` and write what its Responder
// sends. A connection costs its buffers, not a thread, so tens of
// thousands may be open, and a request that waits (a long poll, a stream)
// holds nothing but its connection.
//
// The layer's own framing rules (docs/api.md, Connections):
// - HTTP/1.1 keep-alive and pipelining: requests of one connection are
//   answered in order, one at a time; `Connection: close` (or HTTP/1.0
//   without keep-alive) ends the connection after the response.
// - A request without Content-Length or Transfer-Encoding has no body.
//   Only POST, PUT, PATCH and DELETE have their body read; a request
//   answered without its announced body being read (by `precheck`, or a
//   GET with a body) ends its connection, so the body is never taken for
//   the next request.
// - Errors of the layer, each rendered by `error` and followed by the end
//   of the connection: 400 for a malformed request or a header line over
//   `max_header_line_bytes`, 413 for a body over `max_body_bytes`, 414 for
//   a target over `max_target_bytes`, 431 for a head over
//   `max_head_bytes`, and `overloaded` (503) on every connection beyond
//   `max_connections` (answered before its body is read).
//
// Threading: Bind, Start and Stop from one controlling thread; the hooks
// run on the I/O threads and must not block. Ownership: the server owns
// its sockets and threads; a Responder keeps its connection alive until it
// is dropped. Destroy the server only after everything that may hold a
// Responder (worker pools, waiters) has let go of it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "http/message.h"

namespace stele::http {

struct ServerStats {
  std::atomic<uint64_t> open{0};     // connections being served (not refused)
  std::atomic<uint64_t> refused{0};  // connections over max_connections, since start
};

struct ServerOptions {
  size_t max_connections = 10000;
  size_t max_body_bytes = 1024 * 1024;
  size_t max_head_bytes = 128 * 1024;  // request line and headers together
  size_t max_target_bytes = 8 * 1024;
  size_t max_header_line_bytes = 8 * 1024;  // one header's name and value
  // How long a keep-alive connection may idle before its next request, and
  // how long reading one request (head and body) or writing a response
  // may take.
  std::chrono::milliseconds idle_timeout{5000};
  std::chrono::milliseconds io_timeout{30000};
  size_t io_threads = 1;

  // Before the body is read (`req.body` is empty): a response ends the
  // request there (e.g. a 401). May be empty.
  std::function<std::optional<Response>(const Request& head)> precheck;
  // Every complete request. REQUIRED. Must not block: blocking work goes to
  // a WorkerPool (worker_pool.h).
  std::function<void(RequestPtr, ResponderPtr)> handler;
  // The layer's own errors (400, 413, 414, 431, 503 over max_connections)
  // as responses. REQUIRED.
  std::function<Response(int status, std::string kind, std::string message)> error;
  // Called once per response written, with its status. May be empty.
  std::function<void(int status)> on_response;
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (0: any free port) with SO_REUSEADDR only, so an
  // address another socket listens on fails. The bound port, or an error
  // naming `key` ("[api] listen"), the address and the cause.
  Result<int, std::string> Bind(const std::string& host, int port, std::string_view key);
  // Starts accepting on the I/O threads. REQUIRES: a successful Bind.
  void Start();
  // Stops accepting, ends every connection (their Responders' OnAbandoned
  // run) and joins the I/O threads. Idempotent.
  void Stop();

  const ServerStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stele::http
