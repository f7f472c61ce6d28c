#include "base/log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "base/log_config.h"

namespace stele {
namespace {

// Restores the process-wide level after each test.
class LogTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = GetLogLevel(); }
  void TearDown() override { SetLogLevel(saved_); }

 private:
  LogLevel saved_ = LogLevel::kWarn;
};

TEST_F(LogTest, WritesOneFormattedLine) {
  SetLogLevel(LogLevel::kInfo);
  testing::internal::CaptureStderr();
  const int id = 17;
  STELE_LOG(kWarn, "skipping " << id << ": " << std::string("locked"));
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_THAT(out, testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z WARN "
                                         "log_test\\.cc:[0-9]+ skipping 17: locked\n"));
}

TEST_F(LogTest, DisabledLevelsDoNotBuildTheMessage) {
  SetLogLevel(LogLevel::kError);
  int evaluations = 0;
  auto count = [&evaluations] { return ++evaluations; };
  testing::internal::CaptureStderr();
  STELE_LOG(kWarn, "not built " << count());
  STELE_LOG(kTrace, "not built " << count());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(evaluations, 0);

  testing::internal::CaptureStderr();
  STELE_LOG(kError, "built " << count());
  EXPECT_NE(testing::internal::GetCapturedStderr().find("ERROR log_test.cc"), std::string::npos);
  EXPECT_EQ(evaluations, 1);
}

TEST_F(LogTest, LevelsAreOrdered) {
  SetLogLevel(LogLevel::kTrace);
  EXPECT_EQ(GetLogLevel(), LogLevel::kTrace);
  testing::internal::CaptureStderr();
  STELE_LOG(kTrace, "t");
  STELE_LOG(kDebug, "d");
  STELE_LOG(kInfo, "i");
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find(" TRACE "), std::string::npos);
  EXPECT_NE(out.find(" DEBUG "), std::string::npos);
  EXPECT_NE(out.find(" INFO "), std::string::npos);
}

TEST_F(LogTest, LogMessageFiltersAndStripsDirectories) {
  SetLogLevel(LogLevel::kInfo);
  testing::internal::CaptureStderr();
  LogMessage(LogLevel::kDebug, "/a/b/hidden.cc", 1, "hidden");
  LogMessage(LogLevel::kInfo, "/a/b/shown.cc", 2, "shown");
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out.find("hidden"), std::string::npos);
  EXPECT_NE(out.find(" INFO shown.cc:2 shown\n"), std::string::npos);
}

TEST_F(LogTest, ParsesLevelNamesCaseInsensitively) {
  EXPECT_EQ(ParseLogLevel("trace"), LogLevel::kTrace);
  EXPECT_EQ(ParseLogLevel("Debug"), LogLevel::kDebug);
  EXPECT_EQ(ParseLogLevel("INFO"), LogLevel::kInfo);
  EXPECT_EQ(ParseLogLevel("warn"), LogLevel::kWarn);
  EXPECT_EQ(ParseLogLevel("error"), LogLevel::kError);
  for (const char* bad : {"verbose", "warning", "", " info", "3"}) {
    EXPECT_EQ(ParseLogLevel(bad), std::nullopt) << bad;
  }
}

// An invalid STELE_LOG is an error naming the accepted levels, not
// silently the default (docs/config.md, "Logging").
TEST_F(LogTest, EnvironmentLevelIsCheckedNotIgnored) {
  const char* saved = std::getenv("STELE_LOG");
  const std::string saved_value = saved != nullptr ? saved : "";
  ::setenv("STELE_LOG", "verbose", 1);
  auto bad = LogLevelFromEnvironment();
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error(),
            "STELE_LOG=`verbose` is not a log level; use one of trace, debug, info, warn, error");
  ::setenv("STELE_LOG", "Debug", 1);
  EXPECT_EQ(LogLevelFromEnvironment().value(), LogLevel::kDebug);
  ::setenv("STELE_LOG", "", 1);
  EXPECT_EQ(LogLevelFromEnvironment().value(), std::nullopt);
  ::unsetenv("STELE_LOG");
  EXPECT_EQ(LogLevelFromEnvironment().value(), std::nullopt);
  if (saved != nullptr) ::setenv("STELE_LOG", saved_value.c_str(), 1);
}

// Lines without a source position (a workflow's own log) show the label
// alone, not "workflow:0".
TEST_F(LogTest, LineZeroPrintsTheLabelAlone) {
  SetLogLevel(LogLevel::kInfo);
  testing::internal::CaptureStderr();
  LogMessage(LogLevel::kInfo, "workflow", 0, "E_1: hello");
  EXPECT_THAT(testing::internal::GetCapturedStderr(),
              testing::EndsWith(" INFO workflow E_1: hello\n"));
}

}  // namespace
}  // namespace stele
