// JSON shapes of the small values: durations, component ids, retry configs,
// metadata, HTTP traces, return values, schedules, persist kinds, backtraces.
#include <string>

#include "core/json_codec.h"
#include "core/json_codec_internal.h"

namespace stele::core {
namespace json_internal {
namespace {

JsonResult<ExecutionFailureKind> ReadFailureKind(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(std::string name, ReadString(json, path));
  const std::optional<ExecutionFailureKind> kind = ParseExecutionFailureKind(name);
  if (!kind) {
    return UnknownVariant(path, name,
                          "`timed_out`, `nondeterminism_detected`, `out_of_fuel`, `cancelled`, "
                          "`uncategorized`");
  }
  return *kind;
}

// A value of a return value: any JSON, null meaning "no value".
JsonResult<Json> ReadAnyValue(const Json& json, const std::string& /*path*/) { return json; }

JsonResult<HttpResponseTrace> DecodeHttpResponseTrace(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  STELE_ASSIGN_OR_RETURN(DateTime finished_at, Field(object, "finished_at", &ReadDateTime));
  STELE_ASSIGN_OR_RETURN(const Json* status, object.Required("status"));
  const std::string status_path = object.PathOf("status");
  STELE_ASSIGN_OR_RETURN(auto tagged, ExternalTag(*status, status_path));
  const auto& [tag, value] = tagged;
  if (tag == "Ok") {
    STELE_ASSIGN_OR_RETURN(uint16_t code, ReadU16(*value, ChildPath(status_path, tag)));
    return HttpResponseTrace{finished_at, code};
  }
  if (tag == "Err") {
    STELE_ASSIGN_OR_RETURN(std::string message, ReadString(*value, ChildPath(status_path, tag)));
    return HttpResponseTrace{finished_at, std::move(message)};
  }
  return UnknownVariant(status_path, tag, "`Ok`, `Err`");
}

JsonResult<FrameSymbol> DecodeFrameSymbol(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  FrameSymbol symbol;
  STELE_ASSIGN_OR_RETURN(symbol.func_name, OptionalField(object, "func_name", &ReadString));
  STELE_ASSIGN_OR_RETURN(symbol.file, OptionalField(object, "file", &ReadString));
  STELE_ASSIGN_OR_RETURN(symbol.line, OptionalField(object, "line", &ReadU32));
  STELE_ASSIGN_OR_RETURN(symbol.col, OptionalField(object, "col", &ReadU32));
  return symbol;
}

JsonResult<std::vector<FrameSymbol>> ReadFrameSymbols(const Json& json, const std::string& path) {
  return ReadArray(json, path, &DecodeFrameSymbol);
}

JsonResult<FrameInfo> DecodeFrameInfo(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  FrameInfo frame;
  STELE_ASSIGN_OR_RETURN(frame.module, Field(object, "module", &ReadString));
  STELE_ASSIGN_OR_RETURN(frame.func_name, Field(object, "func_name", &ReadString));
  STELE_ASSIGN_OR_RETURN(frame.symbols, Field(object, "symbols", &ReadFrameSymbols));
  return frame;
}

JsonResult<std::vector<FrameInfo>> ReadFrames(const Json& json, const std::string& path) {
  return ReadArray(json, path, &DecodeFrameInfo);
}

Json FrameSymbolJson(const FrameSymbol& symbol) {
  const auto identity = [](const auto& v) { return v; };
  Json out = Json::object();
  out["func_name"] = OptionalJson(symbol.func_name, identity);
  out["file"] = OptionalJson(symbol.file, identity);
  out["line"] = OptionalJson(symbol.line, identity);
  out["col"] = OptionalJson(symbol.col, identity);
  return out;
}

}  // namespace

JsonResult<Duration> DecodeDuration(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  STELE_ASSIGN_OR_RETURN(uint64_t secs, Field(object, "secs", &ReadU64));
  STELE_ASSIGN_OR_RETURN(uint32_t nanos, Field(object, "nanos", &ReadU32));
  if (nanos >= 1'000'000'000) {
    return Error(object.PathOf("nanos"), "must be below 1000000000, got " + std::to_string(nanos));
  }
  return Duration{secs, nanos};
}

JsonResult<ComponentId> DecodeComponentId(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  STELE_ASSIGN_OR_RETURN(std::string type_name, Field(object, "component_type", &ReadString));
  auto type = ParseComponentType(type_name);
  if (!type) return Error(object.PathOf("component_type"), type.error().message);
  // The name is not validated, as Obelisk does not validate it on
  // deserialisation: it was checked when the component was configured, and
  // a stricter reader must never make stored events unreadable.
  STELE_ASSIGN_OR_RETURN(std::string name, Field(object, "name", &ReadString));
  STELE_ASSIGN_OR_RETURN(InputContentDigest digest, Field(object, "input_digest", &ReadDigest));
  return ComponentId{*type, std::move(name), digest};
}

JsonResult<ComponentRetryConfig> DecodeRetryConfig(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  ComponentRetryConfig config;
  STELE_ASSIGN_OR_RETURN(config.max_retries, OptionalField(object, "max_retries", &ReadU32));
  STELE_ASSIGN_OR_RETURN(config.retry_exp_backoff,
                         Field(object, "retry_exp_backoff", &DecodeDuration));
  // Both absent in events written before the cap and the jitter existed.
  STELE_ASSIGN_OR_RETURN(config.max_backoff, OptionalField(object, "max_backoff", &DecodeDuration));
  STELE_ASSIGN_OR_RETURN(std::optional<uint32_t> jitter,
                         OptionalField(object, "jitter_percent", &ReadU32));
  if (jitter && *jitter > 100) {
    return Error(object.PathOf("jitter_percent"),
                 "expected 0..100, got " + std::to_string(*jitter));
  }
  config.jitter_percent = jitter.value_or(0);
  return config;
}

JsonResult<ExecutionMetadata> DecodeMetadata(const Json& json, const std::string& path) {
  ExecutionMetadata metadata;
  // null is Obelisk's empty metadata (`Option<HashMap>` = None).
  if (json.is_null()) return metadata;
  if (!json.is_object())
    return Error(path, std::string("expected object, got ") + json.type_name());
  for (auto it = json.begin(); it != json.end(); ++it) {
    STELE_ASSIGN_OR_RETURN(std::string value, ReadString(it.value(), ChildPath(path, it.key())));
    metadata.entries.emplace(it.key(), std::move(value));
  }
  return metadata;
}

JsonResult<HttpClientTrace> DecodeHttpClientTrace(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  STELE_ASSIGN_OR_RETURN(const Json* req_json, object.Required("req"));
  STELE_ASSIGN_OR_RETURN(ObjectReader req, ObjectReader::Make(*req_json, object.PathOf("req")));
  HttpClientTrace trace;
  STELE_ASSIGN_OR_RETURN(trace.req.sent_at, Field(req, "sent_at", &ReadDateTime));
  STELE_ASSIGN_OR_RETURN(trace.req.uri, Field(req, "uri", &ReadString));
  STELE_ASSIGN_OR_RETURN(trace.req.method, Field(req, "method", &ReadString));
  STELE_ASSIGN_OR_RETURN(trace.resp, OptionalField(object, "resp", &DecodeHttpResponseTrace));
  return trace;
}

JsonResult<SupportedFunctionReturnValue> DecodeReturnValue(const Json& json,
                                                           const std::string& path) {
  STELE_ASSIGN_OR_RETURN(auto tagged, ExternalTag(json, path));
  const auto& [tag, body] = tagged;
  const std::string body_path = ChildPath(path, tag);
  if (tag == "ok" || tag == "err") {
    STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(*body, body_path));
    STELE_ASSIGN_OR_RETURN(std::optional<Json> value, OptionalField(object, tag, &ReadAnyValue));
    if (tag == "ok") return ReturnValueOk{std::move(value)};
    return ReturnValueErr{std::move(value)};
  }
  if (tag == "execution_error") {
    STELE_ASSIGN_OR_RETURN(FinishedExecutionError error,
                           DecodeFinishedExecutionError(*body, body_path));
    return error;
  }
  return UnknownVariant(path, tag, "`ok`, `err`, `execution_error`");
}

JsonResult<FinishedExecutionError> DecodeFinishedExecutionError(const Json& json,
                                                                const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  FinishedExecutionError error;
  STELE_ASSIGN_OR_RETURN(error.kind, Field(object, "kind", &ReadFailureKind));
  STELE_ASSIGN_OR_RETURN(error.reason, OptionalField(object, "reason", &ReadString));
  STELE_ASSIGN_OR_RETURN(error.detail, OptionalField(object, "detail", &ReadString));
  return error;
}

JsonResult<PendingStateFinishedResultKind> DecodeResultKind(const Json& json,
                                                            const std::string& path) {
  if (json.is_string()) {
    if (json.get_ref<const std::string&>() == "ok") return PendingStateFinishedResultKind::Ok();
    return UnknownVariant(path, json.get_ref<const std::string&>(), "`ok`, `err`");
  }
  STELE_ASSIGN_OR_RETURN(auto tagged, ExternalTag(json, path));
  const auto& [tag, err] = tagged;
  if (tag != "err") return UnknownVariant(path, tag, "`ok`, `err`");
  const std::string err_path = ChildPath(path, tag);
  if (err->is_string()) {
    if (err->get_ref<const std::string&>() == "FallibleError") {
      return PendingStateFinishedResultKind::FallibleError();
    }
    return UnknownVariant(err_path, err->get_ref<const std::string&>(),
                          "`FallibleError`, `ExecutionFailure`");
  }
  STELE_ASSIGN_OR_RETURN(auto failure, ExternalTag(*err, err_path));
  if (failure.first != "ExecutionFailure") {
    return UnknownVariant(err_path, failure.first, "`FallibleError`, `ExecutionFailure`");
  }
  STELE_ASSIGN_OR_RETURN(ExecutionFailureKind kind,
                         ReadFailureKind(*failure.second, ChildPath(err_path, failure.first)));
  return PendingStateFinishedResultKind::Failure(kind);
}

JsonResult<HistoryEventScheduleAt> DecodeScheduleAt(const Json& json, const std::string& path) {
  if (json.is_string()) {
    if (json.get_ref<const std::string&>() == "now") return HistoryEventScheduleAt::Now();
    return UnknownVariant(path, json.get_ref<const std::string&>(), "`now`, `at`, `in`");
  }
  STELE_ASSIGN_OR_RETURN(auto tagged, ExternalTag(json, path));
  const auto& [tag, value] = tagged;
  if (tag == "at") {
    STELE_ASSIGN_OR_RETURN(DateTime at, ReadDateTime(*value, ChildPath(path, tag)));
    return HistoryEventScheduleAt::At(at);
  }
  if (tag == "in") {
    STELE_ASSIGN_OR_RETURN(Duration in, DecodeDuration(*value, ChildPath(path, tag)));
    return HistoryEventScheduleAt::In(in);
  }
  return UnknownVariant(path, tag, "`now`, `at`, `in`");
}

JsonResult<PersistKind> DecodePersistKind(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  STELE_ASSIGN_OR_RETURN(std::string type, InternalTag(object, "type"));
  if (type == "random_u64") {
    PersistKindRandomU64 kind;
    STELE_ASSIGN_OR_RETURN(kind.min, Field(object, "min", &ReadU64));
    STELE_ASSIGN_OR_RETURN(kind.max_inclusive, Field(object, "max_inclusive", &ReadU64));
    return kind;
  }
  if (type == "random_string") {
    PersistKindRandomString kind;
    STELE_ASSIGN_OR_RETURN(kind.min_length, Field(object, "min_length", &ReadU64));
    STELE_ASSIGN_OR_RETURN(kind.max_length_exclusive,
                           Field(object, "max_length_exclusive", &ReadU64));
    return kind;
  }
  if (type == "time") return PersistKindTime{};
  return UnknownVariant(object.PathOf("type"), type, "`random_u64`, `random_string`, `time`");
}

JsonResult<WasmBacktrace> DecodeWasmBacktrace(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(ObjectReader object, ObjectReader::Make(json, path));
  WasmBacktrace backtrace;
  STELE_ASSIGN_OR_RETURN(backtrace.frames, Field(object, "frames", &ReadFrames));
  STELE_ASSIGN_OR_RETURN(backtrace.engine, OptionalField(object, "engine", &ReadString));
  return backtrace;
}

}  // namespace json_internal

