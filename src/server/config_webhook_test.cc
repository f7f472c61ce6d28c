// [[webhook_wasm]] and [[webhook_js]] in stele.toml and their route patterns: defaults, every
// key, and malformed, reserved or conflicting routes (each error names
// the webhook, the key and the line of the file).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "server/config.h"
#include "server/webhook_routes.h"
#include "server/webhooks.h"

namespace stele::server {
namespace {

using ::testing::HasSubstr;

Result<ServerConfig, ConfigErrors> ParseWebhookToml(std::string_view text) {
  return ParseConfig(text, "stele.toml", "/etc/stele",
                     [](const std::string&) -> std::optional<std::string> { return "x"; });
}

std::string WebhookErrors(std::string_view text) {
  auto parsed = ParseWebhookToml(text);
  EXPECT_FALSE(parsed.has_value()) << "expected errors for:\n" << text;
  return parsed ? std::string() : FormatErrors(parsed.error());
}

std::string Hook(const std::string& name, const std::string& route) {
  return "[[webhook_wasm]]\nname = \"" + name + "\"\nlocation = \"hook.wasm\"\nroute = \"" + route +
         "\"\n";
}

TEST(ConfigWebhookTest, DefaultsAndEveryKey) {
  auto config = ParseWebhookToml(Hook("orders", "POST /orders/:id") +
                                 "[[webhook_wasm]]\n"
                                 "name = \"public\"\n"
                                 "location = \"/srv/p.wasm\"\n"
                                 "route = \"GET /orders/:id\"\n"
                                 "auth = \"none\"\n"
                                 "timeout = \"2s\"\n"
                                 "max_memory_mib = 16\n"
                                 "env = { MODE = \"test\" }\n");
  ASSERT_TRUE(config.has_value()) << FormatErrors(config.error());
  ASSERT_EQ(config->webhooks.size(), 2u);
  const WebhookConfig& a = config->webhooks[0];
  EXPECT_EQ(a.name, "orders");
  EXPECT_EQ(a.line, 1);
  EXPECT_EQ(a.location, "/etc/stele/hook.wasm");
  EXPECT_EQ(a.route, "POST /orders/:id");
  EXPECT_FALSE(a.auth_none);
  EXPECT_EQ(a.timeout, std::chrono::seconds(10));
  EXPECT_EQ(a.max_memory_mib, 64u);
  const WebhookConfig& b = config->webhooks[1];
  EXPECT_TRUE(b.auth_none);
  EXPECT_EQ(b.location, "/srv/p.wasm");
  EXPECT_EQ(b.timeout, std::chrono::seconds(2));
  EXPECT_EQ(b.max_memory_mib, 16u);
  EXPECT_EQ(b.env.at("MODE"), "test");
}

TEST(ConfigWebhookTest, MalformedRoutesAreRejectedWithTheWebhookAndLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"POST orders", "must start with '/'"},
      {"/orders", "expected \"METHOD /path\""},
      {"FETCH /orders", "method `FETCH`"},
      {"post /orders", "method `post`"},
      {"POST /orders//x", "empty path segment"},
      {"POST /orders/", "empty path segment"},
      {"POST /", "empty path segment"},
      {"POST /:id", "first segment must be a literal"},
      {"POST /orders/:id/:id", "appears twice"},
      {"POST /orders/:1d", "a param is `:name`"},
      {"POST /orders/a b", "[A-Za-z0-9._~-]"},
      {"POST /orders/%2e%2e", "[A-Za-z0-9._~-]"},
      {"POST /a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q", "more than 16"},
  };
  for (const auto& [route, message] : cases) {
    std::string errors = WebhookErrors("data_dir = \"/d\"\n" + Hook("h", route));
    EXPECT_THAT(errors, HasSubstr("stele.toml:5")) << route;  // the route line
    EXPECT_THAT(errors, HasSubstr("webhook_wasm[0].route")) << route;
    EXPECT_THAT(errors, HasSubstr("webhook `h`")) << route;
    EXPECT_THAT(errors, HasSubstr(message)) << route << ": " << errors;
  }
}

TEST(ConfigWebhookTest, RoutesOnTheServersOwnPathsAreRejected) {
  for (const std::string route :
       {"GET /v1/executions", "POST /v1", "POST /v2/orders", "GET /ui/index.html", "GET /ui",
        "GET /metrics", "GET /healthz"}) {
    EXPECT_THAT(WebhookErrors(Hook("h", route)), HasSubstr("is the server's")) << route;
  }
  // Only the whole first segment is reserved.
  for (const std::string route : {"POST /v1x/a", "GET /uix", "GET /metrics-hook", "GET /vendor"}) {
    auto config = ParseWebhookToml(Hook("h", route));
    EXPECT_TRUE(config.has_value()) << route << ": " << FormatErrors(config.error());
  }
}

