// JavaScript webhooks (js_webhook.h, docs/js.md "Webhooks"): the request the
// handler reads, the response it returns, the host operations (submit,
// awaitResult) and how a failing, slow or hostile handler ends.
#include "runtime/js/js_webhook.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace stele::runtime::js {
namespace {

using ::testing::HasSubstr;
using webhook::WebhookFailure;
using webhook::WebhookHost;
using webhook::WebhookRequest;
using namespace std::chrono_literals;

// A WebhookHost that records what the handler asks: execution "E_done"
// has finished ok, "E_bad" is unknown, anything else stays pending.
class RecordingWebhookHost final : public WebhookHost {
 public:
  std::vector<std::string> submitted;  // "ffqn params"
  std::vector<std::chrono::milliseconds> waits;

  Result<std::string, Error> Submit(const std::string& ffqn, const core::Json& params) override {
    if (ffqn == "t:bad/api.f") return Unexpected(Error{"validation", "params do not match"});
    submitted.push_back(ffqn + " " + params.dump());
    return std::string("E_new");
  }
  Result<std::optional<core::SupportedFunctionReturnValue>, Error> AwaitResult(
      const std::string& id, std::chrono::milliseconds timeout) override {
    waits.push_back(timeout);
    if (id == "E_bad") return Unexpected(Error{"not_found", "no execution E_bad"});
    if (id == "E_done") {
      return std::optional<core::SupportedFunctionReturnValue>(
          core::ReturnValueOk{core::Json{{"total", 42}}});
    }
    return std::optional<core::SupportedFunctionReturnValue>();
  }
};

class JsWebhookTest : public ::testing::Test {
 protected:
  std::shared_ptr<const JsWebhook> MustLoad(const std::string& source, JsLimits limits = {}) {
    auto loaded = LoadJsWebhook(CreateV8JsEngine(), source, "hook.js", "orders", limits);
    EXPECT_TRUE(loaded.has_value()) << loaded.error();
    return loaded ? *loaded : nullptr;
  }
  Result<webhook::WebhookResponse, WebhookFailure> Serve(
      const JsWebhook& hook, std::chrono::milliseconds limit = 5s,
      CancellationToken cancel = CancellationToken()) {
    return RunJsWebhook(hook, request_, host_, limit, cancel, "webhook orders",
                        {{"GREETING", "hello"}});
  }

  WebhookRequest request_{"POST",
                          "/orders/A-1",
                          {{"id", "A-1"}},
                          {{"dry", "1"}},
                          {{"content-type", "application/json"}},
                          R"({"amount": 4999})"};
  RecordingWebhookHost host_;
};

TEST_F(JsWebhookTest, ReadsTheRequestAndAnswers) {
  auto hook = MustLoad(R"(
    export async function webhook(ctx, req) {
      const body = JSON.parse(req.body);
      return { status: 201, headers: { "X-Order": req.params.id },
               body: { method: req.method, path: req.path, dry: req.query.dry,
                       type: req.headers["content-type"], amount: body.amount,
                       greeting: ctx.env.GREETING, name: ctx.name } };
    })");
  ASSERT_NE(hook, nullptr);
  EXPECT_EQ(hook->component_id.component_type, core::ComponentType::kWebhookEndpoint);
  EXPECT_EQ(hook->component_id.name, "orders");
  auto out = Serve(*hook);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(out->status, 201);
  EXPECT_EQ(core::Json::parse(out->body), (core::Json{{"method", "POST"},
                                                      {"path", "/orders/A-1"},
                                                      {"dry", "1"},
                                                      {"type", "application/json"},
                                                      {"amount", 4999},
                                                      {"greeting", "hello"},
                                                      {"name", "orders"}}));
  EXPECT_THAT(out->headers,
              ::testing::Contains(std::pair<std::string, std::string>("X-Order", "A-1")));
  EXPECT_THAT(out->headers, ::testing::Contains(std::pair<std::string, std::string>(
                                "Content-Type", "application/json")));
}

TEST_F(JsWebhookTest, SubmitsAndAwaitsThroughTheHost) {
  auto hook = MustLoad(R"(
    import { Err } from "stele";
    export async function webhook(ctx, req) {
      const id = ctx.submit("t:shop/api.order", [req.params.id, 4999]);
      const pending = await ctx.awaitResult(id, 250);
      const done = await ctx.awaitResult("E_done", 0);
      let missing;
      try { await ctx.awaitResult("E_bad", 10); } catch (e) {
        missing = [e instanceof Err, e.value.kind, e.message];
      }
      let invalid;
      try { ctx.submit("t:bad/api.f", []); } catch (e) { invalid = e.value; }
      return { status: 200, body: { id, pending: pending === undefined, done, missing, invalid } };
    })");
  ASSERT_NE(hook, nullptr);
  auto out = Serve(*hook);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(core::Json::parse(out->body),
            core::Json::parse(R"({"id": "E_new", "pending": true, "done": {"ok": {"total": 42}},
                                  "missing": [true, "not_found", "not_found: no execution E_bad"],
                                  "invalid": {"kind": "validation",
                                              "message": "params do not match"}})"));
  EXPECT_EQ(host_.submitted, (std::vector<std::string>{R"(t:shop/api.order ["A-1",4999])"}));
  ASSERT_EQ(host_.waits.size(), 3u);
  EXPECT_EQ(host_.waits[0], 250ms);
}

TEST_F(JsWebhookTest, AWaitIsCutToWhatIsLeftOfTheTimeLimit) {
  auto hook = MustLoad(R"(
    export async function webhook(ctx) {
      await ctx.awaitResult("E_pending", 60000);
      return { status: 204 };
    })");
  ASSERT_NE(hook, nullptr);
  auto out = Serve(*hook, 300ms);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  ASSERT_EQ(host_.waits.size(), 1u);
  EXPECT_LE(host_.waits[0], 300ms);
}

TEST_F(JsWebhookTest, AThrowingHandlerIsATrapWithItsStack) {
  auto hook = MustLoad(R"(
    function check(req) { throw new Error("no order " + req.params.id); }
    export async function webhook(ctx, req) { check(req); })");
  ASSERT_NE(hook, nullptr);
  auto out = Serve(*hook);
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().kind, WebhookFailure::Kind::kTrap);
  EXPECT_THAT(out.error().message, HasSubstr("Error: no order A-1"));
  EXPECT_THAT(out.error().detail, HasSubstr("check (hook.js:2:"));
}

