// HTTP routes (docs/api.md): auth, limits, the error envelope, submit,
// status, result, list. The remaining operations are in api_ops.cc.
#include <openssl/crypto.h>

#include <algorithm>

#include "core/json_codec.h"
#include "server/api_ops.h"
#include "server/api_util.h"
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

// Ids and ffqns in paths: anything but '/'; parsing does the validation.
constexpr const char* kIdPath = "/v1/executions/([^/]+)";

bool Authorized(const ServerImpl& d, const httplib::Request& req) {
  const auto& api = d.config.api;
  if (!api.token && !api.token_sha256) return true;
  std::string header = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (header.size() <= kBearer.size() || header.compare(0, kBearer.size(), kBearer) != 0) {
    return false;
  }
  std::string given = header.substr(kBearer.size());
  // Compare digests, so the comparison is constant-time and independent of
  // the token's length.
  std::string given_hex = Sha256Hex(given);
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
  return out;
}

httplib::Server::Handler api::Wrap(ServerImpl& d, api::Handler h) {
  return [&d, h](const httplib::Request& req, httplib::Response& res) {
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

Result<core::Json, ApiError> Submit(ServerImpl& d, const httplib::Request& req, int& status) {
  STELE_ASSIGN_OR_RETURN(core::Json body, api::ParseBodyObject(req));
  STELE_TRY(api::CheckKeys(body, {"ffqn", "params", "execution_id", "scheduled_at"}));
  if (!body.contains("ffqn") || !body["ffqn"].is_string()) {
    return Unexpected(Validation("`ffqn` is required: a string ns:pkg/ifc.fn"));
  }
  std::string ffqn_text = body["ffqn"].get<std::string>();
  auto ffqn = core::FunctionFqn::Parse(ffqn_text);
  if (!ffqn) {
    return Unexpected(Validation("invalid ffqn `" + ffqn_text +
                                 "` (expected ns:pkg/ifc.fn): " + ffqn.error().message));
  }
  auto info = d.registry.Find(*ffqn);
  if (!info) {
    return Unexpected(api::NotFound("unknown ffqn `" + ffqn_text +
                                    "`: no component of this server exports it"));
  }
  if (info->kind == runtime::workflow::FunctionKind::kActivityStub) {
    return Unexpected(Validation("`" + ffqn_text +
                                 "` is a stub activity: it is not submittable (stub its "
                                 "child executions with PUT /v1/executions/{id}/stub)"));
  }
  core::Json params = body.contains("params") ? body["params"] : core::Json::array();
  if (!params.is_array()) {
    return Unexpected(Validation(std::string("`params` must be a JSON array, got ") +
                                 params.type_name()));
  }
  if (auto sig = d.signatures.find(*ffqn); sig != d.signatures.end()) {
    auto checked = core::CheckParams(sig->second, params);
    if (!checked) return Unexpected(Validation("params of `" + ffqn_text + "`: " + checked.error()));
  }
  core::ExecutionId id = core::ExecutionId::Generate();
  if (body.contains("execution_id")) {
    if (!body["execution_id"].is_string()) {
      return Unexpected(Validation("`execution_id` must be a string E_<ULID>"));
    }
    std::string text = body["execution_id"].get<std::string>();
    auto parsed = core::ExecutionId::Parse(text);
    if (!parsed) {
      return Unexpected(Validation("invalid execution id `" + text + "`: " + parsed.error().message));
    }
    if (!parsed->IsTopLevel()) {
      return Unexpected(Validation("execution id `" + text +
                                   "` is a child id; submit needs a top-level E_<ULID>"));
    }
    id = *parsed;
  }
  DateTime now = d.clock->Now();
  DateTime scheduled_at = now;
  if (body.contains("scheduled_at")) {
    const auto& at = body["scheduled_at"];
    std::optional<DateTime> parsed;
    if (at.is_string()) parsed = ParseRfc3339(at.get<std::string>());
    if (!parsed) {
      return Unexpected(Validation("`scheduled_at` must be an RFC 3339 date-time string, e.g. "
                                   "\"2030-01-02T03:04:05Z\""));
    }
    scheduled_at = *parsed;
  }
  storage::CreateRequest request{now,          id,           *ffqn,   params, std::nullopt,
                                 scheduled_at, info->component_id, {},  std::nullopt};
  auto created = d.api->Create(request);
  core::Json reply = {{"execution_id", id.ToString()}};
  if (created) {
    status = 201;
    return reply;
  }
  if (created.error().IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kIllegalState)) {
    // The id exists: the same submission again is idempotent.
    auto existing = d.api->GetCreateRequest(id);
    if (!existing) return Unexpected(api::FromRead(existing.error(), "submit"));
    if (existing->ffqn == *ffqn && existing->params == params) {
      status = 200;
      return reply;
    }
    return Unexpected(api::Conflict("execution " + id.ToString() +
                                    " exists with another ffqn or other params"));
  }
  return Unexpected(api::FromWrite(created.error(), "submit"));
}

// ---- GET /v1/executions/{id} -------------------------------------------------

Result<core::Json, ApiError> GetExecution(ServerImpl& d, const httplib::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto id, api::PathExecutionId(req));
  auto created = d.api->GetCreateRequest(id);
  if (!created) return Unexpected(api::FromRead(created.error(), "execution " + id.ToString()));
  auto state = d.api->GetPendingState(id);
  if (!state) return Unexpected(api::FromRead(state.error(), "execution " + id.ToString()));
  core::Json out = {{"execution_id", id.ToString()},
                    {"ffqn", created->ffqn.ToString()},
                    {"created_at", FormatRfc3339(created->created_at)},
                    {"first_scheduled_at", FormatRfc3339(created->scheduled_at)},
                    {"component_digest", state->ComponentIdInputDigest().ToString()},
                    {"pending_state", api::PendingStateToJson(*state)}};
  if (const auto* finished = std::get_if<core::PendingStateFinished>(&state->value)) {
    auto event = d.api->GetExecutionEvent(id, core::Version(finished->version));
    if (!event) return Unexpected(api::FromRead(event.error(), "execution " + id.ToString()));
    if (const auto* f = std::get_if<core::Finished>(&event->event)) {
      out["result"] = api::ResultToJson(f->result);
    }
  }
  return out;
}

