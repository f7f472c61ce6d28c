// Workflows under storage faults: the whole libstele stack — executors,
// the expired-timers watcher, the replay engine (runtime/workflow) and the
// coroutine SDK (runtime/native) — runs many workflows with child
// activities, a child workflow, join sets and durable sleeps on a real
// backend wrapped in a FaultyDbPool (storage/testing/faulty_db_pool.h) that
// fails a share of the storage calls (generic errors, version conflicts,
// timeouts; some writes fail after they committed, a lost acknowledgement).
// Every execution must still finish with the right result, and the
// consistency checker (storage/check, the code of `stele db check`) must
// find nothing: versions gap-free, states equal to the logs, no child result
// recorded twice and none lost. Runs on SQLite and, under
// scripts/with_postgres.sh, on PostgreSQL.
//
// The faults are random but seeded: the seed is printed, and
// STELE_TEST_SEED=<seed> repeats the same plan (thread interleavings still
// differ between runs). Nothing waits for a duration: the test waits for
// conditions, bounded so that a broken run fails instead of hanging.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "engine/sdk_test_util.h"
#include "stele/stele.h"
#include "storage/check/consistency_check.h"
#include "storage/sqlite/sqlite_pool.h"
#include "storage/testing/faulty_db_pool.h"
#if STELE_NATIVE_FAULT_TEST_HAVE_POSTGRES
#include "storage/postgres/test_database.h"
#endif

namespace stele {
namespace {

using std::chrono::milliseconds;
using storage::testing::FaultKind;
using storage::testing::FaultyDbPool;
using storage::testing::FaultyMethod;
using storage::testing::FaultyOptions;
using ::testing::IsEmpty;
using testing::MakeTempDir;

constexpr const char* kSquare = "test:fault/act.square";
constexpr const char* kPair = "test:fault/wf.pair";
constexpr const char* kMain = "test:fault/wf.main";

// STELE_TEST_FAULT_RATE and STELE_TEST_FAULT_WORKFLOWS override the rate
// and the number of workflows (longer runs by hand; docs/reliability.md).
double FaultRate(double fallback) {
  if (const char* env = std::getenv("STELE_TEST_FAULT_RATE")) return std::strtod(env, nullptr);
  return fallback;
}
int Workflows(int fallback) {
  if (const char* env = std::getenv("STELE_TEST_FAULT_WORKFLOWS")) return std::atoi(env);
  return fallback;
}

uint64_t TestSeed() {
  if (const char* env = std::getenv("STELE_TEST_SEED")) return std::strtoull(env, nullptr, 10);
  return std::random_device{}();
}

// square(x) = x*x. Counts its runs per execution: an activity may run more
// than once (at-least-once), its result must still be recorded once.
struct SquareActivity {
  std::mutex mu;
  std::map<std::string, int> runs;
  ActivityResult operator()(ActivityContext& ctx, const Json& params) {
    {
      std::lock_guard lock(mu);
      ++runs[ctx.execution_id()];
    }
    const int64_t x = params.at(0).get<int64_t>();
    return Json(x * x);
  }
};

// pair(x) = square(x) + square(x + 1), two direct calls and a sleep.
Task<Json> Pair(WorkflowContext& ctx, Json params) {
  const int64_t x = params.at(0).get<int64_t>();
  auto a = co_await ctx.call(kSquare, Params(x));
  co_await ctx.sleep(milliseconds(5));
  auto b = co_await ctx.call(kSquare, Params(x + 1));
  if (!a.ok() || !b.ok()) co_return Json("child failed: " + a.ToString() + " " + b.ToString());
  co_return Json(a.value.get<int64_t>() + b.value.get<int64_t>());
}

// main(n): squares of 1..n submitted into one join set with a durable delay
// among them, all awaited in arrival order; then the child workflow
// pair(n) and a sleep. Result: sum of squares 1..n + n² + (n+1)².
Task<Json> Main(WorkflowContext& ctx, Json params) {
  const int64_t n = params.at(0).get<int64_t>();
  JoinSet js = co_await ctx.new_join_set();
  for (int64_t i = 1; i <= n; ++i) co_await ctx.submit(js, kSquare, Params(i));
  co_await ctx.submit_delay(js, milliseconds(10));
  int64_t sum = 0;
  int delays = 0;
  for (int64_t i = 0; i <= n; ++i) {
    auto next = co_await ctx.join_next(js);
    if (!next) co_return Json("join_next: " + next.error().message);
    if (next->is_delay) {
      ++delays;
      continue;
    }
    if (!next->result.ok()) co_return Json("child failed: " + next->result.ToString());
    sum += next->result.value.get<int64_t>();
  }
  if (delays != 1) co_return Json("delays: " + std::to_string(delays));
  auto pair = co_await ctx.call(kPair, Params(n));
  co_await ctx.sleep(milliseconds(5));
  if (!pair.ok()) co_return Json("pair failed: " + pair.ToString());
  co_return Json(sum + pair.value.get<int64_t>());
}

int64_t Expected(int64_t n) {
  int64_t sum = 0;
  for (int64_t i = 1; i <= n; ++i) sum += i * i;
  return sum + n * n + (n + 1) * (n + 1);
}

// A driver call that may meet an injected fault: repeated (bounded) until it
// succeeds, as any client of a flaky database would.
// An injected fault returns at once; a real failure repeats until the
// bound and fails the test.
template <class F>
auto Retrying(F call, const char* what) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    auto result = call();
    if (result || std::chrono::steady_clock::now() > give_up) {
      if (!result) ADD_FAILURE() << what << ": " << result.error().ToString();
      return result;
    }
  }
}

class WorkflowFaultTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("stele_fault_"); }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Runs `executions` workflows main(1..5) on `inner` behind a random fault
  // plan at `rate`, then checks results and the store.
  void RunUnderFaults(std::unique_ptr<storage::DbPool> inner, double rate, int executions) {
    const uint64_t seed = TestSeed();
    SCOPED_TRACE("STELE_TEST_SEED=" + std::to_string(seed));
    FaultyOptions plan{
        .seed = seed,
        .rate = rate,
        .methods = {FaultyMethod::kLockPending, FaultyMethod::kAppend, FaultyMethod::kAppendBatch,
                    FaultyMethod::kAppendBatchCreateNewExecution,
                    FaultyMethod::kAppendBatchRespondToParent, FaultyMethod::kAppendDelayResponse,
                    FaultyMethod::kCreate, FaultyMethod::kGetExpiredTimers,
                    FaultyMethod::kSubscribeToNextResponses, FaultyMethod::kWaitForPending,
                    FaultyMethod::kGetPendingState, FaultyMethod::kWaitForFinishedResult},
        .kinds = {FaultKind::kGeneric, FaultKind::kVersionConflict, FaultKind::kTimeout},
        .after_commit_share = 0.3};
    auto faulty = std::make_shared<FaultyDbPool>(std::move(inner), plan);

    EngineOptions options;
    options.pool = faulty;
    options.tick_sleep = milliseconds(20);
    options.watcher_tick = milliseconds(5);
    options.watcher_leeway = milliseconds(0);
    // Short leases: a run whose outcome write failed for good is taken over
    // by the watcher once its lease ends.
    options.workflow_lock_expiry = milliseconds(300);
    options.workflow_retry_backoff = milliseconds(10);
    options.max_warm_wait = milliseconds(50);
    auto engine = testing::OkOrDie(Engine::Open(options), "open");
    SquareActivity square;
    ASSERT_TRUE(engine->RegisterActivity(
        kSquare, [&square](ActivityContext& ctx, const Json& p) { return square(ctx, p); },
        ActivityOptions{.max_retries = 1000,
                        .backoff = milliseconds(5),
                        .retry_on_err = true,
                        .timeout = milliseconds(300)}));
    ASSERT_TRUE(engine->RegisterWorkflow(kPair, Pair));
    ASSERT_TRUE(engine->RegisterWorkflow(kMain, Main));
    ASSERT_TRUE(Retrying([&] { return engine->Start(); }, "start"));

    // Fixed ids, so a submission that failed (perhaps after committing) is
    // simply repeated: an equal resubmission is the same execution.
    std::vector<std::pair<std::string, int64_t>> submitted;
    for (int i = 0; i < executions; ++i) {
      const std::string id = "E_" + GenerateUlid().ToString();
      const int64_t n = 1 + i % 5;
      auto r = Retrying([&] { return engine->Submit(kMain, Params(n), {.execution_id = id}); },
                        "submit");
      ASSERT_TRUE(r);
      EXPECT_EQ(*r, id);
      submitted.emplace_back(id, n);
    }
    for (const auto& [id, n] : submitted) {
      auto result =
          Retrying([&] { return engine->WaitForResult(id, std::chrono::seconds(20)); }, "wait");
      ASSERT_TRUE(result);
      EXPECT_EQ(*result, ExecutionResult::Ok(Json(Expected(n)))) << id << " main(" << n << ")";
    }
    const storage::testing::FaultyCounters total = faulty->total();
    faulty->SetEnabled(false);
    engine->Stop();
    EXPECT_GT(total.injected, 0u);

    // The store: every log well formed, every child's result recorded once.
    auto api = faulty->inner().ExternalApiConn();
    ASSERT_TRUE(api);
    auto report = storage::check::CheckStore(**api);
    ASSERT_TRUE(report) << report.error();
    for (const auto& f : report->findings) ADD_FAILURE() << f.execution_id << ": " << f.description;
    EXPECT_THAT(report->findings, IsEmpty());
    // main + n squares + pair + 2 squares per workflow.
    uint64_t children = 0;
    for (const auto& [id, n] : submitted) children += static_cast<uint64_t>(n) + 3;
    EXPECT_EQ(report->executions, submitted.size() + children);
    uint64_t runs = 0;
    for (const auto& [id, count] : square.runs) runs += static_cast<uint64_t>(count);
    std::cout << "[ faults  ] seed " << seed << ", rate " << rate << ": " << submitted.size()
              << " workflows, " << report->executions << " executions, " << report->events
              << " events, " << report->responses << " responses; " << total.calls
              << " storage calls, " << total.injected << " injected (" << total.after_commit
              << " after commit); " << square.runs.size() << " activity executions ran " << runs
              << " times\n";
    engine.reset();
    faulty->Close();
  }

  std::filesystem::path dir_;
};

TEST_F(WorkflowFaultTest, SqliteWorkflowsKeepTheirGuaranteesUnderFaults) {
  storage::sqlite::SqliteOptions sqlite;
  sqlite.path = (dir_ / "faults.sqlite").string();
  sqlite.synchronous = storage::sqlite::SqliteOptions::Synchronous::kNormal;
  auto pool = storage::sqlite::SqlitePool::Open(sqlite);
  ASSERT_TRUE(pool) << pool.error().ToString();
  RunUnderFaults(std::move(*pool), FaultRate(0.1), Workflows(60));
}

#if STELE_NATIVE_FAULT_TEST_HAVE_POSTGRES
TEST_F(WorkflowFaultTest, PostgresWorkflowsKeepTheirGuaranteesUnderFaults) {
  namespace pg = storage::postgres::testing;
  if (!pg::AdminConninfo()) STELE_POSTGRES_TEST_UNAVAILABLE(pg::UnavailableReason());
  auto pool = pg::OpenFreshPool();
  ASSERT_TRUE(pool) << pool.error().ToString();
  RunUnderFaults(std::move(*pool), FaultRate(0.1), Workflows(40));
}
#endif

}  // namespace
}  // namespace stele
