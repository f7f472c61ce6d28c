// Text parsing, the leaf readers and the FromJson entry points. The shapes of
// composite values live in json_codec_values.cc and json_codec_events.cc.
#include "core/json_codec.h"

#include <exception>
#include <limits>
#include <string>

#include "core/json_codec_internal.h"

namespace stele::core {
namespace json_internal {
namespace {

// Deeper documents are refused before parsing: the parser itself is
// iterative, but copying, comparing and dumping a Json value recurse once per
// level, so hostile input like 100000 '[' would overflow the stack later.
// Our own documents nest fewer than 10 levels around the params and results.
constexpr size_t kMaxDepth = 128;

// Collects the parser's message; everything else is accepted and dropped.
class ErrorCapturingSax final : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool /*value*/) override { return true; }
  bool number_integer(number_integer_t /*value*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*value*/) override { return true; }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override { return true; }
  bool string(string_t& /*value*/) override { return true; }
  bool binary(binary_t& /*value*/) override { return true; }
  bool start_object(std::size_t /*size*/) override { return true; }
  bool key(string_t& /*value*/) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t /*size*/) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& error) override {
    message = error.what();
    return false;
  }

  std::string message;
};

// Finds the offset where nesting first exceeds kMaxDepth. Only brackets
// outside strings count; the text need not be valid JSON (the parser judges
// that afterwards), this is an upper bound on what the parser would build.
std::optional<size_t> FindExcessiveNesting(std::string_view text) {
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > kMaxDepth) return i;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return std::nullopt;
}

}  // namespace

Unexpected<JsonError> Error(std::string_view path, std::string_view message) {
  if (path.empty()) return Unexpected(JsonError{std::string(message)});
  std::string text(path);
  text += ": ";
  text += message;
  return Unexpected(JsonError{std::move(text)});
}

std::string ChildPath(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  std::string out(path);
  out.push_back('.');
  out += key;
  return out;
}

std::string IndexPath(std::string_view path, size_t index) {
  std::string out(path);
  out.push_back('[');
  out += std::to_string(index);
  out.push_back(']');
  return out;
}

JsonResult<ObjectReader> ObjectReader::Make(const Json& json, const std::string& path) {
  if (!json.is_object())
    return Error(path, std::string("expected object, got ") + json.type_name());
  return ObjectReader(&json, path);
}

const Json* ObjectReader::Find(std::string_view key) const {
  const auto it = json_->find(key);
  return it == json_->end() ? nullptr : &*it;
}

JsonResult<const Json*> ObjectReader::Required(std::string_view key) const {
  const Json* value = Find(key);
  if (value == nullptr) return Error(PathOf(key), "missing field");
  return value;
}

JsonResult<std::pair<std::string, const Json*>> ExternalTag(const Json& json,
                                                            const std::string& path) {
  if (!json.is_object() || json.size() != 1) {
    return Error(path,
                 std::string("expected an object with exactly one variant key, got ") +
                     (json.is_object() ? "an object with " + std::to_string(json.size()) + " keys"
                                       : std::string(json.type_name())));
  }
  const auto it = json.begin();
  return std::pair<std::string, const Json*>(it.key(), &it.value());
}

JsonResult<std::string> InternalTag(const ObjectReader& object, std::string_view tag_key) {
  return Field(object, tag_key, &ReadString);
}

Unexpected<JsonError> UnknownVariant(std::string_view path, std::string_view tag,
                                     std::string_view expected) {
  return Error(
      path, "unknown variant `" + std::string(tag) + "`, expected one of " + std::string(expected));
}

// --- Leaf readers ------------------------------------------------------------

JsonResult<std::string> ReadString(const Json& json, const std::string& path) {
  if (!json.is_string())
    return Error(path, std::string("expected string, got ") + json.type_name());
  return json.get_ref<const std::string&>();
}

JsonResult<bool> ReadBool(const Json& json, const std::string& path) {
  if (!json.is_boolean()) {
    return Error(path, std::string("expected boolean, got ") + json.type_name());
  }
  return json.get<bool>();
}

JsonResult<uint64_t> ReadU64(const Json& json, const std::string& path) {
  if (json.is_number_unsigned()) return json.get<uint64_t>();
  // Values built in code (Json(5)) are signed integers; parsed non-negative
  // numbers are always unsigned.
  if (json.is_number_integer()) {
    const int64_t value = json.get<int64_t>();
    if (value >= 0) return static_cast<uint64_t>(value);
    return Error(path, "expected unsigned integer, got " + std::to_string(value));
  }
  if (json.is_number_float()) {
    // Fractions and integers beyond 64 bits both parse as floats.
    return Error(path, "expected unsigned integer, got a fraction or an out-of-range number");
  }
  return Error(path, std::string("expected unsigned integer, got ") + json.type_name());
}