TEST_F(JsWebhookTest, AMalformedResponseIsBadResponse) {
  for (const char* body : {"return { status: 99 };", "return 'ok';", "return undefined;",
                           "return { status: 200, headers: { 'X-A': 'a\\r\\nX-B: b' } };",
                           "return { status: 200, body: 1n };"}) {
    SCOPED_TRACE(body);
    auto hook = MustLoad(std::string("export async function webhook() { ") + body + " }");
    ASSERT_NE(hook, nullptr);
    auto out = Serve(*hook);
    ASSERT_FALSE(out.has_value());
    EXPECT_EQ(out.error().kind, WebhookFailure::Kind::kBadResponse) << out.error().message;
  }
}

TEST_F(JsWebhookTest, AnEndlessLoopIsStoppedAtTheTimeLimit) {
  auto hook = MustLoad("export async function webhook() { for (;;) {} }");
  ASSERT_NE(hook, nullptr);
  auto out = Serve(*hook, 200ms);
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().kind, WebhookFailure::Kind::kTimeout);
  EXPECT_THAT(out.error().message, HasSubstr("within 200 ms"));
  // The realm was poisoned and replaced: the next request runs normally.
  auto again = MustLoad("export async function webhook() { return { status: 200 }; }");
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(Serve(*again).has_value());
}

TEST_F(JsWebhookTest, ACancelledRequestTimesOut) {
  auto hook = MustLoad("export async function webhook() { for (;;) {} }");
  ASSERT_NE(hook, nullptr);
  CancellationToken cancel;
  std::thread stopper([cancel] {
    std::this_thread::sleep_for(50ms);
    cancel.Cancel();
  });
  auto out = Serve(*hook, 60s, cancel);
  stopper.join();
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().kind, WebhookFailure::Kind::kTimeout);
}

TEST_F(JsWebhookTest, RunningOutOfHeapIsATrap) {
  JsLimits limits;
  limits.max_heap_bytes = 16u << 20;
  auto hook = MustLoad(R"(
    export async function webhook() {
      const keep = [];
      for (;;) keep.push(new Array(100000).fill(keep.length));
    })",
                       limits);
  ASSERT_NE(hook, nullptr);
  auto out = Serve(*hook);
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().kind, WebhookFailure::Kind::kTrap);
  EXPECT_THAT(out.error().message, HasSubstr("heap"));
}

TEST_F(JsWebhookTest, HasNoFetchAndRealTime) {
  auto hook = MustLoad(R"(
    export async function webhook() {
      return { status: 200, body: { fetch: typeof fetch, now: Date.now() > 1.6e12 } };
    })");
  ASSERT_NE(hook, nullptr);
  auto out = Serve(*hook);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(core::Json::parse(out->body), (core::Json{{"fetch", "undefined"}, {"now", true}}));
}

TEST_F(JsWebhookTest, LoadErrorsNameTheProblem) {
  auto engine = CreateV8JsEngine();
  auto none = LoadJsWebhook(engine, "export const functions = {};", "hook.js", "orders");
  ASSERT_FALSE(none.has_value());
  EXPECT_THAT(none.error(), HasSubstr("must export `webhook`, a function"));
  auto syntax = LoadJsWebhook(engine, "export function webhook( {", "hook.js", "orders");
  ASSERT_FALSE(syntax.has_value());
  EXPECT_THAT(syntax.error(), HasSubstr("hook.js:1:"));
  auto name = LoadJsWebhook(engine, "export function webhook() {}", "hook.js", "bad name");
  ASSERT_FALSE(name.has_value());
  EXPECT_THAT(name.error(), HasSubstr("invalid name"));
  auto file = LoadJsWebhookFile(engine, "/nonexistent/hook.js", "orders");
  ASSERT_FALSE(file.has_value());
  EXPECT_THAT(file.error(), HasSubstr("cannot open"));
}

}  // namespace
}  // namespace stele::runtime::js
