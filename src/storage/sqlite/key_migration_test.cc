// Schema V9 (schema.cc, kMigrationV9): integer execution keys and shared
// backtrace texts. A store written by this build is turned back into V8
// with its rows (RawDowngradeToV8), opened again, and must read exactly as
// before the round trip.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/execution_event.h"
#include "storage/sqlite/schema.h"
#include "storage/sqlite/sqlite_test_util.h"

namespace stele::storage::sqlite::testing {
namespace {

core::WasmBacktrace Trace(const std::string& function) {
  return core::WasmBacktrace{
      {core::FrameInfo{"module", function, {core::FrameSymbol{"sym", "src/lib.rs", 12, 4}}}},
      "v8 test"};
}

core::BacktraceInfo Backtrace(const core::ExecutionId& id, uint32_t min, uint32_t max,
                              const std::string& function) {
  return core::BacktraceInfo{id, core::ComponentId::DummyActivity(), Version(min), Version(max),
                             Trace(function)};
}

class KeyMigrationTest : public SqliteTest {
 protected:
  // What the API reads of one execution.
  struct Reads {
    ExecutionLog log;
    std::vector<core::ExecutionEvent> events;
    std::vector<ResponseWithCursor> responses;
    std::optional<core::BacktraceInfo> first, last, at_two;
    friend bool operator==(const Reads&, const Reads&) = default;
  };
  Reads Read(const core::ExecutionId& id) {
    auto api = pool().ExternalApiConn();
    EXPECT_TRUE(api);
    auto backtrace = [&](BacktraceFilter filter) {
      auto found = (*api)->GetBacktrace(id, filter);
      return found ? std::optional<core::BacktraceInfo>(*found) : std::nullopt;
    };
    return Reads{
        db().Get(id).value(),
        (*api)->ListExecutionEvents(id, Version(0), 100, true).value(),
        (*api)->ListResponses(id, core::Pagination<uint32_t>::NewerThan(100, 0, true)).value(),
        backtrace(BacktraceFilter::First()),
        backtrace(BacktraceFilter::Last()),
        backtrace(BacktraceFilter::Specific(Version(2))),
    };
  }
};

TEST_F(KeyMigrationTest, AV8StoreReadsTheSameAfterTheMigration) {
  Open();
  const auto parent = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(parent, T(0))));
  const auto js = core::JoinSetId::Create(core::JoinSetKind::kGenerated, "1").value();
  const core::ExecutionIdDerived first = parent.NextLevel(js, 1);
  const core::ExecutionIdDerived second = parent.NextLevel(js, 2);
  ASSERT_TRUE(CreateChild(db(), parent, Version(1), js, first, T(1)));
  ASSERT_TRUE(CreateChild(db(), parent, Version(2), js, second, T(1)));
  ASSERT_TRUE(db().AppendBatchRespondToParent(
      AppendEventsToExecution{first, Version(1), {FinishedOk(T(2), 42)}},
      AppendResponseToExecution{parent, T(2), js, first, Version(1),
                                core::ReturnValueOk{core::Json(42)}},
      T(2)));
  const auto channel = core::ChannelJoinSet("orders").value();
  ASSERT_TRUE(db().AppendMessage(T(3), parent, channel, core::MessageReceived{"m1", "hi"}));
  // Two ranges share a text, a third has its own, and a child repeats one.
  ASSERT_TRUE(
      db().AppendBacktraceBatch({Backtrace(parent, 1, 2, "a"), Backtrace(parent, 2, 3, "a"),
                                 Backtrace(parent, 2, 4, "b"), Backtrace(second, 0, 1, "a")}));
  ASSERT_EQ(RawCount("SELECT COUNT(*) FROM t_backtrace_text"), 2);
  const Reads parent_before = Read(parent);
  const Reads first_before = Read(first);
  const Reads second_before = Read(second);
  ASSERT_EQ(parent_before.responses.size(), 2u);
  ASSERT_TRUE(parent_before.at_two.has_value());
  EXPECT_EQ(parent_before.at_two->wasm_backtrace, Trace("a"));  // first recorded wins
  ClosePool();

