// SQLite-specific behaviour of SqlitePool: opening, migrations, integrity,
// configuration, Close, notifications and read connections. The storage
// semantics shared by every backend are covered by the conformance suite.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <thread>

#include "storage/sqlite/schema.h"
#include "storage/sqlite/sqlite_test_util.h"

namespace stele::storage::sqlite::testing {
namespace {

using std::chrono::milliseconds;

TEST_F(SqliteTest, OpeningTwiceRunsMigrationsOnce) {
  Open();
  auto id = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(id, T(0))));
  ClosePool();
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_metadata"), internal::kLatestSchemaVersion);
  EXPECT_EQ(RawCount("SELECT MAX(schema_version) FROM t_metadata"), internal::kLatestSchemaVersion);

  Open();  // a no-op migration, the data is intact
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_metadata"), internal::kLatestSchemaVersion);
  auto log = db().Get(id);
  ASSERT_TRUE(log);
  EXPECT_EQ(log->events.size(), 1u);
}

// A file an older build left at schema V1 (no t_state.list_key) is
// migrated when opened: every existing row gets its list key, in the
// migration's transaction, and lists by id put children in creation order
// (`_2` before `_10`; by id text `_10` came between `_1` and `_2`).
TEST_F(SqliteTest, MigrationToV2GivesExistingRowsTheirListKeys) {
  Open();
  const auto parent = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(parent, T(0))));
  const auto js = core::JoinSetId::Create(core::JoinSetKind::kGenerated, "1").value();
  std::vector<core::ExecutionId> newest_first;
  for (uint64_t idx = 1; idx <= 12; ++idx) {
    const core::ExecutionIdDerived child = parent.NextLevel(js, idx);
    ASSERT_TRUE(CreateChild(db(), parent, Version(idx), js, child, T(1)));
    newest_first.insert(newest_first.begin(), child);
  }
  newest_first.push_back(parent);
  ClosePool();
  RawDowngradeToV8();
  // Back to V1 as it was: no column, its indexes, V1 recorded last.
  RawExec(
      "DROP INDEX idx_t_state_list_key; DROP INDEX idx_t_state_ffqn_list_key;"
      "ALTER TABLE t_state DROP COLUMN list_key;"
      "CREATE INDEX idx_t_state_ffqn_id ON t_state (ffqn, execution_id);"
      "DROP TABLE t_schedule;"
      "DROP TABLE t_deadline;"
      "DROP INDEX idx_t_state_pending_ffqn; DROP INDEX idx_t_state_pending_digest;"
      "ALTER TABLE t_state DROP COLUMN paused; ALTER TABLE t_state DROP COLUMN cancelling;"
      "CREATE INDEX idx_t_state_pending_ffqn ON t_state (ffqn, pending_expires_finished, "
      "execution_id) WHERE state = 'pending_at';"
      "CREATE INDEX idx_t_state_pending_digest ON t_state (component_id_input_digest, "
      "pending_expires_finished, execution_id) WHERE state = 'pending_at';"
      "DELETE FROM t_metadata WHERE schema_version > 1;");
  ASSERT_EQ(RawCount("SELECT MAX(schema_version) FROM t_metadata"), 1);

  Open();
  EXPECT_EQ(RawCount("SELECT MAX(schema_version) FROM t_metadata"), internal::kLatestSchemaVersion);
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_state WHERE list_key IS NULL"), 0);
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM sqlite_schema WHERE name = 'idx_t_state_ffqn_id'"), 0);
  for (std::optional<core::FunctionFqn> ffqn : {std::optional<core::FunctionFqn>(), {TestFfqn()}}) {
    auto listed = pool().ExternalApiConn().value()->ListExecutions(
        ffqn, false, core::Pagination<std::optional<core::ExecutionId>>::OlderThan(100, {}, false));
    ASSERT_TRUE(listed);
    std::vector<core::ExecutionId> ids;
    for (const auto& row : *listed) ids.push_back(row.execution_id);
    EXPECT_EQ(ids, newest_first);
  }
  // V3: the schedules table exists and works on the migrated store.
  storage::ScheduleDefinition def{"nightly", "0 0 2 * * *", "UTC", "a:b/c.d", "[]",
                                  "skip",    "last",        10,    false};
  EXPECT_TRUE(pool().ExternalApiConn().value()->CreateSchedule(def, DateTime{}).has_value());
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_schedule"), 1);
  // V4: the pause and cancel flags, unset on the rows already there.
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_state WHERE paused = 0 AND cancelling = 0"), 13);
}

