#include "http/router.h"

namespace stele::http {

void Router::Add(std::string method, const std::string& pattern, Handler handler) {
  routes_.push_back(Route{std::move(method), std::regex(pattern), std::move(handler), nullptr});
}

void Router::AddAsync(std::string method, const std::string& pattern, AsyncHandler handler) {
  routes_.push_back(Route{std::move(method), std::regex(pattern), nullptr, std::move(handler)});
}

const Router::Route* Router::Find(Request& req) const {
  const std::string_view method = req.method == "HEAD" ? std::string_view("GET") : req.method;
  for (const Route& route : routes_) {
    if (route.method != method) continue;
    std::smatch m;
    if (!std::regex_match(req.path, m, route.pattern)) continue;
    req.matches.clear();
    for (const auto& group : m) req.matches.push_back(group.str());
    return &route;
  }
  return nullptr;
}

}  // namespace stele::http
