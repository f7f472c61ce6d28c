// The PostgreSQL schema's migrations of existing databases. CHECK
// constraints (schema.cc, migration V2): a
// database created by this build and one an older build left at V1 (with
// rows in it) end up with the same constraints, and they refuse what they
// must — an instant outside years 0000–9999, an empty t_delay id — while
// accepting every instant RFC 3339 can express, before 1970 included.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/clock.h"
#include "base/time.h"
#include "storage/differential/postgres_test_fixture.h"
#include "storage/postgres/pg_conn.h"
#include "storage/postgres/postgres_pool.h"
#include "storage/postgres/schema.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::postgres {
namespace {

using conformance::CreateReq;
using conformance::Must;
using conformance::NewId;
using internal::Params;
using internal::PgConn;

// "table name: definition" of every CHECK constraint of the public schema,
// sorted.
std::vector<std::string> CheckConstraints(PgConn& conn) {
  auto res = conn.Exec(
      "SELECT conrelid::regclass::text || ' ' || conname || ': ' || pg_get_constraintdef(oid) "
      "FROM pg_constraint WHERE contype = 'c' AND connamespace = 'public'::regnamespace "
      "ORDER BY 1");
  EXPECT_TRUE(res.has_value()) << (res ? "" : res.error().message);
  std::vector<std::string> out;
  if (!res) return out;
  for (int row = 0; row < res->rows(); ++row) out.push_back(res->Str(row, 0));
  return out;
}

std::unique_ptr<PgConn> Connect(const std::string& conninfo) {
  auto conn = PgConn::Connect(conninfo);
  EXPECT_TRUE(conn.has_value()) << (conn ? "" : conn.error().message);
  return conn ? std::move(*conn) : nullptr;
}

int64_t Micros(const char* rfc3339) {
  auto t = ParseRfc3339(rfc3339);
  EXPECT_TRUE(t.has_value()) << rfc3339;
  return t ? ToMicros(*t) : 0;
}

TEST_F(PostgresPoolTest, TimeAndDelayChecksInFreshAndMigratedSchemas) {
  const int64_t first = Micros("0000-01-01T00:00:00Z");
  const int64_t last = Micros("9999-12-31T23:59:59.999999Z");

  // Fresh: this build creates the schema.
  const std::string fresh = EmptyDatabase();
  Must(PostgresPool::Open(PostgresOptions{.conninfo = fresh}))->Close();

  // Migrated: a V1 schema with rows in it, as an older build left it (one
  // instant before 1970: valid, it must pass the new checks), then opened.
  const std::string old = EmptyDatabase();
  {
    auto conn = Connect(old);
    ASSERT_NE(conn, nullptr);
    ASSERT_TRUE(internal::Migrate(*conn, SystemClock::Instance().Now(), 1).has_value());
    ASSERT_EQ(Must(internal::ReadSchemaVersion(*conn)), 1);
    EXPECT_TRUE(CheckConstraints(*conn).size() > 0);
    auto inserted = conn->Exec(
        "INSERT INTO t_delay (execution_id, join_set_id, delay_id, expires_at) "
        "VALUES ('E_1', 'n:js', 'D_1', $1)",
        Params().Int(-1'000'000));
    ASSERT_TRUE(inserted.has_value()) << inserted.error().message;
  }
  Must(PostgresPool::Open(PostgresOptions{.conninfo = old}))->Close();

  auto fresh_conn = Connect(fresh);
  auto old_conn = Connect(old);
  ASSERT_NE(fresh_conn, nullptr);
  ASSERT_NE(old_conn, nullptr);
  EXPECT_EQ(Must(internal::ReadSchemaVersion(*old_conn)), internal::kLatestSchemaVersion);
  const std::vector<std::string> fresh_checks = CheckConstraints(*fresh_conn);
  EXPECT_EQ(CheckConstraints(*old_conn), fresh_checks);

  // Every instant column has its range, with the RFC 3339 bounds
  // (PostgreSQL prints BETWEEN as >= … AND <= …).
  for (const char* column :
       {"t_metadata t_metadata_created_at_range",
        "t_execution_log t_execution_log_created_at_range",
        "t_join_set_response t_join_set_response_created_at_range",
        "t_state t_state_created_at_range", "t_state t_state_first_scheduled_at_range",
        "t_state t_state_pending_expires_finished_range", "t_state t_state_updated_at_range",
        "t_delay t_delay_expires_at_range"}) {
    bool found = false;
    for (const std::string& check : fresh_checks) {
      if (check.rfind(std::string(column) + ":", 0) == 0) {
        found = true;
        EXPECT_NE(check.find(">= '" + std::to_string(first) + "'"), std::string::npos) << check;
        EXPECT_NE(check.find("<= '" + std::to_string(last) + "'"), std::string::npos) << check;
      }
    }
    EXPECT_TRUE(found) << "no CHECK " << column;
  }

  // And they hold, in both databases.
  for (const std::string& conninfo : {fresh, old}) {
    auto pool = Must(PostgresPool::Open(PostgresOptions{.conninfo = conninfo}));
    auto db = Must(pool->ConnectionTest());
    // The bounds themselves and an instant before 1970 are stored.
    for (int64_t at : {first, int64_t{-1}, last}) {
      auto created = db->Create(CreateReq(NewId(), DateTimeFromMicros(at)));
      EXPECT_TRUE(created.has_value()) << at << ": " << created.error().ToString();
    }
    // Past year 9999: refused as invalid (not Generic, which callers retry).
    auto too_late = db->Create(CreateReq(NewId(), DateTimeFromMicros(last + 1)));
    ASSERT_FALSE(too_late.has_value());
    EXPECT_TRUE(too_late.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kValidationFailed))
        << too_late.error().ToString();
    auto too_early = db->Create(CreateReq(NewId(), DateTimeFromMicros(first - 1)));
    ASSERT_FALSE(too_early.has_value());
    EXPECT_TRUE(too_early.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kValidationFailed))
        << too_early.error().ToString();
    pool->Close();