// A V4 store (before deadlines) is migrated to V5 when opened: its
// executions are kept, without deadlines, and new ones keep theirs.
TEST_F(SqliteTest, MigrationToV5AddsDeadlines) {
  Open();
  const auto old_id = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(old_id, T(0))));
  ClosePool();
  RawDowngradeToV8();
  RawExec("DROP TABLE t_deadline; DELETE FROM t_metadata WHERE schema_version > 4;");
  ASSERT_EQ(RawCount("SELECT MAX(schema_version) FROM t_metadata"), 4);

  Open();
  EXPECT_EQ(RawCount("SELECT MAX(schema_version) FROM t_metadata"), internal::kLatestSchemaVersion);
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_deadline"), 0);
  const auto new_id = core::ExecutionId::Generate();
  storage::CreateRequest req = NewCreate(new_id, T(0));
  req.policy.deadline = T(10);
  ASSERT_TRUE(db().Create(req));
  auto timers = db().GetExpiredTimers(T(100));
  ASSERT_TRUE(timers.has_value());
  ASSERT_EQ(timers->size(), 1u);
  EXPECT_EQ(std::get<storage::ExpiredDeadline>((*timers)[0]),
            (storage::ExpiredDeadline{new_id, T(10)}));
}

// A V7 store is migrated to V8 when opened: the response index that no
// query used is dropped, and the k-th response lookup it was meant for
// still plans on the primary key (docs/storage_contract.md).
TEST_F(SqliteTest, MigrationToV8DropsTheUnusedResponseIndex) {
  Open();
  ClosePool();
  RawDowngradeToV8();
  RawExec(
      "CREATE INDEX idx_t_join_set_response_join_set ON t_join_set_response "
      "(execution_id, join_set_id, idx); DELETE FROM t_metadata WHERE schema_version > 7;");
  ASSERT_EQ(RawCount("SELECT COUNT(*) FROM sqlite_schema WHERE name = "
                     "'idx_t_join_set_response_join_set'"),
            1);
  Open();
  EXPECT_EQ(RawCount("SELECT MAX(schema_version) FROM t_metadata"), internal::kLatestSchemaVersion);
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM sqlite_schema WHERE name = "
                     "'idx_t_join_set_response_join_set'"),
            0);
  // The statement of KthResponseTime (journal_tx.cc); EXPLAIN QUERY
  // PLAN's column 3 is the plan's text.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw,
                               "EXPLAIN QUERY PLAN SELECT created_at FROM t_join_set_response "
                               "WHERE exec_key = ? AND join_set_id = ? ORDER BY idx LIMIT 1 "
                               "OFFSET ?",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  const std::string plan = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3));
  sqlite3_finalize(stmt);
  sqlite3_close(raw);
  EXPECT_EQ(plan, "SEARCH t_join_set_response USING PRIMARY KEY (exec_key=?)");
}

