// The bearer token of an Authorization header (http_protocol.h).
#include "server/http_protocol.h"

namespace stele::server {

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

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
