// Tests of what is specific to the PostgreSQL backend (the contract itself
// is covered by the conformance suite): migrations, reconnection, errors
// when the server is down, NOTIFY across pools, and SKIP LOCKED across
// pools. Skips without STELE_TEST_POSTGRES_URL (scripts/with_postgres.sh);
// fails instead under STELE_REQUIRE_POSTGRES_TESTS=1.
#include "storage/postgres/postgres_pool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <thread>

#include "storage/differential/postgres_test_fixture.h"
#include "storage/postgres/pg_conn.h"
#include "storage/postgres/schema.h"
#include "storage/postgres/test_database.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::postgres {
namespace {

using conformance::ChildCreateReq;
using conformance::ChildId;
using conformance::ChildRequestReq;
using conformance::ChildResponse;
using conformance::CreateLocked;
using conformance::CreateReq;
using conformance::DelayRequestReq;
using conformance::FinishedReq;
using conformance::JoinNextReq;
using conformance::JoinSetCreateReq;
using conformance::kT0;
using conformance::LockOneAt;
using conformance::LockPendingA;
using conformance::Must;
using conformance::NamedJoinSet;
using conformance::NewId;
using conformance::OkResult;
using conformance::PersistReq;
using conformance::RetryConfig;
using conformance::Runner;
using internal::PgConn;
using namespace std::chrono_literals;

int64_t CountMigrations(const std::string& conninfo) {
  auto conn = PgConn::Connect(conninfo);
  EXPECT_TRUE(conn.has_value());
  auto res = (*conn)->Exec("SELECT COUNT(*) FROM t_metadata");
  EXPECT_TRUE(res.has_value());
  return res->Int(0, 0);
}

TEST_F(PostgresPoolTest, MigrationsAreIdempotent) {
  const std::string conninfo = EmptyDatabase();
  for (int i = 0; i < 3; ++i) {
    auto pool = PostgresPool::Open(PostgresOptions{.conninfo = conninfo});
    ASSERT_TRUE(pool.has_value()) << pool.error().ToString();
    (*pool)->Close();
  }
  EXPECT_EQ(CountMigrations(conninfo), internal::kLatestSchemaVersion);
}

TEST_F(PostgresPoolTest, ConcurrentOpenersMigrateOnce) {
  const std::string conninfo = EmptyDatabase();
  std::atomic<int> opened{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      auto pool = PostgresPool::Open(PostgresOptions{.conninfo = conninfo});
      EXPECT_TRUE(pool.has_value()) << (pool ? "" : pool.error().ToString());
      if (pool) ++opened;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(opened.load(), 4);
  EXPECT_EQ(CountMigrations(conninfo), internal::kLatestSchemaVersion);
}

TEST_F(PostgresPoolTest, ServerDownIsAClearGenericError) {
  // Port 1 on loopback: nothing listens there.
  auto pool =
      PostgresPool::Open(PostgresOptions{.conninfo = "host=127.0.0.1 port=1 connect_timeout=2"});
  ASSERT_FALSE(pool.has_value());
  EXPECT_EQ(pool.error().kind(), DbErrorGeneric::Kind::kUncategorized);
  EXPECT_NE(pool.error().reason().find("cannot connect to PostgreSQL"), std::string::npos)
      << pool.error().ToString();
}

TEST_F(PostgresPoolTest, ReconnectsAfterTerminateBackend) {
  const std::string conninfo = EmptyDatabase();
  auto pool = Must(PostgresPool::Open(PostgresOptions{.conninfo = conninfo, .max_connections = 2}));
  auto db = Must(pool->ConnectionTest());
  Must(db->Create(CreateReq(NewId(), kT0)));
  // Kill every session of the database (the pooled ones and the listener).
  auto admin = Admin();
  const std::string dbname = databases_.back();
  auto killed = admin->Exec(
      "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1",
      internal::Params().Text(dbname));
  ASSERT_TRUE(killed.has_value());
  EXPECT_GE(killed->Int(0, 0), 1);
  std::this_thread::sleep_for(100ms);
  // The dead idle connection is replaced transparently.
  ExecutionId id = NewId();
  auto created = db->Create(CreateReq(id, kT0));
  EXPECT_TRUE(created.has_value()) << created.error().ToString();
  auto state = db->GetPendingState(id);
  EXPECT_TRUE(state.has_value()) << state.error().ToString();
}

TEST_F(PostgresPoolTest, NotifyWakesAWaiterOfAnotherPool) {
  const std::string conninfo = EmptyDatabase();
  // Polling so slow that only a notification can wake the waiter in time.
  PostgresOptions options{.conninfo = conninfo, .poll_interval = 60s};
  auto waiter_pool = Must(PostgresPool::Open(options));
  auto writer_pool = Must(PostgresPool::Open(options));
  auto waiter = Must(waiter_pool->Connection());
  auto writer = Must(writer_pool->Connection());
  ExecutionId id = NewId();
  Runner runner = Runner::New();
  Must(writer->Create(CreateReq(id, kT0)));
  auto executor = Must(writer_pool->DbExecConn());
  auto locked = Must(LockPendingA(*executor, 1, kT0, runner, kT0 + 10s));
  ASSERT_EQ(locked.size(), 1u);
  std::this_thread::sleep_for(200ms);  // the waiter's listener is up

  std::thread finisher([&] {
    std::this_thread::sleep_for(200ms);
    EXPECT_TRUE(
        writer->Append(id, locked[0].next_version, FinishedReq(kT0 + 1s, OkResult())).has_value());
  });
  const auto start = std::chrono::steady_clock::now();
  auto result = waiter->WaitForFinishedResult(id, WaitOptions::For(30s));
  finisher.join();
  EXPECT_TRUE(result.has_value()) << result.error().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_GT(NoticesSentWithin(*writer_pool, std::chrono::seconds(10)),
            0u);  // through the notice sender

  // Pending work too.
  auto waiting_executor = Must(waiter_pool->DbExecConn());
  std::thread creator([&] {
    std::this_thread::sleep_for(200ms);
    EXPECT_TRUE(writer->Create(CreateReq(NewId(), kT0)).has_value());
  });
  const auto start2 = std::chrono::steady_clock::now();
  waiting_executor->WaitForPendingByFfqn(kT0, {conformance::FfqnA()}, WaitOptions::For(30s));
  creator.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start2, 10s);
}

TEST_F(PostgresPoolTest, TwoPoolsNeverLockOneExecutionTwice) {
  const std::string conninfo = EmptyDatabase();
  PostgresOptions options{.conninfo = conninfo, .max_connections = 4};
  auto pool_a = Must(PostgresPool::Open(options));
  auto pool_b = Must(PostgresPool::Open(options));
  constexpr int kExecutions = 300;
  {
    auto db = Must(pool_a->Connection());
    for (int i = 0; i < kExecutions; ++i) Must(db->Create(CreateReq(NewId(), kT0)));
  }
  std::mutex mu;
  std::vector<ExecutionId> all;
  std::vector<std::thread> threads;
  for (PostgresPool* pool : {pool_a.get(), pool_b.get()}) {
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&, pool] {
        auto executor = Must(pool->DbExecConn());
        Runner runner = Runner::New();
        while (true) {
          auto locked = LockPendingA(*executor, 7, kT0, runner, kT0 + 60s);
          ASSERT_TRUE(locked.has_value()) << locked.error().ToString();
          if (locked->empty()) return;
          std::lock_guard lock(mu);
          for (const auto& l : *locked) all.push_back(l.execution_id);
        }
      });
    }
  }
  for (auto& t : threads) t.join();
  std::set<std::string> unique;
  for (const auto& id : all) unique.insert(id.ToString());
  EXPECT_EQ(all.size(), static_cast<size_t>(kExecutions));
  EXPECT_EQ(unique.size(), static_cast<size_t>(kExecutions));
}

