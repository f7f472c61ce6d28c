// Helpers of the HTTP handlers (api_util.h).
#include "server/api_util.h"

#include <charconv>
#include <type_traits>
#include <variant>

#include "core/json_codec.h"

namespace stele::server::api {

ApiError Validation(std::string message) { return {400, "validation", std::move(message)}; }
ApiError NotFound(std::string message) { return {404, "not_found", std::move(message)}; }
ApiError Conflict(std::string message) { return {409, "conflict", std::move(message)}; }
ApiError Unavailable(std::string message) {
  return {503, "database_unavailable", std::move(message)};
}

ApiError Overloaded(std::string message) { return {503, "overloaded", std::move(message)}; }
ApiError ShuttingDown(std::string message) { return {503, "shutting_down", std::move(message)}; }

ApiError FromService(const service::ServiceError& e) {
  using Kind = service::ServiceError::Kind;
  switch (e.kind) {
    case Kind::kInvalidArgument:
      return Validation(e.message);
    case Kind::kNotFound:
      return NotFound(e.message);
    case Kind::kConflict:
    case Kind::kFailedPrecondition:
      return Conflict(e.message);
    case Kind::kAlreadyFinished:
      return ApiError{409, "already_finished", e.message};
    case Kind::kTimeout:
      return ApiError{408, "timeout", e.message};
    case Kind::kCancelled:
      return ShuttingDown(e.message);
    case Kind::kUnavailable:
      return Unavailable(e.message);
  }
  return ApiError{500, "internal", e.message};
}

void ReplyJson(http::Response& res, int status, const core::Json& body) {
  res.status = status;
  res.set_content(core::SerializeJson(body) + "\n", "application/json");
}

void ReplyError(http::Response& res, const ApiError& error) {
  core::Json body = {{"error", {{"kind", error.kind}, {"message", error.message}}}};
  // Every 503 is transient (a database error, a limit, a restart): tell
  // clients when to try again.
  if (error.status == 503) res.set_header("Retry-After", "1");
  ReplyJson(res, error.status, body);
}

Result<core::Json, ApiError> ParseBodyObject(const http::Request& req) {
  if (req.body.empty())
    return Unexpected(Validation("request body is empty: expected a JSON object"));
  auto json = core::ParseJson(req.body);
  if (!json) return Unexpected(Validation("malformed JSON body: " + json.error().message));
  if (!json->is_object()) {
    return Unexpected(Validation(std::string("expected a JSON object, got ") + json->type_name()));
  }
  return std::move(*json);
}

Result<void, ApiError> CheckKeys(const core::Json& body,
                                 std::initializer_list<std::string_view> allowed) {
  for (auto it = body.begin(); it != body.end(); ++it) {
    bool known = false;
    for (auto key : allowed) known = known || it.key() == key;
    if (!known) {
      std::string list;
      for (auto key : allowed) list += (list.empty() ? "" : ", ") + std::string(key);
      return Unexpected(Validation("unknown field `" + it.key() + "` (accepted: " + list + ")"));
    }
  }
  return {};
}

std::string PathSegment(const http::Request& req) {
  return req.matches.size() > 1 ? std::string(req.matches[1]) : std::string();
}

Result<std::optional<uint64_t>, ApiError> QueryUint(const http::Request& req,
                                                    const std::string& name, uint64_t min,
                                                    uint64_t max) {
  if (!req.has_param(name.c_str())) return std::optional<uint64_t>();
  std::string text = req.get_param_value(name.c_str());
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
    return Unexpected(
        Validation("query parameter `" + name + "`: expected a whole number, got `" + text + "`"));
  }
  if (value < min || value > max) {
    return Unexpected(Validation("query parameter `" + name + "` must be between " +
                                 std::to_string(min) + " and " + std::to_string(max)));
  }
  return std::optional<uint64_t>(value);
}

Result<bool, ApiError> QueryBool(const http::Request& req, const std::string& name, bool fallback) {
  if (!req.has_param(name.c_str())) return fallback;
  std::string text = req.get_param_value(name.c_str());
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  return Unexpected(
      Validation("query parameter `" + name + "`: expected true or false, got `" + text + "`"));
}