  RawDowngradeToV8();
  ASSERT_EQ(RawCount("SELECT MAX(schema_version) FROM t_metadata"), 8);
  ASSERT_EQ(RawCount("SELECT COUNT(*) FROM pragma_table_info('t_execution_log') "
                     "WHERE name = 'execution_id'"),
            1);

  Open();
  EXPECT_EQ(RawCount("SELECT MAX(schema_version) FROM t_metadata"), internal::kLatestSchemaVersion);
  EXPECT_EQ(Read(parent), parent_before);
  EXPECT_EQ(Read(first), first_before);
  EXPECT_EQ(Read(second), second_before);
  // Keys in creation order, no text id left in the keyed tables.
  EXPECT_EQ(RawCount("SELECT COUNT(DISTINCT exec_key) FROM t_state WHERE exec_key > 0"), 3);
  EXPECT_EQ(
      RawCount("SELECT exec_key FROM t_state WHERE execution_id = '" + parent.ToString() + "'"), 1);
  for (const char* table : {"t_execution_log", "t_join_set_response", "t_backtrace"}) {
    EXPECT_EQ(RawCount(std::string("SELECT COUNT(*) FROM pragma_table_info('") + table +
                       "') WHERE name = 'execution_id'"),
              0)
        << table;
  }
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_backtrace_text"), 2);

  // A new execution takes the next key; the migrated ones keep working.
  const auto other = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(other, T(4))));
  EXPECT_EQ(
      RawCount("SELECT exec_key FROM t_state WHERE execution_id = '" + other.ToString() + "'"), 4);
  ASSERT_TRUE(db().AppendBatchRespondToParent(
      AppendEventsToExecution{second, Version(1), {FinishedOk(T(5), 7)}},
      AppendResponseToExecution{parent, T(5), js, second, Version(1),
                                core::ReturnValueOk{core::Json(7)}},
      T(5)));
  EXPECT_EQ(Read(parent).responses.size(), 3u);
}

// A key is never given twice, not even after retention deleted the
// execution that had the highest; the last backtrace naming a text takes
// the text with it.
TEST_F(KeyMigrationTest, RetentionFreesTextsAndKeysAreNotReused) {
  Open();
  const auto old_id = core::ExecutionId::Generate();
  const auto kept = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(kept, T(0))));
  ASSERT_TRUE(db().Create(NewCreate(old_id, T(0))));
  ASSERT_TRUE(db().Append(old_id, Version(1), FinishedOk(T(1))));
  ASSERT_TRUE(db().AppendBacktraceBatch({Backtrace(old_id, 0, 1, "only-old"),
                                         Backtrace(old_id, 1, 2, "shared"),
                                         Backtrace(kept, 0, 1, "shared")}));
  ASSERT_EQ(RawCount("SELECT COUNT(*) FROM t_backtrace_text"), 2);
  auto api = pool().ExternalApiConn();
  ASSERT_TRUE(api);
  auto deleted = (*api)->DeleteFinishedExecutions(T(100), 10, std::nullopt);
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->deleted, 1u);
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_backtrace_text"), 1);
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_backtrace_text WHERE wasm_backtrace LIKE "
                     "'%shared%'"),
            1);
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_execution_log"), 1);  // kept's Created
  ASSERT_TRUE((*api)->GetBacktrace(kept, BacktraceFilter::First()));

  const auto next = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(next, T(2))));
  EXPECT_EQ(RawCount("SELECT exec_key FROM t_state WHERE execution_id = '" + next.ToString() + "'"),
            3);
}

// A backtrace of an execution that is not there (deleted meanwhile) has no
// reader: it is dropped, and its text is not kept either way.
TEST_F(KeyMigrationTest, ABacktraceOfAMissingExecutionIsDropped) {
  Open();
  const auto missing = core::ExecutionId::Generate();
  EXPECT_TRUE(db().AppendBacktraceBatch({Backtrace(missing, 0, 1, "x")}));
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_backtrace"), 0);
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_backtrace_text"), 0);
}

}  // namespace
}  // namespace stele::storage::sqlite::testing
