// Sample values shared by the JSON codec tests: at least one of every variant
// of the event model, with optional fields both set and unset.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/json_codec.h"

namespace stele::core::testing {

inline DateTime T(std::string_view rfc3339) { return *ParseRfc3339(rfc3339); }
inline Ulid U1() { return *Ulid::Parse("01KBNHM5FQW81KP5Y3XMNX31K4"); }
inline Ulid U2() { return *Ulid::Parse("01ARZ3NDEKTSV4RRFFQ69G5FAV"); }
inline JoinSetId Js(std::string_view text) { return *JoinSetId::Parse(text); }
inline FunctionFqn Ffqn(std::string_view text) { return *FunctionFqn::Parse(text); }
inline ExecutionId TopId() { return ExecutionId(U1()); }
inline constexpr const char* kTestEngine = "v8 10.2.154.26-node.36";
inline ExecutionIdDerived ChildId() { return TopId().NextLevel(Js("n:my-set"), 1); }
inline DelayId TestDelayId() { return DelayId(ChildId(), Js("o:1-sleep"), 2); }
inline InputContentDigest Digest() {
  return *InputContentDigest::Parse("sha256:" + std::string(62, '0') + "a1");
}
inline ComponentId TestComponentId() {
  return ComponentId{ComponentType::kWorkflow, "my_workflow", Digest()};
}
// A record whose field order is not alphabetical, nested in an array.
inline Json OrderedParams() {
  return Json::parse(R"([{"z":1,"a":2,"m":{"y":[true,null],"b":"s"}},"text",-5,2.5])");
}

inline std::vector<SupportedFunctionReturnValue> ReturnValues() {
  return {
      ReturnValueOk{std::nullopt},
      ReturnValueOk{Json::parse(R"({"type":{"result":{"ok":{"option":"string"},"err":"string"}},)"
                                R"("value":{"ok":null}})")},
      ReturnValueErr{std::nullopt},
      ReturnValueErr{Json::parse(R"({"z":"last","a":"first"})")},
      FinishedExecutionError{ExecutionFailureKind::kTimedOut, std::nullopt, std::nullopt},
      FinishedExecutionError{ExecutionFailureKind::kNondeterminismDetected, "reason", "detail"},
      FinishedExecutionError{ExecutionFailureKind::kCancelled, std::nullopt, "only detail"},
  };
}

inline HttpClientTraces Traces() {
  return std::vector<HttpClientTrace>{
      HttpClientTrace{HttpRequestTrace{T("2024-01-02T03:04:05.000001Z"), "https://a.test/x", "GET"},
                      HttpResponseTrace{T("2024-01-02T03:04:06Z"), uint16_t{200}}},
      HttpClientTrace{HttpRequestTrace{T("2024-01-02T03:04:05Z"), "http://b.test", "POST"},
                      HttpResponseTrace{T("2024-01-02T03:04:07Z"), std::string("timeout")}},
      HttpClientTrace{HttpRequestTrace{T("2024-01-02T03:04:05Z"), "http://c.test", "PUT"},
                      std::nullopt},
  };
}

inline std::vector<HistoryEventScheduleAt> ScheduleAts() {
  return {HistoryEventScheduleAt::Now(), HistoryEventScheduleAt::At(T("2030-05-06T07:08:09.5Z")),
          HistoryEventScheduleAt::In(Duration{3, 5})};
}

inline std::vector<JoinSetRequest> JoinSetRequests() {
  std::vector<JoinSetRequest> out;
  for (const HistoryEventScheduleAt& schedule_at : ScheduleAts()) {
    out.push_back(DelayRequest{TestDelayId(), T("2024-01-02T03:04:05Z"), schedule_at});
  }
  out.push_back(ChildExecutionRequest{ExecutionId(ChildId()).NextLevel(Js("o:1-fibo"), 3),
                                      Ffqn("testing:fibo/fibo.fibo"), OrderedParams()});
  out.push_back(ChildExecutionRequest{ChildId(), Ffqn("wasi:cli/run@0.2.0.run"), Json::array()});
  return out;
}

inline std::vector<HistoryEvent> HistoryEvents() {
  std::vector<HistoryEvent> out = {
      HistoryPersist{{0, 1, 127, 128, 255}, PersistKindRandomU64{0, UINT64_MAX}},
      HistoryPersist{{}, PersistKindRandomString{1, 10}},
      HistoryJoinSetCreate{Js("g:1")},
      HistoryJoinNext{Js("n:my-set"), T("2024-01-02T03:04:05Z"), std::nullopt, true},
      HistoryJoinNext{Js("o:1-fibo"), T("2024-01-02T03:04:05Z"), Ffqn("testing:fibo/fibo.fibo"),
                      false},
      HistoryJoinNextTooMany{Js("n:my-set"), std::nullopt},
      HistoryJoinNextTooMany{Js("n:my-set"), Ffqn("a:b/c.d")},
      HistoryStub{ChildId(), ReturnValueOk{Json(42)}, true},
      HistoryStub{ChildId(), FinishedExecutionError{}, false},
      HistoryStep{"charge-card", ReturnValueOk{Json{{"receipt", "r-1"}}}},
      HistoryStep{"refuse", ReturnValueErr{Json("no such account")}},
      HistoryCancelRequest{T("2024-01-02T03:04:05Z"), false, "requested through the API"},
      HistoryCancelRequest{T("2024-01-02T03:04:05Z"), true, ""},
      HistoryJoinNextTry{Js("g:1")},
      HistoryJoinNextTry{Js("m:orders/eu")},
      HistoryPublish{"progress", Json{{"done", 3}, {"of", 10}}},
      HistoryPublish{"stage", Json()},
      HistorySendMessage{ExecutionId(U2()), "orders", "E_x@1", Json::array({1, "two"}),
                         SendOutcome::kDelivered},
      HistorySendMessage{ExecutionId(U2()), "orders", "m-1", Json(), SendOutcome::kNotFound},
      HistorySendMessage{ExecutionId(U2()), "a/b", "m-2", Json(false),
                         SendOutcome::kAlreadyFinished},
  };
  for (const JoinSetRequest& request : JoinSetRequests()) {
    out.push_back(HistoryJoinSetRequest{Js("n:my-set"), request});
  }
  for (const HistoryEventScheduleAt& schedule_at : ScheduleAts()) {
    out.push_back(HistorySchedule{ExecutionId(U2()), schedule_at});
  }
  return out;
}

inline std::vector<ExecutionRequest> ExecutionRequests() {
  ExecutionMetadata metadata;
  metadata.entries["tracing:traceparent"] = "00-abc-def-01";
  metadata.entries["a"] = "";
  std::vector<ExecutionRequest> out = {
      Created{Ffqn("testing:fibo/fibo.fibo"), OrderedParams(), std::nullopt,
              T("2024-01-02T03:04:05Z"), ComponentId::DummyActivity(), ExecutionMetadata{},
              std::nullopt},
      Created{Ffqn("wasi:cli/run@0.2.0.run"), Json::array(),
              std::pair<ExecutionId, JoinSetId>(TopId(), Js("n:my-set")),
              T("2024-01-02T03:04:05.123456Z"), TestComponentId(), metadata, ExecutionId(U2())},
      Locked{TestComponentId(), ExecutorId(U1()), RunId(U2()), T("2024-01-02T03:04:05Z"),
             ComponentRetryConfig{5u, Duration::FromMillis(100)}},
      Locked{ComponentId::DummyWorkflow(), ExecutorId(U2()), RunId(U1()), T("2024-01-02T03:04:05Z"),
             ComponentRetryConfig{std::nullopt, Duration{1, 1}}},
      Unlocked{T("2024-01-02T03:04:05Z"), "made progress"},
      TemporarilyFailed{T("2024-01-02T03:04:05Z"), "activity trap", "stack\ntrace", Traces()},
      TemporarilyFailed{T("2024-01-02T03:04:05Z"), "", std::nullopt, std::nullopt},
      TemporarilyFailed{T("2024-01-02T03:04:05Z"), "r", std::nullopt,
                        std::vector<HttpClientTrace>{}},
      TemporarilyTimedOut{T("2024-01-02T03:04:05Z"), std::nullopt},
      TemporarilyTimedOut{T("2024-01-02T03:04:05Z"), Traces()},
      TemporarilyTimedOut{T("2024-01-02T03:04:05Z"), std::nullopt, std::nullopt,
                          "the activity ran past its time limit of 30 s"},
      // The engine of a wasm run, on each event that can end one.
      Unlocked{T("2024-01-02T03:04:05Z"), "limit reached: x", kTestEngine},
      TemporarilyFailed{T("2024-01-02T03:04:05Z"), "activity trap", "d", Traces(), kTestEngine},
      TemporarilyTimedOut{T("2024-01-02T03:04:05Z"), std::nullopt, kTestEngine},
      Finished{ReturnValueOk{Json(1)}, std::nullopt, kTestEngine},
      Paused{"maintenance of the payment provider"},
      Paused{""},
      Resumed{"done"},
  };
  for (const SupportedFunctionReturnValue& result : ReturnValues()) {
    out.push_back(Finished{result, std::nullopt});
  }
  out.push_back(Finished{ReturnValueOk{}, Traces()});
  for (const HistoryEvent& event : HistoryEvents()) out.push_back(HistoryEventRequest{event});
  return out;
}

inline std::vector<JoinSetResponse> JoinSetResponses() {
  std::vector<JoinSetResponse> out = {
      DelayFinished{TestDelayId(), true}, DelayFinished{TestDelayId(), false},
      MessageReceived{"m-1", Json{{"n", 1}}}, MessageReceived{"msg_2", Json()}};
  for (const SupportedFunctionReturnValue& result : ReturnValues()) {
    out.push_back(ChildExecutionFinished{ChildId(), Version(7), result});
  }
  return out;
}

inline std::vector<PendingState> PendingStates() {
  const LockedBy locked_by{ExecutorId(U1()), RunId(U2())};
  return {
      PendingState{PendingStatePendingAt{T("2024-01-02T03:04:05Z"), std::nullopt, Digest()}},
      PendingState{PendingStatePendingAt{T("2024-01-02T03:04:05Z"), locked_by, Digest()}},
      PendingState{PendingStateLocked{locked_by, T("2024-01-02T03:04:05.5Z"), Digest()}},
      PendingState{
          PendingStateBlockedByJoinSet{Js("n:my-set"), T("2024-01-02T03:04:05Z"), false, Digest()}},
      PendingState{PendingStateBlockedByJoinSet{Js("g:2"), T("2024-01-02T03:04:05Z"), true,
                                                InputContentDigest()}},
      PendingState{PendingStateFinished{UINT32_MAX, T("2024-01-02T03:04:05Z"),
                                        PendingStateFinishedResultKind::Ok(), Digest()}},
      PendingState{PendingStateFinished{2, T("2024-01-02T03:04:05Z"),
                                        PendingStateFinishedResultKind::FallibleError(), Digest()}},
      PendingState{PendingStateFinished{
          3, T("2024-01-02T03:04:05Z"),
          PendingStateFinishedResultKind::Failure(ExecutionFailureKind::kOutOfFuel), Digest()}},
      PendingState{PendingStatePendingAt{T("2024-01-02T03:04:05Z"), locked_by, Digest()},
                   /*paused=*/true, /*cancelling=*/false},
      PendingState{
          PendingStateBlockedByJoinSet{Js("n:my-set"), T("2024-01-02T03:04:05Z"), false, Digest()},
          /*paused=*/true, /*cancelling=*/true},
  };
}

inline WasmBacktrace TestBacktrace() {
  return WasmBacktrace{{
      FrameInfo{
          "wf.wasm", "fibo", {FrameSymbol{"fibo::run", "src/lib.rs", 10u, 5u}, FrameSymbol{}}},
      FrameInfo{"<unknown>", "wasm-function[3]", {}},
  }};
}

}  // namespace stele::core::testing