using json_internal::DateTimeJson;
using json_internal::OptionalJson;

Json ToJson(const Duration& value) {
  Json out = Json::object();
  out["secs"] = value.secs;
  out["nanos"] = value.nanos;
  return out;
}

Json ToJson(const ComponentId& value) {
  Json out = Json::object();
  out["component_type"] = std::string(ComponentTypeName(value.component_type));
  out["name"] = value.name;
  out["input_digest"] = value.input_digest.ToString();
  return out;
}

Json ToJson(const ComponentRetryConfig& value) {
  Json out = Json::object();
  out["max_retries"] = OptionalJson(value.max_retries, [](uint32_t v) { return v; });
  out["retry_exp_backoff"] = ToJson(value.retry_exp_backoff);
  // Omitted when unset, so an event written before they existed reads
  // back as stored.
  if (value.max_backoff) out["max_backoff"] = ToJson(*value.max_backoff);
  if (value.jitter_percent != 0) out["jitter_percent"] = value.jitter_percent;
  return out;
}

Json ToJson(const ExecutionMetadata& value) {
  Json out = Json::object();
  for (const auto& [key, entry] : value.entries) out[key] = entry;
  return out;
}

Json ToJson(const HttpClientTrace& value) {
  Json req = Json::object();
  req["sent_at"] = DateTimeJson(value.req.sent_at);
  req["uri"] = value.req.uri;
  req["method"] = value.req.method;
  Json out = Json::object();
  out["req"] = std::move(req);
  out["resp"] = OptionalJson(value.resp, [](const HttpResponseTrace& resp) {
    Json status = Json::object();
    if (const auto* code = std::get_if<uint16_t>(&resp.status)) {
      status["Ok"] = *code;
    } else {
      status["Err"] = std::get<std::string>(resp.status);
    }
    Json out_resp = Json::object();
    out_resp["finished_at"] = DateTimeJson(resp.finished_at);
    out_resp["status"] = std::move(status);
    return out_resp;
  });
  return out;
}

