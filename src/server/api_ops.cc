// HTTP operations (api_ops.h): events, responses, cancel, pause, stub, upgrade,
// backtrace, components, follow, healthz (metrics: metrics.cc).
#include "server/api_ops.h"

#include <chrono>
#include <memory>
#include <optional>

#include "core/json_codec.h"
#include "server/config.h"

namespace stele::server::api {

namespace {

constexpr uint64_t kMaxEventsPage = 1000;

Result<core::Json, ApiError> ListEvents(ServerImpl& d, const http::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto since, QueryUint(req, "since_version", 0, UINT32_MAX));
  STELE_ASSIGN_OR_RETURN(auto length, QueryUint(req, "length", 1, kMaxEventsPage));
  STELE_ASSIGN_OR_RETURN(
      auto page, FromService(d.service->Events(PathSegment(req),
                                               static_cast<core::Version::Type>(since.value_or(0)),
                                               static_cast<uint32_t>(length.value_or(100)))));
  core::Json list = core::Json::array();
  for (const auto& event : page.events) list.push_back(EventToJson(event));
  core::Json out = {{"events", list}};
  if (page.next_since_version) out["next_since_version"] = *page.next_since_version;
  return out;
}

Result<core::Json, ApiError> ListResponses(ServerImpl& d, const http::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto cursor, QueryUint(req, "cursor", 0, UINT32_MAX));
  STELE_ASSIGN_OR_RETURN(auto length, QueryUint(req, "length", 1, kMaxEventsPage));
  std::optional<uint32_t> after;
  if (cursor) after = static_cast<uint32_t>(*cursor);
  STELE_ASSIGN_OR_RETURN(
      auto page, FromService(d.service->Responses(PathSegment(req), after,
                                                  static_cast<uint32_t>(length.value_or(100)))));
  core::Json list = core::Json::array();
  for (const auto& r : page.responses) {
    list.push_back({{"cursor", r.cursor}, {"response", ResponseToJson(r.event)}});
  }
  core::Json out = {{"responses", list}};
  if (page.next_cursor) out["next_cursor"] = *page.next_cursor;
  return out;
}

core::Json Outcome(service::CancelOutcome outcome) {
  switch (outcome) {
    case service::CancelOutcome::kCancelled:
      return {{"outcome", "cancelled"}};
    case service::CancelOutcome::kAlreadyFinished:
      return {{"outcome", "already_finished"}};
    case service::CancelOutcome::kCancelling:
      return {{"outcome", "cancelling"}};
  }
  return {{"outcome", "cancelled"}};
}

// The optional "reason" of a control request's body (empty when absent).
Result<std::string, ApiError> ReasonOf(const core::Json& body) {
  if (!body.contains("reason")) return std::string();
  if (!body["reason"].is_string()) return Unexpected(Validation("`reason` must be a string"));
  std::string reason = body["reason"].get<std::string>();
  if (reason.size() > 1024) return Unexpected(Validation("`reason` is longer than 1024 bytes"));
  return reason;
}

// The optional body of cancel and terminate: {"grace": "30s", "reason": "…"}
// (an empty body: the defaults).
Result<service::CancelOptions, ApiError> ParseCancelBody(const http::Request& req, bool terminate) {
  service::CancelOptions options;
  options.terminate = terminate;
  if (req.body.empty()) return options;
  STELE_ASSIGN_OR_RETURN(core::Json body, ParseBodyObject(req));
  if (terminate) {
    STELE_TRY(CheckKeys(body, {"reason"}));
  } else {
    STELE_TRY(CheckKeys(body, {"grace", "reason"}));
  }
  if (body.contains("grace")) {
    if (!body["grace"].is_string()) {
      return Unexpected(Validation("`grace` must be a duration string such as \"30s\""));
    }
    auto grace = ParseDurationText(body["grace"].get<std::string>());
    if (!grace) return Unexpected(Validation("`grace`: " + grace.error()));
    options.grace = *grace;
  }
  STELE_ASSIGN_OR_RETURN(options.reason, ReasonOf(body));
  return options;
}

