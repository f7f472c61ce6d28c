#include "core/json_codec.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <variant>

#include "core/json_codec_test_values.h"

namespace stele::core {
namespace {

using namespace ::stele::core::testing;  // NOLINT(google-build-using-namespace): test values

// Round trip through a Json value and through text; the re-encoded text must
// equal the first one (encoding is deterministic).
template <class T>
void ExpectRoundTrip(const T& value) {
  const Json json = ToJson(value);
  const std::string text = SerializeJson(json);
  auto decoded = FromJson<T>(json);
  ASSERT_TRUE(decoded.has_value()) << decoded.error().message << "\n" << text;
  EXPECT_TRUE(*decoded == value) << text;

  auto reparsed = ParseJson(text);
  ASSERT_TRUE(reparsed.has_value()) << reparsed.error().message;
  auto decoded_from_text = FromJson<T>(*reparsed);
  ASSERT_TRUE(decoded_from_text.has_value()) << decoded_from_text.error().message;
  EXPECT_TRUE(*decoded_from_text == value) << text;
  EXPECT_EQ(SerializeJson(ToJson(*decoded_from_text)), text);
}

TEST(JsonCodecTest, ExecutionRequestsRoundTrip) {
  const std::vector<ExecutionRequest> requests = ExecutionRequests();
  std::set<size_t> variants;
  for (const ExecutionRequest& request : requests) {
    SCOPED_TRACE(ExecutionRequestToString(request));
    ExpectRoundTrip(request);
    variants.insert(request.index());
  }
  EXPECT_EQ(variants.size(), std::variant_size_v<ExecutionRequest>);
}

TEST(JsonCodecTest, HistoryEventsRoundTrip) {
  std::set<size_t> variants;
  for (const HistoryEvent& event : HistoryEvents()) {
    ExpectRoundTrip(event);
    variants.insert(event.index());
  }
  EXPECT_EQ(variants.size(), std::variant_size_v<HistoryEvent>);
}

TEST(JsonCodecTest, JoinSetRequestsRoundTrip) {
  for (const JoinSetRequest& request : JoinSetRequests()) ExpectRoundTrip(request);
}

TEST(JsonCodecTest, ExecutionEventsRoundTrip) {
  Version::Type version = 0;
  for (const ExecutionRequest& request : ExecutionRequests()) {
    ExpectRoundTrip(
        ExecutionEvent{T("2024-01-02T03:04:05.678Z"), request, std::nullopt, Version(version)});
    ExpectRoundTrip(
        ExecutionEvent{T("1970-01-01T00:00:00Z"), request, Version(version / 2), Version(version)});
    ++version;
  }
  ExpectRoundTrip(ExecutionEvent{T("9999-12-31T23:59:59.999999Z"),
                                 Unlocked{T("0000-01-01T00:00:00Z"), "edge"}, Version(UINT32_MAX),
                                 Version(UINT32_MAX)});
}

TEST(JsonCodecTest, BacktraceIdIsOmittedWhenAbsent) {
  ExecutionEvent event{T("2024-01-02T03:04:05Z"), Unlocked{T("2024-01-02T03:04:05Z"), "r"},
                       std::nullopt, Version(3)};
  EXPECT_FALSE(ToJson(event).contains("backtrace_id"));
  event.backtrace_id = Version(2);
  EXPECT_EQ(ToJson(event)["backtrace_id"], 2);
  // An explicit null reads as absent, as serde reads Option fields.
  Json json = ToJson(event);
  json["backtrace_id"] = nullptr;
  EXPECT_EQ(FromJson<ExecutionEvent>(json)->backtrace_id, std::nullopt);
}

// `engine` (wasm runs) is additive: events and backtraces without it encode
// exactly as before the field existed, and rows written then still decode.
TEST(JsonCodecTest, EngineIsOmittedWhenAbsentAndOldRowsDecode) {
  const std::vector<std::pair<std::string, ExecutionRequest>> old_rows = {
      {R"({"unlocked":{"backoff_expires_at":"2024-01-02T03:04:05Z","reason":"r"}})",
       Unlocked{T("2024-01-02T03:04:05Z"), "r"}},
      {R"({"temporarily_failed":{"backoff_expires_at":"2024-01-02T03:04:05Z","reason":"r",)"
       R"("detail":null,"http_client_traces":null}})",
       TemporarilyFailed{T("2024-01-02T03:04:05Z"), "r", std::nullopt, std::nullopt}},
      {R"({"temporarily_timed_out":{"backoff_expires_at":"2024-01-02T03:04:05Z",)"
       R"("http_client_traces":null}})",
       TemporarilyTimedOut{T("2024-01-02T03:04:05Z"), std::nullopt}},
      {R"({"finished":{"result":{"ok":{"ok":1}},"http_client_traces":null}})",
       Finished{ReturnValueOk{Json(1)}, std::nullopt}},
  };
  for (const auto& [text, expected] : old_rows) {
    SCOPED_TRACE(text);
    auto json = ParseJson(text);
    ASSERT_TRUE(json.has_value()) << json.error().message;
    auto decoded = FromJson<ExecutionRequest>(*json);
    ASSERT_TRUE(decoded.has_value()) << decoded.error().message;
    EXPECT_TRUE(*decoded == expected);
    EXPECT_EQ(SerializeJson(ToJson(*decoded)), SerializeJson(*json));
  }
  // A timeout's reason is written when set.
  const ExecutionRequest with_reason =
      TemporarilyTimedOut{T("2024-01-02T03:04:05Z"), std::nullopt, std::nullopt, "why"};
  EXPECT_EQ(ToJson(with_reason)["temporarily_timed_out"]["reason"], "why");
  auto old_backtrace = ParseJson(R"({"frames":[]})");
  ASSERT_TRUE(old_backtrace.has_value());
  auto backtrace = FromJson<WasmBacktrace>(*old_backtrace);
  ASSERT_TRUE(backtrace.has_value()) << backtrace.error().message;
  EXPECT_EQ(backtrace->engine, std::nullopt);
  EXPECT_EQ(SerializeJson(ToJson(*backtrace)), R"({"frames":[]})");

  const ExecutionRequest with = Finished{ReturnValueOk{Json(1)}, std::nullopt, kTestEngine};
  EXPECT_EQ(ToJson(with)["finished"]["engine"], kTestEngine);
  WasmBacktrace traced = TestBacktrace();
  traced.engine = kTestEngine;
  EXPECT_EQ(ToJson(traced)["engine"], kTestEngine);
  ExpectRoundTrip(traced);
}

TEST(JsonCodecTest, JoinSetResponsesRoundTrip) {
  std::set<size_t> variants;
  for (const JoinSetResponse& response : JoinSetResponses()) {
    ExpectRoundTrip(response);
    ExpectRoundTrip(JoinSetResponseEvent{Js("n:my-set"), response});
    ExpectRoundTrip(
        JoinSetResponseEventOuter{T("2024-01-02T03:04:05Z"), {Js("o:1-sleep"), response}});
    variants.insert(response.index());
  }
  EXPECT_EQ(variants.size(), std::variant_size_v<JoinSetResponse>);
}

TEST(JsonCodecTest, PendingStatesRoundTrip) {
  std::set<size_t> variants;
  for (const PendingState& state : PendingStates()) {
    SCOPED_TRACE(state.ToString());
    ExpectRoundTrip(state);
    variants.insert(state.value.index());
  }
  EXPECT_EQ(variants.size(), 4u);
}

TEST(JsonCodecTest, SmallValuesRoundTrip) {
  for (const SupportedFunctionReturnValue& value : ReturnValues()) ExpectRoundTrip(value);
  ExpectRoundTrip(FinishedExecutionError{ExecutionFailureKind::kUncategorized, "r", "d"});
  for (const HistoryEventScheduleAt& value : ScheduleAts()) ExpectRoundTrip(value);
  ExpectRoundTrip(PersistKind{PersistKindRandomU64{5, 6}});
  ExpectRoundTrip(PersistKind{PersistKindRandomString{0, UINT64_MAX}});
  ExpectRoundTrip(PersistKind{PersistKindTime{}});
  ExpectRoundTrip(Duration::Max());
  ExpectRoundTrip(Duration{});
  ExpectRoundTrip(TestComponentId());
  ExpectRoundTrip(ComponentId{ComponentType::kWebhookEndpoint, "hook", InputContentDigest()});
  ExpectRoundTrip(ComponentRetryConfig::Zero());
  ExpectRoundTrip(ComponentRetryConfig{std::nullopt, Duration::FromMillis(1)});
  ExpectRoundTrip(ExecutionMetadata{});
  ExpectRoundTrip(ExecutionMetadata{{{"k", "v"}, {"tracing:traceparent", "00-01"}}});
  const HttpClientTraces traces = Traces();
  for (const HttpClientTrace& trace : *traces) ExpectRoundTrip(trace);
  ExpectRoundTrip(PendingStateFinishedResultKind::Ok());
  ExpectRoundTrip(PendingStateFinishedResultKind::FallibleError());
  for (ExecutionFailureKind kind :
       {ExecutionFailureKind::kTimedOut, ExecutionFailureKind::kNondeterminismDetected,
        ExecutionFailureKind::kOutOfFuel, ExecutionFailureKind::kCancelled,
        ExecutionFailureKind::kUncategorized}) {
    ExpectRoundTrip(PendingStateFinishedResultKind::Failure(kind));
  }
  ExpectRoundTrip(TestBacktrace());
  ExpectRoundTrip(WasmBacktrace{});
}

TEST(JsonCodecTest, RecordFieldOrderSurvivesInParamsAndResults) {
  const ExecutionRequest created = Created{Ffqn("a:b/c.d"),
                                           Json::parse(R"([{"z":1,"a":2}])"),
                                           std::nullopt,
                                           T("2024-01-02T03:04:05Z"),
                                           ComponentId::DummyActivity(),
                                           {},
                                           std::nullopt};
  auto decoded = FromJson<ExecutionRequest>(*ParseJson(SerializeJson(ToJson(created))));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(SerializeJson(std::get<Created>(*decoded).params), R"([{"z":1,"a":2}])");

  const SupportedFunctionReturnValue result = ReturnValueOk{Json::parse(R"({"z":1,"a":2})")};
  const std::string text = SerializeJson(ToJson(result));
  EXPECT_EQ(text, R"({"ok":{"ok":{"z":1,"a":2}}})");
  auto decoded_result = FromJson<SupportedFunctionReturnValue>(*ParseJson(text));
  ASSERT_TRUE(decoded_result.has_value());
  EXPECT_EQ(SerializeJson(*std::get<ReturnValueOk>(*decoded_result).ok), R"({"z":1,"a":2})");
  // The ordered comparison tells the two orders apart.
  EXPECT_NE(Json::parse(R"({"z":1,"a":2})"), Json::parse(R"({"a":2,"z":1})"));
}

TEST(JsonCodecTest, GoldenLockedEvent) {
  const ExecutionEvent event{
      T("2024-01-02T03:04:05.123Z"),
      Locked{TestComponentId(), ExecutorId(U2()), RunId(U1()), T("2024-01-02T03:04:06Z"),
             ComponentRetryConfig{5u, Duration::FromMillis(100)}},
      std::nullopt, Version(1)};
  EXPECT_EQ(
      SerializeJson(ToJson(event)),
      R"({"created_at":"2024-01-02T03:04:05.123Z","event":{"locked":{)"
      R"("component_id":{"component_type":"workflow","name":"my_workflow",)"
      R"("input_digest":"sha256:00000000000000000000000000000000000000000000000000000000000000a1"},)"
      R"("executor_id":"Exr_01ARZ3NDEKTSV4RRFFQ69G5FAV",)"
      R"("run_id":"Run_01KBNHM5FQW81KP5Y3XMNX31K4",)"
      R"("lock_expires_at":"2024-01-02T03:04:06Z",)"
      R"("retry_config":{"max_retries":5,"retry_exp_backoff":{"secs":0,"nanos":100000000}}}},)"
      R"("version":1})");
}

// The retry cap and jitter, a failure's attempt and a Created event's
// policy are written when set, and read back; events without them encode
// as before (EngineIsOmittedWhenAbsentAndOldRowsDecode).
TEST(JsonCodecTest, RetryPolicyAttemptAndExecutionPolicyRoundTrip) {
  const ExecutionRequest locked =
      Locked{TestComponentId(), ExecutorId(U2()), RunId(U1()), T("2024-01-02T03:04:06Z"),
             ComponentRetryConfig{10u, Duration::FromMillis(100), Duration::FromSecs(300), 10}};
  EXPECT_EQ(SerializeJson(ToJson(locked)["locked"]["retry_config"]),
            R"({"max_retries":10,"retry_exp_backoff":{"secs":0,"nanos":100000000},)"
            R"("max_backoff":{"secs":300,"nanos":0},"jitter_percent":10})");
  const ExecutionRequest failed = TemporarilyFailed{
      T("2024-01-02T03:04:05Z"), "r", std::nullopt, std::nullopt, std::nullopt, RetryAttempt{3, 6}};
  EXPECT_EQ(ToJson(failed)["temporarily_failed"]["attempt"], Json(3));
  EXPECT_EQ(ToJson(failed)["temporarily_failed"]["max_attempts"], Json(6));
  const ExecutionRequest timed_out = TemporarilyTimedOut{
      T("2024-01-02T03:04:05Z"), std::nullopt, std::nullopt, "why", RetryAttempt{2, std::nullopt}};
  EXPECT_FALSE(ToJson(timed_out)["temporarily_timed_out"].contains("max_attempts"));
  Created created{FunctionFqn::Parse("a:b/c.d").value(),
                  Json::array(),
                  std::nullopt,
                  T("2024-01-02T03:04:05Z"),
                  TestComponentId(),
                  {},
                  std::nullopt};
  EXPECT_FALSE(ToJson(ExecutionRequest(created))["created"].contains("policy"));
  created.policy.deadline = T("2024-01-02T04:00:00Z");
  created.policy.retry.max_retries = 0;
  created.policy.retry.jitter_percent = 50;
  EXPECT_EQ(SerializeJson(ToJson(ExecutionRequest(created))["created"]["policy"]),
            R"({"deadline":"2024-01-02T04:00:00Z","retry":{"max_retries":0,"jitter_percent":50}})");
  for (const ExecutionRequest& request : {locked, failed, timed_out, ExecutionRequest(created)}) {
    auto decoded = FromJson<ExecutionRequest>(ToJson(request));
    ASSERT_TRUE(decoded.has_value()) << decoded.error().message;
    EXPECT_TRUE(*decoded == request) << SerializeJson(ToJson(request));
  }
  // A jitter over 100 % is refused, not clamped silently.
  Json bad = ToJson(locked);
  bad["locked"]["retry_config"]["jitter_percent"] = 101;
  EXPECT_FALSE(FromJson<ExecutionRequest>(bad).has_value());
}

TEST(JsonCodecTest, GoldenJoinNextEvent) {
  const ExecutionEvent event{
      T("2024-01-02T03:04:05Z"),
      HistoryEventRequest{HistoryJoinNext{Js("n:my-set"), T("2024-01-02T03:04:05.000001Z"),
                                          Ffqn("testing:fibo/fibo.fibo"), false}},
      Version(3), Version(4)};
  EXPECT_EQ(SerializeJson(ToJson(event)),
            R"({"created_at":"2024-01-02T03:04:05Z","event":{"history_event":{"event":{)"
            R"("type":"join_next","join_set_id":"n:my-set",)"
            R"("run_expires_at":"2024-01-02T03:04:05.000001Z",)"
            R"("requested_ffqn":"testing:fibo/fibo.fibo","closing":false}}},)"
            R"("backtrace_id":3,"version":4})");
}

TEST(JsonCodecTest, ShapesOfSmallValues) {
  EXPECT_EQ(SerializeJson(ToJson(PendingStateFinishedResultKind::Ok())), R"("ok")");
  EXPECT_EQ(SerializeJson(ToJson(PendingStateFinishedResultKind::FallibleError())),
            R"({"err":"FallibleError"})");
  EXPECT_EQ(SerializeJson(
                ToJson(PendingStateFinishedResultKind::Failure(ExecutionFailureKind::kTimedOut))),
            R"({"err":{"ExecutionFailure":"timed_out"}})");
  EXPECT_EQ(SerializeJson(ToJson(HistoryEventScheduleAt::Now())), R"("now")");
  EXPECT_EQ(SerializeJson(ToJson(HistoryEventScheduleAt::At(T("2024-01-02T03:04:05Z")))),
            R"({"at":"2024-01-02T03:04:05Z"})");
  EXPECT_EQ(SerializeJson(ToJson(HistoryEventScheduleAt::In(Duration::FromMillis(1500)))),
            R"({"in":{"secs":1,"nanos":500000000}})");
  EXPECT_EQ(SerializeJson(ToJson(SupportedFunctionReturnValue(ReturnValueErr{}))),
            R"({"err":{"err":null}})");
  EXPECT_EQ(SerializeJson(ToJson(SupportedFunctionReturnValue(
                FinishedExecutionError{ExecutionFailureKind::kCancelled, std::nullopt, "d"}))),
            R"({"execution_error":{"kind":"cancelled","reason":null,"detail":"d"}})");
  EXPECT_EQ(SerializeJson(ToJson(ExecutionMetadata{})), "{}");
  EXPECT_EQ(SerializeJson(ToJson(PersistKind{PersistKindRandomString{1, 2}})),
            R"({"type":"random_string","min_length":1,"max_length_exclusive":2})");
  EXPECT_EQ(SerializeJson(ToJson(PersistKind{PersistKindTime{}})), R"({"type":"time"})");
  EXPECT_EQ(SerializeJson(ToJson((*Traces())[1])),
            R"({"req":{"sent_at":"2024-01-02T03:04:05Z","uri":"http://b.test","method":"POST"},)"
            R"("resp":{"finished_at":"2024-01-02T03:04:07Z","status":{"Err":"timeout"}}})");
  EXPECT_EQ(SerializeJson(ToJson((*Traces())[0])["resp"]["status"]), R"({"Ok":200})");
  EXPECT_EQ(SerializeJson(ToJson(TestBacktrace())["frames"][0]["symbols"][1]),
            R"({"func_name":null,"file":null,"line":null,"col":null})");
}

TEST(JsonCodecTest, ShapesOfEvents) {
  const Json created = ToJson(ExecutionRequests()[1]);
  EXPECT_EQ(SerializeJson(created["created"]["parent"]),
            R"(["E_01KBNHM5FQW81KP5Y3XMNX31K4","n:my-set"])");
  EXPECT_EQ(created["created"]["scheduled_by"], "E_01ARZ3NDEKTSV4RRFFQ69G5FAV");
  EXPECT_EQ(SerializeJson(created["created"]["metadata"]),
            R"({"a":"","tracing:traceparent":"00-abc-def-01"})");
  EXPECT_EQ(ToJson(ExecutionRequests()[0])["created"]["parent"], nullptr);

  const Json stub = ToJson(HistoryEvent(HistoryStub{ChildId(), ReturnValueOk{}, false}));
  EXPECT_EQ(SerializeJson(stub),
            R"({"type":"stub","target_execution_id":"E_01KBNHM5FQW81KP5Y3XMNX31K4.n:my-set_1",)"
            R"("result":{"ok":{"ok":null}},"persist_result":{"Err":null}})");
  const Json persist = ToJson(HistoryEvent(HistoryPersist{{0, 255}, PersistKindRandomU64{1, 9}}));
  EXPECT_EQ(SerializeJson(persist), R"({"type":"persist","value":[0,255],)"
                                    R"("kind":{"type":"random_u64","min":1,"max_inclusive":9}})");

  EXPECT_EQ(SerializeJson(ToJson(JoinSetResponse(DelayFinished{TestDelayId(), false}))),
            R"({"type":"delay_finished",)"
            R"("delay_id":"Delay_01KBNHM5FQW81KP5Y3XMNX31K4.n:my-set_1.o:1-sleep_2",)"
            R"("result":{"Err":null}})");
  EXPECT_EQ(SerializeJson(ToJson(
                JoinSetResponse(ChildExecutionFinished{ChildId(), Version(2), ReturnValueOk{}}))),
            R"({"type":"child_execution_finished",)"
            R"("child_execution_id":"E_01KBNHM5FQW81KP5Y3XMNX31K4.n:my-set_1",)"
            R"("finished_version":2,"result":{"ok":{"ok":null}}})");

  const Json failed = ToJson(ExecutionRequests()[6]);
  EXPECT_EQ(SerializeJson(failed),
            R"({"temporarily_failed":{"backoff_expires_at":"2024-01-02T03:04:05Z","reason":"",)"
            R"("detail":null,"http_client_traces":null}})");
}

TEST(JsonCodecTest, ShapesOfPendingStates) {
  const std::vector<PendingState> states = PendingStates();
  const std::string digest = Digest().ToString();
  EXPECT_EQ(SerializeJson(ToJson(states[0])),
            R"({"status":"PendingAt","scheduled_at":"2024-01-02T03:04:05Z","last_lock":null,)"
            R"("component_id_input_digest":")" +
                digest + R"("})");
  EXPECT_EQ(SerializeJson(ToJson(states[2])),
            R"({"status":"Locked","locked_by":{"executor_id":"Exr_01KBNHM5FQW81KP5Y3XMNX31K4",)"
            R"("run_id":"Run_01ARZ3NDEKTSV4RRFFQ69G5FAV"},)"
            R"("lock_expires_at":"2024-01-02T03:04:05.500Z","component_id_input_digest":")" +
                digest + R"("})");
  EXPECT_EQ(SerializeJson(ToJson(states[3])),
            R"({"status":"BlockedByJoinSet","join_set_id":"n:my-set",)"
            R"("lock_expires_at":"2024-01-02T03:04:05Z","closing":false,)"
            R"("component_id_input_digest":")" +
                digest + R"("})");
  EXPECT_EQ(SerializeJson(ToJson(states[7])),
            R"({"status":"Finished","version":3,"finished_at":"2024-01-02T03:04:05Z",)"
            R"("result_kind":{"err":{"ExecutionFailure":"out_of_fuel"}},)"
            R"("component_id_input_digest":")" +
                digest + R"("})");
}

