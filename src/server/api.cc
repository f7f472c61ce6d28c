// HTTP routes (docs/api.md): auth, limits, the error envelope, submit,
// status, result, list. The remaining operations are in api_ops.cc.
#include <openssl/crypto.h>

#include <algorithm>

#include "core/json_codec.h"
#include "http/server.h"
#include "server/api_ops.h"
#include "server/api_util.h"
#include "server/http_protocol.h"
#include "server/server_impl.h"

namespace stele::server {

namespace {

using api::ApiError;
using api::ReplyError;
using api::ReplyJson;
using api::Validation;

// Header limits of every request (docs/reliability.md, Limits).
constexpr size_t kMaxHeaders = 100;
constexpr size_t kMaxHeaderBytes = 64 * 1024;
// The routes match the path with std::regex, whose matcher recurses once
// per character, about 570 bytes of the connection thread's stack each: an
// 8 KiB path took 4.6 MB (docs/reliability.md, Memory under hostile
// traffic). The longest path of a route is under 600 bytes.
constexpr size_t kMaxPathBytes = 1024;

// Ids and ffqns in paths: anything but '/'; parsing does the validation.
constexpr const char* kIdPath = "/v1/executions/([^/]+)";

bool Authorized(const ServerImpl& d, const http::Request& req) {
  const auto& api = d.config.api;
  if (!api.token && !api.token_sha256) return true;
  const std::string header = req.get_header_value("Authorization");
  std::optional<std::string_view> given = BearerToken(header);
  if (!given) return false;
  // Compare digests, so the comparison is constant-time and independent of
  // the token's length.
  std::string given_hex = Sha256Hex(*given);
  std::string expected_hex = api.token ? Sha256Hex(*api.token) : *api.token_sha256;
  return CRYPTO_memcmp(given_hex.data(), expected_hex.data(), given_hex.size()) == 0;
}

}  // namespace

bool TryAcquireWaiter(ServerImpl& d) {
  if (d.waiters.fetch_add(1) >= d.config.api.max_waiters) {
    --d.waiters;
    ++d.waiters_refused;
    return false;
  }
  return true;
}

void ReleaseWaiter(ServerImpl& d) { --d.waiters; }

core::Json api::PendingStateToJson(const core::PendingState& state) {
  core::Json out;
  std::visit(
      [&](const auto& s) {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, core::PendingStatePendingAt>) {
          out = {{"status", "pending_at"}, {"scheduled_at", FormatRfc3339(s.scheduled_at)}};
        } else if constexpr (std::is_same_v<S, core::PendingStateLocked>) {
          out = {{"status", "locked"},
                 {"lock_expires_at", FormatRfc3339(s.lock_expires_at)},
                 {"executor_id", s.locked_by.executor_id.ToString()},
                 {"run_id", s.locked_by.run_id.ToString()}};
        } else if constexpr (std::is_same_v<S, core::PendingStateBlockedByJoinSet>) {
          out = {{"status", "blocked_by_join_set"},
                 {"join_set_id", s.join_set_id.ToString()},
                 {"lock_expires_at", FormatRfc3339(s.lock_expires_at)},
                 {"closing", s.closing}};
        } else {
          out = {{"status", "finished"},
                 {"finished_at", FormatRfc3339(s.finished_at)},
                 {"version", s.version},
                 {"result_kind", s.result_kind.ToString()}};
        }
      },
      state.value);
  if (state.StatusTag() != state.StateTag()) {
    // Paused or cancelling: the status says so, the fields above describe
    // the state underneath (docs/api.md, "Execution status").
    out["state"] = std::string(state.StateTag());
    out["status"] = std::string(state.StatusTag());
  }
  return out;
}

http::Router::Handler api::Wrap(ServerImpl& d, api::Handler h) {
  return [&d, h](const http::Request& req, http::Response& res) {
    auto out = h(d, req);
    if (out) {
      ReplyJson(res, 200, *out);
    } else {
      ReplyError(res, out.error());
    }
  };
}