TEST_F(SqliteTest, UsesWalAndStrictTables) {
  Open();
  ClosePool();
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  // STRICT: a text in an INTEGER column is refused.
  EXPECT_NE(sqlite3_exec(raw,
                         "INSERT INTO t_delay (execution_id, join_set_id, delay_id, expires_at) "
                         "VALUES ('a', 'b', 'c', 'not a time')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
}

TEST_F(SqliteTest, NewerSchemaVersionIsRefused) {
  Open();
  ClosePool();
  RawExec("INSERT INTO t_metadata (schema_version, created_at) VALUES (99, 0)");
  auto pool = SqlitePool::Open(Options());
  ASSERT_FALSE(pool);
  EXPECT_NE(pool.error().reason().find("schema version 99"), std::string::npos)
      << pool.error().reason();
  EXPECT_NE(pool.error().reason().find("newer"), std::string::npos);
}

TEST_F(SqliteTest, DamagedFileFailsIntegrityCheck) {
  Open();
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(db().Create(NewCreate(core::ExecutionId::Generate(), T(i))));
  }
  ClosePool();
  // Overwrite the body of the log table's root page; page 1 (the schema)
  // stays intact so the file still opens and only the check can tell.
  const int64_t root =
      RawCount("SELECT rootpage FROM sqlite_schema WHERE name = 't_execution_log'");
  const int64_t page_size = RawCount("PRAGMA page_size");
  ASSERT_GT(root, 1);
  {
    std::fstream file(path(), std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(file);
    file.seekp((root - 1) * page_size);
    std::string garbage(static_cast<size_t>(page_size), '\x5a');
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  auto pool = SqlitePool::Open(Options());
  ASSERT_FALSE(pool);
  EXPECT_NE(pool.error().reason().find("integrity check"), std::string::npos)
      << pool.error().reason();

  SqliteOptions unchecked = Options();
  unchecked.integrity_check_at_open = false;
  EXPECT_TRUE(SqlitePool::Open(unchecked)) << "the check is what refused the file";
}

TEST_F(SqliteTest, NotADatabaseIsRefusedClearly) {
  {
    std::ofstream file(path(), std::ios::binary);
    file << std::string(8192, 'x');
  }
  auto pool = SqlitePool::Open(Options());
  ASSERT_FALSE(pool);
  EXPECT_NE(pool.error().reason().find("not a database"), std::string::npos)
      << pool.error().reason();
}

TEST_F(SqliteTest, BadOptionsAreRefused) {
  SqliteOptions in_memory = Options();
  in_memory.path = ":memory:";
  EXPECT_FALSE(SqlitePool::Open(in_memory));
  SqliteOptions empty = Options();
  empty.path = "";
  EXPECT_FALSE(SqlitePool::Open(empty));
  SqliteOptions injection = Options();
  injection.extra_pragmas = {{"cache_size", "1; DROP TABLE t_state"}};
  auto pool = SqlitePool::Open(injection);
  ASSERT_FALSE(pool);
  EXPECT_NE(pool.error().reason().find("invalid extra PRAGMA"), std::string::npos);
}

TEST_F(SqliteTest, ExtraPragmasAreApplied) {
  SqliteOptions options = Options();
  options.extra_pragmas = {{"user_version", "7"}};
  Open(options);
  ClosePool();
  EXPECT_EQ(RawCount("PRAGMA user_version"), 7);
}

TEST_F(SqliteTest, CheckpointsRunInTheBackgroundAndCloseTruncatesTheWal) {
  Open();
  // Enough pages to cross the checkpoint threshold several times.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto connection = pool().Connection().value();
      for (int i = 0; i < 400; ++i) {
        ASSERT_TRUE(connection->Create(NewCreate(core::ExecutionId::Generate(), T(i))));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_TRUE(Eventually([&] { return pool().stats().checkpoints > 0; }));
  ClosePool();
  const std::string wal = path() + "-wal";
  EXPECT_TRUE(!std::filesystem::exists(wal) || std::filesystem::file_size(wal) == 0)
      << std::filesystem::file_size(wal);
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_state"), 1600);
}

TEST_F(SqliteTest, CallsAfterCloseFailWithClose) {
  Open();
  auto connection = pool().Connection().value();
  ClosePool();  // also destroys the pool: the connection outlives it
  auto id = core::ExecutionId::Generate();
  auto created = connection->Create(NewCreate(id, T(0)));
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error(), DbErrorWrite(DbErrorGeneric::Close()));
  auto read = connection->GetPendingState(id);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error(), DbErrorRead(DbErrorGeneric::Close()));
  auto waited = connection->WaitForFinishedResult(id, std::nullopt);
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error(), DbErrorReadWithTimeout(DbErrorGeneric::Close()));
}

TEST_F(SqliteTest, CloseReleasesBlockedWaiters) {
  Open();
  auto id = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(id, T(0))));
  auto finished = std::async(std::launch::async, [&] {
    return db().WaitForFinishedResult(id, std::nullopt);  // unbounded
  });
  auto responses = std::async(std::launch::async, [&] {
    return db().SubscribeToNextResponses(id, 0, WaitOptions::For(std::chrono::hours(1)));
  });
  auto pending = std::async(std::launch::async, [&] {
    db().WaitForPendingByFfqn(T(-100), {TestFfqn()}, WaitOptions::For(std::chrono::hours(1)));
    return true;
  });
  std::this_thread::sleep_for(milliseconds(100));  // let them block
  pool().Close();
  ASSERT_EQ(finished.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  ASSERT_EQ(responses.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  ASSERT_EQ(pending.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto result = finished.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error(), DbErrorReadWithTimeout(DbErrorGeneric::Close()));
  auto subscribed = responses.get();
  ASSERT_FALSE(subscribed);
  EXPECT_EQ(subscribed.error(), DbErrorReadWithTimeout(DbErrorGeneric::Close()));
}

TEST_F(SqliteTest, WaitersAreNotifiedAfterCommit) {
  Open();
  auto id = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(id, T(0))));
  auto finished = std::async(std::launch::async, [&] {
    return db().WaitForFinishedResult(id, WaitOptions::For(std::chrono::seconds(30)));
  });
  auto second = std::async(std::launch::async, [&] {
    return db().WaitForFinishedResult(id, WaitOptions::For(std::chrono::seconds(30)));
  });
  std::this_thread::sleep_for(milliseconds(50));
  ASSERT_TRUE(db().Append(id, Version(1), FinishedOk(T(1), 42)));
  for (auto* waiter : {&finished, &second}) {
    auto result = waiter->get();
    ASSERT_TRUE(result) << result.error().ToString();
    EXPECT_EQ(*result, core::SupportedFunctionReturnValue(core::ReturnValueOk{core::Json(42)}));
  }
}

