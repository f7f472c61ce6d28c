// [[cron]] in stele.toml: defaults, every key, TOML params as JSON, and
// malformed or hostile entries (each error names the key and the line).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/config.h"

namespace stele::server {
namespace {

using ::testing::HasSubstr;

Result<ServerConfig, ConfigErrors> ParseCron(std::string_view text) {
  return ParseConfig(text, "stele.toml", "/etc/stele",
                     [](const std::string&) -> std::optional<std::string> { return "x"; });
}

std::string CronErrors(std::string_view text) {
  auto parsed = ParseCron(text);
  EXPECT_FALSE(parsed.has_value()) << "expected errors for:\n" << text;
  return parsed ? std::string() : FormatErrors(parsed.error());
}

TEST(ConfigCronTest, DefaultsAndEveryKey) {
  auto config = ParseCron(
      "[[cron]]\n"
      "name = \"minimal\"\n"
      "schedule = \"0 * * * * *\"\n"
      "ffqn = \"demo:a/b.c\"\n"
      "\n"
      "[[cron]]\n"
      "name = \"full\"\n"
      "schedule = \"@daily\"\n"
      "time_zone = \"Europe/Berlin\"\n"
      "ffqn = \"demo:a/b.d\"\n"
      "params = [\"x\", 2, 1.5, true, [1], { k = \"v\" }]\n"
      "overlap = \"buffer_one\"\n"
      "catch_up = \"all\"\n"
      "catch_up_limit = 7\n");
  ASSERT_TRUE(config.has_value()) << FormatErrors(config.error());
  ASSERT_EQ(config->cron.size(), 2u);
  const CronConfig& a = config->cron[0];
  EXPECT_EQ(a.name, "minimal");
  EXPECT_EQ(a.line, 1);
  EXPECT_EQ(a.time_zone, "UTC");
  EXPECT_EQ(a.params, core::Json::array());
  EXPECT_EQ(a.overlap, "skip");
  EXPECT_EQ(a.catch_up, "last");
  EXPECT_EQ(a.catch_up_limit, 10u);
  const CronConfig& b = config->cron[1];
  EXPECT_EQ(b.schedule, "@daily");
  EXPECT_EQ(b.time_zone, "Europe/Berlin");
  EXPECT_EQ(b.params, core::Json::parse(R"(["x", 2, 1.5, true, [1], {"k": "v"}])"));
  EXPECT_EQ(b.overlap, "buffer_one");
  EXPECT_EQ(b.catch_up, "all");
  EXPECT_EQ(b.catch_up_limit, 7u);
}

TEST(ConfigCronTest, MalformedEntriesNameKeyAndLine) {
  const std::string head = "[[cron]]\nname = \"n\"\nffqn = \"demo:a/b.c\"\n";
  EXPECT_THAT(CronErrors(head + "schedule = \"61 * * * * *\"\n"),
              HasSubstr("stele.toml:4: cron[0].schedule: cron expression \"61 * * * * *\": "
                        "second: 61 is out of range 0-59"));
  EXPECT_THAT(CronErrors(head + "schedule = \"* * * * *\"\n"), HasSubstr("expected 6 fields"));
  EXPECT_THAT(CronErrors(head + "schedule = \"0 * * * * *\"\ntime_zone = \"Mars/Base\"\n"),
              HasSubstr("cron[0].schedule: unknown time zone \"Mars/Base\""));
  EXPECT_THAT(CronErrors(head + "schedule = \"0 * * * * *\"\noverlap = \"sometimes\"\n"),
              HasSubstr("stele.toml:5: cron[0].overlap: expected \"skip\""));
  EXPECT_THAT(CronErrors(head + "schedule = \"0 * * * * *\"\ncatch_up = \"most\"\n"),
              HasSubstr("cron[0].catch_up"));
  EXPECT_THAT(CronErrors(head + "schedule = \"0 * * * * *\"\ncatch_up_limit = 0\n"),
              HasSubstr("cron[0].catch_up_limit: must be between 1 and 1000"));
  EXPECT_THAT(CronErrors(head + "schedule = \"0 * * * * *\"\nparams = \"[1]\"\n"),
              HasSubstr("cron[0].params: expected an array"));
  EXPECT_THAT(CronErrors(head + "schedule = \"0 * * * * *\"\nparams = [1979-05-27]\n"),
              HasSubstr("cron[0].params"));
  EXPECT_THAT(CronErrors(head + "schedule = \"0 * * * * *\"\nfunction = \"x\"\n"),
              HasSubstr("cron[0].function: unknown key"));
  EXPECT_THAT(CronErrors(head), HasSubstr("stele.toml:1: cron[0].schedule: missing"));
  EXPECT_THAT(CronErrors("[[cron]]\nschedule = \"0 * * * * *\"\nffqn = \"demo:a/b.c\"\n"),
              HasSubstr("cron[0].name: missing"));
  EXPECT_THAT(CronErrors("[[cron]]\nname = \"../etc\"\nschedule = \"0 * * * * *\"\n"
                         "ffqn = \"demo:a/b.c\"\n"),
              HasSubstr("is not a schedule name"));
  EXPECT_THAT(
      CronErrors("[[cron]]\nname = \"n\"\nschedule = \"0 * * * * *\"\nffqn = \"demo:a/b.c\"\n"
                 "[[cron]]\nname = \"n\"\nschedule = \"1 * * * * *\"\nffqn = \"demo:a/b.c\"\n"),
      HasSubstr("stele.toml:6: cron[1].name: duplicate schedule name `n` (first at line 1)"));
  EXPECT_THAT(CronErrors("cron = \"nightly\"\n"), HasSubstr("write [[cron]]"));
  EXPECT_THAT(CronErrors("cron = [1]\n"), HasSubstr("cron[0]: expected a table"));
}

}  // namespace
}  // namespace stele::server