namespace {

// ---- POST /v1/executions ---------------------------------------------------

// A duration field of the submit body: a string such as "30s".
Result<std::optional<std::chrono::milliseconds>, ApiError> DurationField(const core::Json& body,
                                                                         const std::string& key,
                                                                         std::string_view where) {
  if (!body.contains(key)) return std::optional<std::chrono::milliseconds>();
  if (!body[key].is_string()) {
    return Unexpected(
        Validation("`" + std::string(where) + "` must be a duration string such as \"30s\""));
  }
  auto parsed = ParseDurationText(body[key].get<std::string>());
  if (!parsed) return Unexpected(Validation("`" + std::string(where) + "`: " + parsed.error()));
  return std::optional<std::chrono::milliseconds>(*parsed);
}

// An integer field of the submit body.
Result<std::optional<int64_t>, ApiError> IntegerField(const core::Json& body,
                                                      const std::string& key,
                                                      std::string_view where) {
  if (!body.contains(key)) return std::optional<int64_t>();
  if (!body[key].is_number_integer()) {
    return Unexpected(Validation("`" + std::string(where) + "` must be an integer"));
  }
  return std::optional<int64_t>(body[key].get<int64_t>());
}

// The execution's own policy: "deadline" (RFC 3339) or "timeout"
// (duration), and "retry": {"max_retries", "backoff", "max_backoff",
// "jitter_percent"} (docs/api.md). The service checks the ranges.
Result<void, ApiError> ReadPolicy(const core::Json& body, service::SubmitRequest& request) {
  if (body.contains("deadline")) {
    const auto& at = body["deadline"];
    if (at.is_string()) request.deadline = ParseRfc3339(at.get<std::string>());
    if (!request.deadline) {
      return Unexpected(
          Validation("`deadline` must be an RFC 3339 date-time string, e.g. "
                     "\"2030-01-02T03:04:05Z\""));
    }
  }
  STELE_ASSIGN_OR_RETURN(request.timeout, DurationField(body, "timeout", "timeout"));
  if (!body.contains("retry")) return {};
  const core::Json& retry = body["retry"];
  if (!retry.is_object()) {
    return Unexpected(
        Validation("`retry` must be an object: {\"max_retries\": 3, \"backoff\": "
                   "\"1s\", \"max_backoff\": \"1m\", \"jitter_percent\": 10}"));
  }
  STELE_TRY(api::CheckKeys(retry, {"max_retries", "backoff", "max_backoff", "jitter_percent"}));
  STELE_ASSIGN_OR_RETURN(request.max_retries,
                         IntegerField(retry, "max_retries", "retry.max_retries"));
  STELE_ASSIGN_OR_RETURN(request.retry_backoff, DurationField(retry, "backoff", "retry.backoff"));
  STELE_ASSIGN_OR_RETURN(request.max_retry_backoff,
                         DurationField(retry, "max_backoff", "retry.max_backoff"));
  STELE_ASSIGN_OR_RETURN(request.retry_jitter_percent,
                         IntegerField(retry, "jitter_percent", "retry.jitter_percent"));
  return {};
}

Result<core::Json, ApiError> Submit(ServerImpl& d, const http::Request& req, int& status) {
  STELE_ASSIGN_OR_RETURN(core::Json body, api::ParseBodyObject(req));
  STELE_TRY(api::CheckKeys(
      body, {"ffqn", "params", "execution_id", "scheduled_at", "deadline", "timeout", "retry"}));
  if (!body.contains("ffqn") || !body["ffqn"].is_string()) {
    return Unexpected(Validation("`ffqn` is required: a string ns:pkg/ifc.fn"));
  }
  service::SubmitRequest request;
  request.ffqn = body["ffqn"].get<std::string>();
  if (body.contains("params")) request.params = body["params"];
  if (body.contains("execution_id")) {
    if (!body["execution_id"].is_string()) {
      return Unexpected(Validation("`execution_id` must be a string E_<ULID>"));
    }
    request.execution_id = body["execution_id"].get<std::string>();
  }
  if (body.contains("scheduled_at")) {
    const auto& at = body["scheduled_at"];
    if (at.is_string()) request.scheduled_at = ParseRfc3339(at.get<std::string>());
    if (!request.scheduled_at) {
      return Unexpected(
          Validation("`scheduled_at` must be an RFC 3339 date-time string, e.g. "
                     "\"2030-01-02T03:04:05Z\""));
    }
  }
  STELE_TRY(ReadPolicy(body, request));
  STELE_ASSIGN_OR_RETURN(auto submitted, api::FromService(d.service->Submit(request)));
  status = submitted.created ? 201 : 200;
  return core::Json{{"execution_id", submitted.execution_id.ToString()}};
}

// ---- GET /v1/executions/{id} -------------------------------------------------

Result<core::Json, ApiError> GetExecution(ServerImpl& d, const http::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto info, api::FromService(d.service->Get(api::PathSegment(req))));
  core::Json out = {{"execution_id", info.execution_id.ToString()},
                    {"ffqn", info.ffqn.ToString()},
                    {"created_at", FormatRfc3339(info.created_at)},
                    {"first_scheduled_at", FormatRfc3339(info.first_scheduled_at)},
                    {"component_digest", info.component_digest.ToString()},
                    {"pending_state", api::PendingStateToJson(info.pending_state)}};
  if (info.result) out["result"] = api::ResultToJson(*info.result);
  return out;
}