TEST_F(SqliteTest, SubscriberGetsResponsesCommittedAfterItsCheck) {
  Open();
  auto parent = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(parent, T(0))));
  auto js = core::JoinSetId::Create(core::JoinSetKind::kNamed, "js").value();
  core::DelayId delay(parent, js, 1);
  ASSERT_TRUE(db().Append(parent, Version(1), DelayRequested(T(0), delay)));
  auto subscribed = std::async(std::launch::async, [&] {
    return db().SubscribeToNextResponses(parent, 0, WaitOptions::For(std::chrono::seconds(30)));
  });
  std::this_thread::sleep_for(milliseconds(50));
  ASSERT_TRUE(db().AppendDelayResponse(T(1), parent, js, delay, true));
  auto responses = subscribed.get();
  ASSERT_TRUE(responses) << responses.error().ToString();
  ASSERT_EQ(responses->size(), 1u);
  EXPECT_EQ(std::get<core::DelayFinished>((*responses)[0].event.event).delay_id, delay);

  // From index 1 nothing is there yet: bounded by the deadline.
  auto timed_out = db().SubscribeToNextResponses(parent, 1, WaitOptions::For(milliseconds(50)));
  ASSERT_FALSE(timed_out);
  EXPECT_TRUE(timed_out.error().IsTimeout());
  EXPECT_EQ(timed_out.error().timeout(), TimeoutOutcome::kTimeout);
}

TEST_F(SqliteTest, RolledBackOperationsNotifyNobody) {
  Open();
  auto id = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(id, T(0))));
  auto waited = std::async(std::launch::async, [&] {
    return db().WaitForFinishedResult(id, WaitOptions::For(milliseconds(300)));
  });
  std::this_thread::sleep_for(milliseconds(50));
  // Finished is written, then the batch fails (nothing may follow
  // Finished): the savepoint drops the write and its notification.
  auto failed = db().AppendBatch(
      T(1),
      {FinishedOk(T(1)), AppendRequest{T(1), core::HistoryEventRequest{core::HistoryPersist{
                                                 {1}, core::PersistKindRandomU64{0, 1}}}}},
      id, Version(1));
  ASSERT_FALSE(failed);
  EXPECT_TRUE(failed.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kIllegalState));
  auto result = waited.get();
  ASSERT_FALSE(result);
  ASSERT_TRUE(result.error().IsTimeout());
  EXPECT_FALSE(db().GetPendingState(id)->IsFinished());
}

