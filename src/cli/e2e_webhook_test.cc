// A [[webhook_wasm]] endpoint on the real `stele` binary: `server verify`
// compiles it, the example order webhook (examples/wasm/order_webhook.c)
// answers 202 with the id of the order saga it started (its steps are stub
// activities here, so the saga waits), the saga is visible through the
// CLI, and `component list` shows the route.
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

}  // namespace
