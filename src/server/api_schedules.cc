// HTTP routes of cron schedules (docs/api.md, "Schedules"): each one
// translates the request into one ExecutionService call and its result
// into JSON; the service validates everything.
#include "core/json_codec.h"
#include "server/api_ops.h"
#include "server/api_util.h"

namespace stele::server::api {
namespace {

constexpr const char* kSchedulePath = "/v1/schedules/([^/]+)";

core::Json ScheduleToJson(const service::ScheduleInfo& info) {
  const storage::Schedule& s = info.schedule;
  const storage::ScheduleDefinition& d = s.definition;
  auto params = core::ParseJson(d.params);
  core::Json out = {
      {"name", d.name},
      {"schedule", d.expression},
      {"time_zone", d.time_zone},
      {"ffqn", d.ffqn},
      {"params", params ? *params : core::Json(nullptr)},
      {"overlap", d.overlap},
      {"catch_up", d.catch_up},
      {"catch_up_limit", d.catch_up_limit},
      {"source", d.from_config ? "config" : "api"},
      {"paused", s.paused},
      {"created_at", FormatRfc3339(s.created_at)},
      {"updated_at", FormatRfc3339(s.updated_at)},
      {"last_tick", FormatRfc3339(s.last_tick)},
      {"last_execution_id",
       s.last_execution_id ? core::Json(s.last_execution_id->ToString()) : core::Json(nullptr)},
      {"next_tick",
       info.next_tick ? core::Json(FormatRfc3339(*info.next_tick)) : core::Json(nullptr)},
  };
  return out;
}

Result<std::string, ApiError> StringField(const core::Json& body, const char* key, bool required) {
  if (!body.contains(key)) {
    if (required) return Unexpected(Validation(std::string("`") + key + "` is required: a string"));
    return std::string();
  }
  if (!body[key].is_string()) {
    return Unexpected(Validation(std::string("`") + key + "` must be a string"));
  }
  return body[key].get<std::string>();
}

Result<core::Json, ApiError> CreateSchedule(ServerImpl& d, const http::Request& req) {
  STELE_ASSIGN_OR_RETURN(core::Json body, ParseBodyObject(req));
  STELE_TRY(CheckKeys(body, {"name", "schedule", "time_zone", "ffqn", "params", "overlap",
                             "catch_up", "catch_up_limit"}));
  service::ScheduleSpec spec;
  STELE_ASSIGN_OR_RETURN(spec.name, StringField(body, "name", true));
  STELE_ASSIGN_OR_RETURN(spec.expression, StringField(body, "schedule", true));
  STELE_ASSIGN_OR_RETURN(spec.ffqn, StringField(body, "ffqn", true));
  if (body.contains("time_zone")) {
    STELE_ASSIGN_OR_RETURN(spec.time_zone, StringField(body, "time_zone", true));
  }
  if (body.contains("overlap")) {
    STELE_ASSIGN_OR_RETURN(spec.overlap, StringField(body, "overlap", true));
  }
  if (body.contains("catch_up")) {
    STELE_ASSIGN_OR_RETURN(spec.catch_up, StringField(body, "catch_up", true));
  }
  if (body.contains("params")) spec.params = body["params"];
  if (body.contains("catch_up_limit")) {
    const core::Json& limit = body["catch_up_limit"];
    if (!limit.is_number_unsigned() || limit.get<uint64_t>() > 1000) {
      return Unexpected(Validation("`catch_up_limit` must be an integer in 1..1000"));
    }
    spec.catch_up_limit = limit.get<uint32_t>();
  }
  STELE_ASSIGN_OR_RETURN(auto info, FromService(d.service->CreateSchedule(spec)));
  return ScheduleToJson(info);
}

Result<core::Json, ApiError> ListSchedules(ServerImpl& d, const http::Request&) {
  STELE_ASSIGN_OR_RETURN(auto infos, FromService(d.service->ListSchedules()));
  core::Json out = core::Json::array();
  for (const auto& info : infos) out.push_back(ScheduleToJson(info));
  return core::Json{{"schedules", std::move(out)}};
}

Result<core::Json, ApiError> GetSchedule(ServerImpl& d, const http::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto info, FromService(d.service->GetSchedule(PathSegment(req))));
  return ScheduleToJson(info);
}

Result<core::Json, ApiError> PauseSchedule(ServerImpl& d, const http::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto info, FromService(d.service->PauseSchedule(PathSegment(req))));
  return ScheduleToJson(info);
}

Result<core::Json, ApiError> ResumeSchedule(ServerImpl& d, const http::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto info, FromService(d.service->ResumeSchedule(PathSegment(req))));
  return ScheduleToJson(info);
}

Result<core::Json, ApiError> DeleteSchedule(ServerImpl& d, const http::Request& req) {
  const std::string name = PathSegment(req);
  STELE_TRY(FromService(d.service->DeleteSchedule(name)));
  return core::Json{{"deleted", name}};
}

Result<core::Json, ApiError> TriggerSchedule(ServerImpl& d, const http::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto submitted, FromService(d.service->TriggerSchedule(PathSegment(req))));
  return core::Json{{"execution_id", submitted.execution_id.ToString()}};
}

// Replies 201 with the handler's JSON (a resource was created).
http::Router::Handler Created(ServerImpl& d, Handler h) {
  return [&d, h](const http::Request& req, http::Response& res) {
    auto out = h(d, req);
    if (out) {
      ReplyJson(res, 201, *out);
    } else {
      ReplyError(res, out.error());
    }
  };
}

}  // namespace

void InstallScheduleRoutes(ServerImpl& d, http::Router& router) {
  router.Get("/v1/schedules", Wrap(d, ListSchedules));
  router.Post("/v1/schedules", Created(d, CreateSchedule));
  router.Get(kSchedulePath, Wrap(d, GetSchedule));
  router.Delete(kSchedulePath, Wrap(d, DeleteSchedule));
  router.Put(std::string(kSchedulePath) + "/pause", Wrap(d, PauseSchedule));
  router.Put(std::string(kSchedulePath) + "/resume", Wrap(d, ResumeSchedule));
  router.Post(std::string(kSchedulePath) + "/trigger", Created(d, TriggerSchedule));
}

}  // namespace stele::server::api
