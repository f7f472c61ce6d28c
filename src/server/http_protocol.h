// Where httplib 0.11 (Debian's cpp-httplib) departs from HTTP/1.1, and how
// the server corrects it through httplib's hooks (docs/api.md,
// Connections; docs/reliability.md, HTTP framing). Internal to src/server.
//
// - Listening sockets: httplib sets SO_REUSEPORT, so a second server on an
//   address in use started anyway and the kernel split the connections
//   between the two. ExclusiveListenSocket is the socket-options hook that
//   sets SO_REUSEADDR only: a bind to an address any process listens on
//   fails (EADDRINUSE), while a restart still binds past TIME_WAIT.
// - Listen backlog: httplib listens with a backlog of 5
//   (CPPHTTPLIB_LISTEN_BACKLOG, compiled into Debian's libcpp-httplib), so
//   a burst of new connections (hundreds of clients after a restart)
//   overflowed the accept queue: the kernel dropped their handshakes and
//   the clients waited through SYN retransmissions (1, 3, 7, ... s) or
//   their read timeouts. WidenListenBacklog listens again on the bound
//   socket with kListenBacklog (capped by the kernel's somaxconn).
// - Request bodies: httplib reads a POST/PUT/PATCH without Content-Length
//   or Transfer-Encoding until the client closes (or its 5 s read timeout:
//   then 400); such a request has no body (docs/api.md, Connections).
//   TreatAbsentLengthAsEmpty, called from the pre-routing handler (which
//   runs before the body is read), gives it `Content-Length: 0`.
// - Ending a connection: httplib keeps a connection open after its own 414
//   and 400 (it has discarded the request line or the headers, so it no
//   longer knows the request's framing, nor whether the client sent
//   `Connection: close`), waiting up to 5 s for the next request. It also
//   keeps it open after answering a request whose body it never read (a
//   401 or 503 of the pre-routing handler, a GET with a body): the body
//   was then parsed as the next request. It ends a connection only when
//   writing a response fails: EndConnectionAfter makes the response's body
//   a content provider that writes the whole body and then reports
//   failure, so httplib closes the connection right after the complete
//   response.
//
// Threading: stateless functions, called on httplib's threads.
#pragma once

#include <httplib.h>

#include <optional>
#include <string_view>

namespace stele::server {

// httplib::Server::set_socket_options hook for the listening sockets.
void ExclusiveListenSocket(socket_t sock);

// The accept queue asked for by WidenListenBacklog.
inline constexpr int kListenBacklog = 4096;

// Listens again on `sock`, a listening socket, with kListenBacklog: Linux
// updates the backlog of a socket that already listens. False (errno set)
// when listen fails; the socket keeps listening with its old backlog.
bool WidenListenBacklog(socket_t sock);

// Why binding a listener failed, from the errno of the failed bind ("" when
// errno names no known cause).
std::string_view ListenErrorCause(int error);

// For a request whose method has a body (POST, PUT, PATCH) but that has
// neither Content-Length nor Transfer-Encoding: sets `Content-Length: 0`.
// REQUIRES: called from the pre-routing handler, whose `req` is httplib's
// own non-const Request, before the body is read.
void TreatAbsentLengthAsEmpty(const httplib::Request& req);

// Sets `Connection: close` and makes httplib end the connection once this
// response (with a non-empty body, not to HEAD) is written. Call from the
// error handler or a route handler, after the body is set.
void EndConnectionAfter(httplib::Response& res);

// Post-routing hook (runs after the error handler, before anything is
// written): ends the connection after a request whose body was not read,
// and makes a response that says `Connection: close` carry that header
// once and no `Keep-Alive`.
void CloseWhenFramingIsLost(const httplib::Request& req, httplib::Response& res);

// The token of an `Authorization` header value with the Bearer scheme
// (docs/api.md, Authentication: the scheme in any case, then one or more
// spaces or tabs, then the token; surrounding whitespace ignored); nullopt
// for another scheme or an empty token.
std::optional<std::string_view> BearerToken(std::string_view authorization);

}  // namespace stele::server
