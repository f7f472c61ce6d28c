// Router: routes of (method, path pattern) to handlers, matched in the
// order they were added. A pattern is an ECMAScript regular expression
// matched against the whole decoded path; its groups become
// Request::matches. HEAD is routed as GET (the server sends the head only).
//
// A Handler runs to completion and fills a Response (the caller runs it on
// a worker: it may block on the database); an AsyncHandler answers through
// its Responder, at once or later, and must not block.
//
// Threading: Add* before serving; Find from any thread afterwards.
#pragma once

#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "http/message.h"

namespace stele::http {

class Router {
 public:
  using Handler = std::function<void(const Request&, Response&)>;
  using AsyncHandler = std::function<void(RequestPtr, ResponderPtr)>;
  struct Route {
    std::string method;
    std::regex pattern;
    Handler handler;  // exactly one of handler and async is set
    AsyncHandler async;
  };

  void Add(std::string method, const std::string& pattern, Handler handler);
  void AddAsync(std::string method, const std::string& pattern, AsyncHandler handler);
  void Get(const std::string& pattern, Handler h) { Add("GET", pattern, std::move(h)); }
  void Post(const std::string& pattern, Handler h) { Add("POST", pattern, std::move(h)); }
  void Put(const std::string& pattern, Handler h) { Add("PUT", pattern, std::move(h)); }
  void Patch(const std::string& pattern, Handler h) { Add("PATCH", pattern, std::move(h)); }
  void Delete(const std::string& pattern, Handler h) { Add("DELETE", pattern, std::move(h)); }

  // The first route for `req`, with `req.matches` set; null when none.
  const Route* Find(Request& req) const;

 private:
  std::vector<Route> routes_;
};

}  // namespace stele::http