// ---- GET /v1/executions/{id}/result ------------------------------------------

Result<core::Json, ApiError> GetResult(ServerImpl& d, const httplib::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto id, api::PathExecutionId(req));
  auto max = static_cast<uint64_t>(d.config.api.max_result_wait.count());
  STELE_ASSIGN_OR_RETURN(auto timeout, api::QueryUint(req, "timeout", 0, max));
  // Check existence first: a wait on a missing id would only time out.
  auto state = d.api->GetPendingState(id);
  if (!state) return Unexpected(api::FromRead(state.error(), "execution " + id.ToString()));
  auto wait = std::chrono::seconds(timeout.value_or(0));
  // A wait holds its connection's thread: bounded by [api] max_waiters, so
  // that waiting clients leave connections for everything else.
  struct Slot {
    ServerImpl* d = nullptr;
    ~Slot() {
      if (d) ReleaseWaiter(*d);
    }
  } slot;
  if (wait.count() > 0) {
    if (!TryAcquireWaiter(d)) {
      return Unexpected(api::Overloaded(
          "too many waiting requests (the limit is " + std::to_string(d.config.api.max_waiters) +
          ", [api] max_waiters); retry later or wait with a shorter timeout"));
    }
    slot.d = &d;
  }
  // Stop cancels `stop_wait`: a stopping server ends the wait at once
  // instead of holding up its shutdown.
  auto result = d.api->WaitForFinishedResult(id, storage::WaitOptions::For(wait, d.stop_wait));
  if (result) {
    return core::Json{{"execution_id", id.ToString()}, {"result", api::ResultToJson(*result)}};
  }
  if (!result.error().IsTimeout()) {
    return Unexpected(api::Unavailable("waiting for " + id.ToString() + ": " +
                                       result.error().ToString()));
  }
  if (result.error().timeout() == storage::TimeoutOutcome::kCancel) {
    return Unexpected(api::ShuttingDown("the server is shutting down; wait for " + id.ToString() +
                                        " again once it is back"));
  }
  return Unexpected(ApiError{408, "timeout",
                             "execution " + id.ToString() + " did not finish within " +
                                 std::to_string(wait.count()) + " s"});
}

