// The compact event encoding of schema V7 (event_codec.h) and the
// migration of a V6 file, whose events are JSON text, to it.
#include "storage/sqlite/event_codec.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <random>
#include <string>

#include "storage/sqlite/schema.h"
#include "storage/sqlite/sqlite_test_util.h"

namespace stele::storage::sqlite::testing {
namespace {

using internal::CompressEventJson;
using internal::DecodeEventColumn;
using internal::EncodeEventRow;
using internal::PreEncodedEvents;

std::string EventCodecRoundTrip(const std::string& json) {
  const std::string stored = CompressEventJson(json);
  auto decoded = DecodeEventColumn(stored, true, "E_x", 0);
  EXPECT_TRUE(decoded) << decoded.error().reason();
  return decoded ? *decoded : std::string();
}

TEST(EventCodecTest, RoundTripsAnyText) {
  std::mt19937 rng(7);
  std::string random(1 << 20, '\0');
  for (char& c : random) c = static_cast<char>(rng());
  for (const std::string& json :
       {std::string(), std::string("{}"), std::string("\"a\\u0000b\""), std::string("a\0b", 3),
        std::string("{\"ü\":\"☃\"}"), std::string(100000, 'x'), random}) {
    EXPECT_EQ(EventCodecRoundTrip(json), json);
  }
}

// The point of the encoding: a W1 Locked event (what the engine writes for
// every attempt) takes under a third of its JSON text.
TEST(EventCodecTest, CompressesTypicalEvents) {
  const std::string locked =
      R"({"locked":{"component_id":{"component_type":"activity_native","name":"acts",)"
      R"("input_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"},)"
      R"("executor_id":"Exr_01M96H1W9134H0520YSY15A4M3","run_id":"Run_01M96H1WTW1V6DSHKMNBS8XATE",)"
      R"("lock_expires_at":"2026-12-06T20:34:56.236619Z","retry_config":{"max_retries":5,)"
      R"("retry_exp_backoff":{"secs":0,"nanos":100000000},"max_backoff":{"secs":300,"nanos":0},)"
      R"("jitter_percent":10}}})";
  EXPECT_LT(CompressEventJson(locked).size() * 3, locked.size());
  EXPECT_EQ(EventCodecRoundTrip(locked), locked);
}

// Rows encoded on a caller's thread are the rows the writer would write,
// found only under the address they were filed under.
TEST(EventCodecTest, PreEncodedRowsAreTheWritersRows) {
  const AppendRequest finished = FinishedOk(T(1), 42);
  const AppendRequest other = FinishedOk(T(2), 7);
  PreEncodedEvents rows;
  rows.Add(&finished.event, finished.event);
  const std::string* row = rows.Find(&finished.event);
  ASSERT_NE(row, nullptr);
  auto expected = EncodeEventRow(finished.event);
  ASSERT_TRUE(expected);
  EXPECT_EQ(*row, *expected);
  auto json = DecodeEventColumn(*row, true, "E_x", 1);
  ASSERT_TRUE(json);
  EXPECT_NE(json->find("42"), std::string::npos);
  EXPECT_EQ(rows.Find(&other.event), nullptr);
  EXPECT_EQ(rows.Find(&finished), nullptr) << "only the address it was filed under";
}

TEST(EventCodecTest, TextIsReadAsIs) {
  auto decoded = DecodeEventColumn("{\"finished\":{}}", false, "E_x", 3);
  ASSERT_TRUE(decoded);
  EXPECT_EQ(*decoded, "{\"finished\":{}}");
}

TEST(EventCodecTest, DamagedBlobIsAnErrorNamingTheRow) {
  std::string stored = CompressEventJson(std::string(1000, 'y'));
  for (const std::string& bad :
       {std::string(), std::string("\x02") + stored.substr(1), stored.substr(0, stored.size() / 2),
        stored + "zz", std::string("\x01\xff\xff\xff", 4)}) {
    auto decoded = DecodeEventColumn(bad, true, "E_damaged", 4);
    ASSERT_FALSE(decoded);
    EXPECT_NE(decoded.error().reason().find("E_damaged` version 4"), std::string::npos)
        << decoded.error().reason();
  }
}

// SQL function event_json_v6(value): the JSON text of a stored value, so
// that the test can rebuild a V6 table from a V7 one.
void EventJsonSqlFunction(sqlite3_context* context, int, sqlite3_value** args) {
  const auto* bytes = static_cast<const char*>(sqlite3_value_blob(args[0]));
  const int size = sqlite3_value_bytes(args[0]);
  auto json = DecodeEventColumn(std::string_view(bytes, static_cast<size_t>(size)),
                                sqlite3_value_type(args[0]) == SQLITE_BLOB, "", 0);
  if (!json) {
    sqlite3_result_error(context, "undecodable event", -1);
    return;
  }
  sqlite3_result_text(context, json->data(), static_cast<int>(json->size()), SQLITE_TRANSIENT);
}

class EventCodecMigrationTest : public SqliteTest {
 protected:
  // Turns the (closed) file back into V6: events as JSON text in a STRICT
  // TEXT column, history_event_type generated from it, V7 unrecorded.
  void DowngradeToV6() {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path().c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_create_function(raw, "event_json_v6", 1, SQLITE_UTF8, nullptr,
                                      &EventJsonSqlFunction, nullptr, nullptr),
              SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(raw, R"sql(
      CREATE TABLE t_v6 (
        execution_id TEXT NOT NULL,
        version INTEGER NOT NULL CHECK (version >= 0),
        created_at INTEGER NOT NULL,
        json_value TEXT NOT NULL,
        variant TEXT NOT NULL,
        join_set_id TEXT,
        history_event_type TEXT GENERATED ALWAYS AS
          (json_extract(json_value, '$.history_event.event.type')) VIRTUAL,
        PRIMARY KEY (execution_id, version)
      ) STRICT;
      INSERT INTO t_v6 (execution_id, version, created_at, json_value, variant, join_set_id)
        SELECT execution_id, version, created_at, event_json_v6(json_value), variant,
               join_set_id FROM t_execution_log;
      DROP TABLE t_execution_log;
      ALTER TABLE t_v6 RENAME TO t_execution_log;
      CREATE INDEX idx_t_execution_log_join_next
        ON t_execution_log (execution_id, join_set_id, history_event_type)
        WHERE history_event_type = 'join_next';
      DELETE FROM t_metadata WHERE schema_version > 6;
    )sql",
                                nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(raw);
  }
};

// A V6 file is migrated to V7 when opened: its events stay JSON text and
// read back unchanged (log, responses joined with a child's Finished row,
// the JoinNext count of the index), and new events are stored compressed.
TEST_F(EventCodecMigrationTest, V6EventsStayReadableAndNewOnesAreCompressed) {
  Open();
  const auto parent = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(parent, T(0))));
  const auto js = core::JoinSetId::Create(core::JoinSetKind::kGenerated, "1").value();
  const core::ExecutionIdDerived child = parent.NextLevel(js, 1);
  auto version = CreateChild(db(), parent, Version(1), js, child, T(1));
  ASSERT_TRUE(version);
  ASSERT_TRUE(db().AppendBatchRespondToParent(
      AppendEventsToExecution{child, Version(1), {FinishedOk(T(2), 42)}},
      AppendResponseToExecution{parent, T(2), js, child, Version(1),
                                core::ReturnValueOk{core::Json(42)}},
      T(2)));
  auto parent_before = db().Get(parent);
  auto child_before = db().Get(child);
  ASSERT_TRUE(parent_before && child_before);
  ASSERT_EQ(parent_before->responses.size(), 1u);
  const int64_t rows = RawCount("SELECT COUNT(*) FROM t_execution_log");
  ClosePool();

