// The web UI's static serving (ui_routes.cc): a real Server on 127.0.0.1
// with no components, driven by httplib::Client with hostile paths; the
// separate UI address of [api] ui_listen (config and listener).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "server/config.h"
#include "server/server.h"

namespace stele::server {
namespace {

using ::testing::HasSubstr;

class UiRoutesTest : public ::testing::Test {
 protected:
  // A fresh folder for this test's config and data.
  const std::filesystem::path& dir() {
    if (dir_.empty()) {
      dir_ = std::filesystem::temp_directory_path() /
             ("stele_ui_test_" +
              std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
      std::filesystem::remove_all(dir_);
      std::filesystem::create_directories(dir_);
    }
    return dir_;
  }
  void Start(const std::string& api_extra) {
    std::string toml = "[api]\nlisten = \"127.0.0.1:0\"\n" + api_extra;
    auto config = ParseConfig(toml, "stele.toml", dir().string(), ProcessEnv());
    ASSERT_TRUE(config.has_value()) << FormatErrors(config.error());
    auto server = Server::Start(std::move(*config), {});
    ASSERT_TRUE(server.has_value()) << server.error();
    server_ = std::move(*server);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
    server_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(UiRoutesTest, RootRedirectsAndFilesHaveTheirContentType) {
  Start("");
  auto root = client_->Get("/");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->status, 302);
  EXPECT_EQ(root->get_header_value("Location"), "/ui/");
  auto index = client_->Get("/ui/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_THAT(index->get_header_value("Content-Type"), HasSubstr("text/html"));
  EXPECT_THAT(index->body, HasSubstr("<script type=\"module\" src=\"app.js\">"));
  EXPECT_THAT(index->get_header_value("Content-Security-Policy"), HasSubstr("default-src 'self'"));
  auto js = client_->Get("/ui/app.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_THAT(js->get_header_value("Content-Type"), HasSubstr("text/javascript"));
  auto css = client_->Get("/ui/style.css");
  ASSERT_TRUE(css);
  EXPECT_THAT(css->get_header_value("Content-Type"), HasSubstr("text/css"));
}

TEST_F(UiRoutesTest, UnknownAndTraversalPathsAre404) {
  Start("");
  for (const char* path :
       {"/ui/nope.js", "/ui/../stele.toml", "/ui/%2e%2e/%2e%2e/etc/passwd", "/ui//etc/passwd",
        "/ui/./app.js", "/ui/app.js%00.png", "/ui/APP.JS", "/ui/embed_ui.cmake", "/ui/app.js/"}) {
    auto res = client_->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
    EXPECT_THAT(res->body, HasSubstr("not_found")) << path;
  }
}

TEST_F(UiRoutesTest, FilesNeedNoTokenButTheApiStillDoes) {
  Start("token = \"secret\"\n");
  auto index = client_->Get("/ui/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  auto api = client_->Get("/v1/executions");
  ASSERT_TRUE(api);
  EXPECT_EQ(api->status, 401);
  // A UI-looking prefix does not open API paths.
  auto sneaky = client_->Get("/ui/../v1/executions");
  ASSERT_TRUE(sneaky);
  EXPECT_NE(sneaky->status, 200);
  client_->set_bearer_token_auth("secret");
  auto ok = client_->Get("/v1/executions");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST_F(UiRoutesTest, DisabledByConfig) {
  Start("ui = false\n");
  for (const char* path : {"/", "/ui/", "/ui/app.js"}) {
    auto res = client_->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
  }
}

TEST_F(UiRoutesTest, UiKeyMustBeABool) {
  auto config = ParseConfig("[api]\nui = \"yes\"\n", "stele.toml", "/tmp", ProcessEnv());
  ASSERT_FALSE(config.has_value());
  EXPECT_THAT(FormatErrors(config.error()), HasSubstr("ui"));
}

// The single error of `toml`, checked to name `key` and `line`; its message.
std::string OneConfigError(const std::string& toml, const std::string& key, int line) {
  auto config = ParseConfig(toml, "stele.toml", "/tmp", ProcessEnv());
  EXPECT_FALSE(config.has_value()) << toml;
  if (config) return "";
  EXPECT_EQ(config.error().size(), 1u) << FormatErrors(config.error());
  const ConfigError& e = config.error()[0];
  EXPECT_EQ(e.key, key) << e.ToString();
  EXPECT_EQ(e.line, line) << e.ToString();
  EXPECT_THAT(e.ToString(), HasSubstr("stele.toml:" + std::to_string(line) + ": " + key + ": "));
  return e.message;
}

TEST_F(UiRoutesTest, UiListenIsParsedAndValidated) {
  auto none = ParseConfig("", "stele.toml", "/tmp", ProcessEnv());
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->api.ui_listen.has_value());
  auto set =
      ParseConfig("[api]\nui_listen = \"0.0.0.0:5006\"\n", "stele.toml", "/tmp", ProcessEnv());
  ASSERT_TRUE(set.has_value()) << FormatErrors(set.error());
  ASSERT_TRUE(set->api.ui_listen.has_value());
  EXPECT_EQ(set->api.ui_listen->host, "0.0.0.0");
  EXPECT_EQ(set->api.ui_listen->port, 5006);
  auto v6 = ParseConfig("[api]\nui_listen = \"[::1]:0\"\n", "stele.toml", "/tmp", ProcessEnv());
  ASSERT_TRUE(v6.has_value()) << FormatErrors(v6.error());
  EXPECT_EQ(v6->api.ui_listen->host, "::1");

  EXPECT_THAT(OneConfigError("[api]\nui_listen = \"localhost\"\n", "api.ui_listen", 2),
              HasSubstr("HOST:PORT"));
  EXPECT_THAT(OneConfigError("[api]\n\nui_listen = \"127.0.0.1:70000\"\n", "api.ui_listen", 3),
              HasSubstr("HOST:PORT"));
  EXPECT_THAT(OneConfigError("[api]\nui_listen = 5006\n", "api.ui_listen", 2),
              HasSubstr("expected a string"));
  EXPECT_THAT(
      OneConfigError("[api]\nui = false\nui_listen = \"127.0.0.1:5006\"\n", "api.ui_listen", 3),
      HasSubstr("the web UI is off"));
  EXPECT_THAT(OneConfigError("[api]\nui_listen = \"127.0.0.1:5005\"\n", "api.ui_listen", 2),
              HasSubstr("must differ from `listen`"));
  EXPECT_THAT(OneConfigError("[api]\nlisten = \"127.0.0.1:7000\"\nui_listen = \"127.0.0.1:7000\"\n",
                             "api.ui_listen", 3),
              HasSubstr("must differ from `listen`"));
}

// With ui_listen the UI moves to the second address, which serves the API
// routes too under the same token; the API's address serves no UI.
TEST_F(UiRoutesTest, SeparateUiAddressServesTheUiAndTheSameApi) {
  Start("token = \"secret\"\nui_listen = \"127.0.0.1:0\"\n");
  ASSERT_GT(server_->ui_port(), 0);
  ASSERT_NE(server_->ui_port(), server_->port());
  httplib::Client ui("127.0.0.1", server_->ui_port());
  auto root = ui.Get("/");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->status, 302);
  EXPECT_EQ(root->get_header_value("Location"), "/ui/");
  auto index = ui.Get("/ui/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_THAT(index->body, HasSubstr("<script type=\"module\" src=\"app.js\">"));
  EXPECT_THAT(index->get_header_value("Content-Security-Policy"), HasSubstr("default-src 'self'"));
  EXPECT_EQ(index->get_header_value("X-Content-Type-Options"), "nosniff");
  auto nope = ui.Get("/ui/../v1/executions");
  ASSERT_TRUE(nope);
  EXPECT_NE(nope->status, 200);
  // The API on the UI's address: the same token rule.
  auto refused = ui.Get("/v1/executions");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  ui.set_bearer_token_auth("secret");
  auto listed = ui.Get("/v1/executions");
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->status, 200);
  EXPECT_THAT(listed->body, HasSubstr("\"executions\""));
  auto components = ui.Get("/v1/components");
  ASSERT_TRUE(components);
  EXPECT_EQ(components->status, 200);

  // The API's address: no UI (401 without the token like any path, else 404).
  for (const char* path : {"/", "/ui/", "/ui/app.js"}) {
    auto anonymous = client_->Get(path);
    ASSERT_TRUE(anonymous) << path;
    EXPECT_EQ(anonymous->status, 401) << path;
  }
  client_->set_bearer_token_auth("secret");
  for (const char* path : {"/", "/ui/", "/ui/app.js"}) {
    auto res = client_->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
  }
  auto api = client_->Get("/v1/executions");
  ASSERT_TRUE(api);
  EXPECT_EQ(api->status, 200);
}

TEST_F(UiRoutesTest, WithoutUiListenThereIsNoSecondListener) {
  Start("");
  EXPECT_EQ(server_->ui_port(), 0);
}

TEST_F(UiRoutesTest, UiAddressInUseIsAnErrorNamingTheKey) {
  // A plain listening socket: any process's listener counts (a second
  // stele server is E2eOpsTest.SecondServerOnAnAddressInUseFailsToStart).
  int blocker = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(blocker, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(blocker, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(blocker, 1), 0);
  socklen_t length = sizeof address;
  ASSERT_EQ(::getsockname(blocker, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const int taken = ntohs(address.sin_port);
  auto config = ParseConfig(
      "[api]\nlisten = \"127.0.0.1:0\"\nui_listen = \"127.0.0.1:" + std::to_string(taken) + "\"\n",
      "stele.toml", dir().string(), ProcessEnv());
  ASSERT_TRUE(config.has_value()) << FormatErrors(config.error());
  auto server = Server::Start(std::move(*config), {});
  ::close(blocker);
  ASSERT_FALSE(server.has_value());
  EXPECT_THAT(server.error(), HasSubstr("ui_listen"));
  EXPECT_THAT(server.error(), HasSubstr(std::to_string(taken)));
}

}  // namespace
}  // namespace stele::server
