// ExecutionService::GetValue's wait (docs/model.md §8.6) on every backend
// (memory, a SQLite file, PostgreSQL under scripts/with_postgres.sh): a
// waiter gets the value another thread publishes, a timeout answers
// kTimeout, the end answers kNotFound, a cancel kCancelled. The writes go
// straight to storage (a Locked, then Publish events), as a workflow's run
// would write them. The waits are long (30 s): a waiter that were not woken
// by the publish would end in kTimeout, not with the value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "service/execution_service.h"
#include "storage/memory/memory_pool.h"
#include "storage/sqlite/sqlite_pool.h"
#ifdef STELE_SERVICE_TEST_HAVE_POSTGRES
#include "storage/postgres/test_database.h"
#endif

namespace stele::service {
namespace {

using namespace std::chrono_literals;

const char* const kValuesFfqn = "demo:values/api.job";

// The PostFn of the async waits: one thread that runs what is posted.
class ValuesTestPoster {
 public:
  ValuesTestPoster() : thread_([this] { Run(); }) {}
  ~ValuesTestPoster() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  PostFn Fn() {
    return [this](std::function<void()> task) {
      std::lock_guard lock(mu_);
      if (stop_) return false;
      tasks_.push_back(std::move(task));
      cv_.notify_all();
      return true;
    };
  }

 private:
  void Run() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::deque<std::function<void()>> tasks_;
  std::thread thread_;
};

// The outcome a `done` callback delivers, awaited with a bound that only a
// lost completion reaches.
template <class T>
struct AsyncOutcome {
  std::shared_ptr<std::promise<Result<T, ServiceError>>> promise =
      std::make_shared<std::promise<Result<T, ServiceError>>>();
  std::function<void(Result<T, ServiceError>)> Done() {
    return [p = promise](Result<T, ServiceError> out) { p->set_value(std::move(out)); };
  }
  std::optional<Result<T, ServiceError>> Get() {
    auto future = promise->get_future();
    if (future.wait_for(std::chrono::seconds(60)) != std::future_status::ready) return std::nullopt;
    return future.get();
  }
};
constexpr std::chrono::milliseconds kValueLongWait = 30s;

class ValueWaitTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string& backend = GetParam();
    if (backend == "memory") {
      pool_ = storage::memory::MemoryPool::Create();
    } else if (backend == "sqlite") {
      dir_ = std::filesystem::temp_directory_path() /
             ("stele_values_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name());
      std::filesystem::remove_all(dir_);
      std::filesystem::create_directories(dir_);
      storage::sqlite::SqliteOptions options;
      options.path = (dir_ / "stele.sqlite").string();
      auto pool = storage::sqlite::SqlitePool::Open(options);
      ASSERT_TRUE(pool.has_value());
      pool_ = std::move(*pool);
    } else {
#ifdef STELE_SERVICE_TEST_HAVE_POSTGRES
      if (!storage::postgres::testing::AdminConninfo()) {
        if (storage::postgres::testing::PostgresTestsRequired()) {
          FAIL() << storage::postgres::testing::UnavailableReason();
        }
        GTEST_SKIP() << storage::postgres::testing::UnavailableReason();
      }
      auto dbname = storage::postgres::testing::CreateFreshDatabase();
      ASSERT_TRUE(dbname.has_value()) << dbname.error().ToString();
      dbname_ = *dbname;
      auto conninfo = storage::postgres::testing::WithDatabase(
          *storage::postgres::testing::AdminConninfo(), dbname_);
      ASSERT_TRUE(conninfo.has_value());
      auto pool = storage::postgres::PostgresPool::Open(
          storage::postgres::PostgresOptions{.conninfo = *conninfo});
      ASSERT_TRUE(pool.has_value());
      pool_ = std::move(*pool);
#endif
    }
    ServiceOptions options;
    options.pool = pool_;
    options.start_watcher = false;
    options.start_cron = false;
    auto service = ExecutionService::Create(options);
    ASSERT_TRUE(service.has_value());
    service_ = std::move(*service);
    ComponentSpec spec;
    spec.component_id = core::ComponentId::DummyActivity();
    spec.functions = {*core::FunctionFqn::Parse(kValuesFfqn)};
    ASSERT_TRUE(service_->AddComponent(spec).has_value());
    auto db = pool_->Connection();
    ASSERT_TRUE(db.has_value());
    db_ = std::move(*db);
  }
  void TearDown() override {
    if (writer_.joinable()) writer_.join();
    db_.reset();
    service_.reset();
    pool_.reset();
#ifdef STELE_SERVICE_TEST_HAVE_POSTGRES
    if (!dbname_.empty()) storage::postgres::testing::DropDatabase(dbname_);
#endif
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }

