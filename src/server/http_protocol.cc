// HTTP/1.1 corrections of httplib 0.11 (http_protocol.h).
#include "server/http_protocol.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>

namespace stele::server {

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Whether the request announced a body that httplib did not read into
// `req.body`: answered before it (pre-routing), skipped (413), or a method
// httplib reads no body for (GET).
bool BodyLeftUnread(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) return req.body.empty();
  if (!req.has_header("Content-Length")) return false;
  return req.get_header_value<uint64_t>("Content-Length") != req.body.size();
}

}  // namespace

void ExclusiveListenSocket(socket_t sock) {
  // SO_REUSEADDR alone: on Linux it lets a restarted server bind while
  // connections of the previous one are in TIME_WAIT, and never lets two
  // sockets listen on one address.
  int yes = 1;
  ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

bool WidenListenBacklog(socket_t sock) { return ::listen(sock, kListenBacklog) == 0; }

std::string_view ListenErrorCause(int error) {
  switch (error) {
    case EADDRINUSE:
      return "the address is already in use (is another server running on it?)";
    case EADDRNOTAVAIL:
      return "the address is not one of this host";
    case EACCES:
      return "permission denied (ports below 1024 need privileges)";
    default:
      return "";
  }
}

void TreatAbsentLengthAsEmpty(const httplib::Request& req) {
  if (req.method != "POST" && req.method != "PUT" && req.method != "PATCH") return;
  if (req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) return;
  // The pre-routing handler receives httplib's own Request (a non-const
  // local of its request loop) as const: writing it is defined, and
  // httplib reads the header only afterwards, to frame the body.
  const_cast<httplib::Request&>(req).set_header("Content-Length", "0");
}

void EndConnectionAfter(httplib::Response& res) {
  res.set_header("Connection", "close");
  if (res.body.empty() || res.content_provider_) return;
  auto body = std::make_shared<const std::string>(std::move(res.body));
  res.body.clear();
  std::string type = res.get_header_value("Content-Type");
  res.headers.erase("Content-Type");  // set_content_provider sets it again
  res.set_content_provider(
      body->size(), type, [body](size_t offset, size_t length, httplib::DataSink& sink) {
        if (offset < body->size()) {
          sink.write(body->data() + offset, std::min(length, body->size() - offset));
        }
        // Every byte is written: the "failure" only ends the connection.
        return false;
      });
}

void CloseWhenFramingIsLost(const httplib::Request& req, httplib::Response& res) {
  if (BodyLeftUnread(req)) EndConnectionAfter(res);
  bool closing = false;
  for (auto [it, end] = res.headers.equal_range("Connection"); it != end; ++it) {
    closing = closing || it->second == "close";
  }
  if (!closing) return;
  res.headers.erase("Connection");
  res.headers.erase("Keep-Alive");
  res.set_header("Connection", "close");
}

std::optional<std::string_view> BearerToken(std::string_view authorization) {
  std::string_view value = Trim(authorization);
  constexpr std::string_view kScheme = "bearer";
  if (value.size() <= kScheme.size() || !IsSpace(value[kScheme.size()])) return std::nullopt;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    char c = value[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kScheme[i]) return std::nullopt;
  }
  std::string_view token = Trim(value.substr(kScheme.size()));
  if (token.empty()) return std::nullopt;
  return token;
}

}  // namespace stele::server
