// `stele db check` (DbMain): argument handling, exit codes, and the check of
// a real SQLite file given directly or through a config, before and after a
// row is corrupted with raw SQL.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "server/server_main.h"
#include "storage/sqlite/sqlite_pool.h"
#include "storage/sqlite/sqlite_test_util.h"

namespace stele::server {
namespace {

using ::testing::HasSubstr;

int Main(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return DbMain(static_cast<int>(argv.size()), argv.data());
}

class DbMainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("stele-db-main-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string db_path() const { return (dir_ / "stele.sqlite").string(); }

  // A store with `n` created executions, closed.
  std::vector<std::string> MakeStore(int n) {
    storage::sqlite::SqliteOptions options;
    options.path = db_path();
    auto pool = storage::sqlite::SqlitePool::Open(options);
    EXPECT_TRUE(pool);
    auto conn = (*pool)->Connection();
    EXPECT_TRUE(conn);
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      auto id = core::ExecutionId::Generate();
      EXPECT_TRUE(
          (*conn)->Create(storage::sqlite::testing::NewCreate(id, storage::sqlite::testing::T(i))));
      ids.push_back(id.ToString());
    }
    conn->reset();
    (*pool)->Close();
    return ids;
  }
  void RawExec(const std::string& sql) {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &raw), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(raw);
  }
  std::string WriteConfig(const std::string& text) {
    auto path = (dir_ / "stele.toml").string();
    std::ofstream(path) << text;
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(DbMainTest, UsageErrors) {
  EXPECT_EQ(Main({"db"}), 2);
  EXPECT_EQ(Main({"db", "repair"}), 2);
  EXPECT_EQ(Main({"db", "check", "--bogus"}), 2);
  EXPECT_EQ(Main({"db", "check", "--sqlite"}), 2);
  EXPECT_EQ(Main({"db", "check", "--sqlite="}), 2);
  EXPECT_EQ(Main({"db", "check", "--config"}), 2);
  EXPECT_EQ(Main({"db", "check", "--postgres"}), 2);
  EXPECT_EQ(Main({"db", "check", "--sqlite", "a", "--postgres", "b"}), 2);
  EXPECT_EQ(Main({"db", "check", "--sqlite", "a", "--config", "b"}), 2);
  EXPECT_EQ(Main({"db", "check", "--sqlite", "a", "--max-findings", "x"}), 2);
  EXPECT_EQ(Main({"db", "check", "--sqlite", "a", "--max-findings=0"}), 2);
  EXPECT_EQ(Main({"db", "check", "--sqlite", "a", "--max-findings", "-3"}), 2);
  EXPECT_EQ(Main({"db", "check", "--sqlite", "a", "--max-findings"}), 2);
  EXPECT_EQ(Main({"db", "check", "--sqlitex", "a"}), 2);
  EXPECT_EQ(Main({"db", "--help"}), 0);
  EXPECT_EQ(Main({"db", "check", "--help"}), 0);
}

TEST_F(DbMainTest, BadConfigIsAUsageError) {
  EXPECT_EQ(Main({"db", "check", "--config", (dir_ / "missing.toml").string()}), 2);
  EXPECT_EQ(Main({"db", "check", "--config", WriteConfig("[database]\nsqlite = 12\n")}), 2);
  EXPECT_EQ(Main({"db", "check", "--config", WriteConfig("this is not toml = = [")}), 2);
}

TEST_F(DbMainTest, MissingDatabaseIsUnavailable) {
  EXPECT_EQ(Main({"db", "check", "--sqlite", (dir_ / "none.sqlite").string()}), 3);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "none.sqlite"));     // not created
  EXPECT_EQ(Main({"db", "check", "--sqlite", dir_.string()}), 3);  // a folder
  std::ofstream(dir_ / "garbage.sqlite") << std::string(8192, 'x');
  EXPECT_EQ(Main({"db", "check", "--sqlite", (dir_ / "garbage.sqlite").string()}), 3);
#if STELE_SERVER_HAVE_POSTGRES
  EXPECT_EQ(Main({"db", "check", "--postgres",
                  "host=127.0.0.1 port=1 dbname=none user=none connect_timeout=2"}),
            3);
#endif
}

TEST_F(DbMainTest, CleanStoreExitsZero) {
  MakeStore(3);
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(Main({"db", "check", "--sqlite", db_path()}), 0);
  EXPECT_THAT(::testing::internal::GetCapturedStdout(),
              HasSubstr("checked 3 execution(s), 3 event(s), 0 response(s): 0 finding(s)"));
  // The same database through a config file.
  const std::string config = WriteConfig("[database]\nsqlite = \"" + db_path() + "\"\n");
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(Main({"db", "check", "--config=" + config}), 0);
  EXPECT_THAT(::testing::internal::GetCapturedStdout(), HasSubstr("0 finding(s)"));
}

TEST_F(DbMainTest, CorruptedStoreExitsOneAndNamesTheExecution) {
  auto ids = MakeStore(3);
  RawExec(
      "UPDATE t_state SET pending_expires_finished = pending_expires_finished + 7 "
      "WHERE execution_id = '" +
      ids[1] + "'");
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(Main({"db", "check", "--sqlite", db_path()}), 1);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_THAT(out, HasSubstr(ids[1] + ": stored pending state"));
  EXPECT_THAT(out, HasSubstr("1 finding(s)"));
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(Main({"db", "check", "--quiet", "--sqlite", db_path()}), 1);
  const std::string quiet = ::testing::internal::GetCapturedStdout();
  EXPECT_THAT(quiet, ::testing::Not(HasSubstr(ids[1])));
  EXPECT_THAT(quiet, HasSubstr("1 finding(s)"));
}

}  // namespace
}  // namespace stele::server
