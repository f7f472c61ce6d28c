// Test fixture shared by the webhook tests on a real server on 127.0.0.1
// (webhook_test.cc for [[webhook_wasm]], webhook_js_test.cc for
// [[webhook_js]]): a temp directory, a server started from a TOML text,
// and httplib clients. The order saga both example webhooks start
// (examples/wasm/order_saga.c) takes its steps from kWebhookStubSteps.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "core/json_codec.h"
#include "server/components.h"
#include "server/config.h"
#include "server/server.h"

namespace stele::server::testing {

// The saga's steps as stubs nobody answers: the saga waits.
inline constexpr const char* kWebhookStubSteps = R"(
[[activity_stub]]
name = "shop"
[[activity_stub.functions]]
ffqn = "shop:payments/card.charge"
params = [{ name = "order", type = "string" }, { name = "amount", type = "u64" }]
[[activity_stub.functions]]
ffqn = "shop:payments/card.refund"
[[activity_stub.functions]]
ffqn = "shop:stock/items.reserve"
[[activity_stub.functions]]
ffqn = "shop:stock/items.release"
[[activity_stub.functions]]
ffqn = "shop:shipping/parcels.ship"
)";

class WebhookServerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("stele_webhook_test_") + test->test_suite_name() + "_" +
            std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (server_) server_->Stop();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Starts the server of config text `toml`; a failure fails the test.
  void StartServer(const std::string& toml) {
    auto config = ParseConfig(toml, "stele.toml", dir_.string(), ProcessEnv());
    ASSERT_TRUE(config.has_value()) << FormatErrors(config.error());
    auto components = LoadComponents(*config, "stele.toml");
    ASSERT_TRUE(components.has_value()) << FormatErrors(components.error());
    auto server = Server::Start(std::move(*config), std::move(*components));
    ASSERT_TRUE(server.has_value()) << server.error();
    server_ = std::move(*server);
  }

  httplib::Client Client(const std::string& token = "") {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(60, 0);
    if (!token.empty()) client.set_bearer_token_auth(token);
    return client;
  }
  httplib::Result Post(const std::string& path, const std::string& body,
                       const std::string& token = "") {
    return Client(token).Post(path, body, "application/json");
  }
  static core::Json BodyOf(const httplib::Result& res) {
    auto json = core::ParseJson(res->body);
    EXPECT_TRUE(json.has_value()) << res->body;
    return json.value_or(core::Json());
  }

  std::filesystem::path dir_;
  std::unique_ptr<Server> server_;
};

}  // namespace stele::server::testing
