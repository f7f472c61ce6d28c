// A [[webhook_wasm]] endpoint on the real `stele` binary: `server verify`
// compiles it, the example order webhook (examples/wasm/order_webhook.c)
// answers 202 with the id of the order saga it started (its steps are stub
// activities here, so the saga waits), the saga is visible through the
// CLI, and `component list` shows the route. A [[webhook_js]] endpoint
// (plain JS written by the test) submits a JS workflow and answers with its
// result; a throwing handler is a 500, an endless loop a 504 at its
// timeout, and `server verify` names the file and line of a broken module.
#include "e2e_fixture.h"

namespace {

class E2eWebhookTest : public E2eTest {};

TEST_F(E2eWebhookTest, WebhookStartsTheOrderSagaAndComponentListShowsIt) {
  const std::string wasm = WasmDir();
  if (wasm.empty() || !fs::exists(wasm + "/e2e_order_webhook.wasm")) {
    const char* required = std::getenv("STELE_REQUIRE_WASM");
    if (required != nullptr && std::string(required) == "1") {
      FAIL() << "STELE_REQUIRE_WASM=1 but the webhook example was not built: " << wasm;
    }
    GTEST_SKIP() << "the example wasm guests were not built: " << wasm;
  }
  std::string toml = "data_dir = \"" + (dir_ / "data").string() +
                     "\"\n[api]\nlisten = \"127.0.0.1:0\"\n[database]\nsqlite = \"" +
                     sqlite_.string() + "\"\n[executor]\ntick_sleep = \"50ms\"\n" +
                     "[[workflow_wasm]]\nname = \"order_saga\"\nlocation = \"" + wasm +
                     "/e2e_order_saga.wasm\"\n[[activity_stub]]\nname = \"shop\"\n";
  for (const char* ffqn : {"shop:payments/card.refund", "shop:stock/items.reserve",
                           "shop:stock/items.release", "shop:shipping/parcels.ship"}) {
    toml += "[[activity_stub.functions]]\nffqn = \"" + std::string(ffqn) + "\"\n";
  }
  // The saga blocks on its first step, which takes (order, amount).
  toml +=
      "[[activity_stub.functions]]\nffqn = \"shop:payments/card.charge\"\nparams = [{ name = "
      "\"order\", type = \"string\" }, { name = \"amount\", type = \"u64\" }]\n";
  toml += "[[webhook_wasm]]\nname = \"orders\"\nroute = \"POST /orders/:id\"\nlocation = \"" +
          wasm + "/e2e_order_webhook.wasm\"\n";
  WriteFile(dir_ / "stele.toml", toml);
  CliRun verify = RunStele({"server", "verify", "--config", (dir_ / "stele.toml").string()});
  ASSERT_EQ(verify.code, 0) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("1 webhook(s)"), std::string::npos) << verify.out;
  ASSERT_TRUE(server_.Start(dir_ / "stele.toml", dir_ / "server.log"));
  api_ = server_.url();

  auto res = Http().Post("/orders/A-1", R"({"amount": 4999, "item": "teapot", "address": "x"})",
                         "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 202) << res->body;
  const std::string id = json::parse(res->body)["execution_id"];
  EXPECT_EQ(CliJson({"execution", "get", id})["ffqn"], "shop:orders/saga.place-order");
  CliRun list = Cli({"component", "list"});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_NE(list.out.find("orders  webhook_endpoint  sha256:"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("\n  POST /orders/:id\n"), std::string::npos) << list.out;
}

constexpr const char* kJsWebhookWorkflow = R"(export const functions = {
  "e2e:jswh/wf.double": {
    params: [["x", "u32"]],
    returns: "u32",
    run: async (ctx, x) => x * 2,
  },
};
)";

