// The database goes away under an open PostgresPool and comes back.
//
// The outage: ALTER DATABASE … ALLOW_CONNECTIONS false, then
// pg_terminate_backend of every session of the database. To the pool this
// is the server gone — every connection (pooled, listener, notice sender)
// is cut and every new one refused — but only for this test's database, so
// the tests running beside it on the same throw-away cluster are untouched
// (pg_ctl stop would cut them all; the multi-node DatabaseRestartUnderLoad
// test restarts the whole cluster, serially).
//
// Checked: while it lasts, writes, reads, waits and locking fail promptly
// with DbErrorGeneric naming the cause — no hang past a bound, no crash;
// once connections are allowed again the same pool works without being
// reopened, its listener LISTENs again, and every write acknowledged before
// or during the outage is in the database.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/differential/postgres_test_fixture.h"
#include "storage/postgres/postgres_pool.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::postgres {
namespace {

using conformance::CreateLocked;
using conformance::CreateReq;
using conformance::kT0;
using conformance::LockPendingA;
using conformance::Must;
using conformance::NewId;
using conformance::Runner;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// No call may take longer than this during the outage: connecting is
// refused at once, and a caller waiting for a connection gives up after
// the pool's acquire_timeout (2 s here). Generous for a loaded machine.
constexpr auto kCallBound = 20s;

// The reason of a DbErrorGeneric says what happened, and that it was
// PostgreSQL: the refusal, or the cut connection.
void ExpectClearOutageError(const DbErrorGeneric& error, const char* call) {
  EXPECT_EQ(error.kind(), DbErrorGeneric::Kind::kUncategorized) << call;
  const std::string& reason = error.reason();
  const bool refused = reason.find("cannot connect to PostgreSQL") != std::string::npos &&
                       reason.find("is not currently accepting connections") != std::string::npos;
  const bool cut = reason.find("terminating connection") != std::string::npos ||
                   reason.find("server closed the connection") != std::string::npos;
  EXPECT_TRUE(refused || cut) << call << ": unclear error: " << error.ToString();
}

// Sets `stop` and joins the threads when the test leaves its scope, also
// through a failed ASSERT.
struct JoinOnExit {
  std::atomic<bool>& stop;
  std::vector<std::thread>& threads;
  ~JoinOnExit() {
    stop = true;
    for (auto& t : threads) {
      if (t.joinable()) t.join();
    }
  }
};

TEST_F(PostgresPoolTest, OutageFailsCallsClearlyAndThePoolRecovers) {
  const std::string conninfo = EmptyDatabase();
  const std::string dbname = databases_.back();
  auto pool = Must(PostgresPool::Open(PostgresOptions{
      .conninfo = conninfo, .max_connections = 4, .acquire_timeout = 2s, .poll_interval = 1s}));
  auto db = Must(pool->ConnectionTest());
  auto admin = Admin();
  ASSERT_NE(admin, nullptr);

  // Acknowledged before the outage.
  std::mutex mu;
  std::vector<ExecutionId> acknowledged;  // guarded by mu
  for (int i = 0; i < 20; ++i) {
    const ExecutionId id = NewId();
    Must(db->Create(CreateReq(id, kT0)));
    acknowledged.push_back(id);
  }
  const ExecutionId first = acknowledged.front();
  const ExecutionId running = NewId();
  const Version running_version = CreateLocked(*db, running, kT0, Runner::New(), kT0 + 1h);

  // Writers keep creating through the outage; what they got acknowledged
  // must be there afterwards. Every call is timed.
  std::atomic<bool> stop{false};
  std::atomic<int> writer_failures{0};
  std::atomic<int64_t> slowest_ms{0};
  auto timed = [&](const auto& call) {
    const auto start = Clock::now();
    auto result = call();
    const int64_t ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    int64_t seen = slowest_ms.load();
    while (ms > seen && !slowest_ms.compare_exchange_weak(seen, ms)) {
    }
    return result;
  };
  std::vector<std::thread> writers;
  JoinOnExit join_writers{stop, writers};
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&] {
      auto conn = Must(pool->Connection());
      while (!stop) {
        const ExecutionId id = NewId();
        auto created = timed([&] { return conn->Create(CreateReq(id, kT0)); });
        if (created) {
          std::lock_guard lock(mu);
          acknowledged.push_back(id);
        } else {
          EXPECT_EQ(created.error().kind(), DbErrorWrite::Kind::kGeneric)
              << created.error().ToString();
          ++writer_failures;
          std::this_thread::sleep_for(10ms);
        }
      }
    });
  }
  // Some writes went through before the cut.
  for (auto limit = Clock::now() + 30s; Clock::now() < limit;) {
    {
      std::lock_guard lock(mu);
      if (acknowledged.size() >= 40) break;
    }
    std::this_thread::sleep_for(5ms);
  }

  // --- The outage ---
  ASSERT_TRUE(admin->ExecScript("ALTER DATABASE " + dbname + " ALLOW_CONNECTIONS false"));
  EXPECT_GE(TerminateSessions(*admin, dbname), 1);

  // Every kind of call fails, promptly and clearly; twice each, so that
  // both a cut connection and a refused reconnect are met.
  for (int round = 0; round < 2; ++round) {
    auto created = timed([&] { return db->Create(CreateReq(NewId(), kT0)); });
    ASSERT_FALSE(created.has_value()) << "a write succeeded during the outage";
    ASSERT_EQ(created.error().kind(), DbErrorWrite::Kind::kGeneric) << created.error().ToString();
    ExpectClearOutageError(created.error().generic(), "Create");

    auto read = timed([&] { return db->Get(first); });
    ASSERT_FALSE(read.has_value());
    ASSERT_EQ(read.error().kind(), DbErrorRead::Kind::kGeneric) << read.error().ToString();
    ExpectClearOutageError(read.error().generic(), "Get");

    auto locked = timed([&] { return LockPendingA(*db, 5, kT0, Runner::New(), kT0 + 1h); });
    ASSERT_FALSE(locked.has_value());
    ExpectClearOutageError(locked.error(), "LockPendingByFfqns");

    // A wait does not sit out its deadline: it meets the error at its
    // first check of the database.
    auto waited = timed([&] { return db->WaitForFinishedResult(running, WaitOptions::For(60s)); });
    ASSERT_FALSE(waited.has_value());
    ASSERT_FALSE(waited.error().IsTimeout()) << "the wait ran to its deadline";
  }
  // The writers met it too.
  for (auto limit = Clock::now() + 30s; writer_failures.load() == 0 && Clock::now() < limit;) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_GT(writer_failures.load(), 0);
  EXPECT_LT(slowest_ms.load(), std::chrono::milliseconds(kCallBound).count())
      << "a call hung during the outage";

  // --- Back ---
  ASSERT_TRUE(admin->ExecScript("ALTER DATABASE " + dbname + " ALLOW_CONNECTIONS true"));
  // The same pool, not reopened: the first call reconnects.
  auto created = db->Create(CreateReq(NewId(), kT0));
  EXPECT_TRUE(created.has_value()) << created.error().ToString();
  EXPECT_TRUE(db->Append(running, running_version,
                         conformance::FinishedReq(kT0 + 1s, conformance::OkResult()))
                  .has_value());
  EXPECT_TRUE(db->WaitForFinishedResult(running, WaitOptions::For(10s)).has_value());
  // The listener LISTENs again (it retries with a backoff of at most 1 s).
  EXPECT_EQ(AwaitListeners(*admin, dbname, 1, {}).size(), 1u)
      << "the pool's listener did not come back";
  // The writers succeed again.
  size_t acknowledged_at_recovery = 0;
  {
    std::lock_guard lock(mu);
    acknowledged_at_recovery = acknowledged.size();
  }
  for (auto limit = Clock::now() + 30s; Clock::now() < limit;) {
    {
      std::lock_guard lock(mu);
      if (acknowledged.size() >= acknowledged_at_recovery + 10) break;
    }
    std::this_thread::sleep_for(5ms);
  }
  stop = true;
  for (auto& t : writers) t.join();
  std::lock_guard lock(mu);

  // Nothing acknowledged is lost: every id is there, as another process
  // (a fresh pool) sees it.
  EXPECT_GE(acknowledged.size(), acknowledged_at_recovery + 10) << "the writers did not recover";
  auto fresh = Must(PostgresPool::Open(PostgresOptions{.conninfo = conninfo}));
  auto check = Must(fresh->ConnectionTest());
  for (const ExecutionId& id : acknowledged) {
    auto state = check->GetPendingState(id);
    EXPECT_TRUE(state.has_value())
        << "acknowledged " << id.ToString() << " is missing: " << state.error().ToString();
  }
}

}  // namespace
}  // namespace stele::storage::postgres
