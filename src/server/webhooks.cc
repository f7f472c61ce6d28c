#include "server/webhooks.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "base/log.h"
#include "http/message.h"
#include "http/router.h"
#include "server/api_util.h"
#include "server/server_impl.h"
#if STELE_SERVER_HAVE_WASM
#include "runtime/wasm_host/webhook_guest.h"
#endif
#if STELE_SERVER_HAVE_JS
#include "runtime/js/js_webhook.h"
#endif

namespace stele::server {

namespace {

namespace fs = std::filesystem;
namespace wh = runtime::webhook;
using api::ApiError;
using api::ReplyError;

std::string Lower(std::string_view s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The guest's doors into the service: exactly what POST /v1/executions and
// GET /v1/executions/{id}/result do (ffqn and params checked by the
// service, errors mapped as the API maps them).
class ServiceWebhookHost final : public wh::WebhookHost {
 public:
  explicit ServiceWebhookHost(ServerImpl& d) : d_(d) {}

  Result<std::string, Error> Submit(const std::string& ffqn, const core::Json& params) override {
    service::SubmitRequest request;
    request.ffqn = ffqn;
    request.params = params;
    auto submitted = d_.service->Submit(request);
    if (!submitted) {
      ApiError e = api::FromService(submitted.error());
      return Unexpected(Error{e.kind, e.message});
    }
    return submitted->execution_id.ToString();
  }

  Result<std::optional<core::SupportedFunctionReturnValue>, Error> AwaitResult(
      const std::string& execution_id, std::chrono::milliseconds timeout) override {
    using Kind = service::ServiceError::Kind;
    // A wait holds the connection's thread like GET .../result?timeout=
    // does: it takes a slot of [api] max_waiters, and without a free one
    // it only looks (timeout 0).
    bool slot = timeout.count() > 0 && TryAcquireWaiter(d_);
    auto result = d_.service->WaitForResult(
        execution_id, slot ? timeout : std::chrono::milliseconds(0), d_.stop_wait);
    if (slot) ReleaseWaiter(d_);
    if (result) return std::optional<core::SupportedFunctionReturnValue>(std::move(*result));
    if (result.error().kind == Kind::kTimeout || result.error().kind == Kind::kCancelled) {
      return std::optional<core::SupportedFunctionReturnValue>();
    }
    ApiError e = api::FromService(result.error());
    return Unexpected(Error{e.kind, e.message});
  }

 private:
  ServerImpl& d_;
};

ConfigError WebhookErrorAt(const WebhookConfig& w, const std::string& file, std::string key,
                           std::string message) {
  return ConfigError{file, w.line, std::string(w.js ? "webhook_js." : "webhook_wasm.") + key,
                     "webhook `" + w.name + "`: " + std::move(message)};
}

Result<LoadedWebhook, ConfigError> LoadWasmWebhook(const WebhookConfig& w,
                                                   const std::string& file) {
  std::error_code ec;
  if (!fs::is_regular_file(w.location, ec)) {
    return Unexpected(WebhookErrorAt(w, file, "location", "no such file `" + w.location + "`"));
  }
  auto route = ParseRoutePattern(w.route);
  if (!route) return Unexpected(WebhookErrorAt(w, file, "route", route.error()));
#if STELE_SERVER_HAVE_WASM
  namespace rh = runtime::wasm_host;
  const uint32_t pages = w.max_memory_mib * 16;
  auto guest = rh::LoadWasmWebhookFile(SharedWasmEngine(), w.location, w.name, pages);
  if (!guest) return Unexpected(WebhookErrorAt(w, file, "location", guest.error()));
  LoadedWebhook out;
  out.config = w;
  out.route = std::move(*route);
  out.component_id = (*guest)->component_id;
  std::shared_ptr<const rh::WasmWebhook> loaded = *guest;
  rh::WasiConfig wasi;
  wasi.env.assign(w.env.begin(), w.env.end());
  const std::string prefix = "webhook " + w.name;
  out.serve = [loaded, wasi, prefix, timeout = w.timeout](const wh::WebhookRequest& request,
                                                          wh::WebhookHost& host,
                                                          const CancellationToken& cancel) {
    return rh::RunWasmWebhook(*loaded, request, host, timeout, cancel, prefix, wasi);
  };
  return out;
#else
  return Unexpected(
      WebhookErrorAt(w, file, "location",
                     "[[webhook_wasm]] is not supported yet: this build has no WebAssembly "
                     "runtime (runtime/wasm_host)"));
#endif
}

Result<LoadedWebhook, ConfigError> LoadJsWebhook(const WebhookConfig& w, const std::string& file) {
  std::error_code ec;
  if (!fs::is_regular_file(w.location, ec)) {
    return Unexpected(WebhookErrorAt(w, file, "location", "no such file `" + w.location + "`"));
  }
  auto route = ParseRoutePattern(w.route);
  if (!route) return Unexpected(WebhookErrorAt(w, file, "route", route.error()));
#if STELE_SERVER_HAVE_JS
  namespace js = runtime::js;
  js::JsLimits limits;
  limits.max_heap_bytes = size_t{w.max_memory_mib} << 20;
  auto guest = js::LoadJsWebhookFile(js::CreateV8JsEngine(), w.location, w.name, limits);
  if (!guest) return Unexpected(WebhookErrorAt(w, file, "location", guest.error()));
  LoadedWebhook out;
  out.config = w;
  out.route = std::move(*route);
  out.component_id = (*guest)->component_id;
  std::shared_ptr<const js::JsWebhook> loaded = *guest;
  std::vector<std::pair<std::string, std::string>> env(w.env.begin(), w.env.end());
  const std::string prefix = "webhook " + w.name;
  out.serve = [loaded, env, prefix, timeout = w.timeout](const wh::WebhookRequest& request,
                                                         wh::WebhookHost& host,
                                                         const CancellationToken& cancel) {
    return js::RunJsWebhook(*loaded, request, host, timeout, cancel, prefix, env);
  };
  return out;
#else
  return Unexpected(
      WebhookErrorAt(w, file, "location",
                     "[[webhook_js]] is not supported: this build has no JavaScript runtime "
                     "(runtime/js)"));
#endif
}

// The method a route is matched with: HEAD is a GET without the body
// (the HTTP layer sends the head only).
std::string_view RouteMethod(const http::Request& req) {
  return req.method == "HEAD" ? std::string_view("GET") : std::string_view(req.method);
}

void Count(ServerImpl& d, size_t index, int status) {
  std::lock_guard lock(d.metrics_mu);
  ++d.webhook_responses[{index, status}];
}

void ServeWebhook(ServerImpl& d, const http::Request& req, http::Response& res) {
  bool path_matched = false;
  auto match = MatchRoute(d.webhook_routes, RouteMethod(req), req.path, &path_matched);
  if (!match) {
    if (!path_matched) {
      return ReplyError(res,
                        {404, "not_found", "no such endpoint: " + req.method + " " + req.path});
    }
    std::string allow;
    for (const auto& route : d.webhook_routes) {
      if (MatchPath(route, req.path) && allow.find(route.method) == std::string::npos) {
        allow += (allow.empty() ? "" : ", ") + route.method;
      }
    }
    res.set_header("Allow", allow);
    return ReplyError(
        res, {405, "method_not_allowed",
              req.method + " is not allowed on " + req.path + " (allowed: " + allow + ")"});
  }
  const LoadedWebhook& webhook = d.webhooks[match->index];
  wh::WebhookRequest request;
  request.method = req.method;
  request.path = req.path;
  request.params = std::move(match->params);
  // The query only (the body is the guest's to read, form-encoded or not).
  for (const auto& [name, value] : req.params) request.query.emplace_back(name, value);
  for (const auto& [name, value] : req.headers) {
    std::string lower = Lower(name);
    // The API token the server checked is not the guest's to see (or log).
    if (lower == "authorization" && !webhook.config.auth_none) continue;
    request.headers.emplace_back(std::move(lower), value);
  }
  request.body = req.body;
  ServiceWebhookHost host(d);
  auto out = webhook.serve(request, host, d.stop_wait);
  if (!out) {
    const wh::WebhookFailure& f = out.error();
    const bool timeout = f.kind == wh::WebhookFailure::Kind::kTimeout;
    STELE_LOG(kWarn, "webhook `" << webhook.config.name << "` (" << webhook.config.route << ") "
                                 << req.method << " " << req.path << ": " << f.message
                                 << (f.detail.empty() ? "" : "\n") << f.detail);
    ReplyError(res,
               {timeout ? 504 : 500, timeout ? "webhook_timeout" : "webhook_failed", f.message});
  } else {
    std::string content_type = "text/plain; charset=utf-8";
    for (const auto& [name, value] : out->headers) {
      const std::string lower = Lower(name);
      // The HTTP layer frames the response itself.
      if (lower == "content-length" || lower == "transfer-encoding" || lower == "connection") {
        continue;
      }
      if (lower == "content-type") {
        content_type = value;
      } else {
        res.set_header(name, value);
      }
    }
    res.status = out->status;
    res.set_content(out->body, content_type);
  }
  Count(d, match->index, res.status);
}

// "/(?:orders|hooks)(?:/.*)?": every path under the first segment of some
// route, so that a wrong method or a path under a webhook's prefix gets
// the webhook's 405 or 404 (literals are [A-Za-z0-9._~-]: only '.' needs
// escaping).
std::string PrefixRegex(const std::vector<RoutePattern>& routes) {
  std::string alternatives;
  std::vector<std::string> seen;
  for (const auto& route : routes) {
    const std::string& first = route.segments[0].text;
    if (std::find(seen.begin(), seen.end(), first) != seen.end()) continue;
    seen.push_back(first);
    if (!alternatives.empty()) alternatives += '|';
    for (char c : first) {
      if (c == '.') alternatives += '\\';
      alternatives += c;
    }
  }
  return "/(?:" + alternatives + ")(?:/.*)?";
}

}  // namespace

Result<std::vector<LoadedWebhook>, ConfigErrors> LoadWebhooks(const ServerConfig& config,
                                                              const std::string& file) {
  std::vector<LoadedWebhook> out;
  ConfigErrors errors;
  for (const auto& w : config.webhooks) {
    auto loaded = w.js ? LoadJsWebhook(w, file) : LoadWasmWebhook(w, file);
    if (loaded) {
      out.push_back(std::move(*loaded));
    } else {
      errors.push_back(std::move(loaded.error()));
    }
  }
  if (!errors.empty()) return Unexpected(std::move(errors));
  return out;
}

void InstallWebhookRoutes(ServerImpl& d, http::Router& router) {
  if (d.webhook_routes.empty()) return;
  const std::string pattern = PrefixRegex(d.webhook_routes);
  // A guest may wait for a result (await_result): on the wait pool.
  auto handler = OnWaitPool(
      d, [&d](const http::Request& req, http::Response& res) { ServeWebhook(d, req, res); });
  for (const char* method : {"GET", "POST", "PUT", "PATCH", "DELETE"}) {
    router.AddAsync(method, pattern, handler);
  }
}

bool IsPublicWebhookRequest(const ServerImpl& d, const http::Request& req) {
  if (d.webhook_routes.empty()) return false;
  auto match = MatchRoute(d.webhook_routes, RouteMethod(req), req.path);
  return match && d.webhooks[match->index].config.auth_none;
}

}  // namespace stele::server