namespace {
template <class T>
JsonResult<T> ReadBoundedUnsigned(const Json& json, const std::string& path,
                                  std::string_view type_name) {
  STELE_ASSIGN_OR_RETURN(uint64_t value, ReadU64(json, path));
  if (value > std::numeric_limits<T>::max()) {
    return Error(path,
                 "number " + std::to_string(value) + " out of range for " + std::string(type_name));
  }
  return static_cast<T>(value);
}
}  // namespace

JsonResult<uint32_t> ReadU32(const Json& json, const std::string& path) {
  return ReadBoundedUnsigned<uint32_t>(json, path, "u32");
}
JsonResult<uint16_t> ReadU16(const Json& json, const std::string& path) {
  return ReadBoundedUnsigned<uint16_t>(json, path, "u16");
}
JsonResult<uint8_t> ReadU8(const Json& json, const std::string& path) {
  return ReadBoundedUnsigned<uint8_t>(json, path, "u8");
}

JsonResult<DateTime> ReadDateTime(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(std::string text, ReadString(json, path));
  const std::optional<DateTime> parsed = ParseRfc3339(text);
  if (!parsed) return Error(path, "invalid RFC 3339 timestamp `" + text + "`");
  return *parsed;
}

JsonResult<Version> ReadVersion(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(uint32_t value, ReadU32(json, path));
  return Version(value);
}

namespace {
// Reads a string and parses it with `parse`, naming `what` on failure.
template <class T, class Parse>
JsonResult<T> ReadParsed(const Json& json, const std::string& path, std::string_view what,
                         Parse parse) {
  STELE_ASSIGN_OR_RETURN(std::string text, ReadString(json, path));
  auto parsed = parse(text);
  if (!parsed) {
    // Most id parsers already say "invalid <what> `text`: why".
    const std::string& message = parsed.error().message;
    const std::string prefix = "invalid " + std::string(what);
    if (message.rfind(prefix, 0) == 0) return Error(path, message);
    return Error(path, prefix + ": " + message);
  }
  return *std::move(parsed);
}
}  // namespace

JsonResult<ExecutionId> ReadExecutionId(const Json& json, const std::string& path) {
  return ReadParsed<ExecutionId>(json, path, "execution id", &ExecutionId::Parse);
}
JsonResult<ExecutionIdDerived> ReadExecutionIdDerived(const Json& json, const std::string& path) {
  return ReadParsed<ExecutionIdDerived>(json, path, "derived execution id",
                                        &ExecutionIdDerived::Parse);
}
JsonResult<DelayId> ReadDelayId(const Json& json, const std::string& path) {
  return ReadParsed<DelayId>(json, path, "delay id", &DelayId::Parse);
}
JsonResult<JoinSetId> ReadJoinSetId(const Json& json, const std::string& path) {
  return ReadParsed<JoinSetId>(json, path, "join set id", &JoinSetId::Parse);
}
JsonResult<FunctionFqn> ReadFfqn(const Json& json, const std::string& path) {
  return ReadParsed<FunctionFqn>(json, path, "function name", &FunctionFqn::Parse);
}
JsonResult<ExecutorId> ReadExecutorId(const Json& json, const std::string& path) {
  return ReadParsed<ExecutorId>(json, path, "executor id", &ExecutorId::Parse);
}
JsonResult<RunId> ReadRunId(const Json& json, const std::string& path) {
  return ReadParsed<RunId>(json, path, "run id", &RunId::Parse);
}
JsonResult<InputContentDigest> ReadDigest(const Json& json, const std::string& path) {
  return ReadParsed<InputContentDigest>(json, path, "digest", &InputContentDigest::Parse);
}

JsonResult<Params> ReadParams(const Json& json, const std::string& path) {
  if (!json.is_array()) return Error(path, std::string("expected array, got ") + json.type_name());
  return json;
}

JsonResult<bool> ReadUnitResult(const Json& json, const std::string& path) {
  STELE_ASSIGN_OR_RETURN(auto tagged, ExternalTag(json, path));
  const auto& [tag, value] = tagged;
  if (tag != "Ok" && tag != "Err") return UnknownVariant(path, tag, "`Ok`, `Err`");
  if (!value->is_null()) {
    return Error(ChildPath(path, tag), std::string("expected null, got ") + value->type_name());
  }
  return tag == "Ok";
}

// --- FromJson dispatch -------------------------------------------------------