Json ToJson(const FinishedExecutionError& value) {
  const auto identity = [](const std::string& v) { return v; };
  Json out = Json::object();
  out["kind"] = std::string(ExecutionFailureKindName(value.kind));
  out["reason"] = OptionalJson(value.reason, identity);
  out["detail"] = OptionalJson(value.detail, identity);
  return out;
}

Json ToJson(const SupportedFunctionReturnValue& value) {
  const auto identity = [](const Json& v) { return v; };
  Json out = Json::object();
  std::visit(
      json_internal::Overloaded{
          [&](const ReturnValueOk& ok) {
            Json body = Json::object();
            body["ok"] = OptionalJson(ok.ok, identity);
            out["ok"] = std::move(body);
          },
          [&](const ReturnValueErr& err) {
            Json body = Json::object();
            body["err"] = OptionalJson(err.err, identity);
            out["err"] = std::move(body);
          },
          [&](const FinishedExecutionError& error) { out["execution_error"] = ToJson(error); },
      },
      value);
  return out;
}

Json ToJson(const PendingStateFinishedResultKind& value) {
  using Kind = PendingStateFinishedResultKind::Kind;
  if (value.kind == Kind::kOk) return Json("ok");
  Json out = Json::object();
  if (value.kind == Kind::kFallibleError) {
    out["err"] = "FallibleError";
  } else {
    Json failure = Json::object();
    failure["ExecutionFailure"] = std::string(ExecutionFailureKindName(value.failure));
    out["err"] = std::move(failure);
  }
  return out;
}

