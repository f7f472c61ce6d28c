// The API's JSON shapes of events and responses (api_util.h, docs/api.md
// "Results"): every result, wherever it appears, is {"ok": v} / {"err": v}
// / {"execution_error": {...}} as GET .../result gives it, and every unit
// result {"ok": null} / {"err": null}. The stored encoding (the core codec's,
// with serde's {"ok":{"ok":v}} and {"Ok":null}) is unchanged: rows written
// by any earlier build decode as before and show in the API's shape.
#include "server/api_util.h"

#include <gtest/gtest.h>

#include <string>

#include "core/json_codec.h"

namespace stele::server::api {
namespace {

using core::Json;

template <class T, class E>
T Must(Result<T, E> r) {
  EXPECT_TRUE(r.has_value());
  return std::move(*r);
}

core::ExecutionEvent StoredEvent(const std::string& json_value) {
  // As a backend reads a t_execution_log row: the stored text, decoded.
  auto request = core::FromJson<core::ExecutionRequest>(Must(core::ParseJson(json_value)));
  EXPECT_TRUE(request.has_value()) << (request ? "" : request.error().message);
  return core::ExecutionEvent{*ParseRfc3339("2024-01-02T03:04:05Z"), *request, std::nullopt,
                              core::Version(3)};
}

Json EventBody(const std::string& json_value, const std::string& tag) {
  return EventToJson(StoredEvent(json_value))["event"][tag];
}

TEST(ApiJsonTest, FinishedEventsHoldTheResultAsTheResultEndpointGivesIt) {
  // Rows as every build so far has written them.
  const Json ok = EventBody(
      R"({"finished":{"result":{"ok":{"ok":{"zeta":1,"alpha":2}}},"http_client_traces":null}})",
      "finished");
  EXPECT_EQ(core::SerializeJson(ok["result"]), R"({"ok":{"zeta":1,"alpha":2}})")
      << "one level, record field order kept";
  EXPECT_EQ(ok["http_client_traces"], Json(nullptr));
  EXPECT_EQ(EventBody(R"({"finished":{"result":{"err":{"err":"nope"}}}})", "finished")["result"],
            Json({{"err", "nope"}}));
  EXPECT_EQ(EventBody(R"({"finished":{"result":{"ok":{"ok":null}}}})", "finished")["result"],
            Json({{"ok", nullptr}}));
  const Json failed = EventBody(
      R"({"finished":{"result":{"execution_error":{"kind":"timed_out","reason":"r","detail":null}}}})",
      "finished");
  EXPECT_EQ(failed["result"],
            Json({{"execution_error", {{"kind", "timed_out"}, {"reason", "r"}}}}));
  // The same document as ResultToJson, which GET .../result uses.
  const auto value = Must(core::FromJson<core::SupportedFunctionReturnValue>(
      Must(core::ParseJson(R"({"ok":{"ok":[1,"two"]}})"))));
  EXPECT_EQ(
      EventToJson(core::ExecutionEvent{
          *ParseRfc3339("2024-01-02T03:04:05Z"), core::Finished{value, std::nullopt, std::nullopt},
          std::nullopt, core::Version(1)})["event"]["finished"]["result"],
      ResultToJson(value));
}

TEST(ApiJsonTest, TraceStatusesStubsAndOtherFieldsKeepTheirPlace) {
  const Json failed = EventBody(
      R"({"temporarily_failed":{"backoff_expires_at":"2024-01-02T03:04:05Z","reason":"trap",)"
      R"("detail":"d","http_client_traces":[{"req":{"sent_at":"2024-01-02T03:04:05Z","uri":"u",)"
      R"("method":"GET"},"resp":{"finished_at":"2024-01-02T03:04:06Z","status":{"Ok":200}}},)"
      R"({"req":{"sent_at":"2024-01-02T03:04:05Z","uri":"v","method":"PUT"},"resp":)"
      R"({"finished_at":"2024-01-02T03:04:06Z","status":{"Err":"timeout"}}},)"
      R"({"req":{"sent_at":"2024-01-02T03:04:05Z","uri":"w","method":"POST"},"resp":null}]}})",
      "temporarily_failed");
  EXPECT_EQ(failed["reason"], "trap");
  EXPECT_EQ(failed["detail"], "d");
  const Json& traces = failed["http_client_traces"];
  ASSERT_EQ(traces.size(), 3u);
  EXPECT_EQ(traces[0]["resp"]["status"], Json({{"ok", 200}}));
  EXPECT_EQ(traces[1]["resp"]["status"], Json({{"err", "timeout"}}));
  EXPECT_EQ(traces[2]["resp"], Json(nullptr));
  EXPECT_EQ(traces[0]["req"]["uri"], "u");

  const Json stub =
      EventBody(R"({"history_event":{"event":{"type":"stub","target_execution_id":)"
                R"("E_01KBNHM5FQW81KP5Y3XMNX31K4.n:my-set_1","result":{"ok":{"ok":42}},)"
                R"("persist_result":{"Err":null}}}})",
                "history_event");
  EXPECT_EQ(stub["event"]["type"], "stub");
  EXPECT_EQ(stub["event"]["result"], Json({{"ok", 42}}));
  EXPECT_EQ(stub["event"]["persist_result"], Json({{"err", nullptr}}));

  // Events without results are the codec's encoding, unchanged.
  const std::string locked_text =
      R"({"unlocked":{"backoff_expires_at":"2024-01-02T03:04:05Z","reason":"shutdown"}})";
  const core::ExecutionEvent unlocked = StoredEvent(locked_text);
  EXPECT_EQ(EventToJson(unlocked), core::ToJson(unlocked));
}

TEST(ApiJsonTest, ResponsesOfDelaysAndChildren) {
  auto response = [](const std::string& inner) {
    auto decoded = core::FromJson<core::JoinSetResponseEventOuter>(Must(core::ParseJson(
        R"({"created_at":"2024-01-02T03:04:05Z","event":{"join_set_id":"n:js","event":)" + inner +
        "}}")));
    EXPECT_TRUE(decoded.has_value()) << (decoded ? "" : decoded.error().message);
    return ResponseToJson(*decoded)["event"]["event"];
  };
  const std::string delay =
      R"({"type":"delay_finished","delay_id":"Delay_01KBNHM5FQW81KP5Y3XMNX31K4.n:js_1","result":)";
  EXPECT_EQ(response(delay + R"({"Ok":null}})")["result"], Json({{"ok", nullptr}})) << "fired";
  EXPECT_EQ(response(delay + R"({"Err":null}})")["result"], Json({{"err", nullptr}}))
      << "cancelled";
  const Json child = response(R"({"type":"child_execution_finished","child_execution_id":)"
                              R"("E_01KBNHM5FQW81KP5Y3XMNX31K4.n:js_2","finished_version":2,)"
                              R"("result":{"err":{"err":"denied"}}})");
  EXPECT_EQ(child["result"], Json({{"err", "denied"}}));
  EXPECT_EQ(child["finished_version"], 2);
}

}  // namespace
}  // namespace stele::server::api