namespace {
// Overloads picked by the (null) pointer type; one per FromJson<T>.
Reader<Duration> DecoderFor(const Duration*) { return &DecodeDuration; }
Reader<ComponentId> DecoderFor(const ComponentId*) { return &DecodeComponentId; }
Reader<ComponentRetryConfig> DecoderFor(const ComponentRetryConfig*) { return &DecodeRetryConfig; }
Reader<ExecutionMetadata> DecoderFor(const ExecutionMetadata*) { return &DecodeMetadata; }
Reader<HttpClientTrace> DecoderFor(const HttpClientTrace*) { return &DecodeHttpClientTrace; }
Reader<SupportedFunctionReturnValue> DecoderFor(const SupportedFunctionReturnValue*) {
  return &DecodeReturnValue;
}
Reader<FinishedExecutionError> DecoderFor(const FinishedExecutionError*) {
  return &DecodeFinishedExecutionError;
}
Reader<PendingStateFinishedResultKind> DecoderFor(const PendingStateFinishedResultKind*) {
  return &DecodeResultKind;
}
Reader<HistoryEventScheduleAt> DecoderFor(const HistoryEventScheduleAt*) {
  return &DecodeScheduleAt;
}
Reader<PersistKind> DecoderFor(const PersistKind*) { return &DecodePersistKind; }
Reader<JoinSetRequest> DecoderFor(const JoinSetRequest*) { return &DecodeJoinSetRequest; }
Reader<HistoryEvent> DecoderFor(const HistoryEvent*) { return &DecodeHistoryEvent; }
Reader<ExecutionRequest> DecoderFor(const ExecutionRequest*) { return &DecodeExecutionRequest; }
Reader<ExecutionEvent> DecoderFor(const ExecutionEvent*) { return &DecodeExecutionEvent; }
Reader<JoinSetResponse> DecoderFor(const JoinSetResponse*) { return &DecodeJoinSetResponse; }
Reader<JoinSetResponseEvent> DecoderFor(const JoinSetResponseEvent*) {
  return &DecodeJoinSetResponseEvent;
}
Reader<JoinSetResponseEventOuter> DecoderFor(const JoinSetResponseEventOuter*) {
  return &DecodeJoinSetResponseEventOuter;
}
Reader<PendingState> DecoderFor(const PendingState*) { return &DecodePendingState; }
Reader<WasmBacktrace> DecoderFor(const WasmBacktrace*) { return &DecodeWasmBacktrace; }
}  // namespace

}  // namespace json_internal

Result<Json, JsonError> ParseJson(std::string_view text) {
  if (const std::optional<size_t> offset = json_internal::FindExcessiveNesting(text)) {
    return Unexpected(JsonError{"invalid JSON: nesting deeper than " +
                                std::to_string(json_internal::kMaxDepth) + " levels at offset " +
                                std::to_string(*offset)});
  }
  try {
    Json json = Json::parse(text.begin(), text.end(), /*cb=*/nullptr, /*allow_exceptions=*/false);
    if (!json.is_discarded()) return json;
    // Parse again to learn why: the non-throwing parse only says "discarded".
    json_internal::ErrorCapturingSax sax;
    if (Json::sax_parse(text.begin(), text.end(), &sax) || sax.message.empty()) {
      return Unexpected(JsonError{"invalid JSON"});
    }
    return Unexpected(JsonError{"invalid JSON: " + sax.message});
  } catch (const std::exception& e) {
    // Not expected with allow_exceptions=false; kept so that no exception
    // ever leaves this module (bad_alloc included).
    return Unexpected(JsonError{std::string("invalid JSON: ") + e.what()});
  }
}

std::string SerializeJson(const Json& json) {
  return json.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/false,
                   Json::error_handler_t::replace);
}

template <class T>
Result<T, JsonError> FromJson(const Json& json) {
  try {
    return json_internal::DecoderFor(static_cast<const T*>(nullptr))(json, std::string());
  } catch (const Json::exception& e) {
    // Unreachable while every reader checks types before reading; should a
    // check be missing, a bad document must still be an error, not a crash.
    return Unexpected(JsonError{std::string("unexpected JSON error: ") + e.what()});
  }
}

template Result<Duration, JsonError> FromJson(const Json&);
template Result<ComponentId, JsonError> FromJson(const Json&);
template Result<ComponentRetryConfig, JsonError> FromJson(const Json&);
template Result<ExecutionMetadata, JsonError> FromJson(const Json&);
template Result<HttpClientTrace, JsonError> FromJson(const Json&);
template Result<SupportedFunctionReturnValue, JsonError> FromJson(const Json&);
template Result<FinishedExecutionError, JsonError> FromJson(const Json&);
template Result<PendingStateFinishedResultKind, JsonError> FromJson(const Json&);
template Result<HistoryEventScheduleAt, JsonError> FromJson(const Json&);
template Result<PersistKind, JsonError> FromJson(const Json&);
template Result<JoinSetRequest, JsonError> FromJson(const Json&);
template Result<HistoryEvent, JsonError> FromJson(const Json&);
template Result<ExecutionRequest, JsonError> FromJson(const Json&);
template Result<ExecutionEvent, JsonError> FromJson(const Json&);
template Result<JoinSetResponse, JsonError> FromJson(const Json&);
template Result<JoinSetResponseEvent, JsonError> FromJson(const Json&);
template Result<JoinSetResponseEventOuter, JsonError> FromJson(const Json&);
template Result<PendingState, JsonError> FromJson(const Json&);
template Result<WasmBacktrace, JsonError> FromJson(const Json&);

}  // namespace stele::core
