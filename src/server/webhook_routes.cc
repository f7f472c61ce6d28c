#include "server/webhook_routes.h"

#include <cctype>
#include <set>

namespace stele::server {

namespace {

constexpr size_t kMaxSegments = 16;
constexpr size_t kMaxSegmentBytes = 128;

bool IsLiteralChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '~' ||
         c == '-';
}

bool IsParamName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

// Splits "/a/b" into {"a", "b"}; "/" gives {""}.
std::vector<std::string_view> Split(std::string_view path) {
  std::vector<std::string_view> out;
  path.remove_prefix(1);
  while (true) {
    size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

}  // namespace

std::string RoutePattern::ToString() const {
  std::string out = method + " ";
  for (const auto& s : segments) out += "/" + std::string(s.param ? ":" : "") + s.text;
  return out;
}

bool IsReservedFirstSegment(std::string_view segment) {
  if (segment == "ui" || segment == "metrics" || segment == "healthz") return true;
  if (segment.size() >= 2 && segment[0] == 'v') {
    for (char c : segment.substr(1)) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
  }
  return false;
}

Result<RoutePattern, std::string> ParseRoutePattern(std::string_view text) {
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) {
    return Unexpected(std::string("expected \"METHOD /path\", e.g. \"POST /orders/:id\""));
  }
  RoutePattern out;
  out.method = std::string(text.substr(0, space));
  static const std::set<std::string> kMethods = {"GET", "POST", "PUT", "PATCH", "DELETE"};
  if (!kMethods.contains(out.method)) {
    return Unexpected("method `" + out.method + "` is not one of GET, POST, PUT, PATCH, DELETE");
  }
  std::string_view path = text.substr(space + 1);
  if (path.empty() || path[0] != '/') {
    return Unexpected("the path must start with '/', e.g. \"POST /orders/:id\"");
  }
  std::vector<std::string_view> parts = Split(path);
  if (parts.size() > kMaxSegments) {
    return Unexpected("more than " + std::to_string(kMaxSegments) + " path segments");
  }
  std::set<std::string> names;
  for (std::string_view part : parts) {
    if (part.empty()) {
      return Unexpected(std::string(
          "empty path segment (a route has no `//`, no trailing '/' and is not \"/\")"));
    }
    if (part.size() > kMaxSegmentBytes) {
      return Unexpected("a path segment is over " + std::to_string(kMaxSegmentBytes) + " bytes");
    }
    RoutePattern::Segment segment;
    if (part[0] == ':') {
      segment.param = true;
      segment.text = std::string(part.substr(1));
      if (!IsParamName(segment.text)) {
        return Unexpected("`" + std::string(part) +
                          "`: a param is `:name` with name [A-Za-z_][A-Za-z0-9_]*");
      }
      if (!names.insert(segment.text).second) {
        return Unexpected("param `:" + segment.text + "` appears twice");
      }
    } else {
      for (char c : part) {
        if (!IsLiteralChar(c)) {
          return Unexpected("`" + std::string(part) +
                            "`: a literal segment uses only [A-Za-z0-9._~-]");
        }
      }
      segment.text = std::string(part);
    }
    out.segments.push_back(std::move(segment));
  }
  if (out.segments[0].param) {
    return Unexpected(std::string(
        "the first segment must be a literal (a param there would take the server's own paths)"));
  }
  if (IsReservedFirstSegment(out.segments[0].text)) {
    return Unexpected("`/" + out.segments[0].text +
                      "` is the server's (the API /v1, /metrics, /healthz, the web UI /ui; every "
                      "/v<N> is kept for the API): choose another first segment");
  }
  return out;
}

std::vector<std::pair<size_t, size_t>> DuplicateRoutes(const std::vector<RoutePattern>& routes) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < routes.size(); ++i) {
    for (size_t j = i + 1; j < routes.size(); ++j) {
      const auto& a = routes[i];
      const auto& b = routes[j];
      if (a.method != b.method || a.segments.size() != b.segments.size()) continue;
      bool same = true;
      for (size_t k = 0; same && k < a.segments.size(); ++k) {
        const auto& x = a.segments[k];
        const auto& y = b.segments[k];
        same = x.param == y.param && (x.param || x.text == y.text);
      }
      if (same) out.emplace_back(i, j);
    }
  }
  return out;
}

std::optional<std::vector<std::pair<std::string, std::string>>> MatchPath(const RoutePattern& route,
                                                                          std::string_view path) {
  if (path.empty() || path[0] != '/') return std::nullopt;
  std::vector<std::string_view> parts = Split(path);
  if (parts.size() != route.segments.size()) return std::nullopt;
  std::vector<std::pair<std::string, std::string>> params;
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& segment = route.segments[i];
    if (segment.param) {
      if (parts[i].empty()) return std::nullopt;
      params.emplace_back(segment.text, std::string(parts[i]));
    } else if (parts[i] != segment.text) {
      return std::nullopt;
    }
  }
  return params;
}

std::optional<RouteMatch> MatchRoute(const std::vector<RoutePattern>& routes,
                                     std::string_view method, std::string_view path,
                                     bool* path_matched) {
  if (path_matched) *path_matched = false;
  std::optional<RouteMatch> best;
  for (size_t i = 0; i < routes.size(); ++i) {
    auto params = MatchPath(routes[i], path);
    if (!params) continue;
    if (path_matched) *path_matched = true;
    if (routes[i].method != method) continue;
    if (best) {
      // Both match the same path, so they have as many segments: the one
      // with a literal where they first differ wins.
      const auto& a = routes[best->index].segments;
      const auto& b = routes[i].segments;
      bool better = false;
      for (size_t k = 0; k < a.size(); ++k) {
        if (a[k].param != b[k].param) {
          better = !b[k].param;
          break;
        }
      }
      if (!better) continue;
    }
    best = RouteMatch{i, std::move(*params)};
  }
  return best;
}

}  // namespace stele::server