core::Json ResultToJson(const core::SupportedFunctionReturnValue& value) {
  if (const auto* ok = std::get_if<core::ReturnValueOk>(&value)) {
    return {{"ok", ok->ok ? *ok->ok : core::Json(nullptr)}};
  }
  if (const auto* err = std::get_if<core::ReturnValueErr>(&value)) {
    return {{"err", err->err ? *err->err : core::Json(nullptr)}};
  }
  const auto& failure = std::get<core::FinishedExecutionError>(value);
  core::Json error = {{"kind", std::string(core::ExecutionFailureKindName(failure.kind))}};
  if (failure.reason) error["reason"] = *failure.reason;
  if (failure.detail) error["detail"] = *failure.detail;
  return {{"execution_error", error}};
}

core::Json UnitResultToJson(bool ok) { return {{ok ? "ok" : "err", nullptr}}; }

namespace {

// `http_client_traces` with each response status in the API's result shape.
core::Json TracesToJson(const core::HttpClientTraces& traces) {
  if (!traces) return nullptr;
  core::Json out = core::Json::array();
  for (const core::HttpClientTrace& trace : *traces) {
    core::Json json = core::ToJson(trace);
    if (trace.resp) {
      if (const auto* code = std::get_if<uint16_t>(&trace.resp->status)) {
        json["resp"]["status"] = {{"ok", *code}};
      } else {
        json["resp"]["status"] = {{"err", std::get<std::string>(trace.resp->status)}};
      }
    }
    out.push_back(std::move(json));
  }
  return out;
}

}  // namespace

core::Json EventToJson(const core::ExecutionEvent& event) {
  core::Json out = core::ToJson(event);
  // ToJson wrote {"<tag>": body}; rewrite the fields that hold results, in
  // place, so that every other field keeps the codec's shape and order.
  core::Json& body = out["event"][std::string(core::ExecutionRequestVariantTag(event.event))];
  std::visit(
      [&](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, core::Finished>) {
          body["result"] = ResultToJson(e.result);
        }
        if constexpr (std::is_same_v<E, core::Finished> ||
                      std::is_same_v<E, core::TemporarilyFailed> ||
                      std::is_same_v<E, core::TemporarilyTimedOut>) {
          body["http_client_traces"] = TracesToJson(e.http_client_traces);
        }
        if constexpr (std::is_same_v<E, core::HistoryEventRequest>) {
          if (const auto* stub = std::get_if<core::HistoryStub>(&e.event)) {
            body["event"]["result"] = ResultToJson(stub->result);
            body["event"]["persist_result"] = UnitResultToJson(stub->persist_result_ok);
          }
        }
      },
      event.event);
  return out;
}

core::Json ResponseToJson(const core::JoinSetResponseEventOuter& response) {
  core::Json out = core::ToJson(response);
  core::Json& inner = out["event"]["event"];
  if (const auto* child = std::get_if<core::ChildExecutionFinished>(&response.event.event)) {
    inner["result"] = ResultToJson(child->result);
  } else if (const auto* delay = std::get_if<core::DelayFinished>(&response.event.event)) {
    inner["result"] = UnitResultToJson(delay->ok);
  }
  return out;
}

Result<core::SupportedFunctionReturnValue, ApiError> ResultFromJson(const core::Json& json) {
  if (!json.is_object() || json.size() != 1 || (!json.contains("ok") && !json.contains("err"))) {
    return Unexpected(Validation("`result` must be {\"ok\": value} or {\"err\": value}"));
  }
  if (json.contains("ok")) {
    const auto& v = json["ok"];
    return core::SupportedFunctionReturnValue(
        core::ReturnValueOk{v.is_null() ? std::nullopt : std::optional<core::Json>(v)});
  }
  const auto& v = json["err"];
  return core::SupportedFunctionReturnValue(
      core::ReturnValueErr{v.is_null() ? std::nullopt : std::optional<core::Json>(v)});
}

}  // namespace stele::server::api
