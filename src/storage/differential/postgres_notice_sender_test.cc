// NoticeSender (storage/postgres/notice_sender.h): payload splitting, and
// that a sender whose server is unreachable drops its notices and stops
// promptly instead of blocking its pool. Delivery across pools is covered
// by PostgresPoolTest.NotifyWakesAWaiterOfAnotherPool.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/time.h"
#include "storage/postgres/notice_sender.h"

namespace stele::storage::postgres::internal {
namespace {

std::vector<Notice> ManyNotices(size_t n, size_t key_size) {
  std::vector<Notice> notices;
  const DateTime at = DateTimeFromMillis(1'700'000'000'000);
  for (size_t i = 0; i < n; ++i) {
    std::string key = "r:" + std::to_string(i) + "_";
    key.resize(key_size, 'k');
    notices.push_back(Notice{key, at, at});
  }
  return notices;
}

TEST(NoticeSenderTest, BatchesAreSplitBelowThePayloadLimitAndLoseNoNotice) {
  const std::vector<Notice> notices = ManyNotices(1000, 120);
  const std::vector<Statement> statements = NotifyStatements("chan", notices);
  ASSERT_GT(statements.size(), 1u);
  std::vector<Notice> decoded;
  for (const Statement& statement : statements) {
    EXPECT_EQ(statement.sql, "SELECT pg_notify($1, $2)");
    ASSERT_EQ(statement.params.values().size(), 2u);
    EXPECT_EQ(*statement.params.values()[0], "chan");
    const std::string& payload = *statement.params.values()[1];
    EXPECT_LT(payload.size(), 8000u);  // PostgreSQL refuses a payload of 8000 bytes or more
    for (Notice& notice : DecodeNotices(payload)) decoded.push_back(std::move(notice));
  }
  ASSERT_EQ(decoded.size(), notices.size());
  for (size_t i = 0; i < notices.size(); ++i) EXPECT_EQ(decoded[i].key, notices[i].key) << i;
  EXPECT_TRUE(NotifyStatements("chan", {}).empty());
}

TEST(NoticeSenderTest, AnUnreachableServerDropsNoticesAndStopIsPrompt) {
  // Port 1 on loopback: refused at once.
  NoticeSender sender("host=127.0.0.1 port=1 connect_timeout=2", "chan");
  sender.Enqueue(ManyNotices(10, 20));
  sender.Stop();                       // returns (a hang here is a ctest timeout)
  sender.Enqueue(ManyNotices(5, 20));  // after Stop: dropped, not queued
  const NoticeSender::Stats stats = sender.GetStats();
  EXPECT_EQ(stats.notices, 0u);
  EXPECT_EQ(stats.dropped, 15u);
}

}  // namespace
}  // namespace stele::storage::postgres::internal
