// The request a webhook guest reads and the response it returns
// (docs/guest_abi.md §6): the JSON shapes, and responses that must not
// reach the client (header injection, bad statuses, not JSON).
#include "runtime/webhook/webhook.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/json_codec.h"

namespace stele::runtime::webhook {
namespace {

using ::testing::HasSubstr;

TEST(WebhookRequestTest, ToJsonKeepsTheLastValueAndReplacesInvalidUtf8) {
  WebhookRequest r;
  r.method = "POST";
  r.path = "/orders/A-1";
  r.params = {{"id", "A-1"}};
  r.query = {{"a", "1"}, {"a", "2"}};
  r.headers = {{"x-y", "z"}};
  r.body = std::string("ok\xff", 3);
  auto json = core::ParseJson(r.ToJson());
  ASSERT_TRUE(json.has_value());
  EXPECT_EQ((*json)["params"]["id"], "A-1");
  EXPECT_EQ((*json)["query"]["a"], "2");
  EXPECT_EQ((*json)["headers"]["x-y"], "z");
  EXPECT_EQ((*json)["body"], "ok\xEF\xBF\xBD");
}

TEST(WebhookResponseTest, ParsesTextAndJsonBodies) {
  auto text = ParseWebhookResponse(R"({"status": 201, "headers": {"X-A": "b"}, "body": "hi"})");
  ASSERT_TRUE(text.has_value()) << text.error();
  EXPECT_EQ(text->status, 201);
  EXPECT_EQ(text->body, "hi");
  ASSERT_EQ(text->headers.size(), 1u);
  auto json = ParseWebhookResponse(R"({"status": 200, "body": {"a": [1]}})");
  ASSERT_TRUE(json.has_value());
  EXPECT_EQ(json->body, R"({"a":[1]})");
  ASSERT_EQ(json->headers.size(), 1u);
  EXPECT_EQ(json->headers[0].second, "application/json");
  auto typed = ParseWebhookResponse(R"({"status": 200, "headers": {"content-type": "x/y"},
                                        "body": [1]})");
  ASSERT_TRUE(typed.has_value());
  EXPECT_EQ(typed->headers.size(), 1u);
  auto bare = ParseWebhookResponse(R"({"status": 204})");
  ASSERT_TRUE(bare.has_value());
  EXPECT_TRUE(bare->body.empty());
}

TEST(WebhookResponseTest, RejectsWhatMustNotReachTheClient) {
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "not JSON"},
      {"[]", "not a JSON object"},
      {R"({"body": "x"})", "no integer `status`"},
      {R"({"status": "200"})", "no integer `status`"},
      {R"({"status": 99})", "not 200..599"},
      {R"({"status": 101})", "not 200..599"},  // no protocol switch
      {R"({"status": 600})", "not 200..599"},
      {R"({"status": 200, "headers": []})", "`headers` is not an object"},
      {R"({"status": 200, "headers": {"a": 1}})", "is not a string"},
      {R"({"status": 200, "headers": {"a": "b\r\nSet-Cookie: x"}})", "not a valid header"},
      {R"({"status": 200, "headers": {"a\nb": "c"}})", "not a valid header"},
      {R"({"status": 200, "headers": {"": "c"}})", "not a valid header"},
      {R"({"status": 200, "headers": {"a:b": "c"}})", "not a valid header"},
  };
  for (const auto& [text, message] : cases) {
    auto parsed = ParseWebhookResponse(text);
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_THAT(parsed.error(), HasSubstr(message)) << text;
  }
}

}  // namespace
}  // namespace stele::runtime::webhook
