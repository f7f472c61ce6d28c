// Exec activities through the server: examples/server/stele.toml loaded as
// a user would (verify, then run), a greeting submitted over HTTP and run
// by the real shell script; a failing script is retried and then final.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>

#include "base/time.h"
#include "core/json_codec.h"
#include "server/components.h"
#include "server/config.h"
#include "server/server.h"

#ifndef STELE_SOURCE_DIR
#error "STELE_SOURCE_DIR must be defined"
#endif

namespace stele::server {
namespace {

using core::Json;
using ::testing::HasSubstr;

#if STELE_SERVER_HAVE_EXEC

class ExecServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("stele_exec_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (server_) server_->Stop();
    std::filesystem::remove_all(dir_);
  }

  // Loads `config_path` with the data dir and port overridden for the test.
  void Start(const std::string& config_path) {
    auto config = LoadConfig(config_path, false, ProcessEnv());
    ASSERT_TRUE(config.has_value()) << FormatErrors(config.error());
    config->api.listen_port = 0;
    config->database.sqlite = (dir_ / "stele.sqlite").string();
    auto components = LoadComponents(*config, config_path);
    ASSERT_TRUE(components.has_value()) << FormatErrors(components.error());
    auto server = Server::Start(std::move(*config), std::move(*components));
    ASSERT_TRUE(server.has_value()) << server.error();
    server_ = std::move(*server);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(60, 0);
  }

  Json Call(const std::string& ffqn, const Json& params) {
    auto submitted =
        client_->Post("/v1/executions", core::SerializeJson({{"ffqn", ffqn}, {"params", params}}),
                      "application/json");
    EXPECT_TRUE(submitted);
    if (!submitted) return Json();
    EXPECT_EQ(submitted->status, 201) << submitted->body;
    std::string id = (*core::ParseJson(submitted->body))["execution_id"];
    auto result = client_->Get(("/v1/executions/" + id + "/result?timeout=60").c_str());
    EXPECT_TRUE(result);
    if (!result) return Json();
    EXPECT_EQ(result->status, 200) << result->body;
    return (*core::ParseJson(result->body))["result"];
  }

  std::filesystem::path dir_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ExecServerTest, ExampleConfigRunsTheGreetingScript) {
  Start(std::string(STELE_SOURCE_DIR) + "/examples/server/stele.toml");
  EXPECT_EQ(Call("demo:greet/api.hello", {"world"}), Json({{"ok", "Hello, world!"}}));
  // The declared parameter type is enforced before anything runs.
  auto bad = client_->Post("/v1/executions", R"({"ffqn": "demo:greet/api.hello", "params": [42]})",
                           "application/json");
  EXPECT_EQ(bad->status, 400);
  auto components = client_->Get("/v1/components");
  EXPECT_THAT(components->body, HasSubstr("\"type\":\"activity_exec\""));
}

TEST_F(ExecServerTest, FailingScriptIsRetriedThenFinal) {
  std::ofstream(dir_ / "fail.sh")
      << "#!/bin/sh\ncat >/dev/null\necho \"attempt $STELE_ATTEMPT\" >&2\n"
         "echo \"$STELE_ATTEMPT\" >> attempts.txt\nexit 3\n";
  std::filesystem::permissions(dir_ / "fail.sh", std::filesystem::perms::owner_all);
  std::ofstream(dir_ / "stele.toml")
      << "[executor]\ntick_sleep = \"20ms\"\n"
         "[[activity_exec]]\nname = \"failing\"\ncommand = [\"./fail.sh\"]\n"
         "max_retries = 1\nretry_backoff = \"10ms\"\nlock_expiry = \"20s\"\n"
         "functions = [{ ffqn = \"demo:fail/api.fail\" }]\n";
  Start((dir_ / "stele.toml").string());
  Json result = Call("demo:fail/api.fail", Json::array());
  ASSERT_TRUE(result.contains("execution_error")) << result.dump();
  std::ifstream attempts(dir_ / "attempts.txt");
  std::string all((std::istreambuf_iterator<char>(attempts)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "1\n2\n");  // the working dir defaults to the config folder
}

// Issue 16: an exec activity whose config sets no lock_expiry (nor
// [executor]) may run 30 s: its Locked event's lease says so.
TEST_F(ExecServerTest, AnActivityWithoutLockExpiryHas30Seconds) {
  std::ofstream(dir_ / "ok.sh") << "#!/bin/sh\ncat >/dev/null\necho '{\"ok\": null}'\n";
  std::filesystem::permissions(dir_ / "ok.sh", std::filesystem::perms::owner_all);
  std::ofstream(dir_ / "stele.toml")
      << "[[activity_exec]]\nname = \"ok\"\ncommand = [\"./ok.sh\"]\n"
         "functions = [{ ffqn = \"demo:ok/api.ok\" }]\n";
  Start((dir_ / "stele.toml").string());
  auto submitted = client_->Post("/v1/executions", R"({"ffqn": "demo:ok/api.ok", "params": []})",
                                 "application/json");
  ASSERT_TRUE(submitted);
  ASSERT_EQ(submitted->status, 201) << submitted->body;
  const std::string id = (*core::ParseJson(submitted->body))["execution_id"];
  auto result = client_->Get(("/v1/executions/" + id + "/result?timeout=60").c_str());
  ASSERT_TRUE(result && result->status == 200);
  auto events = client_->Get(("/v1/executions/" + id + "/events").c_str());
  ASSERT_TRUE(events && events->status == 200);
  std::optional<std::chrono::microseconds> lease;
  const Json body = *core::ParseJson(events->body);  // outlives the loop
  for (const Json& event : body["events"]) {
    if (!event["event"].contains("locked")) continue;
    auto locked_at = ParseRfc3339(event["created_at"].get<std::string>());
    auto expires = ParseRfc3339(event["event"]["locked"]["lock_expires_at"].get<std::string>());
    ASSERT_TRUE(locked_at && expires) << event.dump();
    lease = *expires - *locked_at;
  }
  ASSERT_TRUE(lease.has_value()) << events->body;
  EXPECT_EQ(*lease, std::chrono::seconds(30));
}

TEST_F(ExecServerTest, MissingProgramIsAConfigError) {
  std::ofstream(dir_ / "stele.toml")
      << "\n[[activity_exec]]\nname = \"x\"\ncommand = [\"./nope.sh\"]\n"
         "functions = [{ ffqn = \"demo:x/api.x\" }]\n";
  auto config = LoadConfig((dir_ / "stele.toml").string(), false, ProcessEnv());
  ASSERT_TRUE(config.has_value());
  auto loaded = LoadComponents(*config, "stele.toml");
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.error()[0].line, 2);
  EXPECT_THAT(loaded.error()[0].ToString(), HasSubstr("no such program"));
}

#else

TEST(ExecServerTest, ExecIsNotSupportedWithoutTheRuntime) {
  auto config = ParseConfig(
      "[[activity_exec]]\nname = \"x\"\ncommand = [\"sh\"]\n"
      "functions = [{ ffqn = \"demo:x/api.x\" }]\n",
      "stele.toml", "/tmp", ProcessEnv());
  ASSERT_TRUE(config.has_value());
  auto loaded = LoadComponents(*config, "stele.toml");
  ASSERT_FALSE(loaded.has_value());
  EXPECT_THAT(loaded.error()[0].message, HasSubstr("not supported yet"));
}

#endif

}  // namespace
}  // namespace stele::server