TEST_F(SqliteTest, SubscriberIgnoresResponsesBeforeItsStartIndex) {
  Open();
  auto parent = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(parent, T(0))));
  auto js = core::JoinSetId::Create(core::JoinSetKind::kNamed, "js").value();
  ASSERT_TRUE(db().AppendBatch(T(0),
                               {DelayRequested(T(0), core::DelayId(parent, js, 1)),
                                DelayRequested(T(0), core::DelayId(parent, js, 2))},
                               parent, Version(1)));
  auto subscribed = std::async(std::launch::async, [&] {
    return db().SubscribeToNextResponses(parent, 1, WaitOptions::For(std::chrono::seconds(30)));
  });
  std::this_thread::sleep_for(milliseconds(50));
  ASSERT_TRUE(db().AppendDelayResponse(T(1), parent, js, core::DelayId(parent, js, 1), true));
  EXPECT_EQ(subscribed.wait_for(milliseconds(100)), std::future_status::timeout)
      << "response 0 is before the start index";
  ASSERT_TRUE(db().AppendDelayResponse(T(2), parent, js, core::DelayId(parent, js, 2), false));
  auto responses = subscribed.get();
  ASSERT_TRUE(responses);
  ASSERT_EQ(responses->size(), 1u);
  EXPECT_EQ(std::get<core::DelayFinished>((*responses)[0].event.event).delay_id,
            core::DelayId(parent, js, 2));
}

TEST_F(SqliteTest, CancellationWakesWaiters) {
  Open();
  auto id = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(id, T(0))));
  CancellationToken token;
  auto waited = std::async(std::launch::async, [&] {
    return db().WaitForFinishedResult(id, WaitOptions::For(std::chrono::hours(1), token));
  });
  std::this_thread::sleep_for(milliseconds(50));
  token.Cancel();
  ASSERT_EQ(waited.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto result = waited.get();
  ASSERT_FALSE(result);
  ASSERT_TRUE(result.error().IsTimeout());
  EXPECT_EQ(result.error().timeout(), TimeoutOutcome::kCancel);
}

TEST_F(SqliteTest, WaitForPendingReturnsAtOnceOrOnCommit) {
  Open();
  // Nothing pending: bounded by the deadline.
  auto start = std::chrono::steady_clock::now();
  db().WaitForPendingByFfqn(T(0), {TestFfqn()}, WaitOptions::For(milliseconds(50)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(45));

  // A commit that makes something pending wakes the waiter.
  auto woken = std::async(std::launch::async, [&] {
    auto begin = std::chrono::steady_clock::now();
    db().WaitForPendingByComponentId(T(0), core::ComponentId::DummyActivity(),
                                     WaitOptions::For(std::chrono::seconds(30)));
    return std::chrono::steady_clock::now() - begin;
  });
  std::this_thread::sleep_for(milliseconds(50));
  ASSERT_TRUE(db().Create(NewCreate(core::ExecutionId::Generate(), T(5))));  // due at its time
  EXPECT_LT(woken.get(), std::chrono::seconds(10));

  // Already pending: immediate.
  start = std::chrono::steady_clock::now();
  db().WaitForPendingByFfqn(T(10), {TestFfqn()}, WaitOptions::For(std::chrono::seconds(30)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// Under synchronous=FULL a commit that only takes locks skips its fsync
// (writer.h, "Unsynced lock commits"); everything else stays synced, and
// the connection returns to FULL for the next such commit.
TEST_F(SqliteTest, LockOnlyCommitsSkipTheFsyncOthersDoNot) {
  SqliteOptions options = Options();
  options.synchronous = SqliteOptions::Synchronous::kFull;
  Open(options);
  const auto id = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(id, T(0))));
  EXPECT_EQ(pool().stats().unsynced_commits, 0u) << "a submission is synced";
  auto locked =
      db().LockPendingByFfqns(10, T(1), {TestFfqn()}, T(1), core::ComponentId::DummyActivity(),
                              core::ExecutorId::Generate(), T(10), core::RunId::Generate(),
                              core::ComponentRetryConfig::Zero());
  ASSERT_TRUE(locked);
  ASSERT_EQ(locked->size(), 1u);
  EXPECT_EQ(pool().stats().unsynced_commits, 1u) << "a lock is not";
  ASSERT_TRUE(db().Create(NewCreate(core::ExecutionId::Generate(), T(2))));
  EXPECT_EQ(pool().stats().unsynced_commits, 1u) << "synced again after it";
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_execution_log"), 3);
}

// A fired delay is found again by the watcher after a power loss (its
// t_delay row goes with the same commit): no fsync of its own. A cancelled
// one was a user's request: synced.
TEST_F(SqliteTest, FiredDelaysSkipTheFsyncCancelledOnesDoNot) {
  SqliteOptions options = Options();
  options.synchronous = SqliteOptions::Synchronous::kFull;
  Open(options);
  const auto parent = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(parent, T(0))));
  const auto js = core::JoinSetId::Create(core::JoinSetKind::kNamed, "js").value();
  const core::DelayId fired(parent, js, 1);
  const core::DelayId cancelled(parent, js, 2);
  ASSERT_TRUE(db().AppendBatch(T(0), {DelayRequested(T(0), fired), DelayRequested(T(0), cancelled)},
                               parent, Version(1)));
  ASSERT_EQ(pool().stats().unsynced_commits, 0u);
  ASSERT_TRUE(db().AppendDelayResponse(T(1), parent, js, fired, true));
  EXPECT_EQ(pool().stats().unsynced_commits, 1u) << "a fired delay is not synced";
  ASSERT_TRUE(db().AppendDelayResponse(T(2), parent, js, cancelled, false));
  EXPECT_EQ(pool().stats().unsynced_commits, 1u) << "a cancelled delay is";
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_join_set_response"), 2);
  EXPECT_EQ(RawCount("SELECT COUNT(*) FROM t_delay"), 0);
}

