// Fuzzes the JSON codec of the core model (core/json_codec.h): the input is
// parsed as JSON text, then decoded as every type the codec knows (events,
// responses, pending states, return values, backtraces, ...). Decoding must
// never throw or crash, and whatever decodes must round-trip:
// FromJson<T>(ToJson(x)) == x, and its text must encode stably.
#include "core/json_codec.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"

namespace {

using namespace stele::core;  // NOLINT(google-build-using-namespace): fuzz target

template <class T>
void Decode(const Json& json) {
  auto decoded = FromJson<T>(json);
  if (!decoded) {
    FUZZ_CHECK(!decoded.error().message.empty());
    return;
  }
  const Json encoded = ToJson(*decoded);
  auto again = FromJson<T>(encoded);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(*again == *decoded);
  // Through text as well (what the database stores).
  const std::string text = SerializeJson(encoded);
  auto reparsed = ParseJson(text);
  FUZZ_CHECK(reparsed.has_value());
  auto from_text = FromJson<T>(*reparsed);
  FUZZ_CHECK(from_text.has_value());
  FUZZ_CHECK(SerializeJson(ToJson(*from_text)) == text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto json = ParseJson(text);
  if (!json) return 0;
  (void)SerializeJson(*json);
  Decode<Duration>(*json);
  Decode<ComponentId>(*json);
  Decode<ComponentRetryConfig>(*json);
  Decode<ExecutionMetadata>(*json);
  Decode<HttpClientTrace>(*json);
  Decode<SupportedFunctionReturnValue>(*json);
  Decode<FinishedExecutionError>(*json);
  Decode<PendingStateFinishedResultKind>(*json);
  Decode<HistoryEventScheduleAt>(*json);
  Decode<PersistKind>(*json);
  Decode<JoinSetRequest>(*json);
  Decode<HistoryEvent>(*json);
  Decode<ExecutionRequest>(*json);
  Decode<ExecutionEvent>(*json);
  Decode<JoinSetResponse>(*json);
  Decode<JoinSetResponseEvent>(*json);
  Decode<JoinSetResponseEventOuter>(*json);
  Decode<PendingState>(*json);
  Decode<WasmBacktrace>(*json);
  return 0;
}
