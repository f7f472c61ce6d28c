#include "base/log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace stele