TEST_F(SqliteTest, NormalSynchronousHasNoUnsyncedCommitsToCount) {
  Open();  // synchronous=NORMAL: every commit is already unsynced
  ASSERT_TRUE(db().Create(NewCreate(core::ExecutionId::Generate(), T(0))));
  ASSERT_TRUE(db().LockPendingByFfqns(10, T(1), {TestFfqn()}, T(1),
                                      core::ComponentId::DummyActivity(),
                                      core::ExecutorId::Generate(), T(10), core::RunId::Generate(),
                                      core::ComponentRetryConfig::Zero()));
  EXPECT_EQ(pool().stats().unsynced_commits, 0u);
}

TEST_F(SqliteTest, ReadsAreServedWhileTheWriterIsBusy) {
  Open();
  auto id = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(id, T(0))));
  Gate entered;
  Gate release;
  auto blocker = std::async(std::launch::async, [&] {
    return pool().RunOnWriterForTest([&](sqlite3*) {
      entered.Open();
      release.Wait();
    });
  });
  entered.Wait();
  // The writer is stuck inside a transaction; reads still answer.
  auto state = db().GetPendingState(id);
  EXPECT_TRUE(state) << state.error().ToString();
  auto log = db().Get(id);
  EXPECT_TRUE(log);
  auto listed = pool().ExternalApiConn().value()->ListExecutions(
      std::nullopt, false, core::Pagination<std::optional<DateTime>>{});
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->size(), 1u);
  auto expired = db().GetExpiredTimers(T(100));
  EXPECT_TRUE(expired);
  release.Open();
  EXPECT_TRUE(blocker.get());
}