// Round trips (waits for the server's reply) of each logical operation, in
// steady state (its statements already prepared on the connection): the
// table in docs/postgres.md. The bounds are the backend's design — one
// round trip for a write that reads nothing first (Create, locking a batch
// of any size), two for one that must lock and read a row before it
// decides (the lock and the reads in the first, the writes and COMMIT in
// the second) — so a change that adds round trips fails here.
TEST_F(PostgresPoolTest, RoundTripsPerOperation) {
  const std::string conninfo = EmptyDatabase();
  // One connection, so every statement is prepared after the warm-up run.
  auto pool = Must(PostgresPool::Open(PostgresOptions{.conninfo = conninfo, .max_connections = 1}));
  auto db = Must(pool->ConnectionTest());
  const DateTime at = kT0 + 1s;
  const core::JoinSetId js = NamedJoinSet("js");
  auto drain = [&] {
    while (!Must(LockPendingA(*db, 1000, kT0 + 1h, Runner::New(), kT0 + 2h)).empty()) {
    }
  };
  struct Row {
    std::string op;
    uint64_t round_trips = 0;
    uint64_t statements = 0;
    uint64_t bound = 0;
  };
  std::vector<Row> rows;
  // `setup` (not counted) returns the operation to count; both run twice
  // and the second run counts.
  auto measure = [&](const std::string& op, uint64_t bound,
                     const std::function<std::function<void()>()>& setup) {
    Row row{op, 0, 0, bound};
    for (int run = 0; run < 2; ++run) {
      std::function<void()> fn = setup();
      const PostgresPoolStats before = pool->Stats();
      fn();
      const PostgresPoolStats after = pool->Stats();
      row.round_trips = after.round_trips - before.round_trips;
      row.statements = after.statements - before.statements;
    }
    rows.push_back(row);
  };

  measure("Create", 1, [&] { return [&] { Must(db->Create(CreateReq(NewId(), kT0))); }; });
  measure("LockPendingByFfqns, nothing due", 1, [&] {
    drain();
    return [&] { EXPECT_TRUE(Must(LockPendingA(*db, 8, at, Runner::New(), at + 10s)).empty()); };
  });
  measure("LockPendingByFfqns, batch of 1", 1, [&] {
    drain();
    Must(db->Create(CreateReq(NewId(), kT0)));
    return [&] { EXPECT_EQ(Must(LockPendingA(*db, 8, at, Runner::New(), at + 10s)).size(), 1u); };
  });
  measure("LockPendingByFfqns, batch of 8", 1, [&] {
    drain();
    for (int i = 0; i < 8; ++i) Must(db->Create(CreateReq(NewId(), kT0)));
    return [&] { EXPECT_EQ(Must(LockPendingA(*db, 8, at, Runner::New(), at + 10s)).size(), 8u); };
  });
  measure("LockOne", 2, [&] {
    ExecutionId id = NewId();
    Must(db->Create(CreateReq(id, kT0)));
    return [&, id] { Must(LockOneAt(*db, id, Version(1), at, Runner::New(), at + 10s)); };
  });
  measure("Append (Persist)", 2, [&] {
    ExecutionId id = NewId();
    Version v = CreateLocked(*db, id, kT0, Runner::New(), kT0 + 10s);
    return [&, id, v] { Must(db->Append(id, v, PersistReq(at))); };
  });
  measure("Append (Finished)", 2, [&] {
    ExecutionId id = NewId();
    Version v = CreateLocked(*db, id, kT0, Runner::New(), kT0 + 10s);
    return [&, id, v] { Must(db->Append(id, v, FinishedReq(at, OkResult()))); };
  });
  measure("AppendBatch (JoinSetCreate, ChildRequest, JoinNext)", 2, [&] {
    ExecutionId id = NewId();
    Version v = CreateLocked(*db, id, kT0, Runner::New(), kT0 + 10s);
    return [&, id, v] {
      Must(db->AppendBatch(at,
                           {JoinSetCreateReq(at, js), ChildRequestReq(at, ChildId(id, js, 1)),
                            JoinNextReq(at, js, kT0 + 10s)},
                           id, v));
    };
  });
  measure("AppendBatchCreateNewExecution (3 events, 1 child)", 2, [&] {
    ExecutionId id = NewId();
    Version v = CreateLocked(*db, id, kT0, Runner::New(), kT0 + 10s);
    return [&, id, v] {
      const auto child = ChildId(id, js, 1);
      Must(db->AppendBatchCreateNewExecution(
          at,
          {JoinSetCreateReq(at, js), ChildRequestReq(at, child), JoinNextReq(at, js, kT0 + 10s)},
          id, v, {ChildCreateReq(child, at)}));
    };
  });
  measure("AppendBatchCreateAndLockChildren (3 events, 1 child locked)", 2, [&] {
    ExecutionId id = NewId();
    Version v = CreateLocked(*db, id, kT0, Runner::New(), kT0 + 10s);
    return [&, id, v] {
      const auto child = ChildId(id, js, 1);
      Runner runner = Runner::New();
      const core::Locked lock{conformance::ComponentA(), runner.executor_id, runner.run_id, at + 5s,
                              RetryConfig()};
      auto done = Must(db->AppendBatchCreateAndLockChildren(
          at,
          {JoinSetCreateReq(at, js), ChildRequestReq(at, child), JoinNextReq(at, js, kT0 + 10s)},
          id, v, {ChildCreateReq(child, at)}, {ChildLock{ExecutionId(child), lock}}));
      EXPECT_EQ(done.locked.size(), 1u);
    };
  });
  measure("AppendBatchRespondToParent (child Finished + response)", 2, [&] {
    ExecutionId id = NewId();
    Version v = CreateLocked(*db, id, kT0, Runner::New(), kT0 + 10s);
    const auto child = ChildId(id, js, 1);
    v = Must(db->AppendBatchCreateNewExecution(
        kT0,
        {JoinSetCreateReq(kT0, js), ChildRequestReq(kT0, child), JoinNextReq(kT0, js, kT0 + 10s)},
        id, v, {ChildCreateReq(child, kT0)}));
    Version cv = Must(LockOneAt(*db, ExecutionId(child), Version(1), kT0, Runner::New(), kT0 + 10s))
                     .next_version;
    return [&, child, cv] {
      Must(db->AppendBatchRespondToParent(
          AppendEventsToExecution{ExecutionId(child), cv, {FinishedReq(at, OkResult())}},
          ChildResponse(child, at, cv, OkResult()), at));
    };
  });
  measure("AppendOutcomesAndBatch (child Finished + response, next step of 3 events)", 2, [&] {
    ExecutionId id = NewId();
    Version v = CreateLocked(*db, id, kT0, Runner::New(), kT0 + 10s);
    const auto child = ChildId(id, js, 1);
    v = Must(db->AppendBatchCreateNewExecution(
        kT0,
        {JoinSetCreateReq(kT0, js), ChildRequestReq(kT0, child), JoinNextReq(kT0, js, kT0 + 10s)},
        id, v, {ChildCreateReq(child, kT0)}));
    Version cv = Must(LockOneAt(*db, ExecutionId(child), Version(1), kT0, Runner::New(), kT0 + 10s))
                     .next_version;
    return [&, id, v, child, cv] {
      const core::JoinSetId next_js = NamedJoinSet("next");
      const auto next_child = ChildId(id, next_js, 1);
      std::vector<ChildOutcome> outcomes{ChildOutcome{
          AppendEventsToExecution{ExecutionId(child), cv, {FinishedReq(at, OkResult())}},
          ChildResponse(child, at, cv, OkResult()), 0}};
      Must(db->AppendOutcomesAndBatch(
          at, outcomes,
          {JoinSetCreateReq(at, next_js), ChildRequestReq(at, next_child),
           JoinNextReq(at, next_js, kT0 + 10s)},
          id, v, {ChildCreateReq(next_child, at)}, {}));
    };
  });
  measure("AppendDelayResponse", 2, [&] {
    ExecutionId id = NewId();
    Version v = CreateLocked(*db, id, kT0, Runner::New(), kT0 + 10s);
    const core::DelayId delay(id, js, 1);
    Must(db->AppendBatch(kT0,
                         {JoinSetCreateReq(kT0, js), DelayRequestReq(kT0, delay, at),
                          JoinNextReq(kT0, js, kT0 + 10s)},
                         id, v));
    return [&, id, delay] {
      EXPECT_EQ(Must(db->AppendDelayResponse(at, id, js, delay, true)),
                AppendDelayResponseOutcome::kSuccess);
    };
  });
  ExecutionId finished = NewId();
  {
    Version v = CreateLocked(*db, finished, kT0, Runner::New(), kT0 + 10s);
    const core::DelayId delay(finished, js, 1);
    v = Must(db->AppendBatch(kT0, {JoinSetCreateReq(kT0, js), DelayRequestReq(kT0, delay, at)},
                             finished, v));
    Must(db->AppendDelayResponse(at, finished, js, delay, true));
    Must(db->Append(finished, v, FinishedReq(at, OkResult())));
  }
  measure("SubscribeToNextResponses (one there)", 1, [&] {
    return [&] {
      EXPECT_EQ(Must(db->SubscribeToNextResponses(finished, 0, WaitOptions::For(1s))).size(), 1u);
    };
  });
  measure("WaitForFinishedResult (finished)", 1,
          [&] { return [&] { Must(db->WaitForFinishedResult(finished, WaitOptions::For(1s))); }; });
  measure("GetExpiredTimers", 1, [&] { return [&] { Must(db->GetExpiredTimers(kT0)); }; });
  measure("Get (whole log)", 1, [&] { return [&] { Must(db->Get(finished)); }; });

  std::string table = "| Operation | Round trips | Statements |\n|---|---|---|\n";
  for (const Row& row : rows) {
    table += "| " + row.op + " | " + std::to_string(row.round_trips) + " | " +
             std::to_string(row.statements) + " |\n";
  }
  std::printf("%s", table.c_str());
  for (const Row& row : rows) {
    EXPECT_LE(row.round_trips, row.bound) << row.op;
  }
}