// ---- GET /v1/executions/{id}/result ------------------------------------------

// What a result wait answers (with or without a wait).
Result<core::Json, ApiError> ResultAnswer(
    const std::string& id,
    Result<core::SupportedFunctionReturnValue, service::ServiceError> result) {
  // Stop cancels `stop_wait`: a stopping server ends the wait at once
  // instead of holding up its shutdown.
  if (!result && result.error().kind == service::ServiceError::Kind::kCancelled) {
    return Unexpected(api::ShuttingDown("the server is shutting down; wait for " + id +
                                        " again once it is back"));
  }
  STELE_ASSIGN_OR_RETURN(auto value, api::FromService(std::move(result)));
  return core::Json{{"execution_id", id}, {"result", api::ResultToJson(value)}};
}

// On a worker. A wait holds no thread (api_waits.cc), but a slot of [api]
// max_waiters, so that waiting clients stay bounded; a wait that cannot
// start (bad or unknown id) fails before taking one.
void StartResultWait(ServerImpl& d, const http::RequestPtr& req, const http::ResponderPtr& out) {
  const std::string id = api::PathSegment(*req);
  auto max = static_cast<uint64_t>(d.config.api.max_result_wait.count());
  auto timeout = api::QueryUint(*req, "timeout", 0, max);
  if (!timeout) return SendAnswer(out, Unexpected(timeout.error()));
  const auto wait = std::chrono::seconds(timeout->value_or(0));
  if (wait.count() == 0) {
    return SendAnswer(out, ResultAnswer(id, d.service->WaitForResult(id, wait, d.stop_wait)));
  }
  if (auto found = api::FromService(d.service->Get(id)); !found) {
    return SendAnswer(out, Unexpected(found.error()));
  }
  std::shared_ptr<void> slot = AcquireWaiterSlot(d);
  if (!slot) {
    return SendAnswer(
        out,
        Unexpected(api::Overloaded(
            "too many waiting requests (the limit is " + std::to_string(d.config.api.max_waiters) +
            ", [api] max_waiters); retry later or wait with a shorter timeout")));
  }
  auto started = d.service->WaitForResultAsync(
      id, wait, d.stop_wait, PostToWorkers(d),
      [id, out, slot](Result<core::SupportedFunctionReturnValue, service::ServiceError> result) {
        SendAnswer(out, ResultAnswer(id, std::move(result)));
      });
  if (!started) return SendAnswer(out, Unexpected(api::FromService(started.error())));
  AbandonWithClient(out, *started);
}