// ---- GET /v1/executions ------------------------------------------------------

Result<core::Json, ApiError> ListExecutions(ServerImpl& d, const httplib::Request& req) {
  std::string ffqn_prefix = req.get_param_value("ffqn_prefix");
  std::string id_prefix = req.get_param_value("execution_id_prefix");
  if (ffqn_prefix.size() > 512 || id_prefix.size() > 512) {
    return Unexpected(Validation("prefix filters are limited to 512 bytes"));
  }
  STELE_ASSIGN_OR_RETURN(bool show_derived, api::QueryBool(req, "show_derived", false));
  STELE_ASSIGN_OR_RETURN(bool hide_finished, api::QueryBool(req, "hide_finished", false));
  STELE_ASSIGN_OR_RETURN(auto length_opt, api::QueryUint(req, "length", 1, d.config.api.max_list_length));
  auto length = static_cast<uint16_t>(length_opt.value_or(20));
  bool newer = false;
  if (req.has_param("direction")) {
    std::string direction = req.get_param_value("direction");
    if (direction == "newer") {
      newer = true;
    } else if (direction != "older") {
      return Unexpected(Validation("query parameter `direction`: expected older or newer"));
    }
  }
  std::optional<core::ExecutionId> cursor;
  if (req.has_param("cursor")) {
    std::string text = req.get_param_value("cursor");
    auto parsed = core::ExecutionId::Parse(text);
    if (!parsed) return Unexpected(Validation("invalid cursor `" + text + "`: " + parsed.error().message));
    cursor = *parsed;
  }
  // Storage filters by exact ffqn and top-level only; prefixes and
  // hide_finished are applied here while scanning (docs/api.md: a bounded
  // scan, continued with next_cursor).
  bool filtered = !ffqn_prefix.empty() || !id_prefix.empty() || hide_finished;
  constexpr uint16_t kScanPage = 500;
  constexpr int kMaxScanPages = 20;
  std::vector<storage::ExecutionWithState> matches;
  std::optional<core::ExecutionId> next_cursor;
  bool exhausted = false;
  for (int page = 0; page < kMaxScanPages && matches.size() < length && !exhausted; ++page) {
    uint16_t fetch = filtered ? kScanPage : static_cast<uint16_t>(length - matches.size());
    core::ExecutionListPagination pagination =
        newer ? core::Pagination<std::optional<core::ExecutionId>>::NewerThan(fetch, cursor, false)
              : core::Pagination<std::optional<core::ExecutionId>>::OlderThan(fetch, cursor, false);
    auto rows = d.api->ListExecutions(std::nullopt, !show_derived, pagination);
    if (!rows) return Unexpected(api::FromGeneric(rows.error(), "list executions"));
    if (newer) std::reverse(rows->begin(), rows->end());  // scan order: ascending
    exhausted = rows->size() < fetch;
    for (auto& row : *rows) {
      cursor = row.execution_id;
      next_cursor = row.execution_id;
      bool match = row.ffqn.ToString().starts_with(ffqn_prefix) &&
                   row.execution_id.ToString().starts_with(id_prefix) &&
                   !(hide_finished && row.pending_state.IsFinished());
      if (match) matches.push_back(std::move(row));
      if (matches.size() >= length) {
        // Stopped inside the page: the page may hold more.
        break;
      }
    }
    if (matches.size() >= length) exhausted = false;
  }
  if (newer) std::reverse(matches.begin(), matches.end());  // always newest first
  core::Json executions = core::Json::array();
  for (const auto& row : matches) {
    core::Json item = {{"execution_id", row.execution_id.ToString()},
                       {"ffqn", row.ffqn.ToString()},
                       {"created_at", FormatRfc3339(row.created_at)},
                       {"first_scheduled_at", FormatRfc3339(row.first_scheduled_at)},
                       {"component_digest", row.component_digest.ToString()},
                       {"pending_state", api::PendingStateToJson(row.pending_state)}};
    executions.push_back(std::move(item));
  }
  core::Json out = {{"executions", executions}};
  if (!exhausted && next_cursor) out["next_cursor"] = next_cursor->ToString();
  return out;
}

}  // namespace

