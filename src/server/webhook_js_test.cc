// [[webhook_js]] endpoints on a real server on 127.0.0.1, with the example
// examples/js/plain/order_webhook.js (which starts the wasm order saga of
// examples/wasm/order_saga.c) and the test module testdata/test_webhooks.js:
// 202 while the saga waits, the service's 400, what the handler reads, a
// throw and an unsettled await (500), a malformed response, the heap limit
// (500), an endless loop and a wait past the time limit (504), 413, and the
// [api] token. Skipped when the build has no JS runtime or wasm guests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <string>

#include "server/webhook_test_fixture.h"

namespace stele::server {
namespace {

#if defined(STELE_SERVER_WEBHOOK_WASM_DIR) && STELE_SERVER_HAVE_JS

using core::Json;
using ::testing::HasSubstr;

class JsWebhookServerTest : public testing::WebhookServerFixture {
 protected:
  void Start(const std::string& api = "") {
    const std::string wasm = STELE_SERVER_WEBHOOK_WASM_DIR;
    const std::string src = STELE_SOURCE_DIR;
    const std::string guest = src + "/src/server/testdata/test_webhooks.js";
    const std::string toml =
        "[api]\nlisten = \"127.0.0.1:0\"\n" + api +
        "[executor]\ntick_sleep = \"20ms\"\nlock_expiry = \"5s\"\n"
        "[[workflow_wasm]]\nname = \"order_saga\"\nlocation = \"" +
        wasm + "/webhook_order_saga.wasm\"\n" + testing::kWebhookStubSteps +
        "[[webhook_js]]\nname = \"orders\"\nroute = \"POST /orders/:id\"\nlocation = \"" + src +
        "/examples/js/plain/order_webhook.js\"\n"
        "[[webhook_js]]\nname = \"t\"\nroute = \"POST /t/:what\"\nenv = { MODE = \"test\" }\n"
        "location = \"" +
        guest +
        "\"\n"
        "[[webhook_js]]\nname = \"slow\"\nroute = \"POST /slow/:what\"\ntimeout = \"300ms\"\n"
        "location = \"" +
        guest +
        "\"\n"
        "[[webhook_js]]\nname = \"small\"\nroute = \"POST /small/:what\"\nmax_memory_mib = 16\n"
        "location = \"" +
        guest + "\"\n";
    StartServer(toml);
  }
};

TEST_F(JsWebhookServerTest, OrderWebhookStartsTheSagaAndAnswers202) {
  Start();
  auto res = Post("/orders/A-1", R"({"amount": 4999, "item": "teapot", "address": "Baker St"})");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 202) << res->body;
  const std::string id = BodyOf(res)["execution_id"];
  EXPECT_EQ(res->get_header_value("Location"), "/v1/executions/" + id);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  auto execution = Client().Get("/v1/executions/" + id);
  ASSERT_EQ(execution->status, 200) << execution->body;
  EXPECT_EQ(BodyOf(execution)["ffqn"], "shop:orders/saga.place-order");
  auto events = Client().Get("/v1/executions/" + id + "/events");
  EXPECT_THAT(events->body, HasSubstr(R"(["A-1",4999,"teapot","Baker St"])"));
  // The service's type check reaches the handler as Err {kind, message}.
  auto bad = Post("/orders/A-2", R"({"amount": "lots", "item": "teapot", "address": "x"})");
  ASSERT_EQ(bad->status, 400) << bad->body;
  EXPECT_EQ(BodyOf(bad)["error"]["kind"], "validation");
  EXPECT_EQ(Post("/orders/A-3", "not json")->status, 400);

