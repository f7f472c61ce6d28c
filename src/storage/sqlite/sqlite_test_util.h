// Helpers shared by the SQLite backend's unit tests: a scratch directory, a
// fresh pool in it, and small builders for requests.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/component_id.h"
#include "core/function_fqn.h"
#include "storage/requests.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele::storage::sqlite::testing {

inline DateTime T(int64_t seconds) {
  return DateTimeFromMicros(1'750'000'000'000'000 + seconds * 1'000'000);
}

inline const core::FunctionFqn& TestFfqn() {
  static const core::FunctionFqn* ffqn =
      new core::FunctionFqn(core::FunctionFqn::Parse("test:pkg/ifc.fn").value());
  return *ffqn;
}

inline CreateRequest NewCreate(const core::ExecutionId& id, DateTime at,
                               std::optional<DateTime> scheduled_at = std::nullopt) {
  return CreateRequest{at,
                       id,
                       TestFfqn(),
                       core::Json::array({1, "two"}),
                       std::nullopt,
                       scheduled_at.value_or(at),
                       core::ComponentId::DummyActivity(),
                       {},
                       std::nullopt};
}

inline AppendRequest FinishedOk(DateTime at, int value = 1) {
  return AppendRequest{at, core::Finished{core::ReturnValueOk{core::Json(value)}, std::nullopt}};
}

// A DelayRequest of `delay` in its own join set, expiring in an hour: a
// delay's response is admitted only once it was requested.
inline AppendRequest DelayRequested(DateTime at, const core::DelayId& delay) {
  const DateTime expires = at + std::chrono::hours(1);
  return AppendRequest{
      at, core::HistoryEventRequest{core::HistoryJoinSetRequest{
              delay.join_set_id(),
              core::DelayRequest{delay, expires, core::HistoryEventScheduleAt::At(expires)}}}};
}

// `child` of `parent` in `js`, created with its request (children exist only
// requested by their parent's write).
inline Result<Version, DbErrorWrite> CreateChild(DbConnection& db, const core::ExecutionId& parent,
                                                 Version version, const core::JoinSetId& js,
                                                 const core::ExecutionIdDerived& child,
                                                 DateTime at) {
  CreateRequest req = NewCreate(child, at);
  req.parent = std::make_pair(parent, js);
  return db.AppendBatchCreateNewExecution(
      at,
      {AppendRequest{at, core::HistoryEventRequest{core::HistoryJoinSetRequest{
                             js, core::ChildExecutionRequest{child, req.ffqn, req.params}}}}},
      parent, version, {req});
}

// A one-shot gate: Wait() blocks until Open().
class Gate {
 public:
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Polls `condition` until it holds or 10 s pass.
template <class F>
bool Eventually(F condition) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return condition();
}

class SqliteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::temp_directory_path() /
           ("stele-sqlite-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    pool_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string path() const { return (dir_ / "stele.sqlite").string(); }
  SqliteOptions Options() const {
    SqliteOptions options{.path = path(), .synchronous = SqliteOptions::Synchronous::kNormal};
    return options;
  }
  SqlitePool& Open(SqliteOptions options) {
    auto pool = SqlitePool::Open(options);
    EXPECT_TRUE(pool) << (pool ? "" : pool.error().ToString());
    pool_ = std::move(*pool);
    db_ = pool_->ConnectionTest().value();
    return *pool_;
  }
  SqlitePool& Open() { return Open(Options()); }
  void ClosePool() {
    db_.reset();
    if (pool_) pool_->Close();
    pool_.reset();
  }

  // Runs `sql` on a separate raw connection (outside the pool).
  void RawExec(const std::string& sql) {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path().c_str(), &raw), SQLITE_OK);
    char* error = nullptr;
    int rc = sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(raw);
  }
  // Turns the (closed) store back into the schema V8 that builds before
  // integer execution keys left (schema.cc, kMigrationV9), rows included,
  // so migration tests can start from an older store. `variant` (gone in
  // V9) is exact for Created and history events and `other` elsewhere:
  // no V8 migration after it reads those.
  void RawDowngradeToV8() {
    RawExec(R"sql(
ALTER TABLE t_execution_log RENAME TO t_execution_log_v9;
CREATE TABLE t_execution_log (
  execution_id TEXT NOT NULL,
  version INTEGER NOT NULL CHECK (version >= 0),
  created_at INTEGER NOT NULL,
  json_value ANY NOT NULL CHECK (typeof(json_value) IN ('text', 'blob')),
  variant TEXT NOT NULL,
  join_set_id TEXT,
  history_event_type TEXT,
  PRIMARY KEY (execution_id, version)
) STRICT, WITHOUT ROWID;
INSERT INTO t_execution_log
  SELECT s.execution_id, l.version, l.created_at, l.json_value,
         CASE WHEN l.version = 0 THEN 'created'
              WHEN l.history_event_type IS NOT NULL THEN 'history_event' ELSE 'other' END,
         l.join_set_id, l.history_event_type
  FROM t_execution_log_v9 l JOIN t_state s ON s.exec_key = l.exec_key;
DROP TABLE t_execution_log_v9;
CREATE INDEX idx_t_execution_log_join_next
  ON t_execution_log (execution_id, join_set_id, history_event_type)
  WHERE history_event_type = 'join_next';
ALTER TABLE t_join_set_response RENAME TO t_join_set_response_v9;
CREATE TABLE t_join_set_response (
  execution_id TEXT NOT NULL,
  idx INTEGER NOT NULL CHECK (idx >= 0),
  created_at INTEGER NOT NULL,
  join_set_id TEXT NOT NULL,
  delay_id TEXT,
  delay_success INTEGER,
  child_execution_id TEXT,
  finished_version INTEGER CHECK (finished_version >= 0),
  child_result TEXT,
  message_id TEXT,
  message_body TEXT,
  PRIMARY KEY (execution_id, idx)
) STRICT, WITHOUT ROWID;
INSERT INTO t_join_set_response
  SELECT s.execution_id, r.idx, r.created_at, r.join_set_id, r.delay_id, r.delay_success,
         r.child_execution_id, r.finished_version, r.child_result, r.message_id, r.message_body
  FROM t_join_set_response_v9 r JOIN t_state s ON s.exec_key = r.exec_key;
DROP TABLE t_join_set_response_v9;
CREATE UNIQUE INDEX idx_t_join_set_response_child
  ON t_join_set_response (child_execution_id) WHERE child_execution_id IS NOT NULL;
CREATE UNIQUE INDEX idx_t_join_set_response_delay
  ON t_join_set_response (delay_id) WHERE delay_id IS NOT NULL;
CREATE UNIQUE INDEX idx_t_join_set_response_message
  ON t_join_set_response (execution_id, message_id) WHERE message_id IS NOT NULL;
ALTER TABLE t_backtrace RENAME TO t_backtrace_v9;
CREATE TABLE t_backtrace (
  execution_id TEXT NOT NULL,
  component_id TEXT NOT NULL,
  version_min_including INTEGER NOT NULL CHECK (version_min_including >= 0),
  version_max_excluding INTEGER NOT NULL CHECK (version_max_excluding >= 0),
  wasm_backtrace TEXT NOT NULL,
  PRIMARY KEY (execution_id, version_min_including, version_max_excluding)
) STRICT;
INSERT INTO t_backtrace
  SELECT s.execution_id, t.component_id, b.version_min_including, b.version_max_excluding,
         t.wasm_backtrace
  FROM t_backtrace_v9 b JOIN t_state s ON s.exec_key = b.exec_key
  JOIN t_backtrace_text t ON t.id = b.text_id ORDER BY b.rowid;
DROP TABLE t_backtrace_v9;
DROP TABLE t_backtrace_text;
DROP TABLE t_sequence;
ALTER TABLE t_state DROP COLUMN exec_key;
DELETE FROM t_metadata WHERE schema_version > 8;
)sql");
  }
  int64_t RawCount(const std::string& sql) {
    sqlite3* raw = nullptr;
    EXPECT_EQ(sqlite3_open(path().c_str(), &raw), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(raw, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK);
    int64_t value = -1;
    if (sqlite3_step(stmt) == SQLITE_ROW) value = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_close(raw);
    return value;
  }

  DbConnectionTest& db() { return *db_; }
  SqlitePool& pool() { return *pool_; }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<SqlitePool> pool_;
  std::unique_ptr<DbConnectionTest> db_;
};

}  // namespace stele::storage::sqlite::testing