Result<core::Json, ApiError> CancelOrTerminate(ServerImpl& d, const http::Request& req,
                                               bool terminate) {
  const std::string id = PathSegment(req);
  // Delays have their own route; an execution id never starts with Delay_.
  if (id.starts_with("Delay_")) {
    return Unexpected(Validation("`" + id.substr(0, 512) +
                                 "` is a delay id: cancel it with PUT /v1/delays/{id}/cancel"));
  }
  STELE_ASSIGN_OR_RETURN(service::CancelOptions options, ParseCancelBody(req, terminate));
  STELE_ASSIGN_OR_RETURN(auto outcome, FromService(d.service->Cancel(id, options)));
  return Outcome(outcome);
}

Result<core::Json, ApiError> CancelExecution(ServerImpl& d, const http::Request& req) {
  return CancelOrTerminate(d, req, /*terminate=*/false);
}

Result<core::Json, ApiError> TerminateExecution(ServerImpl& d, const http::Request& req) {
  return CancelOrTerminate(d, req, /*terminate=*/true);
}

// PUT .../pause and .../resume, with an optional {"reason": "…"}.
Result<core::Json, ApiError> PauseOrResume(ServerImpl& d, const http::Request& req, bool pause) {
  std::string reason;
  if (!req.body.empty()) {
    STELE_ASSIGN_OR_RETURN(core::Json body, ParseBodyObject(req));
    STELE_TRY(CheckKeys(body, {"reason"}));
    STELE_ASSIGN_OR_RETURN(reason, ReasonOf(body));
  }
  STELE_ASSIGN_OR_RETURN(bool paused,
                         FromService(d.service->SetPaused(PathSegment(req), pause, reason)));
  return core::Json{{"outcome", paused ? "paused" : "resumed"}};
}

Result<core::Json, ApiError> PauseExecution(ServerImpl& d, const http::Request& req) {
  return PauseOrResume(d, req, /*pause=*/true);
}

Result<core::Json, ApiError> ResumeExecution(ServerImpl& d, const http::Request& req) {
  return PauseOrResume(d, req, /*pause=*/false);
}

Result<core::Json, ApiError> CancelDelay(ServerImpl& d, const http::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto outcome, FromService(d.service->CancelDelay(PathSegment(req))));
  return Outcome(outcome);
}

Result<core::Json, ApiError> Stub(ServerImpl& d, const http::Request& req) {
  STELE_ASSIGN_OR_RETURN(core::Json body, ParseBodyObject(req));
  STELE_TRY(CheckKeys(body, {"result"}));
  if (!body.contains("result")) {
    return Unexpected(Validation("`result` is required: {\"ok\": value} or {\"err\": value}"));
  }
  STELE_ASSIGN_OR_RETURN(auto result, ResultFromJson(body["result"]));
  const std::string id = PathSegment(req);
  STELE_TRY(FromService(d.service->Stub(id, result)));
  return core::Json{{"execution_id", id}};
}

Result<core::Json, ApiError> Upgrade(ServerImpl& d, const http::Request& req) {
  STELE_ASSIGN_OR_RETURN(core::Json body, ParseBodyObject(req));
  STELE_TRY(CheckKeys(body, {"old_digest", "new_digest", "force"}));
  bool force = false;
  if (body.contains("force")) {
    if (!body["force"].is_boolean()) return Unexpected(Validation("`force` must be true or false"));
    force = body["force"].get<bool>();
  }
  const char* keys[2] = {"old_digest", "new_digest"};
  std::string digests[2];
  for (int i = 0; i < 2; ++i) {
    if (!body.contains(keys[i]) || !body[keys[i]].is_string()) {
      return Unexpected(Validation(std::string("`") + keys[i] + "` is required: sha256:<64 hex>"));
    }
    digests[i] = body[keys[i]].get<std::string>();
  }
  const std::string id = PathSegment(req);
  STELE_TRY(FromService(d.service->Upgrade(id, digests[0], digests[1], force)));
  return core::Json{{"execution_id", id}, {"component_digest", digests[1]}};
}

