// Test support for the reliability tests of the server (disk full and
// read-only databases, limits, SQL injection; docs/reliability.md): a real
// Server on 127.0.0.1 (port 0) with a TOML config the test writes, an
// in-process echo activity (`test:rel/act.echo(value: string) -> string`,
// any value echoed; `test:rel/act.any(value)` untyped), a stub activity and
// httplib helpers.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "core/json_codec.h"
#include "server/components.h"
#include "server/config.h"
#include "server/server.h"

namespace stele::server::testing {

inline constexpr const char* kEcho = "test:rel/act.echo";
inline constexpr const char* kAny = "test:rel/act.any";
inline constexpr const char* kApprove = "test:rel/human.approve";

inline core::FunctionFqn Ffqn(const std::string& text) { return *core::FunctionFqn::Parse(text); }

// Echoes its first parameter as the ok value.
class EchoActivities final : public executor::Worker {
 public:
  executor::WorkerResult Run(executor::WorkerContext ctx) override {
    core::Json value = ctx.params.empty() ? core::Json() : ctx.params.at(0);
    return executor::WorkerResult::Ok(core::ReturnValueOk{value}, ctx.version);
  }
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

 private:
  std::vector<core::FunctionFqn> ffqns_{Ffqn(kEcho), Ffqn(kAny)};
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("stele_rel_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    StopServer();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // `api_extra` goes into [api], `database` is the whole [database] table
  // body (default: a SQLite file in the test's folder).
  Result<void, std::string> StartServer(const std::string& api_extra = "",
                                        const std::string& database = "") {
    std::string toml =
        "[api]\nlisten = \"127.0.0.1:0\"\n" + api_extra + "\n[database]\n" +
        (database.empty() ? "sqlite = \"stele.sqlite\"\nsqlite_synchronous = \"normal\"\n"
                          : database) +
        "\n[executor]\ntick_sleep = \"20ms\"\n"
        "[watcher]\ntick_sleep = \"20ms\"\n"
        "[[activity_stub]]\nname = \"approvals\"\n"
        "[[activity_stub.functions]]\nffqn = \"test:rel/human.approve\"\n";
    auto config = ParseConfig(toml, "stele.toml", dir_.string(), ProcessEnv());
    if (!config) return Unexpected(FormatErrors(config.error()));
    auto components = LoadComponents(*config, "stele.toml");
    if (!components) return Unexpected(FormatErrors(components.error()));
    ServerHooks hooks;
    LoadedComponent acts;
    acts.config.name = "echo";
    acts.config.lock_expiry = std::chrono::seconds(60);
    acts.config.max_retries = 1000;
    acts.config.retry_backoff = std::chrono::milliseconds(10);
    acts.component_id = core::ComponentId{core::ComponentType::kActivityNative, "echo",
                                          Sha256Digest("echo activities")};
    acts.kind = runtime::workflow::FunctionKind::kActivity;
    core::FunctionSignature echo{Ffqn(kEcho), {}, std::nullopt};
    echo.params.push_back({"value", *core::TypeDesc::Parse("string")});
    echo.return_type = *core::TypeDesc::Parse("string");
    acts.functions = {echo, core::FunctionSignature{Ffqn(kAny), {}, std::nullopt}};
    auto worker = std::make_shared<EchoActivities>();
    acts.make_worker =
        [worker](const WorkerEnv&) -> Result<std::shared_ptr<executor::Worker>, std::string> {
      return worker;
    };
    hooks.extra_components.push_back(std::move(acts));
    auto server = Server::Start(std::move(*config), std::move(*components), std::move(hooks));
    if (!server) return Unexpected(server.error());
    server_ = std::move(*server);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(30, 0);
    return {};
  }
  void StopServer() {
    client_.reset();
    if (server_) server_->Stop();
    server_.reset();
  }

  static core::Json Body(const httplib::Result& res) {
    if (!res) return core::Json();
    auto json = core::ParseJson(res->body);
    return json ? *json : core::Json();
  }
  static std::string ErrorKind(const httplib::Result& res) {
    core::Json body = Body(res);
    if (!body.contains("error")) return "<no error envelope: " + (res ? res->body : "") + ">";
    return body["error"]["kind"].get<std::string>();
  }
  static std::string ErrorMessage(const httplib::Result& res) {
    core::Json body = Body(res);
    if (!body.contains("error")) return "";
    return body["error"].value("message", "");
  }
  httplib::Result Post(const std::string& path, const core::Json& body) {
    return client_->Post(path.c_str(), core::SerializeJson(body), "application/json");
  }
  httplib::Result Put(const std::string& path, const core::Json& body) {
    return client_->Put(path.c_str(), core::SerializeJson(body), "application/json");
  }
  httplib::Result Get(const std::string& path) { return client_->Get(path.c_str()); }

  std::filesystem::path dir_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace stele::server::testing