// Children of one parent finishing at once (a fan-out) on two pools — two
// processes — with one request that names a wrong version: every good one
// is recorded exactly once, the bad one fails with its own version
// conflict, and the parent is unblocked. Their writes may share
// transactions (response_batcher.h); how many did is printed, not
// asserted, as it depends on timing.
TEST_F(PostgresPoolTest, ChildrenRespondingAtOnceAreEachRecordedOnce) {
  const std::string conninfo = EmptyDatabase();
  const PostgresOptions options{.conninfo = conninfo, .max_connections = 4};
  auto pool_a = Must(PostgresPool::Open(options));
  auto pool_b = Must(PostgresPool::Open(options));
  auto db = Must(pool_a->ConnectionTest());
  constexpr uint32_t kChildren = 48;
  constexpr uint32_t kBad = 17;
  const ExecutionId parent = NewId();
  const core::JoinSetId js = NamedJoinSet("fan");
  Version v = CreateLocked(*db, parent, kT0, Runner::New(), kT0 + 1h);
  std::vector<AppendRequest> batch{JoinSetCreateReq(kT0, js)};
  std::vector<CreateRequest> children;
  std::vector<core::ExecutionIdDerived> child_ids;
  for (uint32_t i = 1; i <= kChildren; ++i) {
    child_ids.push_back(ChildId(parent, js, i));
    batch.push_back(ChildRequestReq(kT0, child_ids.back()));
    children.push_back(ChildCreateReq(child_ids.back(), kT0));
  }
  batch.push_back(JoinNextReq(kT0, js, kT0 + 1h));
  Must(db->AppendBatchCreateNewExecution(kT0, batch, parent, v, children));
  std::vector<Version> child_versions;
  for (const auto& child : child_ids) {
    child_versions.push_back(
        Must(LockOneAt(*db, ExecutionId(child), Version(1), kT0, Runner::New(), kT0 + 1h))
            .next_version);
  }

  const DateTime at = kT0 + 1s;
  std::vector<std::optional<Result<Version, DbErrorWrite>>> results(kChildren);
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < kChildren; ++i) {
    threads.emplace_back([&, i] {
      auto conn = Must((i % 2 == 0 ? pool_a : pool_b)->Connection());
      const Version version = i + 1 == kBad ? child_versions[i].Increment() : child_versions[i];
      while (!go) std::this_thread::yield();
      results[i].emplace(conn->AppendBatchRespondToParent(
          AppendEventsToExecution{
              ExecutionId(child_ids[i]), version, {FinishedReq(at, OkResult())}},
          ChildResponse(child_ids[i], at, version, OkResult()), at));
    });
  }
  go = true;
  for (auto& t : threads) t.join();

  for (uint32_t i = 0; i < kChildren; ++i) {
    ASSERT_TRUE(results[i].has_value());
    if (i + 1 == kBad) {
      ASSERT_FALSE(results[i]->has_value());
      EXPECT_TRUE(results[i]->error().IsVersionConflict()) << results[i]->error().ToString();
    } else {
      ASSERT_TRUE(results[i]->has_value()) << i << ": " << results[i]->error().ToString();
      EXPECT_EQ(**results[i], child_versions[i].Increment());
    }
  }
  const ExecutionLog log = Must(db->Get(parent));
  std::set<std::string> responded;
  for (const auto& response : log.responses) {
    const auto& finished = std::get<core::ChildExecutionFinished>(response.event.event);
    EXPECT_TRUE(responded.insert(finished.child_execution_id.ToString()).second)
        << "recorded twice: " << finished.child_execution_id.ToString();
  }
  EXPECT_EQ(responded.size(), kChildren - 1);
  EXPECT_EQ(responded.count(child_ids[kBad - 1].ToString()), 0u);
  EXPECT_EQ(log.pending_state.StateName(), "PendingAt");
  for (uint32_t i = 0; i < kChildren; ++i) {
    EXPECT_EQ(Must(db->GetPendingState(ExecutionId(child_ids[i]))).IsFinished(), i + 1 != kBad);
  }
  for (const auto* pool : {pool_a.get(), pool_b.get()}) {
    const PostgresPoolStats stats = pool->Stats();
    std::printf("pool: %llu responses in %llu shared transactions, %llu of them retried alone\n",
                static_cast<unsigned long long>(stats.grouped_responses),
                static_cast<unsigned long long>(stats.response_groups),
                static_cast<unsigned long long>(stats.failed_response_groups));
  }
}

TEST_F(PostgresPoolTest, PoolIsBounded) {
  const std::string conninfo = EmptyDatabase();
  auto pool = Must(PostgresPool::Open(PostgresOptions{.conninfo = conninfo, .max_connections = 2}));
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      auto db = Must(pool->Connection());
      for (int i = 0; i < 20; ++i) EXPECT_TRUE(db->Create(CreateReq(NewId(), kT0)).has_value());
    });
  }
  for (auto& t : threads) t.join();
  auto admin = Admin();
  auto count = admin->Exec("SELECT COUNT(*) FROM pg_stat_activity WHERE datname = $1",
                           internal::Params().Text(databases_.back()));
  ASSERT_TRUE(count.has_value());
  // Two pooled connections plus the listener and the notice sender.
  EXPECT_LE(count->Int(0, 0), 4);
}

}  // namespace
}  // namespace stele::storage::postgres
