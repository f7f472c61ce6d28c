// Corrections of httplib 0.11 (http_protocol.h).
#include "server/http_protocol.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>

namespace stele::server {

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

void ExclusiveListenSocket(socket_t sock) {
  // SO_REUSEADDR alone: on Linux it lets a restarted server bind while
  // connections of the previous one are in TIME_WAIT, and never lets two
  // sockets listen on one address.
  int yes = 1;
  ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

std::string_view ListenErrorCause(int error) {
  switch (error) {
    case EADDRINUSE: return "the address is already in use (is another server running on it?)";
    case EADDRNOTAVAIL: return "the address is not one of this host";
    case EACCES: return "permission denied (ports below 1024 need privileges)";
    default: return "";
  }
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