TEST(ConfigWebhookTest, DuplicateRoutesNameBothWebhooks) {
  std::string errors =
      WebhookErrors(Hook("a", "POST /orders/:id") + Hook("b", "POST /orders/:order"));
  EXPECT_THAT(errors, HasSubstr("stele.toml:5: webhook_wasm.route: webhook `b`: route `POST "
                                "/orders/:order` matches the same requests as `POST /orders/:id` "
                                "of webhook `a` (line 1)"));
  EXPECT_THAT(WebhookErrors(Hook("a", "GET /x/y") + Hook("b", "GET /x/y")),
              HasSubstr("matches the same requests"));
  // Another method, another shape, or a literal beside a param: fine.
  auto config = ParseWebhookToml(Hook("a", "POST /orders/:id") + Hook("b", "GET /orders/:id") +
                                 Hook("c", "POST /orders/new") + Hook("d", "POST /orders/:id/x"));
  EXPECT_TRUE(config.has_value()) << FormatErrors(config.error());
}

TEST(ConfigWebhookTest, HostileAndMissingKeys) {
  EXPECT_THAT(WebhookErrors("[[webhook_wasm]]\nname = \"h\"\n"),
              HasSubstr("webhook_wasm[0].route: missing"));
  EXPECT_THAT(WebhookErrors("[[webhook_wasm]]\nname = \"h\"\n"),
              HasSubstr("webhook_wasm[0].location: missing"));
  EXPECT_THAT(WebhookErrors(Hook("../x", "POST /x")), HasSubstr("invalid webhook name"));
  EXPECT_THAT(WebhookErrors(Hook("h", "POST /x") + "auth = \"maybe\"\n"),
              HasSubstr("expected \"api\" (the [api] token) or \"none\""));
  EXPECT_THAT(WebhookErrors(Hook("h", "POST /x") + "timeout = \"10m\"\n"), HasSubstr("at most 5m"));
  EXPECT_THAT(WebhookErrors(Hook("h", "POST /x") + "max_memory_mib = 0\n"),
              HasSubstr("max_memory_mib"));
  EXPECT_THAT(WebhookErrors(Hook("h", "POST /x") + "functions = []\n"), HasSubstr("unknown key"));
  EXPECT_THAT(WebhookErrors("webhook_wasm = 3\n"), HasSubstr("expected an array of tables"));
  // A name is unique across webhooks and components.
  EXPECT_THAT(WebhookErrors(Hook("h", "POST /x") + Hook("h", "POST /y")),
              HasSubstr("the name is taken (by the table at line 1)"));
  EXPECT_THAT(WebhookErrors("[[activity_stub]]\nname = \"h\"\n[[activity_stub.functions]]\n"
                            "ffqn = \"a:b/c.d\"\n" +
                            Hook("h", "POST /x")),
              HasSubstr("the name is taken"));
}

TEST(ConfigWebhookTest, AMissingGuestFileIsAnErrorAtLoad) {
  auto config = ParseWebhookToml(Hook("h", "POST /x"));
  ASSERT_TRUE(config.has_value());
  auto loaded = LoadWebhooks(*config, "stele.toml");
  ASSERT_FALSE(loaded.has_value());
  EXPECT_THAT(FormatErrors(loaded.error()),
              HasSubstr("stele.toml:1: webhook_wasm.location: webhook `h`: no such file "
                        "`/etc/stele/hook.wasm`"));
}

std::string JsHook(const std::string& name, const std::string& route,
                   const std::string& location = "hook.js") {
  return "[[webhook_js]]\nname = \"" + name + "\"\nlocation = \"" + location + "\"\nroute = \"" +
         route + "\"\n";
}

TEST(ConfigWebhookTest, JsWebhooksTakeTheSameKeys) {
  auto config =
      ParseWebhookToml(Hook("orders", "POST /orders/:id") + JsHook("public", "GET /orders/:id") +
                       "auth = \"none\"\n"
                       "timeout = \"2s\"\n"
                       "max_memory_mib = 16\n"
                       "env = { MODE = \"test\" }\n");
  ASSERT_TRUE(config.has_value()) << FormatErrors(config.error());
  ASSERT_EQ(config->webhooks.size(), 2u);
  EXPECT_FALSE(config->webhooks[0].js);
  const WebhookConfig& b = config->webhooks[1];
  EXPECT_TRUE(b.js);
  EXPECT_EQ(b.line, 5);
  EXPECT_EQ(b.location, "/etc/stele/hook.js");
  EXPECT_EQ(b.route, "GET /orders/:id");
  EXPECT_TRUE(b.auth_none);
  EXPECT_EQ(b.timeout, std::chrono::seconds(2));
  EXPECT_EQ(b.max_memory_mib, 16u);
  EXPECT_EQ(b.env.at("MODE"), "test");
}

