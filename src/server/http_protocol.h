// HTTP details of the API that the HTTP layer (src/http) leaves to it:
// the bearer token of an `Authorization` header. Internal to src/server.
//
// Threading: stateless functions.
#pragma once

#include <optional>
#include <string_view>

namespace stele::server {

// The token of an `Authorization` header value with the Bearer scheme
// (docs/api.md, Authentication: the scheme in any case, then one or more
// spaces or tabs, then the token; surrounding whitespace ignored); nullopt
// for another scheme or an empty token.
std::optional<std::string_view> BearerToken(std::string_view authorization);

}  // namespace stele::server
