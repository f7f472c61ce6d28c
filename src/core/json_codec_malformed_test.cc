// Decoding hostile or corrupt JSON: every case must end in a JsonError that
// names the offending path, never in an exception or a crash.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/json_codec.h"
#include "core/json_codec_test_values.h"

namespace stele::core {
namespace {

using namespace ::stele::core::testing;  // NOLINT(google-build-using-namespace): test values

template <class T>
void ExpectError(const Json& json, std::string_view expected_message_part) {
  auto decoded = FromJson<T>(json);
  ASSERT_FALSE(decoded.has_value()) << SerializeJson(json);
  EXPECT_NE(decoded.error().message.find(expected_message_part), std::string::npos)
      << "message: " << decoded.error().message
      << "\nexpected to contain: " << expected_message_part;
}

Json CreatedEventJson() {
  return ToJson(
      ExecutionEvent{T("2024-01-02T03:04:05Z"), ExecutionRequests()[1], std::nullopt, Version(0)});
}

TEST(JsonMalformedTest, ParseJsonRejectsInvalidText) {
  for (std::string_view text :
       {"", "{", "[1,]", "nul", "{} x", "{\"a\" 1}", "[\"\\x\"]", "\"\xff\"", "01", "[1e]"}) {
    auto parsed = ParseJson(text);
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_EQ(parsed.error().message.rfind("invalid JSON", 0), 0u) << parsed.error().message;
  }
  auto unexpected_end = ParseJson("{\"a\":");
  ASSERT_FALSE(unexpected_end.has_value());
  EXPECT_NE(unexpected_end.error().message.find("column"), std::string::npos)
      << unexpected_end.error().message;
}

TEST(JsonMalformedTest, ParseJsonRejectsDeepNestingWithoutCrashing) {
  auto deep = ParseJson(std::string(100000, '['));
  ASSERT_FALSE(deep.has_value());
  EXPECT_NE(deep.error().message.find("nesting"), std::string::npos) << deep.error().message;

  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  EXPECT_FALSE(ParseJson(objects).has_value());

  const std::string just_too_deep = std::string(129, '[') + std::string(129, ']');
  EXPECT_FALSE(ParseJson(just_too_deep).has_value());
}

TEST(JsonMalformedTest, RootOfWrongType) {
  ExpectError<ExecutionEvent>(Json(5), "expected object, got number");
  ExpectError<ExecutionEvent>(Json::array(), "expected object, got array");
  ExpectError<ExecutionRequest>(Json(nullptr), "expected an object with exactly one variant key");
  ExpectError<PendingState>(Json("Finished"), "expected object, got string");
  ExpectError<Duration>(Json::object(), "secs: missing field");
}

TEST(JsonMalformedTest, UnknownTags) {
  ExpectError<ExecutionRequest>(Json::parse(R"({"bogus":{}})"), "unknown variant `bogus`");
  ExpectError<ExecutionRequest>(Json::parse(R"({"Created":{}})"), "unknown variant `Created`");
  ExpectError<ExecutionRequest>(Json::parse(R"({"locked":{},"unlocked":{}})"),
                                "exactly one variant key");
  ExpectError<ExecutionRequest>(Json::parse(R"({"history_event":{"event":{"type":"nope"}}})"),
                                "history_event.event.type: unknown variant `nope`");
  ExpectError<ExecutionRequest>(Json::parse(R"({"history_event":{"event":{}}})"),
                                "history_event.event.type: missing field");
  ExpectError<HistoryEvent>(Json::parse(R"({"type":"JoinNext"})"), "type: unknown variant");
  ExpectError<HistoryEvent>(Json::parse(R"({"type":5})"), "type: expected string, got number");
  ExpectError<JoinSetRequest>(Json::parse(R"({"type":"delay"})"), "unknown variant `delay`");
  ExpectError<PersistKind>(Json::parse(R"({"type":"random_u32","min":1})"),
                           "unknown variant `random_u32`");
  ExpectError<JoinSetResponse>(Json::parse(R"({"type":"child_finished"})"), "unknown variant");
  ExpectError<PendingState>(Json::parse(R"({"status":"pending_at"})"),
                            "status: unknown variant `pending_at`");
  ExpectError<HistoryEventScheduleAt>(Json("Now"), "unknown variant `Now`");
  ExpectError<HistoryEventScheduleAt>(Json::parse(R"({"after":{"secs":1,"nanos":0}})"),
                                      "unknown variant `after`");
  ExpectError<SupportedFunctionReturnValue>(Json::parse(R"({"Ok":{"ok":null}})"),
                                            "unknown variant `Ok`");
  ExpectError<FinishedExecutionError>(Json::parse(R"({"kind":"TimedOut"})"),
                                      "kind: unknown variant `TimedOut`");
  ExpectError<ComponentId>(
      Json::parse(R"({"component_type":"activity","name":"a","input_digest":"sha256:00"})"),
      "component_type: unknown component type");
  // Only the spelling Stele writes (Obelisk 0.34's) is read; other
  // spellings of a result kind are refused (docs/model.md §3.7).
  ExpectError<PendingStateFinishedResultKind>(Json::parse(R"({"err":"error"})"),
                                              "err: unknown variant `error`");
  ExpectError<PendingStateFinishedResultKind>(
      Json::parse(R"({"err":{"execution_failure":"timed_out"}})"), "unknown variant");
  ExpectError<PendingStateFinishedResultKind>(Json("Ok"), "unknown variant `Ok`");
  ExpectError<PendingStateFinishedResultKind>(Json::parse(R"({"err":{"ExecutionFailure":"slow"}})"),
                                              "err.ExecutionFailure: unknown");
}

TEST(JsonMalformedTest, MissingFields) {
  Json json = CreatedEventJson();
  json["event"]["created"].erase("ffqn");
  ExpectError<ExecutionEvent>(json, "event.created.ffqn: missing field");

  json = CreatedEventJson();
  json.erase("version");
  ExpectError<ExecutionEvent>(json, "version: missing field");

  json = CreatedEventJson();
  json["event"]["created"]["component_id"].erase("input_digest");
  ExpectError<ExecutionEvent>(json, "event.created.component_id.input_digest: missing field");

  Json locked = ToJson(ExecutionRequests()[2]);
  locked["locked"]["retry_config"].erase("retry_exp_backoff");
  ExpectError<ExecutionRequest>(locked, "locked.retry_config.retry_exp_backoff: missing field");

  Json join_next = ToJson(HistoryEvents()[3]);
  join_next.erase("closing");
  ExpectError<HistoryEvent>(join_next, "closing: missing field");

  Json state = ToJson(PendingStates()[7]);
  state.erase("component_id_input_digest");
  ExpectError<PendingState>(state, "component_id_input_digest: missing field");
  state = ToJson(PendingStates()[7]);
  state.erase("result_kind");
  ExpectError<PendingState>(state, "result_kind: missing field");

  ExpectError<HttpClientTrace>(Json::parse(R"({"resp":null})"), "req: missing field");
}

TEST(JsonMalformedTest, WrongTypes) {
  Json json = CreatedEventJson();
  json["version"] = "0";
  ExpectError<ExecutionEvent>(json, "version: expected unsigned integer, got string");

  json = CreatedEventJson();
  json["event"]["created"]["params"] = Json::object();
  ExpectError<ExecutionEvent>(json, "event.created.params: expected array, got object");

  json = CreatedEventJson();
  json["event"]["created"]["parent"] = "E_01KBNHM5FQW81KP5Y3XMNX31K4";
  ExpectError<ExecutionEvent>(json, "event.created.parent: expected [execution_id, join_set_id]");

  json = CreatedEventJson();
  json["event"]["created"]["parent"] = Json::array({"E_01KBNHM5FQW81KP5Y3XMNX31K4"});
  ExpectError<ExecutionEvent>(json, "event.created.parent: expected [execution_id, join_set_id]");

  json = CreatedEventJson();
  json["event"]["created"]["metadata"]["k"] = 1;
  ExpectError<ExecutionEvent>(json, "event.created.metadata.k: expected string, got number");

  json = CreatedEventJson();
  json["event"]["created"]["metadata"] = Json::array();
  ExpectError<ExecutionEvent>(json, "event.created.metadata: expected object, got array");

  Json join_next = ToJson(HistoryEvents()[3]);
  join_next["closing"] = 0;
  ExpectError<HistoryEvent>(join_next, "closing: expected boolean, got number");

  Json stub = ToJson(HistoryEvents()[7]);
  stub["persist_result"] = Json::parse(R"({"Ok":1})");
  ExpectError<HistoryEvent>(stub, "persist_result.Ok: expected null, got number");
  stub["persist_result"] = Json::parse(R"({"Maybe":null})");
  ExpectError<HistoryEvent>(stub, "persist_result: unknown variant `Maybe`");
  stub["persist_result"] = true;
  ExpectError<HistoryEvent>(stub, "persist_result: expected an object");

  Json traces = ToJson(ExecutionRequests()[5]);
  traces["temporarily_failed"]["http_client_traces"] = Json::object();
  ExpectError<ExecutionRequest>(
      traces, "temporarily_failed.http_client_traces: expected array, got object");
  traces = ToJson(ExecutionRequests()[5]);
  traces["temporarily_failed"]["http_client_traces"][1]["resp"]["status"] =
      Json::parse(R"({"Ok":"200"})");
  ExpectError<ExecutionRequest>(
      traces, "temporarily_failed.http_client_traces[1].resp.status.Ok: expected unsigned integer");

  ExpectError<HttpClientTrace>(Json::parse(R"({"req":[],"resp":null})"),
                               "req: expected object, got array");
  Json backtrace = ToJson(TestBacktrace());
  backtrace["frames"][0]["symbols"][0]["line"] = "10";
  ExpectError<WasmBacktrace>(backtrace, "frames[0].symbols[0].line: expected unsigned integer");
  Json engine = ToJson(TestBacktrace());
  engine["engine"] = 10;
  ExpectError<WasmBacktrace>(engine, "engine: expected string");
  Json finished = ToJson(ExecutionRequest{Finished{ReturnValueOk{}, std::nullopt, kTestEngine}});
  finished["finished"]["engine"] = Json::array();
  ExpectError<ExecutionRequest>(finished, "finished.engine: expected string");
}

TEST(JsonMalformedTest, OutOfRangeNumbers) {
  Json json = CreatedEventJson();
  json["version"] = uint64_t{UINT32_MAX} + 1;
  ExpectError<ExecutionEvent>(json, "version: number 4294967296 out of range for u32");

  json["version"] = -1;
  ExpectError<ExecutionEvent>(json, "version: expected unsigned integer, got -1");

  json["version"] = 1.5;
  ExpectError<ExecutionEvent>(json, "version: expected unsigned integer, got a fraction");

  // Parsed beyond u64: nlohmann falls back to a double.
  auto huge = ParseJson(R"({"secs":18446744073709551616,"nanos":0})");
  ASSERT_TRUE(huge.has_value());
  ExpectError<Duration>(*huge, "secs: expected unsigned integer");
  ExpectError<Duration>(*ParseJson(R"({"secs":1e300,"nanos":0})"), "secs: expected unsigned");
  // Beyond double: the parser itself refuses.
  EXPECT_FALSE(ParseJson(R"({"secs":1e400,"nanos":0})").has_value());
  ExpectError<Duration>(*ParseJson(R"({"secs":1,"nanos":1000000000})"),
                        "nanos: must be below 1000000000");
  ExpectError<Duration>(*ParseJson(R"({"secs":1,"nanos":4294967296})"), "nanos: number");
  EXPECT_TRUE(FromJson<Duration>(*ParseJson(R"({"secs":18446744073709551615,"nanos":999999999})"))
                  .has_value());

  Json persist = ToJson(HistoryEvents()[0]);
  persist["value"][2] = 256;
  ExpectError<HistoryEvent>(persist, "value[2]: number 256 out of range for u8");
  persist["value"][2] = -1;
  ExpectError<HistoryEvent>(persist, "value[2]: expected unsigned integer, got -1");

  Json trace = ToJson((*Traces())[0]);
  trace["resp"]["status"]["Ok"] = 65536;
  ExpectError<HttpClientTrace>(trace, "resp.status.Ok: number 65536 out of range for u16");

  Json retry = ToJson(ComponentRetryConfig::Zero());
  retry["max_retries"] = uint64_t{1} << 40;
  ExpectError<ComponentRetryConfig>(retry, "max_retries: number");

  Json finished = ToJson(PendingStates()[5]);
  finished["version"] = uint64_t{UINT32_MAX} + 1;
  ExpectError<PendingState>(finished, "version: number 4294967296 out of range for u32");
}

TEST(JsonMalformedTest, BadIdsAndTimestamps) {
  Json json = CreatedEventJson();
  json["event"]["created"]["parent"][0] = "E_bad";
  ExpectError<ExecutionEvent>(json, "event.created.parent[0]: invalid execution id");

  json = CreatedEventJson();
  json["event"]["created"]["parent"][1] = "n:bad_name";
  ExpectError<ExecutionEvent>(json, "event.created.parent[1]: invalid join set id");

  json = CreatedEventJson();
  json["event"]["created"]["ffqn"] = "no-dot";
  ExpectError<ExecutionEvent>(json, "event.created.ffqn: invalid function name");

  json = CreatedEventJson();
  json["created_at"] = "2024-13-01T00:00:00Z";
  ExpectError<ExecutionEvent>(json, "created_at: invalid RFC 3339 timestamp");

  json = CreatedEventJson();
  json["created_at"] = "+10000-01-01T00:00:00Z";
  ExpectError<ExecutionEvent>(json, "created_at: invalid RFC 3339");

  json = CreatedEventJson();
  json["event"]["created"]["component_id"]["input_digest"] = "sha256:XYZ";
  ExpectError<ExecutionEvent>(json, "event.created.component_id.input_digest: invalid digest");

  Json locked = ToJson(ExecutionRequests()[2]);
  locked["locked"]["executor_id"] = locked["locked"]["run_id"];
  ExpectError<ExecutionRequest>(locked, "locked.executor_id: invalid executor id");

  Json stub = ToJson(HistoryEvents()[7]);
  stub["target_execution_id"] = "E_01KBNHM5FQW81KP5Y3XMNX31K4";  // top-level, not derived
  ExpectError<HistoryEvent>(stub, "target_execution_id: invalid derived execution id");

  Json delay = ToJson(JoinSetResponses()[0]);
  delay["delay_id"] = "Delay_01KBNHM5FQW81KP5Y3XMNX31K4.o:1-sleep_0";
  ExpectError<JoinSetResponse>(delay, "delay_id: invalid delay id");

  Json state = ToJson(PendingStates()[1]);
  state["last_lock"]["run_id"] = "Run_";
  ExpectError<PendingState>(state, "last_lock.run_id: invalid run id");
}

// Replaces every value (at every depth) of valid encodings with junk of each
// JSON type, and removes every key: decoding must answer, never crash.
TEST(JsonMalformedTest, MutatedDocumentsNeverCrash) {
  const std::vector<Json> junk = {Json(nullptr),
                                  Json(true),
                                  Json(-1),
                                  Json(uint64_t{1} << 63),
                                  Json(0.5),
                                  Json(""),
                                  Json("x"),
                                  Json::array(),
                                  Json::object(),
                                  Json::array({1, 2}),
                                  Json::parse(R"({"a":1})")};
  std::vector<Json> documents;
  for (const ExecutionRequest& request : ExecutionRequests()) {
    documents.push_back(
        ToJson(ExecutionEvent{T("2024-01-02T03:04:05Z"), request, Version(1), Version(2)}));
  }
  for (const PendingState& state : PendingStates()) documents.push_back(ToJson(state));
  for (const JoinSetResponse& response : JoinSetResponses()) {
    documents.push_back(
        ToJson(JoinSetResponseEventOuter{T("2024-01-02T03:04:05Z"), {Js("n:my-set"), response}}));
  }
  size_t decoded_ok = 0;
  size_t rejected = 0;
  for (const Json& document : documents) {
    const Json flat = document.flatten();
    for (auto it = flat.begin(); it != flat.end(); ++it) {
      const Json::json_pointer pointer(it.key());
      std::vector<Json> mutants;
      for (const Json& value : junk) {
        Json mutant = document;
        mutant[pointer] = value;
        mutants.push_back(std::move(mutant));
      }
      // Also drop the leaf, or the object key holding it.
      Json without = document;
      if (without[pointer.parent_pointer()].is_object()) {
        without[pointer.parent_pointer()].erase(pointer.back());
        mutants.push_back(std::move(without));
      }
      for (const Json& mutant : mutants) {
        const bool ok = FromJson<ExecutionEvent>(mutant).has_value() ||
                        FromJson<PendingState>(mutant).has_value() ||
                        FromJson<JoinSetResponseEventOuter>(mutant).has_value();
        ok ? ++decoded_ok : ++rejected;
      }
    }
  }
  // Most mutations must be rejected; some (null for an Option) are fine.
  EXPECT_GT(rejected, decoded_ok);
}

}  // namespace
}  // namespace stele::core
