// Wake-ups across pools (processes) of the PostgreSQL backend: a waiter of
// one pool is woken by a write of another through LISTEN/NOTIFY (notifier.h)
// — for a finished execution, new pending work and a new response — also
// after the waiter's LISTEN connection was terminated and came back.
//
// Polling is set so slow (poll_interval 10 min, so 2 min while a listener
// is down) that within the waits' 60 s bound only a notice can wake a
// waiter: a wait that returns its answer, or returns before its deadline,
// was woken by the other pool's write.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <thread>

#include "storage/differential/postgres_test_fixture.h"
#include "storage/postgres/postgres_pool.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::postgres {
namespace {

using conformance::CreateLocked;
using conformance::CreateReq;
using conformance::DelayRequestReq;
using conformance::FinishedReq;
using conformance::JoinNextReq;
using conformance::JoinSetCreateReq;
using conformance::kT0;
using conformance::LockPendingA;
using conformance::Must;
using conformance::NamedJoinSet;
using conformance::NewId;
using conformance::OkResult;
using conformance::Runner;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kWaitBound = 60s;

PostgresOptions SlowPolling(const std::string& conninfo) {
  return PostgresOptions{.conninfo = conninfo, .poll_interval = 600s};
}

// The waiter pool's sessions carry this name (its conninfo sets it, which
// wins over the pool's own names), so the test can see when its wait has
// checked the database.
constexpr const char* kWaiterName = "stele_test_waiter";

// Two pools on one database, as two processes would have, and an admin
// connection (to the server's own database) watching them.
struct Pools {
  std::string dbname;
  std::unique_ptr<PostgresPool> waiter_pool;
  std::unique_ptr<PostgresPool> writer_pool;
  std::unique_ptr<DbConnection> waiter;
  std::unique_ptr<DbConnection> writer;
  std::unique_ptr<internal::PgConn> admin;
};

Pools OpenPools(const std::string& conninfo, std::string dbname,
                std::unique_ptr<internal::PgConn> admin) {
  Pools p;
  p.dbname = std::move(dbname);
  p.waiter_pool = Must(
      PostgresPool::Open(SlowPolling(conninfo + " application_name=" + std::string(kWaiterName))));
  p.writer_pool = Must(PostgresPool::Open(SlowPolling(conninfo)));
  p.waiter = Must(p.waiter_pool->Connection());
  p.writer = Must(p.writer_pool->Connection());
  p.admin = std::move(admin);
  return p;
}

// Runs `wait` on a thread and, once the wait has checked the database (a
// session of the waiter pool, not its listener, went idle after the wait
// began: its check's pipeline is done) — its waiter is registered before
// that check (notifier.h) —, `write` here. So the check cannot have seen
// the write, and only a notice (or the 10 min poll) can end the wait
// early. Returns how long `wait` took.
Clock::duration WaitThenWrite(Pools& p, const std::function<void()>& wait,
                              const std::function<void()>& write) {
  auto began = p.admin->Exec("SELECT clock_timestamp()::text");
  EXPECT_TRUE(began.has_value()) << (began ? "" : began.error().message);
  const std::string since = began ? began->Str(0, 0) : "-infinity";
  Clock::duration waited{};
  std::thread waiting([&] {
    const auto start = Clock::now();
    wait();
    waited = Clock::now() - start;
  });
  bool checked = false;
  for (auto limit = Clock::now() + 30s; !checked && Clock::now() < limit;) {
    auto res = p.admin->Exec(
        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2 "
        "AND state = 'idle' AND query NOT LIKE 'LISTEN%' AND state_change > $3::timestamptz",
        internal::Params().Text(p.dbname).Text(kWaiterName).Text(since));
    checked = res.has_value() && res->Int(0, 0) > 0;
    if (!checked) std::this_thread::sleep_for(2ms);
  }
  EXPECT_TRUE(checked) << "the wait did not check the database within 30 s";
  write();
  waiting.join();
  return waited;
}

// A finished execution wakes WaitForFinishedResult in the other pool.
void ExpectFinishedWakesWaiter(Pools& p) {
  const ExecutionId id = NewId();
  const Version v = CreateLocked(*p.writer, id, kT0, Runner::New(), kT0 + 1h);
  std::optional<Result<core::SupportedFunctionReturnValue, DbErrorReadWithTimeout>> result;
  const Clock::duration waited = WaitThenWrite(
      p, [&] { result.emplace(p.waiter->WaitForFinishedResult(id, WaitOptions::For(kWaitBound))); },
      [&] { Must(p.writer->Append(id, v, FinishedReq(kT0 + 1s, OkResult()))); });
  // (A wait re-checks at its deadline too: finding the result then is no
  // wake-up.)
  EXPECT_LT(waited, kWaitBound) << "the wait ran to its deadline: not woken by the finish";
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->has_value()) << "not woken by the finish: " << result->error().ToString();
}