constexpr const char* kJsWebhookModule = R"(import { Err } from "stele";
export async function webhook(ctx, request) {
  const what = request.params.what;
  if (what === "throw") throw new Error("refused " + request.query.why);
  if (what === "spin") for (;;) {}
  let id;
  try {
    id = ctx.submit("e2e:jswh/wf.double", [Number(request.body)]);
  } catch (e) {
    if (e instanceof Err) return { status: 400, body: { error: e.value } };
    throw e;
  }
  const result = await ctx.awaitResult(id, 5000);
  return { status: result === undefined ? 202 : 200,
           headers: { "X-Mode": ctx.env.MODE },
           body: { execution_id: id, result } };
}
)";

class E2eJsWebhookTest : public E2eTest {
 protected:
  void WriteJsWebhookConfig(const std::string& module) {
    WriteFile(dir_ / "double.js", kJsWebhookWorkflow);
    WriteFile(dir_ / "hook.js", module);
    WriteFile(dir_ / "stele.toml",
              "data_dir = \"" + (dir_ / "data").string() +
                  "\"\n[api]\nlisten = \"127.0.0.1:0\"\n[database]\nsqlite = \"" +
                  sqlite_.string() + "\"\n[executor]\ntick_sleep = \"50ms\"\n" +
                  "[[workflow_js]]\nname = \"double\"\nlocation = \"double.js\"\n"
                  "[[webhook_js]]\nname = \"calc\"\nroute = \"POST /calc/:what\"\n"
                  "location = \"hook.js\"\ntimeout = \"3s\"\nenv = { MODE = \"e2e\" }\n");
  }
};

TEST_F(E2eJsWebhookTest, JsWebhookSubmitsAWorkflowAndAnswersWithItsResult) {
  WriteJsWebhookConfig(kJsWebhookModule);
  CliRun verify = RunStele({"server", "verify", "--config", (dir_ / "stele.toml").string()});
  ASSERT_EQ(verify.code, 0) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("1 webhook(s)"), std::string::npos) << verify.out;
  ASSERT_TRUE(server_.Start(dir_ / "stele.toml", dir_ / "server.log"));
  api_ = server_.url();

  auto res = Http().Post("/calc/double", "21", "text/plain");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("X-Mode"), "e2e");
  json body = json::parse(res->body);
  EXPECT_EQ(body["result"], json::parse(R"({"ok": 42})")) << res->body;
  const std::string id = body["execution_id"];
  EXPECT_EQ(CliJson({"execution", "get", id})["ffqn"], "e2e:jswh/wf.double");
  // Params the workflow does not take: the service's 400 through Err.
  auto bad = Http().Post("/calc/double", "-1", "text/plain");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  EXPECT_EQ(json::parse(bad->body)["error"]["kind"], "validation") << bad->body;

  auto thrown = Http().Post("/calc/throw?why=test", "", "text/plain");
  ASSERT_TRUE(thrown);
  EXPECT_EQ(thrown->status, 500) << thrown->body;
  EXPECT_EQ(json::parse(thrown->body)["error"]["kind"], "webhook_failed");
  EXPECT_NE(thrown->body.find("Error: refused test"), std::string::npos) << thrown->body;
  auto spin = Http().Post("/calc/spin", "", "text/plain");
  ASSERT_TRUE(spin);
  EXPECT_EQ(spin->status, 504) << spin->body;
  // The server goes on after both.
  auto again = Http().Post("/calc/double", "5", "text/plain");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200) << again->body;

  CliRun list = Cli({"component", "list"});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_NE(list.out.find("calc  webhook_endpoint  sha256:"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("\n  POST /calc/:what\n"), std::string::npos) << list.out;
}

TEST_F(E2eJsWebhookTest, ServerVerifyNamesTheBrokenModule) {
  WriteJsWebhookConfig("export async function webhook(ctx, request) {\n  return {;\n}\n");
  CliRun verify = RunStele({"server", "verify", "--config", (dir_ / "stele.toml").string()});
  EXPECT_NE(verify.code, 0) << verify.out;
  EXPECT_NE(verify.err.find("webhook_js.location: webhook `calc`"), std::string::npos)
      << verify.err;
  EXPECT_NE(verify.err.find("hook.js:2:"), std::string::npos) << verify.err;
}

}  // namespace