Result<core::Json, ApiError> Backtrace(ServerImpl& d, const http::Request& req) {
  storage::BacktraceFilter filter = storage::BacktraceFilter::Last();
  std::string version = req.has_param("version") ? req.get_param_value("version") : "last";
  if (version == "first") {
    filter = storage::BacktraceFilter::First();
  } else if (version != "last") {
    STELE_ASSIGN_OR_RETURN(auto v, QueryUint(req, "version", 0, UINT32_MAX));
    filter =
        storage::BacktraceFilter::Specific(core::Version(static_cast<core::Version::Type>(*v)));
  }
  const std::string id = PathSegment(req);
  STELE_ASSIGN_OR_RETURN(auto bt, FromService(d.service->Backtrace(id, filter)));
  return core::Json{{"execution_id", id},
                    {"component_id", core::ToJson(bt.component_id)},
                    {"version_min_including", bt.version_min_including.value()},
                    {"version_max_excluding", bt.version_max_excluding.value()},
                    {"wasm_backtrace", core::ToJson(bt.wasm_backtrace)}};
}

Result<core::Json, ApiError> Components(ServerImpl& d, const http::Request&) {
  core::Json list = core::Json::array();
  for (const auto& c : d.components) {
    core::Json functions = core::Json::array();
    for (const auto& f : c.functions) functions.push_back(core::FunctionSignatureToJson(f));
    list.push_back({{"name", c.component_id.name},
                    {"type", std::string(core::ComponentTypeName(c.component_id.component_type))},
                    {"digest", c.component_id.input_digest.ToString()},
                    {"functions", functions}});
  }
  core::Json webhooks = core::Json::array();
  for (const auto& w : d.webhooks) {
    webhooks.push_back(
        {{"name", w.config.name},
         {"type", std::string(core::ComponentTypeName(w.component_id.component_type))},
         {"digest", w.component_id.input_digest.ToString()},
         {"route", w.config.route},
         {"auth", w.config.auth_none ? "none" : "api"}});
  }
  return core::Json{{"components", list}, {"webhooks", webhooks}};
}

void Healthz(ServerImpl& d, const http::Request&, http::Response& res) {
  if (auto ping = d.service->Ping(); !ping) return ReplyError(res, FromService(ping.error()));
  ReplyJson(res, 200, {{"status", "ok"}});
}

}  // namespace

void InstallOperationRoutes(ServerImpl& d, http::Router& router, const std::string& id_path) {
  router.Get(id_path + "/events", Wrap(d, ListEvents));
  router.Get(id_path + "/responses", Wrap(d, ListResponses));
  router.Put(id_path + "/cancel", Wrap(d, CancelExecution));
  router.Put(id_path + "/terminate", Wrap(d, TerminateExecution));
  router.Put(id_path + "/pause", Wrap(d, PauseExecution));
  router.Put(id_path + "/resume", Wrap(d, ResumeExecution));
  router.Put("/v1/delays/([^/]+)/cancel", Wrap(d, CancelDelay));
  router.Put(id_path + "/stub", Wrap(d, Stub));
  router.Put(id_path + "/upgrade", Wrap(d, Upgrade));
  router.Get(id_path + "/backtrace", Wrap(d, Backtrace));
  router.Get("/v1/components", Wrap(d, Components));
  router.AddAsync("GET", id_path + "/follow", FollowHandler(d));
  router.Get("/healthz",
             [&d](const http::Request& req, http::Response& res) { Healthz(d, req, res); });
  router.Get("/metrics",
             [&d](const http::Request& req, http::Response& res) { Metrics(d, req, res); });
}

}  // namespace stele::server::api