// The hot queries must be index range scans: their work (SQLite virtual
// machine steps) must not grow with the number of finished executions, and
// no ORDER BY may need a sort. A growth benchmark measures latency; this
// test pins the cause.
TEST_F(SqliteTest, HotQueriesDoNotScanFinishedExecutions) {
  Open();
  constexpr int kFinished = 3000;
  constexpr int kThreads = 6;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto connection = pool().Connection().value();
      for (int i = t; i < kFinished; i += kThreads) {
        auto id = core::ExecutionId::Generate();
        ASSERT_TRUE(connection->Create(NewCreate(id, T(i % 100))));
        ASSERT_TRUE(connection->Append(id, Version(1), FinishedOk(T(200))));
      }
    });
  }
  for (auto& thread : threads) thread.join();

  auto external = pool().ExternalApiConn().value();
  const auto component = core::ComponentId::DummyActivity();
  const auto executor = core::ExecutorId::Generate();
  auto js = core::JoinSetId::Create(core::JoinSetKind::kNamed, "js").value();
  struct Cost {
    uint64_t steps;
    uint64_t sorts;
  };
  auto measure = [&](auto&& op) {
    SqliteStats before = pool().stats();
    op();
    SqliteStats after = pool().stats();
    return Cost{after.vm_steps - before.vm_steps, after.sorts - before.sorts};
  };
  // Far below one step per finished execution.
  constexpr uint64_t kMaxSteps = 1500;
  auto check = [&](const char* what, Cost cost) {
    EXPECT_LT(cost.steps, kMaxSteps) << what;
    if (std::getenv("STELE_PRINT_COSTS")) std::cout << what << ": " << cost.steps << "\n";
    EXPECT_EQ(cost.sorts, 0u) << what;
  };

  auto parent = core::ExecutionId::Generate();
  check("create", measure([&] { ASSERT_TRUE(db().Create(NewCreate(parent, T(300)))); }));
  check("lock by ffqn", measure([&] {
          auto locked =
              db().LockPendingByFfqns(5, T(300), {TestFfqn()}, T(300), component, executor, T(400),
                                      core::RunId::Generate(), core::ComponentRetryConfig::Zero());
          ASSERT_TRUE(locked);
          ASSERT_EQ(locked->size(), 1u);
        }));
  auto child = parent.NextLevel(js, 1);
  check("submit child", measure([&] {
          auto req = NewCreate(child, T(301));
          req.parent = std::make_pair(parent, js);
          ASSERT_TRUE(db().AppendBatchCreateNewExecution(
              T(301),
              {AppendRequest{T(301), core::HistoryEventRequest{core::HistoryJoinSetCreate{js}}},
               AppendRequest{T(301), core::HistoryEventRequest{core::HistoryJoinSetRequest{
                                         js, core::ChildExecutionRequest{child, TestFfqn(),
                                                                         core::Json::array()}}}}},
              parent, Version(2), {req}));
        }));
  check("join next (blocks)", measure([&] {
          ASSERT_TRUE(
              db().Append(parent, Version(4),
                          AppendRequest{T(302), core::HistoryEventRequest{core::HistoryJoinNext{
                                                    js, T(302), std::nullopt, false}}}));
        }));
  check("lock by component", measure([&] {
          auto locked = db().LockPendingByComponentId(5, T(303), component, T(303), executor,
                                                      T(400), core::RunId::Generate(),
                                                      core::ComponentRetryConfig::Zero());
          ASSERT_TRUE(locked);
          ASSERT_EQ(locked->size(), 1u);  // the child
        }));
  check("respond to parent", measure([&] {
          ASSERT_TRUE(db().AppendBatchRespondToParent(
              AppendEventsToExecution{child, Version(2), {FinishedOk(T(304))}},
              AppendResponseToExecution{parent, T(304), js, child, Version(2),
                                        core::ReturnValueOk{core::Json(1)}},
              T(304)));
        }));
  check("expired timers", measure([&] { ASSERT_TRUE(db().GetExpiredTimers(T(1000))); }));
  check("wait for pending", measure([&] {
          db().WaitForPendingByFfqn(T(305), {TestFfqn()},
                                    WaitOptions::For(std::chrono::seconds(5)));
        }));
  check("subscribe", measure([&] {
          ASSERT_TRUE(db().SubscribeToNextResponses(parent, 0, WaitOptions::For(milliseconds(1))));
        }));
  check("finished result", measure([&] {
          ASSERT_TRUE(db().WaitForFinishedResult(child, WaitOptions::For(milliseconds(1))));
        }));
  check("get", measure([&] { ASSERT_TRUE(db().Get(parent)); }));
  check("list responses", measure([&] {
          ASSERT_TRUE(
              external->ListResponses(parent, core::Pagination<uint32_t>::OlderThan(10, 5, true)));
        }));
  for (bool top_level : {false, true}) {
    for (bool by_ffqn : {false, true}) {
      std::optional<core::FunctionFqn> ffqn;
      if (by_ffqn) ffqn = TestFfqn();
      for (bool newer : {false, true}) {
        using ByTime = core::Pagination<std::optional<DateTime>>;
        using ById = core::Pagination<std::optional<core::ExecutionId>>;
        ByTime by_time =
            newer ? ByTime::NewerThan(20, T(50), false) : ByTime::OlderThan(20, T(50), true);
        ById by_id = newer ? ById::NewerThan(20, parent, false) : ById::OlderThan(20, parent, true);
        std::string what = std::string("list top=") + (top_level ? "1" : "0") +
                           " ffqn=" + (by_ffqn ? "1" : "0") + " newer=" + (newer ? "1" : "0");
        check((what + " by created_at").c_str(), measure([&] {
                auto page = external->ListExecutions(ffqn, top_level, by_time);
                ASSERT_TRUE(page);
                EXPECT_EQ(page->size(), 20u);
              }));
        check((what + " by id").c_str(), measure([&] {
                auto page = external->ListExecutions(ffqn, top_level, by_id);
                ASSERT_TRUE(page);
              }));
      }
    }
  }
}

}  // namespace
}  // namespace stele::storage::sqlite::testing