Json ToJson(const HistoryEventScheduleAt& value) {
  if (std::holds_alternative<ScheduleNow>(value.value)) return Json("now");
  Json out = Json::object();
  if (const auto* at = std::get_if<ScheduleAtTime>(&value.value)) {
    out["at"] = DateTimeJson(at->at);
  } else {
    out["in"] = ToJson(std::get<ScheduleIn>(value.value).in);
  }
  return out;
}

Json ToJson(const PersistKind& value) {
  Json out = Json::object();
  if (const auto* u64 = std::get_if<PersistKindRandomU64>(&value)) {
    out["type"] = "random_u64";
    out["min"] = u64->min;
    out["max_inclusive"] = u64->max_inclusive;
  } else if (std::holds_alternative<PersistKindTime>(value)) {
    out["type"] = "time";
  } else {
    const auto& str = std::get<PersistKindRandomString>(value);
    out["type"] = "random_string";
    out["min_length"] = str.min_length;
    out["max_length_exclusive"] = str.max_length_exclusive;
  }
  return out;
}

Json ToJson(const WasmBacktrace& value) {
  Json frames = Json::array();
  for (const FrameInfo& frame : value.frames) {
    Json symbols = Json::array();
    for (const FrameSymbol& symbol : frame.symbols) {
      symbols.push_back(json_internal::FrameSymbolJson(symbol));
    }
    Json frame_json = Json::object();
    frame_json["module"] = frame.module;
    frame_json["func_name"] = frame.func_name;
    frame_json["symbols"] = std::move(symbols);
    frames.push_back(std::move(frame_json));
  }
  Json out = Json::object();
  out["frames"] = std::move(frames);
  // Only when set: backtraces without an engine keep their old JSON.
  if (value.engine) out["engine"] = *value.engine;
  return out;
}

}  // namespace stele::core