// ---- GET /v1/executions ------------------------------------------------------

Result<core::Json, ApiError> ListExecutions(ServerImpl& d, const http::Request& req) {
  service::ListQuery query;
  query.ffqn_prefix = req.get_param_value("ffqn_prefix");
  query.execution_id_prefix = req.get_param_value("execution_id_prefix");
  STELE_ASSIGN_OR_RETURN(bool show_derived, api::QueryBool(req, "show_derived", false));
  query.top_level_only = !show_derived;
  STELE_ASSIGN_OR_RETURN(query.hide_finished, api::QueryBool(req, "hide_finished", false));
  if (req.has_param("status")) query.status = req.get_param_value("status");
  STELE_ASSIGN_OR_RETURN(auto length,
                         api::QueryUint(req, "length", 1, d.config.api.max_list_length));
  query.limit = static_cast<uint32_t>(length.value_or(20));
  if (req.has_param("direction")) {
    std::string direction = req.get_param_value("direction");
    if (direction == "newer") {
      query.direction = service::ListDirection::kNewer;
    } else if (direction != "older") {
      return Unexpected(Validation("query parameter `direction`: expected older or newer"));
    }
  }
  if (req.has_param("cursor")) query.cursor = req.get_param_value("cursor");
  STELE_ASSIGN_OR_RETURN(auto page, api::FromService(d.service->List(query)));
  core::Json executions = core::Json::array();
  for (const auto& row : page.executions) {
    executions.push_back({{"execution_id", row.execution_id.ToString()},
                          {"ffqn", row.ffqn.ToString()},
                          {"created_at", FormatRfc3339(row.created_at)},
                          {"first_scheduled_at", FormatRfc3339(row.first_scheduled_at)},
                          {"component_digest", row.component_digest.ToString()},
                          {"pending_state", api::PendingStateToJson(row.pending_state)}});
  }
  core::Json out = {{"executions", executions}};
  if (page.next_cursor) out["next_cursor"] = page.next_cursor->ToString();
  return out;
}

}  // namespace

http::Router::AsyncHandler OnWaitPool(ServerImpl& d, http::Router::Handler handler) {
  return [&d, handler = std::move(handler)](http::RequestPtr req, http::ResponderPtr out) {
    auto run = [handler, req, out] {
      http::Response res;
      try {
        handler(*req, res);
      } catch (...) {
        res = http::Response();
        ReplyError(res, {500, "internal", "internal error"});
      }
      out->Send(std::move(res));
    };
    if (!d.waits->Post(std::move(run))) {
      http::Response res;
      ReplyError(res, api::ShuttingDown("the server is shutting down"));
      out->Send(std::move(res));
    }
  };
}

uint64_t OpenConnections(const ServerImpl& d) {
  uint64_t n = d.http.server ? d.http.server->stats().open.load() : 0;
  if (d.ui_http && d.ui_http->server) n += d.ui_http->server->stats().open.load();
  return n;
}

uint64_t RefusedConnections(const ServerImpl& d) {
  uint64_t n = d.http.server ? d.http.server->stats().refused.load() : 0;
  if (d.ui_http && d.ui_http->server) n += d.ui_http->server->stats().refused.load();
  return n;
}

