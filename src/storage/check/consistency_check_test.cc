// The consistency checker on a real SQLite file: a store written by the
// stress workload (parents, children, responses, temporary failures) is
// clean; rows corrupted with raw SQL afterwards are reported with the
// execution they belong to. With STELE_TEST_POSTGRES_URL the clean case
// also runs on PostgreSQL.
#include "storage/check/consistency_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/clock.h"
#include "storage/sqlite/sqlite_test_util.h"
#include "storage/stress/workload.h"
#if STELE_CHECK_TEST_HAVE_POSTGRES
#include "storage/postgres/test_database.h"
#endif

namespace stele::storage::check {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class Observer : public stress::WorkloadObserver {
 public:
  void OnAck(const ExecutionId&, Version, const core::ExecutionEvent&) override {}
  void OnResponseAck(const ExecutionId&, const core::ExecutionIdDerived&, Version) override {}
  void OnLocked(const LockedExecution&, DateTime) override {}
  void OnReleasing(const ExecutionId&, const core::RunId&) override {}
  void OnFinished(const ExecutionId&) override {}
  void OnProblem(const std::string& problem) override { problems.push_back(problem); }
  std::vector<std::string> problems;
};

constexpr int kParents = 6;
constexpr int kActivities = 6;
constexpr uint32_t kChildren = 3;
constexpr uint64_t kTotal = kParents * (1 + kChildren) + kActivities;

// Runs the stress workload on `pool` until every execution finished (or a
// bound is hit) and returns how many finished.
uint64_t Populate(DbPool& pool, uint64_t seed) {
  auto conn = pool.Connection();
  EXPECT_TRUE(conn);
  if (!conn) return 0;
  Observer observer;
  stress::WorkerOptions options;
  options.children_per_parent = kChildren;
  options.lock_batch = 3;
  stress::Worker worker(**conn, observer, seed, options);
  for (int i = 0; i < kParents; ++i) EXPECT_TRUE(worker.CreateParent());
  for (int i = 0; i < kActivities; ++i) EXPECT_TRUE(worker.CreateActivity());
  auto api = pool.ExternalApiConn();
  EXPECT_TRUE(api);
  uint64_t finished = 0;
  for (int tick = 0; tick < 2000 && finished < kTotal; ++tick) {
    worker.LockAndProcess();
    auto counts = (*api)->CountExecutionsByState();
    EXPECT_TRUE(counts);
    if (counts) finished = counts->finished;
  }
  EXPECT_THAT(observer.problems, IsEmpty());
  return finished;
}

class CheckSqliteTest : public sqlite::testing::SqliteTest {
 protected:
  // A finished store, closed again so raw SQL can change it.
  void SetUpStore() {
    Open();
    EXPECT_EQ(Populate(pool(), 42), kTotal);
    ClosePool();
  }
  CheckReport Check() {
    auto pool = sqlite::SqlitePool::Open(Options());
    EXPECT_TRUE(pool);
    auto api = (*pool)->ExternalApiConn();
    EXPECT_TRUE(api);
    CheckOptions options;
    options.execution_page = 7;  // several pages
    options.event_page = 4;
    options.response_page = 2;
    options.max_attempts = 1;
    auto report = CheckStore(**api, options);
    EXPECT_TRUE(report) << (report ? "" : report.error());
    api->reset();
    (*pool)->Close();
    return report ? *report : CheckReport{};
  }
  std::string RawText(const std::string& sql) {
    sqlite3* raw = nullptr;
    EXPECT_EQ(sqlite3_open(path().c_str(), &raw), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(raw, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK);
    std::string value;
    if (sqlite3_step(stmt) == SQLITE_ROW) {
      const auto* text = sqlite3_column_text(stmt, 0);
      if (text != nullptr) value = reinterpret_cast<const char*>(text);
    }
    sqlite3_finalize(stmt);
    sqlite3_close(raw);
    return value;
  }
  // A parent that has at least one child response.
  std::string SomeParent() {
    return RawText(
        "SELECT s.execution_id FROM t_join_set_response r JOIN t_state s ON s.exec_key = "
        "r.exec_key WHERE r.child_execution_id IS NOT NULL ORDER BY s.execution_id LIMIT 1");
  }
  // SQL for the exec_key of `id` (schema V9: the log and response rows are
  // keyed by it).
  static std::string Key(const std::string& id) {
    return "(SELECT exec_key FROM t_state WHERE execution_id = '" + id + "')";
  }
};

auto FindingFor(const std::string& id, const std::string& text) {
  return AllOf(Field(&Finding::execution_id, id), Field(&Finding::description, HasSubstr(text)));
}

TEST_F(CheckSqliteTest, HealthyStoreHasNoFindings) {
  SetUpStore();
  CheckReport report = Check();
  EXPECT_EQ(report.executions, kTotal);
  EXPECT_GT(report.events, kTotal * 3);
  EXPECT_EQ(report.responses, kParents * kChildren);
  EXPECT_THAT(report.findings, IsEmpty());
  EXPECT_FALSE(report.truncated);
}

// Two retention batches of three top-level executions each (parents go
// with their children), then the check: what is left is consistent.
uint64_t CollectSome(DbPool& pool) {
  auto api = pool.ExternalApiConn();
  EXPECT_TRUE(api);
  if (!api) return 0;
  const DateTime cutoff = SystemClock::Instance().Now() + std::chrono::hours(1);
  auto first = (*api)->DeleteFinishedExecutions(cutoff, 3, std::nullopt);
  EXPECT_TRUE(first) << (first ? "" : first.error().ToString());
  if (!first) return 0;
  EXPECT_TRUE(first->next.has_value());
  auto second = (*api)->DeleteFinishedExecutions(cutoff, 3, first->next);
  EXPECT_TRUE(second) << (second ? "" : second.error().ToString());
  if (!second) return 0;
  EXPECT_EQ(first->deleted_top_level + second->deleted_top_level, 6u);
  return first->deleted + second->deleted;
}

TEST_F(CheckSqliteTest, StoreStaysCleanAfterRetention) {
  Open();
  EXPECT_EQ(Populate(pool(), 42), kTotal);
  const uint64_t deleted = CollectSome(pool());
  EXPECT_GT(deleted, 6u);  // the stress workload's parents come first
  ClosePool();
  CheckReport report = Check();
  EXPECT_EQ(report.executions, kTotal - deleted);
  EXPECT_THAT(report.findings, IsEmpty());
}

TEST_F(CheckSqliteTest, EmptyStoreHasNoFindings) {
  Open();
  ClosePool();
  CheckReport report = Check();
  EXPECT_EQ(report.executions, 0u);
  EXPECT_THAT(report.findings, IsEmpty());
}

TEST_F(CheckSqliteTest, VersionGapIsFound) {
  SetUpStore();
  const std::string id = SomeParent();
  ASSERT_FALSE(id.empty());
  RawExec("DELETE FROM t_execution_log WHERE exec_key = " + Key(id) + " AND version = 2");
  CheckReport report = Check();
  EXPECT_THAT(report.findings, Contains(FindingFor(id, "not gap-free")));
  EXPECT_EQ(report.executions, kTotal);
}

TEST_F(CheckSqliteTest, FirstEventNotCreatedIsFound) {
  SetUpStore();
  const std::string id = SomeParent();
  RawExec("DELETE FROM t_execution_log WHERE exec_key = " + Key(id) + " AND version = 0");
  CheckReport report = Check();
  EXPECT_THAT(report.findings, Contains(FindingFor(id, "not gap-free")));
}

TEST_F(CheckSqliteTest, EventAfterFinishedIsFound) {
  SetUpStore();
  const std::string id = SomeParent();
  // Copy the Finished row (the last) to the next version.
  RawExec(
      "INSERT INTO t_execution_log (exec_key, version, created_at, json_value, join_set_id) "
      "SELECT exec_key, version + 1, created_at, json_value, join_set_id FROM t_execution_log "
      "WHERE exec_key = " +
      Key(id) + " ORDER BY version DESC LIMIT 1");
  CheckReport report = Check();
  EXPECT_THAT(report.findings, Contains(FindingFor(id, "is followed by 1 more event")));
}

TEST_F(CheckSqliteTest, ChildResultRecordedTwiceIsFound) {
  SetUpStore();
  const std::string id = SomeParent();
  // The unique index forbids it; a damaged store may not have it.
  RawExec("DROP INDEX idx_t_join_set_response_child");
  RawExec(
      "INSERT INTO t_join_set_response (exec_key, idx, created_at, join_set_id, "
      "child_execution_id, finished_version, child_result) "
      "SELECT exec_key, (SELECT max(idx) + 1 FROM t_join_set_response WHERE exec_key = " +
      Key(id) +
      "), created_at, join_set_id, child_execution_id, finished_version, child_result "
      "FROM t_join_set_response WHERE exec_key = " +
      Key(id) + " AND idx = 0");
  CheckReport report = Check();
  EXPECT_THAT(report.findings, Contains(FindingFor(id, "recorded more than once")));
  EXPECT_THAT(report.findings, Contains(FindingFor(id, "response(s) but only")));
}

// Issue 16: what cancelling a made-up delay id used to write. Every backend
// refuses it now (conformance RequestTest); a store written before, or
// damaged, still has it reported.
TEST_F(CheckSqliteTest, ResponseForADelayNeverRequestedIsFound) {
  SetUpStore();
  const std::string id = SomeParent();
  const std::string join_set =
      RawText("SELECT join_set_id FROM t_join_set_response WHERE exec_key = " + Key(id) +
              " ORDER BY idx LIMIT 1");
  auto owner = ExecutionId::Parse(id);
  auto js = core::JoinSetId::Parse(join_set);
  ASSERT_TRUE(owner && js) << id << " " << join_set;
  const std::string delay = core::DelayId(*owner, *js, 9).ToString();
  RawExec(
      "INSERT INTO t_join_set_response (exec_key, idx, created_at, join_set_id, delay_id, "
      "delay_success) SELECT exec_key, max(idx) + 1, max(created_at), join_set_id, '" +
      delay + "', 0 FROM t_join_set_response WHERE exec_key = " + Key(id));
  CheckReport report = Check();
  EXPECT_THAT(report.findings, Contains(FindingFor(id, "response for delay " + delay +
                                                           ", which was never requested")));
}

TEST_F(CheckSqliteTest, MissingChildResponseIsFound) {
  SetUpStore();
  const std::string id = SomeParent();
  const int64_t last =
      RawCount("SELECT max(idx) FROM t_join_set_response WHERE exec_key = " + Key(id));
  RawExec("DELETE FROM t_join_set_response WHERE exec_key = " + Key(id) +
          " AND idx = " + std::to_string(last));
  CheckReport report = Check();
  EXPECT_THAT(report.findings, Contains(FindingFor(id, "result was never recorded")));
}

TEST_F(CheckSqliteTest, MismatchedPendingStateIsFound) {
  SetUpStore();
  const std::string id = SomeParent();
  RawExec(
      "UPDATE t_state SET pending_expires_finished = pending_expires_finished + 1000000 "
      "WHERE execution_id = '" +
      id + "'");
  CheckReport report = Check();
  EXPECT_THAT(report.findings, Contains(FindingFor(id, "stored pending state")));
  EXPECT_EQ(report.findings.size(), 1u);
}

TEST_F(CheckSqliteTest, UnfinishedStateOfFinishedLogIsFound) {
  SetUpStore();
  const std::string id = SomeParent();
  RawExec(
      "UPDATE t_state SET state = 'pending_at', result_kind = NULL "
      "WHERE execution_id = '" +
      id + "'");
  CheckReport report = Check();
  EXPECT_THAT(report.findings, Contains(FindingFor(id, "stored pending state")));
}

TEST_F(CheckSqliteTest, FindingsAreCapped) {
  SetUpStore();
  RawExec("UPDATE t_state SET pending_expires_finished = pending_expires_finished + 1");
  auto pool = sqlite::SqlitePool::Open(Options());
  ASSERT_TRUE(pool);
  auto api = (*pool)->ExternalApiConn();
  ASSERT_TRUE(api);
  CheckOptions options;
  options.max_findings = 5;
  options.max_attempts = 1;
  auto report = CheckStore(**api, options);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->findings.size(), 5u);
  EXPECT_TRUE(report->truncated);
  EXPECT_EQ(report->executions, kTotal);
}

TEST_F(CheckSqliteTest, ClosedDatabaseIsAnError) {
  SetUpStore();
  auto pool = sqlite::SqlitePool::Open(Options());
  ASSERT_TRUE(pool);
  auto api = (*pool)->ExternalApiConn();
  ASSERT_TRUE(api);
  (*pool)->Close();
  auto report = CheckStore(**api);
  EXPECT_FALSE(report);
}

#if STELE_CHECK_TEST_HAVE_POSTGRES
TEST(CheckPostgresTest, HealthyStoreHasNoFindings) {
  if (!postgres::testing::AdminConninfo()) {
    STELE_POSTGRES_TEST_UNAVAILABLE(postgres::testing::UnavailableReason());
  }
  auto pool = postgres::testing::OpenFreshPool();
  ASSERT_TRUE(pool) << pool.error().ToString();
  EXPECT_EQ(Populate(**pool, 7), kTotal);
  auto api = (*pool)->ExternalApiConn();
  ASSERT_TRUE(api);
  CheckOptions options;
  options.execution_page = 5;
  auto report = CheckStore(**api, options);
  ASSERT_TRUE(report) << report.error();
  EXPECT_EQ(report->executions, kTotal);
  EXPECT_EQ(report->responses, kParents * kChildren);
  EXPECT_THAT(report->findings, IsEmpty());
  const uint64_t deleted = CollectSome(**pool);
  auto after = CheckStore(**api, options);
  ASSERT_TRUE(after) << after.error();
  EXPECT_EQ(after->executions, kTotal - deleted);
  EXPECT_THAT(after->findings, IsEmpty());
}
#endif

}  // namespace
}  // namespace stele::storage::check