TEST(JsonCodecTest, DecodingIgnoresUnknownFieldsAndAcceptsSeedDefaults) {
  Json json = ToJson(ExecutionRequests()[0]);
  json["created"]["added_in_a_later_version"] = 1;
  // Obelisk writes empty metadata as null and may omit Option fields.
  json["created"]["metadata"] = nullptr;
  json["created"].erase("scheduled_by");
  json["created"].erase("parent");
  auto decoded = FromJson<ExecutionRequest>(json);
  ASSERT_TRUE(decoded.has_value()) << decoded.error().message;
  EXPECT_EQ(*decoded, ExecutionRequests()[0]);
}

TEST(JsonCodecTest, SerializeJsonReplacesInvalidUtf8) {
  const Json json = Json("bad \xff byte");
  EXPECT_EQ(SerializeJson(json), "\"bad \xef\xbf\xbd byte\"");
}

TEST(JsonCodecTest, ParseJsonAcceptsNestingUpTo128) {
  const std::string ok = std::string(128, '[') + std::string(128, ']');
  EXPECT_TRUE(ParseJson(ok).has_value());
  // Brackets inside strings do not count, escaped quotes do not end strings.
  const std::string in_string = R"({"a":"\")" + std::string(1000, '[') + R"("})";
  auto parsed = ParseJson(in_string);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  EXPECT_EQ((*parsed)["a"].get<std::string>().size(), 1001u);
}

}  // namespace
}  // namespace stele::core
