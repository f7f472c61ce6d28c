// The web UI's static serving (ui_routes.cc): a real Server on 127.0.0.1
// with no components, driven by httplib::Client with hostile paths.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>

#include "server/config.h"
#include "server/server.h"

namespace stele::server {
namespace {

using ::testing::HasSubstr;

class UiRoutesTest : public ::testing::Test {
 protected:
  void Start(const std::string& api_extra) {
    dir_ = std::filesystem::temp_directory_path() /
           ("stele_ui_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::string toml = "[api]\nlisten = \"127.0.0.1:0\"\n" + api_extra;
    auto config = ParseConfig(toml, "stele.toml", dir_.string(), ProcessEnv());
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
    std::filesystem::remove_all(dir_);
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
  for (const char* path : {"/ui/nope.js", "/ui/../stele.toml", "/ui/%2e%2e/%2e%2e/etc/passwd",
                           "/ui//etc/passwd", "/ui/./app.js", "/ui/app.js%00.png", "/ui/APP.JS",
                           "/ui/embed_ui.cmake", "/ui/app.js/"}) {
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

}  // namespace
}  // namespace stele::server
