// Cancel across nodes: two engines on one PostgreSQL database, as two
// processes of a cluster would be. The cancel goes through one, the
// workflow may run on either, and it ends `cancelled` once. Skipped
// without STELE_TEST_POSTGRES_URL (scripts/with_postgres.sh), failed when
// PostgreSQL tests are required.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "engine/sdk_test_util.h"
#include "stele/stele.h"
#include "storage/postgres/postgres_pool.h"
#include "storage/postgres/test_database.h"

namespace stele {
namespace {

namespace pg = storage::postgres;
using testing::OkOrDie;

class CancelPostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pg::testing::AdminConninfo()) {
      if (pg::testing::PostgresTestsRequired()) GTEST_FAIL() << pg::testing::UnavailableReason();
      GTEST_SKIP() << pg::testing::UnavailableReason();
    }
    dbname_ = OkOrDie(pg::testing::CreateFreshDatabase(), "create database");
    conninfo_ =
        OkOrDie(pg::testing::WithDatabase(*pg::testing::AdminConninfo(), dbname_), "conninfo");
  }
  void TearDown() override {
    for (auto& engine : engines_) engine.reset();
    if (!dbname_.empty()) pg::testing::DropDatabase(dbname_);
  }

  // A started engine ("node") on the shared database with the test's
  // functions registered.
  Engine& StartNode() {
    pg::PostgresOptions pg_options;
    pg_options.conninfo = conninfo_;
    std::shared_ptr<storage::DbPool> pool = OkOrDie(pg::PostgresPool::Open(pg_options), "pool");
    EngineOptions options;
    options.pool = std::move(pool);
    options.tick_sleep = std::chrono::milliseconds(50);
    options.watcher_tick = std::chrono::milliseconds(20);
    options.watcher_leeway = std::chrono::milliseconds(0);
    options.workflow_keep_warm = false;
    engines_.push_back(OkOrDie(Engine::Open(std::move(options)), "open"));
    Engine& engine = *engines_.back();
    EXPECT_TRUE(engine.RegisterStub("test:pgcancel/stub.approve"));
    EXPECT_TRUE(engine.RegisterActivity(
        "test:pgcancel/act.refund",
        [](ActivityContext&, const Json&) -> ActivityResult { return Json("refunded"); }));
    EXPECT_TRUE(engine.RegisterWorkflow(
        "test:pgcancel/wf.order", [](WorkflowContext& ctx, Json) -> Task<Json> {
          JoinSet approvals = co_await ctx.new_join_set();
          co_await ctx.submit(approvals, "test:pgcancel/stub.approve", Params());
          auto next = co_await ctx.join_next(approvals);
          if (!next) co_await ctx.call("test:pgcancel/act.refund", Params());
          co_return Json("done");
        }));
    EXPECT_TRUE(engine.Start());
    return engine;
  }

  std::string dbname_;
  std::string conninfo_;
  std::vector<std::unique_ptr<Engine>> engines_;
};

TEST_F(CancelPostgresTest, ACancelThroughOneNodeEndsAWorkflowOfTheCluster) {
  Engine& first = StartNode();
  Engine& second = StartNode();
  const std::string id = OkOrDie(first.Submit("test:pgcancel/wf.order", Params()), "submit");
  ASSERT_TRUE(testing::WaitForState(first, id, "BlockedByJoinSet"));
  EXPECT_EQ(OkOrDie(second.Cancel(id), "cancel"), CancelOutcome::kCancelling);
  auto result = first.WaitForResult(id, std::chrono::seconds(30));
  ASSERT_TRUE(result) << result.error().ToString();
  EXPECT_TRUE(result->failed() && result->failure_kind == "cancelled") << result->ToString();
  // Either node answers the same afterwards, writing nothing.
  EXPECT_EQ(OkOrDie(first.Cancel(id), "again"), CancelOutcome::kCancelled);
  EXPECT_EQ(OkOrDie(second.Cancel(id), "again"), CancelOutcome::kCancelled);
}

}  // namespace
}  // namespace stele