void InstallRoutes(ServerImpl& d, httplib::Server& http) {
  http.set_payload_max_length(d.config.api.max_body_bytes);
  // A thread per connection up to [api] max_connections (http_pool.h),
  // instead of httplib's fixed pool of 8.
  http.new_task_queue = [&d] { return new HttpPool(d.config.api.max_connections, d.http_stats); };
  // httplib closes a keep-alive connection after 5 requests by default:
  // scripted clients would reconnect every 5th call.
  http.set_keep_alive_max_count(100);
  // httplib writes a response's head and body separately: with Nagle's
  // algorithm the body then waits for the client's delayed ACK (~40 ms).
  http.set_tcp_nodelay(true);
  http.set_pre_routing_handler([&d, &http](const httplib::Request& req, httplib::Response& res) {
    if (HttpPool::RefusingOnThisThread()) {
      // Answered before the body is read; the connection is closed after.
      res.set_header("Connection", "close");
      ReplyError(res, api::Overloaded("too many concurrent connections (the limit is " +
                                      std::to_string(d.config.api.max_connections) +
                                      ", [api] max_connections); retry later"));
      return httplib::Server::HandlerResponse::Handled;
    }
    // httplib caps each header line (8 KiB) but not their number or sum.
    size_t header_bytes = 0;
    for (const auto& [name, value] : req.headers) header_bytes += name.size() + value.size() + 4;
    if (req.headers.size() > kMaxHeaders || header_bytes > kMaxHeaderBytes) {
      ReplyError(res, ApiError{431, "too_large",
                               "request headers are too large (" + std::to_string(req.headers.size()) +
                                   " headers, " + std::to_string(header_bytes) +
                                   " bytes; the limits are " + std::to_string(kMaxHeaders) +
                                   " headers and " + std::to_string(kMaxHeaderBytes) + " bytes)"});
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.path == "/healthz" || IsUiPath(d, http, req.path)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (!Authorized(d, req)) {
      res.set_header("WWW-Authenticate", "Bearer");
      ReplyError(res, ApiError{401, "unauthorized",
                               "missing or invalid bearer token (Authorization: Bearer <token>)"});
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Errors httplib produces itself (404 route, 413 body, 400 parse) get the
  // JSON envelope too.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    switch (res.status) {
      case 404: ReplyError(res, {404, "not_found", "no such endpoint: " + req.method + " " + req.path}); break;
      case 413: ReplyError(res, {413, "too_large", "request body is over the limit"}); break;
      case 414: ReplyError(res, {414, "too_large", "request URI is too long"}); break;
      case 431: ReplyError(res, {431, "too_large", "request headers are too large"}); break;
      default: ReplyError(res, {res.status, "bad_request", "the request was rejected"}); break;
    }
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    ReplyError(res, {500, "internal", "internal error"});
  });
  http.set_logger([&d](const httplib::Request&, const httplib::Response& res) {
    std::lock_guard lock(d.metrics_mu);
    ++d.responses_by_status[res.status];
  });

  http.Post("/v1/executions", [&d](const httplib::Request& req, httplib::Response& res) {
    int status = 200;
    auto out = Submit(d, req, status);
    if (out) {
      ReplyJson(res, status, *out);
    } else {
      ReplyError(res, out.error());
    }
  });
  http.Get("/v1/executions", api::Wrap(d, ListExecutions));
  http.Get(kIdPath, api::Wrap(d, GetExecution));
  http.Get(std::string(kIdPath) + "/result", api::Wrap(d, GetResult));
  api::InstallOperationRoutes(d, http, kIdPath);
  InstallUiRoutes(d, http);
}

}  // namespace stele::server
