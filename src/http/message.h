// The HTTP request and response as handlers see them, and the Responder
// through which a handler answers, at once or later (docs/architecture.md,
// "HTTP"). Neutral: no HTTP library shows through these types, so the
// handlers of src/server do not depend on the one that serves them
// (http/server.h).
//
// Threading: Request and Response are values. A Responder may be used from
// any thread; it hands the work to its connection's I/O thread.
// Ownership: the Responder keeps its connection's state alive while a
// handler holds it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace stele::http {

struct CaseInsensitiveLess {
  bool operator()(std::string_view a, std::string_view b) const;
  static bool Equal(std::string_view a, std::string_view b);
  using is_transparent = void;
};
using Headers = std::multimap<std::string, std::string, CaseInsensitiveLess>;
using Params = std::multimap<std::string, std::string, std::less<>>;

struct Request {
  std::string method;  // "GET", ...
  std::string target;  // as sent: path and query
  std::string path;    // percent-decoded, without the query
  Params params;       // the query's parameters, decoded ('+' is a space)
  Headers headers;
  std::string body;  // empty unless the method has a body (POST, PUT, PATCH, DELETE)
  // Set by the router: [0] the whole path, [1..] the route's groups.
  std::vector<std::string> matches;

  bool has_header(std::string_view name) const;
  // The first value of `name`, or "".
  std::string get_header_value(std::string_view name) const;
  bool has_param(std::string_view name) const;
  // The first value of `name`, or "".
  std::string get_param_value(std::string_view name) const;
};

struct Response {
  int status = 200;
  Headers headers;
  std::string body;
  // End the connection once this response is written (sent as
  // `Connection: close`).
  bool close = false;

  // Replaces every value of `name`.
  void set_header(std::string_view name, std::string value);
  void set_content(std::string content, std::string content_type);
  void set_redirect(std::string location, int status = 302);
};

// Answers one request: exactly one Send, or StartStream followed by
// Writes and one EndStream. Every call after the first Send/EndStream, and
// every call once the connection is gone, does nothing.
class Responder {
 public:
  virtual ~Responder() = default;
  // The complete response.
  virtual void Send(Response response) = 0;
  // A response whose body follows in chunks (`Transfer-Encoding: chunked`,
  // e.g. Server-Sent Events); `head.body` is ignored.
  virtual void StartStream(Response head) = 0;
  // Sends one chunk; `done(false)` once the connection is gone (or the
  // server stops), `done(true)` once the chunk is written. `done` runs on
  // the connection's I/O thread: it must not block.
  virtual void Write(std::string chunk, std::function<void(bool written)> done) = 0;
  virtual void EndStream() = 0;
  // Runs `fn` once, on the connection's I/O thread, when the client closes
  // the connection or the server stops before the response is complete (at
  // once if that has happened). A waiting handler ends its wait with it.
  virtual void OnAbandoned(std::function<void()> fn) = 0;
};
using ResponderPtr = std::shared_ptr<Responder>;
using RequestPtr = std::shared_ptr<Request>;

// Parses a query string ("a=1&b=x%20y") into `out`.
void ParseQuery(std::string_view query, Params& out);
// Percent-decodes `text` ('+' becomes a space when `plus_is_space`).
std::string PercentDecode(std::string_view text, bool plus_is_space);

}  // namespace stele::http
