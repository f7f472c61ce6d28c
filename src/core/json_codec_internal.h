// Building blocks shared by the json_codec*.cc files. Not part of the public
// API: include core/json_codec.h instead.
//
// Every reader checks the JSON type before it reads a value, because
// nlohmann's accessors throw on a type mismatch and decoding must never
// throw. Every reader takes the path of the value it reads ("created.parent[0]")
// and puts it at the front of its error message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json_codec.h"

namespace stele::core::json_internal {

template <class T>
using JsonResult = Result<T, JsonError>;

// A reader of one value at a path.
template <class T>
using Reader = JsonResult<T> (*)(const Json& json, const std::string& path);

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

// "<path>: <message>", or just the message at the root.
Unexpected<JsonError> Error(std::string_view path, std::string_view message);
std::string ChildPath(std::string_view path, std::string_view key);
std::string IndexPath(std::string_view path, size_t index);

// A JSON object under decoding, remembering its own path. Unknown keys are
// ignored, as serde does without `deny_unknown_fields`, so that older code
// can read rows written by newer code.
class ObjectReader {
 public:
  static JsonResult<ObjectReader> Make(const Json& json, const std::string& path);

  // nullptr when the key is absent.
  const Json* Find(std::string_view key) const;
  JsonResult<const Json*> Required(std::string_view key) const;
  std::string PathOf(std::string_view key) const { return ChildPath(path_, key); }
  const std::string& path() const { return path_; }

 private:
  ObjectReader(const Json* json, std::string path) : json_(json), path_(std::move(path)) {}
  const Json* json_;
  std::string path_;
};

// A required field.
template <class T>
JsonResult<T> Field(const ObjectReader& object, std::string_view key, Reader<T> read) {
  STELE_ASSIGN_OR_RETURN(const Json* value, object.Required(key));
  return read(*value, object.PathOf(key));
}

// An Option field: absent or null reads as nullopt (serde's default for
// Option fields).
template <class T>
JsonResult<std::optional<T>> OptionalField(const ObjectReader& object, std::string_view key,
                                           Reader<T> read) {
  const Json* value = object.Find(key);
  if (value == nullptr || value->is_null()) return std::optional<T>();
  STELE_ASSIGN_OR_RETURN(T decoded, read(*value, object.PathOf(key)));
  return std::optional<T>(std::move(decoded));
}

// A JSON array of T.
template <class T>
JsonResult<std::vector<T>> ReadArray(const Json& json, const std::string& path, Reader<T> read) {
  if (!json.is_array()) return Error(path, std::string("expected array, got ") + json.type_name());
  std::vector<T> out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    STELE_ASSIGN_OR_RETURN(T item, read(json[i], IndexPath(path, i)));
    out.push_back(std::move(item));
  }
  return out;
}

// An externally tagged enum value: an object with exactly one key. Returns
// the key and the value under it.
JsonResult<std::pair<std::string, const Json*>> ExternalTag(const Json& json,
                                                            const std::string& path);
// The "type" (or other) tag of an internally tagged enum value.
JsonResult<std::string> InternalTag(const ObjectReader& object, std::string_view tag_key);
Unexpected<JsonError> UnknownVariant(std::string_view path, std::string_view tag,
                                     std::string_view expected);

// --- Leaf readers ------------------------------------------------------------
JsonResult<std::string> ReadString(const Json& json, const std::string& path);
JsonResult<bool> ReadBool(const Json& json, const std::string& path);
JsonResult<uint64_t> ReadU64(const Json& json, const std::string& path);
JsonResult<uint32_t> ReadU32(const Json& json, const std::string& path);
JsonResult<uint16_t> ReadU16(const Json& json, const std::string& path);
JsonResult<uint8_t> ReadU8(const Json& json, const std::string& path);
JsonResult<DateTime> ReadDateTime(const Json& json, const std::string& path);
JsonResult<Version> ReadVersion(const Json& json, const std::string& path);
JsonResult<ExecutionId> ReadExecutionId(const Json& json, const std::string& path);
JsonResult<ExecutionIdDerived> ReadExecutionIdDerived(const Json& json, const std::string& path);
JsonResult<DelayId> ReadDelayId(const Json& json, const std::string& path);
JsonResult<JoinSetId> ReadJoinSetId(const Json& json, const std::string& path);
JsonResult<FunctionFqn> ReadFfqn(const Json& json, const std::string& path);
JsonResult<ExecutorId> ReadExecutorId(const Json& json, const std::string& path);
JsonResult<RunId> ReadRunId(const Json& json, const std::string& path);
JsonResult<InputContentDigest> ReadDigest(const Json& json, const std::string& path);
// Params: any JSON array.
JsonResult<Params> ReadParams(const Json& json, const std::string& path);
// `Result<(), ()>` as serde writes it: {"Ok":null} (true) or {"Err":null}.
JsonResult<bool> ReadUnitResult(const Json& json, const std::string& path);

// --- Writers of leaf values --------------------------------------------------
inline Json DateTimeJson(DateTime t) { return Json(FormatRfc3339(t)); }
inline Json UnitResultJson(bool ok) {
  Json out = Json::object();
  out[ok ? "Ok" : "Err"] = nullptr;
  return out;
}
template <class T, class F>
Json OptionalJson(const std::optional<T>& value, F encode) {
  return value ? Json(encode(*value)) : Json(nullptr);
}

// --- Decoders of composite values (json_codec_values.cc, json_codec_events.cc)
JsonResult<Duration> DecodeDuration(const Json& json, const std::string& path);
JsonResult<ComponentId> DecodeComponentId(const Json& json, const std::string& path);
JsonResult<ComponentRetryConfig> DecodeRetryConfig(const Json& json, const std::string& path);
JsonResult<ExecutionMetadata> DecodeMetadata(const Json& json, const std::string& path);
JsonResult<HttpClientTrace> DecodeHttpClientTrace(const Json& json, const std::string& path);
JsonResult<SupportedFunctionReturnValue> DecodeReturnValue(const Json& json,
                                                           const std::string& path);
JsonResult<FinishedExecutionError> DecodeFinishedExecutionError(const Json& json,
                                                                const std::string& path);
JsonResult<PendingStateFinishedResultKind> DecodeResultKind(const Json& json,
                                                            const std::string& path);
JsonResult<HistoryEventScheduleAt> DecodeScheduleAt(const Json& json, const std::string& path);
JsonResult<PersistKind> DecodePersistKind(const Json& json, const std::string& path);
JsonResult<WasmBacktrace> DecodeWasmBacktrace(const Json& json, const std::string& path);
JsonResult<JoinSetRequest> DecodeJoinSetRequest(const Json& json, const std::string& path);
JsonResult<HistoryEvent> DecodeHistoryEvent(const Json& json, const std::string& path);
JsonResult<ExecutionRequest> DecodeExecutionRequest(const Json& json, const std::string& path);
JsonResult<ExecutionEvent> DecodeExecutionEvent(const Json& json, const std::string& path);
JsonResult<JoinSetResponse> DecodeJoinSetResponse(const Json& json, const std::string& path);
JsonResult<JoinSetResponseEvent> DecodeJoinSetResponseEvent(const Json& json,
                                                            const std::string& path);
JsonResult<JoinSetResponseEventOuter> DecodeJoinSetResponseEventOuter(const Json& json,
                                                                      const std::string& path);
JsonResult<PendingState> DecodePendingState(const Json& json, const std::string& path);

}  // namespace stele::core::json_internal