  Json listing = BodyOf(Client().Get("/v1/components"));
  ASSERT_EQ(listing["webhooks"].size(), 4u) << listing.dump();
  EXPECT_EQ(listing["webhooks"][0]["name"], "orders");
  EXPECT_EQ(listing["webhooks"][0]["type"], "webhook_endpoint");
  auto metrics = Client().Get("/metrics");
  EXPECT_THAT(metrics->body,
              HasSubstr("stele_webhook_requests_total{webhook=\"orders\",route=\"POST "
                        "/orders/:id\",status=\"202\"} 1\n"));
}

TEST_F(JsWebhookServerTest, WhatTheHandlerReadsAndHowItFails) {
  Start("max_body_bytes = 2048\n");
  auto echo = Client().Post("/t/echo?a=1", {{"X-Thing", "v"}}, "hello", "text/plain");
  ASSERT_EQ(echo->status, 200) << echo->body;
  Json request = BodyOf(echo);
  EXPECT_EQ(request["method"], "POST");
  EXPECT_EQ(request["path"], "/t/echo");
  EXPECT_EQ(request["params"], Json({{"what", "echo"}}));
  EXPECT_EQ(request["query"], Json({{"a", "1"}}));
  EXPECT_EQ(request["headers"]["x-thing"], "v");
  EXPECT_EQ(request["body"], "hello");
  // Over [api] max_body_bytes: 413, the handler never runs.
  EXPECT_EQ(Post("/t/echo", std::string(4096, 'x'))->status, 413);
  // A throw, an await nothing settles, a malformed response: 500.
  for (const char* what : {"throw", "pending", "bad"}) {
    auto res = Post(std::string("/t/") + what, "{}");
    EXPECT_EQ(res->status, 500) << what << ": " << res->body;
    EXPECT_EQ(BodyOf(res)["error"]["kind"], "webhook_failed") << what;
  }
  EXPECT_THAT(Post("/t/throw", "{}")->body, HasSubstr("TypeError: no such order"));
  EXPECT_THAT(Post("/t/bad", "{}")->body, HasSubstr("response is malformed"));
  // ~24 MiB fit the default heap; over max_memory_mib = 16: 500.
  EXPECT_EQ(Post("/t/big", "{}")->status, 200);
  auto oom = Post("/small/big", "{}");
  EXPECT_EQ(oom->status, 500) << oom->body;
  // An endless loop: stopped at the webhook's 300 ms, 504.
  auto spin = Post("/slow/spin", "{}");
  EXPECT_EQ(spin->status, 504) << spin->body;
  EXPECT_EQ(BodyOf(spin)["error"]["kind"], "webhook_timeout");
  // A wait for a saga that waits ends pending; the handler answers.
  auto wait = Post("/t/await", R"(["C-1", 1, "x", "y"])");
  ASSERT_EQ(wait->status, 200) << wait->body;
  EXPECT_EQ(BodyOf(wait)["pending"], true);
  // The server goes on; what the handlers submitted stays.
  auto submitted = Post("/t/submit", R"(["C-2", 1, "x", "y"])");
  ASSERT_EQ(submitted->status, 201) << submitted->body;
  EXPECT_EQ(Client().Post("/t/echo", "ok", "text/plain")->status, 200);
  auto list = BodyOf(Client().Get("/v1/executions"));
  EXPECT_EQ(list["executions"].size(), 2u) << list.dump();
  auto metrics = Client().Get("/metrics");
  EXPECT_THAT(metrics->body, HasSubstr("stele_webhook_requests_total{webhook=\"slow\",route=\"POST "
                                       "/slow/:what\",status=\"504\"} 1\n"));
}

TEST_F(JsWebhookServerTest, TheApiTokenGuardsJsWebhooks) {
  Start("token = \"s3cret\"\n");
  EXPECT_EQ(Post("/t/echo", "{}")->status, 401);
  auto client = Client();
  client.set_bearer_token_auth("s3cret");
  auto ok = client.Post("/t/echo", "{}", "application/json");
  ASSERT_EQ(ok->status, 200) << ok->body;
  EXPECT_FALSE(BodyOf(ok)["headers"].contains("authorization")) << ok->body;
}

#endif

}  // namespace
}  // namespace stele::server
