// Webhook route patterns (docs/config.md, "[[webhook_wasm]]"): "POST
// /orders/:id" — a method and a path of literal segments and `:name`
// segments. Parsing rejects what could never be served or would shadow the
// server's own paths; CheckRouteConflicts rejects two routes that match the
// same requests; MatchRoute picks the route of a request.
//
// Threading: pure functions on values. Ownership: values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace stele::server {

struct RoutePattern {
  std::string method;  // GET, POST, PUT, PATCH or DELETE
  struct Segment {
    bool param = false;
    std::string text;  // the literal, or the param's name without ':'
  };
  std::vector<Segment> segments;  // at least one; the first is a literal
  std::string ToString() const;   // "POST /orders/:id"
};

// First path segments that belong to the server (the API, the UI, the
// probes): a route may not start with one. Also every `v<digits>`, kept for
// later API versions.
bool IsReservedFirstSegment(std::string_view segment);

// Parses "METHOD /a/:b". Errors say what is wrong: an unknown method, a
// path not starting with '/', an empty segment (`//`, a trailing '/'), a
// character outside [A-Za-z0-9._~-] in a literal, a param name outside
// [A-Za-z_][A-Za-z0-9_]* or given twice, a first segment that is a param
// or reserved (IsReservedFirstSegment), more than 16 segments.
Result<RoutePattern, std::string> ParseRoutePattern(std::string_view text);

// Two routes of one method that match the same paths (equal literals or
// params at every position, whatever the params' names) are duplicates:
// the index pairs (i, j), i < j. Routes that overlap only partially
// (/orders/:id and /orders/new) are fine: MatchRoute prefers literals.
std::vector<std::pair<size_t, size_t>> DuplicateRoutes(const std::vector<RoutePattern>& routes);

// The params of `path` under `route` when its segments match (method
// ignored); nullopt otherwise. A param matches any one non-empty segment.
std::optional<std::vector<std::pair<std::string, std::string>>> MatchPath(const RoutePattern& route,
                                                                          std::string_view path);

struct RouteMatch {
  size_t index = 0;  // into the routes given
  std::vector<std::pair<std::string, std::string>> params;
};
// The route for (method, path): among those whose path matches and whose
// method is `method`, the one with a literal at the first position where
// they differ. `path_matched` tells whether any route matched the path
// (whatever its method): the difference between 404 and 405.
std::optional<RouteMatch> MatchRoute(const std::vector<RoutePattern>& routes,
                                     std::string_view method, std::string_view path,
                                     bool* path_matched = nullptr);

}  // namespace stele::server
