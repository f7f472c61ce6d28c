// Corrections of httplib 0.11 (http_protocol.h).
#include "server/http_protocol.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>

namespace stele::server {

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

}  // namespace stele::server