namespace {

// Auth and the API's own limits, before the body is read (the HTTP layer
// then ends the connection when a body was announced).
std::optional<http::Response> Precheck(ServerImpl& d, const ServerImpl::Listener& listener,
                                       const http::Request& req) {
  http::Response res;
  size_t header_bytes = 0;
  for (const auto& [name, value] : req.headers) header_bytes += name.size() + value.size() + 4;
  if (req.headers.size() > kMaxHeaders || header_bytes > kMaxHeaderBytes) {
    ReplyError(
        res, ApiError{431, "too_large",
                      "request headers are too large (" + std::to_string(req.headers.size()) +
                          " headers, " + std::to_string(header_bytes) + " bytes; the limits are " +
                          std::to_string(kMaxHeaders) + " headers and " +
                          std::to_string(kMaxHeaderBytes) + " bytes)"});
    return res;
  }
  if (req.path.size() > kMaxPathBytes) {
    ReplyError(res, ApiError{414, "too_large",
                             "request path is too long (" + std::to_string(req.path.size()) +
                                 " bytes; the limit is " + std::to_string(kMaxPathBytes) + ")"});
    return res;
  }
  if (req.path == "/healthz" || IsUiPath(d, listener, req.path) || IsPublicWebhookRequest(d, req)) {
    return std::nullopt;
  }
  if (!Authorized(d, req)) {
    res.set_header("WWW-Authenticate", "Bearer");
    ReplyError(res, ApiError{401, "unauthorized",
                             "missing or invalid bearer token (Authorization: Bearer <token>)"});
    return res;
  }
  return std::nullopt;
}

// Routes a complete request: a synchronous handler runs on the workers.
void Dispatch(ServerImpl& d, const http::Router& router, http::RequestPtr req,
              http::ResponderPtr out) {
  const http::Router::Route* route = router.Find(*req);
  if (route == nullptr) {
    http::Response res;
    ReplyError(res, {404, "not_found", "no such endpoint: " + req->method + " " + req->path});
    return out->Send(std::move(res));
  }
  if (route->async) return route->async(std::move(req), std::move(out));
  auto run = [route, req, out] {
    http::Response res;
    try {
      route->handler(*req, res);
    } catch (...) {
      res = http::Response();
      ReplyError(res, {500, "internal", "internal error"});
    }
    out->Send(std::move(res));
  };
  if (!d.workers->Post(std::move(run))) {
    http::Response res;
    ReplyError(res, api::ShuttingDown("the server is shutting down"));
    out->Send(std::move(res));
  }
}

}  // namespace

void InstallRoutes(ServerImpl& d, ServerImpl::Listener& listener) {
  http::Router& router = listener.router;
  router.Post("/v1/executions", [&d](const http::Request& req, http::Response& res) {
    int status = 200;
    auto out = Submit(d, req, status);
    if (out) {
      ReplyJson(res, status, *out);
    } else {
      ReplyError(res, out.error());
    }
  });
  router.Get("/v1/executions", api::Wrap(d, ListExecutions));
  router.Get(kIdPath, api::Wrap(d, GetExecution));
  router.AddAsync("GET", std::string(kIdPath) + "/result", OnWorkersAsync(d, StartResultWait));
  api::InstallOperationRoutes(d, router, kIdPath);
  api::InstallMessageRoutes(d, router, kIdPath);
  api::InstallScheduleRoutes(d, router);
  InstallUiRoutes(d, listener);
  InstallWebhookRoutes(d, router);

  http::ServerOptions o;
  o.max_connections = d.config.api.max_connections;
  o.max_body_bytes = d.config.api.max_body_bytes;
  o.precheck = [&d, &listener](const http::Request& req) { return Precheck(d, listener, req); };
  o.handler = [&d, &listener](http::RequestPtr req, http::ResponderPtr out) {
    Dispatch(d, listener.router, std::move(req), std::move(out));
  };
  o.error = [&d](int status, std::string kind, std::string message) {
    if (kind == "overloaded") {
      message = "too many concurrent connections (the limit is " +
                std::to_string(d.config.api.max_connections) +
                ", [api] max_connections); retry later";
    }
    http::Response res;
    ReplyError(res, ApiError{status, std::move(kind), std::move(message)});
    return res;
  };
  o.on_response = [&d](int status) {
    std::lock_guard lock(d.metrics_mu);
    ++d.responses_by_status[status];
  };
  listener.server = std::make_unique<http::HttpServer>(std::move(o));
}

}  // namespace stele::server
