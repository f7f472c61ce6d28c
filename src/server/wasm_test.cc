// Wasm components through the server: the hello example (a workflow that
// calls an activity and sleeps durably) configured in TOML, submitted and
// awaited over HTTP. Skipped when the build has no wasm runtime or guests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>

#include "core/json_codec.h"
#include "server/components.h"
#include "server/config.h"
#include "server/server.h"

namespace stele::server {
namespace {

using core::Json;

#if defined(STELE_SERVER_TEST_WASM_DIR)

TEST(WasmServerTest, HelloWorkflowCallsItsActivityAndFinishes) {
  auto dir = std::filesystem::temp_directory_path() / "stele_server_wasm_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string wasm_dir = STELE_SERVER_TEST_WASM_DIR;
  std::string toml = "[api]\nlisten = \"127.0.0.1:0\"\n"
                     "[executor]\ntick_sleep = \"20ms\"\nlock_expiry = \"5s\"\n"
                     "[watcher]\ntick_sleep = \"50ms\"\nleeway = \"0ms\"\n"
                     "[[workflow_wasm]]\nname = \"hello_wf\"\nlocation = \"" + wasm_dir +
                     "/server_hello_workflow.wasm\"\n"
                     "[[activity_wasm]]\nname = \"hello_act\"\nlocation = \"" + wasm_dir +
                     "/server_hello_activity.wasm\"\n";
  auto config = ParseConfig(toml, "stele.toml", dir.string(), ProcessEnv());
  ASSERT_TRUE(config.has_value()) << FormatErrors(config.error());
  auto components = LoadComponents(*config, "stele.toml");
  ASSERT_TRUE(components.has_value()) << FormatErrors(components.error());
  auto server = Server::Start(std::move(*config), std::move(*components));
  ASSERT_TRUE(server.has_value()) << server.error();
  httplib::Client client("127.0.0.1", (*server)->port());
  client.set_read_timeout(60, 0);

  auto listing = client.Get("/v1/components");
  ASSERT_TRUE(listing);
  Json components_json = *core::ParseJson(listing->body);
  ASSERT_EQ(components_json["components"].size(), 2u);
  EXPECT_EQ(components_json["components"][0]["type"], "workflow");
  EXPECT_EQ(components_json["components"][0]["functions"][0]["params"][0]["type"], "string");

  auto bad = client.Post("/v1/executions", R"({"ffqn": "demo:hello/api.welcome", "params": [1]})",
                         "application/json");
  EXPECT_EQ(bad->status, 400) << bad->body;
  auto submitted = client.Post("/v1/executions",
                               R"({"ffqn": "demo:hello/api.welcome", "params": ["Ada"]})",
                               "application/json");
  ASSERT_TRUE(submitted);
  ASSERT_EQ(submitted->status, 201) << submitted->body;
  std::string id = (*core::ParseJson(submitted->body))["execution_id"];
  auto result = client.Get(("/v1/executions/" + id + "/result?timeout=60").c_str());
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  Json body = *core::ParseJson(result->body);
  ASSERT_TRUE(body["result"].contains("ok")) << body.dump();
  EXPECT_THAT(body["result"]["ok"].get<std::string>(), ::testing::HasSubstr("Ada"));
  // The child call is visible as a response of the workflow.
  auto responses = client.Get(("/v1/executions/" + id + "/responses").c_str());
  EXPECT_GE((*core::ParseJson(responses->body))["responses"].size(), 1u);
  (*server)->Stop();
  std::filesystem::remove_all(dir);
}

#else

TEST(WasmServerTest, SkippedWithoutWasm) { GTEST_SKIP() << "no wasm runtime or guest toolchain"; }

#endif

}  // namespace
}  // namespace stele::server
