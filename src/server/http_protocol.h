// Where httplib 0.11 (Debian's cpp-httplib) departs from what the server
// needs of HTTP, and how the server corrects it through httplib's hooks
// (docs/api.md, Connections). Internal to src/server.
//
// - Listening sockets: httplib sets SO_REUSEPORT, so a second server on an
//   address in use started anyway and the kernel split the connections
//   between the two. ExclusiveListenSocket is the socket-options hook that
//   sets SO_REUSEADDR only: a bind to an address any process listens on
//   fails (EADDRINUSE), while a restart still binds past TIME_WAIT.
//
// Threading: stateless functions, called on httplib's threads.
#pragma once

#include <httplib.h>

#include <optional>
#include <string_view>

namespace stele::server {

// httplib::Server::set_socket_options hook for the listening sockets.
void ExclusiveListenSocket(socket_t sock);

// Why binding a listener failed, from the errno of the failed bind ("" when
// errno names no known cause).
std::string_view ListenErrorCause(int error);

// The token of an `Authorization` header value with the Bearer scheme
// (docs/api.md, Authentication: the scheme in any case, then one or more
// spaces or tabs, then the token; surrounding whitespace ignored); nullopt
// for another scheme or an empty token.
std::optional<std::string_view> BearerToken(std::string_view authorization);

}  // namespace stele::server
