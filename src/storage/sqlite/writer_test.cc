// The writer thread: group commit, per-operation savepoints, the policy when
// a whole transaction fails, and draining on Close.
#include <gtest/gtest.h>

#include <future>
#include <thread>
#include <vector>

#include "storage/sqlite/sqlite_test_util.h"

namespace stele::storage::sqlite::testing {
namespace {

class WriterTest : public SqliteTest {
 protected:
  // Parks the writer inside a transaction until Release(); every op
  // submitted meanwhile queues up and joins the next transactions.
  void BlockWriter() {
    blocker_ = std::async(std::launch::async, [this] {
      return pool().RunOnWriterForTest([this](sqlite3*) {
        entered_.Open();
        release_.Wait();
      });
    });
    entered_.Wait();
  }
  // The blocker's own outcome (it shares the transaction it blocked).
  Result<void, DbErrorGeneric> Release() {
    release_.Open();
    return blocker_.get();
  }
  // Waits until `n` ops wait in the queue.
  void AwaitQueued(uint64_t n) {
    ASSERT_TRUE(Eventually([&] { return pool().stats().queued_ops >= n; }))
        << "queued: " << pool().stats().queued_ops;
  }

 private:
  Gate entered_;
  Gate release_;
  std::future<Result<void, DbErrorGeneric>> blocker_;
};

TEST_F(WriterTest, QueuedOperationsShareOneCommit) {
  Open();
  BlockWriter();
  const SqliteStats before = pool().stats();
  constexpr int kCreates = 40;
  std::vector<std::future<Result<Version, DbErrorWrite>>> creates;
  for (int i = 0; i < kCreates; ++i) {
    creates.push_back(std::async(std::launch::async, [&, i] {
      return db().Create(NewCreate(core::ExecutionId::Generate(), T(i)));
    }));
  }
  AwaitQueued(kCreates);
  ASSERT_TRUE(Release());
  for (auto& created : creates) {
    auto result = created.get();
    ASSERT_TRUE(result) << result.error().ToString();
  }
  const SqliteStats after = pool().stats();
  // The blocker's transaction takes every queued create with it.
  EXPECT_EQ(after.transactions_committed - before.transactions_committed, 1u);
  EXPECT_EQ(after.ops_committed - before.ops_committed, uint64_t{kCreates} + 1);
  EXPECT_GE(after.max_ops_in_transaction, uint64_t{kCreates} + 1);
}

TEST_F(WriterTest, FailingOperationIsRolledBackAloneInAGroupCommit) {
  Open();
  constexpr int kExecutions = 20;
  std::vector<core::ExecutionId> ids;
  for (int i = 0; i < kExecutions; ++i) {
    ids.push_back(core::ExecutionId::Generate());
    ASSERT_TRUE(db().Create(NewCreate(ids.back(), T(0))));
  }
  BlockWriter();
  const SqliteStats before = pool().stats();

  // Per execution, all queued into the same group commit:
  //  1. a valid two-event batch at version 1;
  //  2. a three-event batch at version 3 that, for odd executions, fails on
  //     its last event (a lock expiring before it is taken) after writing
  //     two events — those writes must vanish with its savepoint;
  //  3. a stale append at version 1: IllegalState (even, finished) or
  //     VersionConflict{3, 1} (odd).
  std::vector<std::future<Result<Version, DbErrorWrite>>> good;
  std::vector<std::future<Result<Version, DbErrorWrite>>> late;
  std::vector<std::future<Result<Version, DbErrorWrite>>> stale;
  auto persist = [](DateTime at) {
    return AppendRequest{at, core::HistoryEventRequest{core::HistoryPersist{
                                 {1, 2, 3}, core::PersistKindRandomU64{0, 9}}}};
  };
  auto bad_lock = AppendRequest{
      T(2), core::Locked{core::ComponentId::DummyActivity(), core::ExecutorId::Generate(),
                         core::RunId::Generate(), T(1), core::ComponentRetryConfig::Zero()}};
  uint64_t queued = 0;
  for (int i = 0; i < kExecutions; ++i) {
    good.push_back(std::async(std::launch::async, [&, i] {
      return db().AppendBatch(T(1), {persist(T(1)), persist(T(1))}, ids[i], Version(1));
    }));
    AwaitQueued(++queued);
    late.push_back(std::async(std::launch::async, [&, i] {
      AppendRequest last = i % 2 == 0 ? FinishedOk(T(2)) : bad_lock;
      return db().AppendBatch(T(2), {persist(T(2)), persist(T(2)), last}, ids[i], Version(3));
    }));
    AwaitQueued(++queued);
    stale.push_back(std::async(std::launch::async,
                               [&, i] { return db().Append(ids[i], Version(1), persist(T(3))); }));
    AwaitQueued(++queued);
  }
  ASSERT_TRUE(Release());
  for (int i = 0; i < kExecutions; ++i) {
    auto ok = good[i].get();
    ASSERT_TRUE(ok) << ok.error().ToString();
    EXPECT_EQ(*ok, Version(3));
    auto second = late[i].get();
    auto third = stale[i].get();
    ASSERT_FALSE(third);
    if (i % 2 == 0) {
      ASSERT_TRUE(second) << second.error().ToString();
      EXPECT_TRUE(third.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kIllegalState));
    } else {
      ASSERT_FALSE(second);
      EXPECT_TRUE(second.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kValidationFailed))
          << second.error().ToString();
      ASSERT_TRUE(third.error().IsVersionConflict()) << third.error().ToString();
      EXPECT_EQ(third.error().non_retriable().expected(), Version(3));
      EXPECT_EQ(third.error().non_retriable().requested(), Version(1));
    }
  }
  const SqliteStats after = pool().stats();
  EXPECT_EQ(after.ops_rolled_back - before.ops_rolled_back,
            uint64_t{kExecutions / 2 + kExecutions});
  EXPECT_EQ(after.transactions_committed - before.transactions_committed, 1u)
      << "everything rode in the blocker's transaction";
  for (int i = 0; i < kExecutions; ++i) {
    auto log = db().Get(ids[i]);
    ASSERT_TRUE(log);
    EXPECT_EQ(log->events.size(), i % 2 == 0 ? 6u : 3u) << i;
    EXPECT_EQ(log->pending_state.IsFinished(), i % 2 == 0);
  }
}