  // A submitted execution, locked as a run would lock it; returns its id and
  // the version its next event takes.
  std::pair<core::ExecutionId, core::Version> Running() {
    SubmitRequest request;
    request.ffqn = kValuesFfqn;
    auto submitted = service_->Submit(request);
    EXPECT_TRUE(submitted.has_value());
    const core::ExecutionId id = submitted->execution_id;
    const DateTime now = SystemClock::Instance().Now();
    auto locked = db_->LockOne(now, core::ComponentId::DummyActivity(), id, core::RunId::Generate(),
                               core::Version(1), core::ExecutorId::Generate(),
                               now + std::chrono::hours(1), core::ComponentRetryConfig{});
    EXPECT_TRUE(locked.has_value());
    return {id, locked ? locked->next_version : core::Version(0)};
  }

  // Appends `events` at `version` on another thread, after a short pause
  // (so that the waiter most likely sleeps; the assertions hold either way).
  void WriteLater(core::ExecutionId id, core::Version version,
                  std::vector<core::ExecutionRequest> events) {
    writer_ = std::thread([this, id, version, events = std::move(events)] {
      std::this_thread::sleep_for(20ms);
      const DateTime now = SystemClock::Instance().Now();
      std::vector<storage::AppendRequest> batch;
      for (const auto& event : events) batch.push_back(storage::AppendRequest{now, event});
      EXPECT_TRUE(db_->AppendBatch(now, batch, id, version).has_value());
    });
  }

  static core::ExecutionRequest Publish(const std::string& key, core::Json value) {
    return core::HistoryEventRequest{core::HistoryPublish{key, std::move(value)}};
  }

  std::shared_ptr<storage::DbPool> pool_;
  std::unique_ptr<storage::DbConnection> db_;
  std::unique_ptr<ExecutionService> service_;
  std::thread writer_;
  // Outlives service_ (reset in TearDown), whose waits post to it.
  ValuesTestPoster poster_;
  std::filesystem::path dir_;
  std::string dbname_;
};

std::vector<std::string> ValueBackends() {
  std::vector<std::string> out = {"memory", "sqlite"};
#ifdef STELE_SERVICE_TEST_HAVE_POSTGRES
  out.push_back("postgres");
#endif
  return out;
}

INSTANTIATE_TEST_SUITE_P(Backends, ValueWaitTest, ::testing::ValuesIn(ValueBackends()),
                         [](const auto& param_info) { return param_info.param; });

TEST_P(ValueWaitTest, AWaiterGetsTheValuePublishedAfterItsVersion) {
  auto [id, v] = Running();
  // Another key first, then the awaited one: the waiter reads on past the
  // first and answers the second.
  WriteLater(id, v, {Publish("other", core::Json(0)), Publish("stage", core::Json("waiting"))});
  auto first = service_->GetValue(id.ToString(), "stage", ValueWait{std::nullopt, kValueLongWait});
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_EQ(first->value, core::Json("waiting"));
  EXPECT_EQ(first->version, core::Version(v.value() + 1));
  writer_.join();

  WriteLater(id, core::Version(v.value() + 2), {Publish("stage", core::Json("approved"))});
  auto next = service_->GetValue(id.ToString(), "stage", ValueWait{first->version, kValueLongWait});
  ASSERT_TRUE(next.has_value()) << next.error().ToString();
  EXPECT_EQ(next->value, core::Json("approved"));
  EXPECT_EQ(next->version, core::Version(v.value() + 2));
}

TEST_P(ValueWaitTest, AWaitWithoutANewValueTimesOutAndAnEndAnswersNotFound) {
  auto [id, v] = Running();
  auto none = service_->GetValue(id.ToString(), "stage", ValueWait{std::nullopt, 50ms});
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().kind, ServiceError::Kind::kTimeout) << none.error().ToString();
  // Without a wait: not found at once.
  auto now = service_->GetValue(id.ToString(), "stage");
  ASSERT_FALSE(now.has_value());
  EXPECT_EQ(now.error().kind, ServiceError::Kind::kNotFound) << now.error().ToString();

  // The end wakes the waiter: no value can follow it.
  WriteLater(id, v, {core::Finished{core::ReturnValueOk{std::nullopt}, {}}});
  auto ended = service_->GetValue(id.ToString(), "stage", ValueWait{std::nullopt, kValueLongWait});
  ASSERT_FALSE(ended.has_value());
  EXPECT_EQ(ended.error().kind, ServiceError::Kind::kNotFound) << ended.error().ToString();
}

TEST_P(ValueWaitTest, ACancelledWaitAnswersCancelled) {
  auto [id, v] = Running();
  CancellationToken token;
  std::thread canceller([token]() mutable {
    std::this_thread::sleep_for(20ms);
    token.Cancel();
  });
  auto cancelled =
      service_->GetValue(id.ToString(), "stage", ValueWait{std::nullopt, kValueLongWait}, token);
  canceller.join();
  ASSERT_FALSE(cancelled.has_value());
  EXPECT_EQ(cancelled.error().kind, ServiceError::Kind::kCancelled) << cancelled.error().ToString();
}

