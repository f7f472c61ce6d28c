// The HTTP face of messages and published values (docs/api.md,
// "Messages"): each handler translates the request into one
// ExecutionService call and its answer back; every rule is the service's.
#include <string>
#include <utility>

#include "server/api_ops.h"

namespace stele::server::api {

namespace {

core::Json ValueToJson(const std::string& execution_id, const service::PublishedValue& value) {
  return core::Json{{"execution_id", execution_id},
                    {"key", value.key},
                    {"value", value.value},
                    {"version", value.version.value()},
                    {"published_at", FormatRfc3339(value.published_at)}};
}

std::string PathSegment2(const http::Request& req) {
  return req.matches.size() > 2 ? std::string(req.matches[2]) : std::string();
}

// ---- POST /v1/executions/{id}/messages/{channel} ----------------------------

Result<core::Json, ApiError> SendMessage(ServerImpl& d, const http::Request& req) {
  STELE_ASSIGN_OR_RETURN(core::Json body, ParseBodyObject(req));
  STELE_TRY(CheckKeys(body, {"body", "message_id"}));
  if (!body.contains("body")) {
    return Unexpected(Validation("`body` is required: the message, any JSON value"));
  }
  service::SendMessageRequest request{PathSegment(req), PathSegment2(req), std::move(body["body"]),
                                      std::nullopt};
  if (body.contains("message_id")) {
    if (!body["message_id"].is_string()) {
      return Unexpected(Validation("`message_id` must be a string"));
    }
    request.message_id = body["message_id"].get<std::string>();
  }
  STELE_ASSIGN_OR_RETURN(auto sent, FromService(d.service->SendMessage(request)));
  return core::Json{{"execution_id", request.execution_id},
                    {"channel", request.channel},
                    {"message_id", sent.message_id},
                    {"delivered_now", sent.delivered_now}};
}

// ---- GET /v1/executions/{id}/values -----------------------------------------

Result<core::Json, ApiError> ListValues(ServerImpl& d, const http::Request& req) {
  const std::string id = PathSegment(req);
  STELE_ASSIGN_OR_RETURN(auto values, FromService(d.service->ListValues(id)));
  core::Json out = core::Json::array();
  for (const service::PublishedValue& value : values) {
    core::Json row = ValueToJson(id, value);
    row.erase("execution_id");
    out.push_back(std::move(row));
  }
  return core::Json{{"execution_id", id}, {"values", std::move(out)}};
}

// ---- GET /v1/executions/{id}/values/{key} -----------------------------------

Result<core::Json, ApiError> ValueAnswer(
    const std::string& id, Result<service::PublishedValue, service::ServiceError> value) {
  if (!value && value.error().kind == service::ServiceError::Kind::kCancelled) {
    return Unexpected(
        ShuttingDown("the server is shutting down; wait for " + id + " again once it is back"));
  }
  STELE_ASSIGN_OR_RETURN(auto found, FromService(std::move(value)));
  return ValueToJson(id, found);
}

// On a worker. A wait holds no thread (api_waits.cc) but a slot of [api]
// max_waiters, as the result's wait does; a wait that cannot start fails
// before taking one.
void StartValueWait(ServerImpl& d, const http::RequestPtr& req, const http::ResponderPtr& out) {
  const std::string id = PathSegment(*req);
  const std::string key = PathSegment2(*req);
  auto max = static_cast<uint64_t>(d.config.api.max_result_wait.count());
  auto timeout = QueryUint(*req, "timeout", 0, max);
  if (!timeout) return SendAnswer(out, Unexpected(timeout.error()));
  auto after = QueryUint(*req, "after_version", 0, UINT32_MAX);
  if (!after) return SendAnswer(out, Unexpected(after.error()));
  service::ValueWait wait{std::nullopt, std::chrono::seconds(timeout->value_or(0))};
  if (*after) wait.after_version = core::Version(static_cast<core::Version::Type>(**after));
  if (wait.timeout.count() == 0) {
    return SendAnswer(out, ValueAnswer(id, d.service->GetValue(id, key, wait, d.stop_wait)));
  }
  if (auto found = FromService(d.service->Get(id)); !found) {
    return SendAnswer(out, Unexpected(found.error()));
  }
  std::shared_ptr<void> slot = AcquireWaiterSlot(d);
  if (!slot) {
    return SendAnswer(
        out,
        Unexpected(Overloaded("too many waiting requests (the limit is " +
                              std::to_string(d.config.api.max_waiters) +
                              ", [api] max_waiters); retry later or wait with a shorter timeout")));
  }
  auto started = d.service->GetValueAsync(
      id, key, wait, d.stop_wait, PostToWorkers(d),
      [id, out, slot](Result<service::PublishedValue, service::ServiceError> value) {
        SendAnswer(out, ValueAnswer(id, std::move(value)));
      });
  if (!started) return SendAnswer(out, Unexpected(FromService(started.error())));
  AbandonWithClient(out, *started);
}

}  // namespace

void InstallMessageRoutes(ServerImpl& d, http::Router& router, const std::string& id_path) {
  // A channel or key may hold `/`: the rest of the path is it.
  router.Post(id_path + "/messages/(.+)", Wrap(d, SendMessage));
  router.Get(id_path + "/values", Wrap(d, ListValues));
  router.AddAsync("GET", id_path + "/values/(.+)", OnWorkersAsync(d, StartValueWait));
}

}  // namespace stele::server::api