TEST_F(WriterTest, DuplicateChildResponseRollsBackTheChildEventsToo) {
  Open();
  auto parent = core::ExecutionId::Generate();
  ASSERT_TRUE(db().Create(NewCreate(parent, T(0))));
  auto js = core::JoinSetId::Create(core::JoinSetKind::kNamed, "js").value();
  auto child = parent.NextLevel(js, 1);
  auto other = parent.NextLevel(js, 2);
  ASSERT_TRUE(CreateChild(db(), parent, Version(1), js, child, T(3)));
  ASSERT_TRUE(CreateChild(db(), parent, Version(2), js, other, T(3)));
  auto respond = [&](const core::ExecutionIdDerived& who, Version version, DateTime at) {
    return db().AppendBatchRespondToParent(
        AppendEventsToExecution{who, version, {FinishedOk(at)}},
        AppendResponseToExecution{parent, at, js, who, version, core::ReturnValueOk{core::Json(1)}},
        at);
  };
  ASSERT_TRUE(respond(child, Version(1), T(4)));
  // `other`'s response is there already (written alone, test-only): its
  // Finished is written first, then its response collides. Conflict, and
  // its Finished must be rolled back with it.
  ASSERT_TRUE(db().AppendResponse(
      T(4), parent,
      core::JoinSetResponseEvent{js, core::ChildExecutionFinished{
                                         other, Version(1), core::ReturnValueOk{core::Json(1)}}}));
  auto duplicate = respond(other, Version(1), T(5));
  ASSERT_FALSE(duplicate);
  EXPECT_TRUE(duplicate.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kConflict));
  auto other_log = db().Get(other);
  ASSERT_TRUE(other_log);
  EXPECT_EQ(other_log->events.size(), 1u) << "the Finished before the conflict was rolled back";
  EXPECT_FALSE(other_log->pending_state.IsFinished());
}