TEST(ConfigWebhookTest, JsWebhooksShareNamesAndRoutesWithWasmOnes) {
  EXPECT_THAT(WebhookErrors(Hook("a", "POST /orders/:id") + JsHook("b", "POST /orders/:order")),
              HasSubstr("stele.toml:5: webhook_js.route: webhook `b`: route `POST "
                        "/orders/:order` matches the same requests as `POST /orders/:id` "
                        "of webhook `a` (line 1)"));
  EXPECT_THAT(WebhookErrors(Hook("h", "POST /x") + JsHook("h", "POST /y")),
              HasSubstr("webhook_js[0].name: webhook `h`: the name is taken"));
  EXPECT_THAT(WebhookErrors("[[webhook_js]]\nname = \"h\"\n"),
              HasSubstr("webhook_js[0].location: missing (the path of the webhook's .js file)"));
  EXPECT_THAT(WebhookErrors(JsHook("h", "POST /v1/x")), HasSubstr("webhook_js[0].route"));
  // A V8 heap needs a few MiB.
  EXPECT_THAT(WebhookErrors(JsHook("h", "POST /x") + "max_memory_mib = 4\n"),
              HasSubstr("webhook_js[0].max_memory_mib"));
  EXPECT_THAT(WebhookErrors("webhook_js = \"x\"\n"), HasSubstr("expected an array of tables"));
  EXPECT_THAT(WebhookErrors(JsHook("h", "POST /x") + "fetch = true\n"), HasSubstr("unknown key"));
}

#if STELE_SERVER_HAVE_JS
TEST(ConfigWebhookTest, JsWebhookLoadErrorsNameTheFileAndLine) {
  const std::string dir = ::testing::TempDir();
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  const std::pair<std::string, std::string> cases[] = {
      {write("syntax.js", "\nexport function webhook() {\n  return {;\n}\n"), "syntax.js:3:"},
      {write("none.js", "export const functions = {};\n"), "must export `webhook`, a function"},
      {write("top.js", "throw new Error('boom');\nexport function webhook() {}\n"), "boom"},
      {dir + "/missing.js", "webhook_js.location: webhook `h`: no such file"},
  };
  for (const auto& [location, message] : cases) {
    auto config = ParseWebhookToml(JsHook("h", "POST /x", location));
    ASSERT_TRUE(config.has_value()) << FormatErrors(config.error());
    auto loaded = LoadWebhooks(*config, "stele.toml");
    ASSERT_FALSE(loaded.has_value()) << location;
    const std::string errors = FormatErrors(loaded.error());
    EXPECT_THAT(errors, HasSubstr("stele.toml:1: webhook_js.location: webhook `h`")) << errors;
    EXPECT_THAT(errors, HasSubstr(message)) << errors;
  }
  auto config = ParseWebhookToml(JsHook(
      "h", "POST /x", write("ok.js", "export const webhook = async () => ({status: 204});")));
  ASSERT_TRUE(config.has_value());
  auto loaded = LoadWebhooks(*config, "stele.toml");
  ASSERT_TRUE(loaded.has_value()) << FormatErrors(loaded.error());
  EXPECT_EQ((*loaded)[0].component_id.component_type, core::ComponentType::kWebhookEndpoint);
}
#endif

RoutePattern Route(std::string_view text) {
  auto parsed = ParseRoutePattern(text);
  EXPECT_TRUE(parsed.has_value()) << text;
  return parsed.value_or(RoutePattern{});
}

TEST(WebhookRoutesTest, MatchPrefersLiteralsAndTellsWrongMethodFromNoRoute) {
  std::vector<RoutePattern> routes = {Route("POST /orders/:id"), Route("POST /orders/new"),
                                      Route("GET /orders/:id/items/:item")};
  bool path_matched = false;
  auto m = MatchRoute(routes, "POST", "/orders/A-1", &path_matched);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->index, 0u);
  EXPECT_EQ(m->params, (std::vector<std::pair<std::string, std::string>>{{"id", "A-1"}}));
  m = MatchRoute(routes, "POST", "/orders/new");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->index, 1u);
  EXPECT_TRUE(m->params.empty());
  m = MatchRoute(routes, "GET", "/orders/7/items/3");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->params,
            (std::vector<std::pair<std::string, std::string>>{{"id", "7"}, {"item", "3"}}));
  EXPECT_FALSE(MatchRoute(routes, "GET", "/orders/7", &path_matched));
  EXPECT_TRUE(path_matched);  // 405
  EXPECT_FALSE(MatchRoute(routes, "POST", "/orders/7/x", &path_matched));
  EXPECT_FALSE(path_matched);  // 404
  EXPECT_FALSE(MatchRoute(routes, "POST", "/orders/", &path_matched));
  EXPECT_FALSE(path_matched);
  EXPECT_FALSE(MatchRoute(routes, "POST", "/orders", &path_matched));
  EXPECT_FALSE(path_matched);
}

}  // namespace
}  // namespace stele::server