// A new response wakes SubscribeToNextResponses in the other pool (and
// leaves its parent pending).
void ExpectResponseWakesWaiter(Pools& p) {
  const ExecutionId parent = NewId();
  const core::JoinSetId js = NamedJoinSet("timers");
  const core::DelayId delay(parent, js, 1);
  Version v = CreateLocked(*p.writer, parent, kT0, Runner::New(), kT0 + 1h);
  Must(p.writer->AppendBatch(kT0,
                             {JoinSetCreateReq(kT0, js), DelayRequestReq(kT0, delay, kT0 + 1s),
                              JoinNextReq(kT0, js, kT0 + 1h)},
                             parent, v));
  std::optional<Result<std::vector<core::JoinSetResponseEventOuter>, DbErrorReadWithTimeout>>
      responses;
  const Clock::duration waited = WaitThenWrite(
      p,
      [&] {
        responses.emplace(
            p.waiter->SubscribeToNextResponses(parent, 0, WaitOptions::For(kWaitBound)));
      },
      [&] {
        EXPECT_EQ(Must(p.writer->AppendDelayResponse(kT0 + 1s, parent, js, delay, true)),
                  AppendDelayResponseOutcome::kSuccess);
      });
  EXPECT_LT(waited, kWaitBound) << "the wait ran to its deadline: not woken by the response";
  ASSERT_TRUE(responses.has_value());
  ASSERT_TRUE(responses->has_value())
      << "not woken by the response: " << responses->error().ToString();
  EXPECT_EQ((*responses)->size(), 1u);
}

// New pending work wakes WaitForPendingByFfqn in the other pool. (That
// wait returns on any wake-up without saying why, so: before its deadline.)
// REQUIRES: nothing of FfqnA pending; leaves nothing pending either.
void ExpectPendingWakesWaiter(Pools& p) {
  auto waiting_executor = Must(p.waiter_pool->DbExecConn());
  const Clock::duration waited = WaitThenWrite(
      p,
      [&] {
        waiting_executor->WaitForPendingByFfqn(kT0, {conformance::FfqnA()},
                                               WaitOptions::For(kWaitBound));
      },
      [&] { Must(p.writer->Create(CreateReq(NewId(), kT0))); });
  EXPECT_LT(waited, kWaitBound) << "the wait ran to its deadline: not woken by the new work";
  EXPECT_EQ(Must(LockPendingA(*p.writer, 10, kT0, Runner::New(), kT0 + 1h)).size(), 1u);
}

TEST_F(PostgresPoolTest, NoticeWakesAResponseWaiterOfAnotherPool) {
  const std::string conninfo = EmptyDatabase();
  Pools p = OpenPools(conninfo, databases_.back(), Admin());
  ASSERT_NE(p.admin, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectResponseWakesWaiter(p));
  EXPECT_GT(NoticesSentWithin(*p.writer_pool, std::chrono::seconds(10)), 0u);
}

// pg_terminate_backend of both pools' LISTEN sessions: each listener
// reconnects (with a backoff) and LISTENs again, and notices wake waiters
// across the pools as before — well within the 10 min poll interval.
TEST_F(PostgresPoolTest, ListenerReconnectsAfterItsBackendIsTerminated) {
  const std::string conninfo = EmptyDatabase();
  const std::string dbname = databases_.back();
  Pools p = OpenPools(conninfo, dbname, Admin());
  auto admin = Admin();
  ASSERT_NE(p.admin, nullptr);
  ASSERT_NE(admin, nullptr);
  const std::set<int64_t> before = AwaitListeners(*admin, dbname, 2, {});
  ASSERT_EQ(before.size(), 2u) << "the two pools' LISTEN sessions are not both up";
  // The pools name their sessions (pg_conn.h), unless the conninfo does.
  EXPECT_EQ(IdleSessions(*admin, dbname, "application_name = 'stele listener'").size(), 1u);
  EXPECT_EQ(
      IdleSessions(*admin, dbname,
                   "application_name = '" + std::string(kWaiterName) + "' AND query LIKE 'LISTEN%'")
          .size(),
      1u);
  // Working before the cut, so a failure below is the reconnection's.
  ASSERT_NO_FATAL_FAILURE(ExpectFinishedWakesWaiter(p));

  for (int64_t pid : before) {
    auto killed = admin->Exec("SELECT pg_terminate_backend($1)", internal::Params().Int(pid));
    ASSERT_TRUE(killed.has_value()) << killed.error().message;
  }
  const std::set<int64_t> after = AwaitListeners(*admin, dbname, 2, before);
  ASSERT_EQ(after.size(), 2u) << "the listeners did not LISTEN again within 60 s";
  // Only the listeners were cut: the pooled sessions survived.
  EXPECT_GE(IdleSessions(*admin, dbname, "application_name = 'stele'").size(), 1u);

  // The finish goes first: its wake-up proves the waiter's new LISTEN is
  // live (and its reconnect wake-up of every waiter done), which the
  // pending wait, returning on any wake-up, needs. The response comes
  // last: it makes its parent pending.
  ASSERT_NO_FATAL_FAILURE(ExpectFinishedWakesWaiter(p));
  ASSERT_NO_FATAL_FAILURE(ExpectPendingWakesWaiter(p));
  ASSERT_NO_FATAL_FAILURE(ExpectResponseWakesWaiter(p));
}

}  // namespace
}  // namespace stele::storage::postgres