  RawDowngradeToV8();
  DowngradeToV6();
  ASSERT_EQ(RawCount("SELECT MAX(schema_version) FROM t_metadata"), 6);
  ASSERT_EQ(RawCount("SELECT COUNT(*) FROM t_execution_log WHERE typeof(json_value) = 'text'"),
            rows);

  Open();
  EXPECT_EQ(RawCount("SELECT MAX(schema_version) FROM t_metadata"), internal::kLatestSchemaVersion);
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_execution_log WHERE typeof(json_value) = 'text'"),
            rows);
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_execution_log WHERE history_event_type = "
                     "'join_set_request'"),
            1);
  auto parent_after = db().Get(parent);
  auto child_after = db().Get(child);
  ASSERT_TRUE(parent_after && child_after);
  EXPECT_EQ(parent_after->events, parent_before->events);
  EXPECT_EQ(parent_after->responses, parent_before->responses);
  EXPECT_EQ(child_after->events, child_before->events);

  // New rows: compressed, with their history event type stored.
  ASSERT_TRUE(db().Append(parent, parent_after->next_version, FinishedOk(T(3), 7)));
  const auto other = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(other, T(4))));
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_execution_log WHERE typeof(json_value) = 'blob'"), 2);
  auto finished = db().Get(parent);
  ASSERT_TRUE(finished);
  EXPECT_EQ(finished->events.size(), parent_after->events.size() + 1);
  auto create = db().GetCreateRequest(other);
  ASSERT_TRUE(create);
  EXPECT_EQ(create->params, NewCreate(other, T(4)).params);
}

}  // namespace
}  // namespace stele::storage::sqlite::testing