    auto conn = Connect(conninfo);
    ASSERT_NE(conn, nullptr);
    auto empty_id = conn->Exec(
        "INSERT INTO t_delay (execution_id, join_set_id, delay_id, expires_at) "
        "VALUES ('E_2', 'n:js', '', 0)");
    ASSERT_FALSE(empty_id.has_value());
    EXPECT_EQ(empty_id.error().sqlstate, "23514") << empty_id.error().message;
    auto late_timer = conn->Exec(
        "INSERT INTO t_delay (execution_id, join_set_id, delay_id, expires_at) "
        "VALUES ('E_3', 'n:js', 'D_3', $1)",
        Params().Int(last + 1));
    ASSERT_FALSE(late_timer.has_value());
    EXPECT_EQ(late_timer.error().kind, internal::PgError::Kind::kInvalidValue)
        << late_timer.error().message;
  }
}

// A database an older build left at V2 (no t_state.list_key, with
// executions in it) is migrated to V3 when opened: every existing row gets
// its list key (core::ListKey), the column becomes NOT NULL, and
// lists by id put children in creation order (`_2` before `_10`).
TEST_F(PostgresPoolTest, MigrationToV3GivesExistingRowsTheirListKeys) {
  const std::string conninfo = EmptyDatabase();
  const ExecutionId parent = NewId();
  std::vector<ExecutionId> newest_first;
  {
    auto pool = Must(PostgresPool::Open(PostgresOptions{.conninfo = conninfo}));
    auto db = Must(pool->ConnectionTest());
    const DateTime now = SystemClock::Instance().Now();
    Must(db->Create(CreateReq(parent, now)));
    const auto js = core::JoinSetId::Create(core::JoinSetKind::kGenerated, "1").value();
    Version version(1);
    for (uint64_t idx = 1; idx <= 12; ++idx) {
      const core::ExecutionIdDerived child = parent.NextLevel(js, idx);
      // Children exist only requested by their parent's write.
      version = conformance::CreateChildren(*db, parent, version, now, {child});
      newest_first.insert(newest_first.begin(), ExecutionId(child));
    }
    newest_first.push_back(parent);
    pool->Close();
  }
  {
    // Back to V2 as it was: no column, its index, V2 recorded last.
    auto conn = Connect(conninfo);
    ASSERT_NE(conn, nullptr);
    auto downgraded = conn->ExecScript(
        "DROP INDEX idx_t_state_list_key; DROP INDEX idx_t_state_ffqn_list_key;"
        "ALTER TABLE t_state DROP COLUMN list_key;"
        "CREATE INDEX idx_t_state_ffqn_id ON t_state (ffqn, execution_id);"
        "DROP TABLE t_schedule;"
        "DROP TABLE t_deadline;"
        "DROP INDEX idx_t_state_pending_ffqn; DROP INDEX idx_t_state_pending_digest;"
        "ALTER TABLE t_state DROP COLUMN paused, DROP COLUMN cancelling;"
        "CREATE INDEX idx_t_state_pending_ffqn ON t_state (ffqn, pending_expires_finished, "
        "execution_id) WHERE state = 'pending_at';"
        "CREATE INDEX idx_t_state_pending_digest ON t_state (component_id_input_digest, "
        "pending_expires_finished, execution_id) WHERE state = 'pending_at';"
        "DROP INDEX idx_t_join_set_response_message;"
        "ALTER TABLE t_join_set_response DROP CONSTRAINT t_join_set_response_kind,"
        " DROP COLUMN message_id, DROP COLUMN message_body,"
        " ADD CONSTRAINT t_join_set_response_check CHECK ("
        "(delay_id IS NOT NULL AND delay_success IS NOT NULL AND child_execution_id IS NULL"
        " AND finished_version IS NULL AND child_result IS NULL)"
        " OR (delay_id IS NULL AND delay_success IS NULL AND child_execution_id IS NOT NULL"
        " AND finished_version IS NOT NULL));"
        "DELETE FROM t_metadata WHERE schema_version > 2;");
    ASSERT_TRUE(downgraded.has_value()) << downgraded.error().message;
    ASSERT_EQ(Must(internal::ReadSchemaVersion(*conn)), 2);
  }
  auto pool = Must(PostgresPool::Open(PostgresOptions{.conninfo = conninfo}));
  {
    auto conn = Connect(conninfo);
    ASSERT_NE(conn, nullptr);
    EXPECT_EQ(Must(internal::ReadSchemaVersion(*conn)), internal::kLatestSchemaVersion);
    auto nullable = conn->Exec(
        "SELECT is_nullable FROM information_schema.columns WHERE table_name = 't_state' AND "
        "column_name = 'list_key'");
    ASSERT_TRUE(nullable.has_value()) << nullable.error().message;
    ASSERT_EQ(nullable->rows(), 1);
    EXPECT_EQ(nullable->Str(0, 0), "NO");
  }
  auto db = Must(pool->ConnectionTest());
  for (std::optional<core::FunctionFqn> ffqn :
       {std::optional<core::FunctionFqn>(),
        std::optional<core::FunctionFqn>(conformance::FfqnA())}) {
    auto listed = Must(db->ListExecutions(
        ffqn, false, core::Pagination<std::optional<ExecutionId>>::OlderThan(100, {}, false)));
    std::vector<ExecutionId> ids;
    for (const auto& row : listed) ids.push_back(row.execution_id);
    EXPECT_EQ(ids, newest_first);
  }
  pool->Close();
}