TEST_F(WriterTest, ManyConcurrentAppendsWithConflictsKeepEveryWinner) {
  Open();
  constexpr int kExecutions = 8;
  constexpr int kThreads = 8;
  constexpr int kRounds = 25;
  std::vector<core::ExecutionId> ids;
  for (int i = 0; i < kExecutions; ++i) {
    ids.push_back(core::ExecutionId::Generate());
    ASSERT_TRUE(db().Create(NewCreate(ids.back(), T(0))));
  }
  // Every thread races to append to every execution at the version it
  // last saw; exactly one append per version wins, the rest conflict.
  std::atomic<int> wins{0};
  std::atomic<int> conflicts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto connection = pool().Connection().value();
      for (int round = 0; round < kRounds; ++round) {
        for (const auto& id : ids) {
          auto last = connection->GetLastExecutionEvent(id);
          ASSERT_TRUE(last);
          auto appended = connection->Append(
              id, last->version.Increment(),
              AppendRequest{T(1), core::HistoryEventRequest{core::HistoryPersist{
                                      {uint8_t(t)}, core::PersistKindRandomU64{0, 255}}}});
          if (appended) {
            ++wins;
          } else {
            ASSERT_TRUE(appended.error().IsVersionConflict()) << appended.error().ToString();
            ++conflicts;
          }
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_GT(pool().stats().max_ops_in_transaction, 1u) << "no group commit happened";
  int total_events = 0;
  for (const auto& id : ids) {
    auto log = db().Get(id);
    ASSERT_TRUE(log);
    // Versions are dense: no lost or duplicated write.
    for (size_t v = 0; v < log->events.size(); ++v) {
      EXPECT_EQ(log->events[v].version, Version(static_cast<Version::Type>(v)));
    }
    EXPECT_EQ(log->next_version, Version(static_cast<Version::Type>(log->events.size())));
    total_events += static_cast<int>(log->events.size()) - 1;
  }
  EXPECT_EQ(total_events, wins.load());
  EXPECT_EQ(wins + conflicts, kThreads * kRounds * kExecutions);
}

TEST_F(WriterTest, LostTransactionFailsEveryOperationInIt) {
  Open();
  BlockWriter();
  auto lost = core::ExecutionId::Generate();
  auto later = core::ExecutionId::Generate();
  auto first = std::async(std::launch::async, [&] { return db().Create(NewCreate(lost, T(0))); });
  AwaitQueued(1);
  // Rolls the physical transaction back behind the writer's back, as SQLite
  // does by itself on I/O errors or a full disk.
  auto sabotage = std::async(std::launch::async, [&] {
    return pool().RunOnWriterForTest(
        [](sqlite3* raw) { sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr); });
  });
  AwaitQueued(2);
  auto second = std::async(std::launch::async, [&] { return db().Create(NewCreate(later, T(0))); });
  AwaitQueued(3);
  const SqliteStats before = pool().stats();
  EXPECT_FALSE(Release()) << "the blocker shares the doomed transaction...";
  auto first_result = first.get();
  ASSERT_FALSE(first_result);
  EXPECT_EQ(first_result.error().kind(), DbErrorWrite::Kind::kGeneric);
  EXPECT_FALSE(sabotage.get());
  // ...and the op queued after the sabotage runs in a fresh transaction.
  auto second_result = second.get();
  EXPECT_TRUE(second_result) << second_result.error().ToString();
  EXPECT_TRUE(db().Get(lost).error().IsNotFound()) << "nothing of the lost transaction remains";
  EXPECT_TRUE(db().Get(later));
  EXPECT_EQ(pool().stats().transactions_failed - before.transactions_failed, 1u);
}

TEST_F(WriterTest, CloseRunsQueuedOperationsThenRefusesNewOnes) {
  Open();
  BlockWriter();
  std::vector<core::ExecutionId> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(core::ExecutionId::Generate());
  std::vector<std::future<Result<Version, DbErrorWrite>>> creates;
  for (int i = 0; i < 5; ++i) {
    creates.push_back(
        std::async(std::launch::async, [&, i] { return db().Create(NewCreate(ids[i], T(i))); }));
  }
  AwaitQueued(5);
  auto closing = std::async(std::launch::async, [&] { pool().Close(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(Release());
  closing.get();
  for (auto& created : creates) EXPECT_TRUE(created.get());
  auto refused = db().Create(NewCreate(core::ExecutionId::Generate(), T(9)));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), DbErrorWrite(DbErrorGeneric::Close()));
  ClosePool();
  Open();
  for (const auto& id : ids) EXPECT_TRUE(db().Get(id)) << "queued writes were committed";
}

}  // namespace
}  // namespace stele::storage::sqlite::testing