// The async forms (async_wait.h) answer as the blocking ones do, without a
// thread of their own while they wait.
TEST_P(ValueWaitTest, AsyncWaitsAnswerAsTheBlockingOnesDo) {
  auto [id, v] = Running();
  AsyncOutcome<PublishedValue> value;
  auto started =
      service_->GetValueAsync(id.ToString(), "stage", ValueWait{std::nullopt, kValueLongWait},
                              CancellationToken(), poster_.Fn(), value.Done());
  ASSERT_TRUE(started.has_value()) << started.error().ToString();
  AsyncOutcome<core::SupportedFunctionReturnValue> result;
  ASSERT_TRUE(service_
                  ->WaitForResultAsync(id.ToString(), kValueLongWait, CancellationToken(),
                                       poster_.Fn(), result.Done())
                  .has_value());
  WriteLater(id, v, {Publish("other", core::Json(0)), Publish("stage", core::Json("waiting"))});
  auto got = value.Get();
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->has_value()) << got->error().ToString();
  EXPECT_EQ((*got)->value, core::Json("waiting"));
  writer_.join();

  WriteLater(id, core::Version(v.value() + 2),
             {core::Finished{core::ReturnValueOk{core::Json(7)}, {}}});
  auto finished = result.Get();
  ASSERT_TRUE(finished.has_value());
  ASSERT_TRUE(finished->has_value()) << finished->error().ToString();
  EXPECT_EQ(**finished, core::SupportedFunctionReturnValue(core::ReturnValueOk{core::Json(7)}));
  EXPECT_EQ(service_->AsyncWaitsInFlight(), 0u);
}

TEST_P(ValueWaitTest, AsyncWaitsTimeOutGetCancelledAndCanBeAbandoned) {
  auto [id, v] = Running();
  AsyncOutcome<core::SupportedFunctionReturnValue> timed_out;
  ASSERT_TRUE(service_
                  ->WaitForResultAsync(id.ToString(), 50ms, CancellationToken(), poster_.Fn(),
                                       timed_out.Done())
                  .has_value());
  auto timeout = timed_out.Get();
  ASSERT_TRUE(timeout.has_value());
  ASSERT_FALSE(timeout->has_value());
  EXPECT_EQ(timeout->error().kind, ServiceError::Kind::kTimeout) << timeout->error().ToString();

  CancellationToken token;
  AsyncOutcome<PublishedValue> cancelled;
  ASSERT_TRUE(service_
                  ->GetValueAsync(id.ToString(), "stage", ValueWait{std::nullopt, kValueLongWait},
                                  token, poster_.Fn(), cancelled.Done())
                  .has_value());
  token.Cancel();
  auto cancel = cancelled.Get();
  ASSERT_TRUE(cancel.has_value());
  ASSERT_FALSE(cancel->has_value());
  EXPECT_EQ(cancel->error().kind, ServiceError::Kind::kCancelled) << cancel->error().ToString();

  // Abandoned: released at once, and its callback never runs.
  bool called = false;
  auto abandoned = service_->WaitForResultAsync(
      id.ToString(), kValueLongWait, CancellationToken(), poster_.Fn(),
      [&called](Result<core::SupportedFunctionReturnValue, ServiceError>) { called = true; });
  ASSERT_TRUE(abandoned.has_value());
  (*abandoned)->Abandon();
  EXPECT_EQ(service_->AsyncWaitsInFlight(), 0u);
  // A finish after that reaches nobody (the waits of another execution,
  // registered later, show its notification has gone by).
  AsyncOutcome<core::SupportedFunctionReturnValue> after;
  ASSERT_TRUE(service_
                  ->WaitForResultAsync(id.ToString(), kValueLongWait, CancellationToken(),
                                       poster_.Fn(), after.Done())
                  .has_value());
  WriteLater(id, v, {core::Finished{core::ReturnValueOk{std::nullopt}, {}}});
  ASSERT_TRUE(after.Get().has_value());
  EXPECT_FALSE(called);

  // Unknown and malformed ids.
  AsyncOutcome<core::SupportedFunctionReturnValue> unknown;
  ASSERT_TRUE(service_
                  ->WaitForResultAsync(core::ExecutionId::Generate().ToString(), kValueLongWait,
                                       CancellationToken(), poster_.Fn(), unknown.Done())
                  .has_value());
  auto missing = unknown.Get();
  ASSERT_TRUE(missing.has_value());
  ASSERT_FALSE(missing->has_value());
  EXPECT_EQ(missing->error().kind, ServiceError::Kind::kNotFound);
  EXPECT_FALSE(service_
                   ->WaitForResultAsync("nope", kValueLongWait, CancellationToken(), poster_.Fn(),
                                        unknown.Done())
                   .has_value());
}

}  // namespace
}  // namespace stele::service