// A V5 database (before deadlines) is migrated to V6 when opened: its
// executions are kept, and deadlines work on it, range-checked.
TEST_F(PostgresPoolTest, MigrationToV6AddsDeadlines) {
  const std::string conninfo = EmptyDatabase();
  const DateTime now = SystemClock::Instance().Now();
  const ExecutionId old_id = NewId();
  {
    auto conn = Connect(conninfo);
    ASSERT_NE(conn, nullptr);
    ASSERT_TRUE(internal::Migrate(*conn, now, 5).has_value());
    ASSERT_EQ(Must(internal::ReadSchemaVersion(*conn)), 5);
  }
  auto pool = Must(PostgresPool::Open(PostgresOptions{.conninfo = conninfo}));
  auto db = Must(pool->ConnectionTest());
  Must(db->Create(CreateReq(old_id, now)));
  const ExecutionId new_id = NewId();
  CreateRequest req = CreateReq(new_id, now);
  req.policy.deadline = now + std::chrono::seconds(10);
  Must(db->Create(req));
  std::vector<ExpiredDeadline> deadlines;
  for (const ExpiredTimer& timer : Must(db->GetExpiredTimers(now + std::chrono::seconds(20)))) {
    if (const auto* d = std::get_if<ExpiredDeadline>(&timer)) deadlines.push_back(*d);
  }
  ASSERT_EQ(deadlines.size(), 1u);
  EXPECT_EQ(deadlines[0], (ExpiredDeadline{new_id, now + std::chrono::seconds(10)}));
  {
    auto conn = Connect(conninfo);
    ASSERT_NE(conn, nullptr);
    EXPECT_EQ(Must(internal::ReadSchemaVersion(*conn)), internal::kLatestSchemaVersion);
    auto out_of_range = conn->Exec(
        "INSERT INTO t_deadline (execution_id, deadline) VALUES ('E_x', 253402300800000000)");
    EXPECT_FALSE(out_of_range.has_value()) << "the range check holds";
  }
  pool->Close();
}

}  // namespace
}  // namespace stele::storage::postgres
