// Differential test: random sequences of storage operations are applied to
// the in-memory reference model (the oracle) and to SQLite; every outcome and
// every resulting execution log must be identical.
//
// The sequence is a pure function of the seed. A failure prints the seed;
// reproduce with STELE_TEST_SEED=<seed> (and STELE_TEST_SEED_NUM=1).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <sstream>

#include "core/json_codec.h"
#include "storage/memory/memory_pool.h"
#include "storage/operations.h"
#include "storage/sqlite/sqlite_pool.h"
#ifdef STELE_DIFFERENTIAL_HAVE_POSTGRES
#include "storage/postgres/test_database.h"
#endif

namespace stele::storage {
namespace {

using core::ExecutionId;
using core::JoinSetId;
using std::chrono::milliseconds;

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

// Outcome of one call, comparable across backends. Reasons of errors are
// free text, so only the kind (and the versions of a VersionConflict) count.
std::string Describe(const DbErrorWrite& e) {
  std::ostringstream out;
  out << "write-error kind=" << static_cast<int>(e.kind());
  if (e.kind() == DbErrorWrite::Kind::kNonRetriable) {
    out << " nr=" << static_cast<int>(e.non_retriable().kind());
    if (e.IsVersionConflict()) {
      out << " expected=" << e.non_retriable().expected().value()
          << " requested=" << e.non_retriable().requested().value();
    }
  }
  return out.str();
}
std::string Describe(const DbErrorGeneric& e) { return e.ToString(); }
std::string Describe(const Version& v) { return "version " + v.ToString(); }
std::string Describe(const CancelOutcome& o) { return "cancel " + std::to_string(int(o)); }
std::string Describe(const AppendDelayResponseOutcome& o) {
  return "delay " + std::to_string(int(o));
}
std::string Describe(const LockedExecution& l) {
  std::ostringstream out;
  out << l.execution_id.ToString() << "@" << l.next_version.value()
      << " history=" << l.event_history.size() << " responses=" << l.responses.size()
      << " count=" << l.intermittent_event_count;
  return out.str();
}
std::string Describe(const std::vector<LockedExecution>& locked) {
  std::string out = "locked[";
  for (const auto& l : locked) out += Describe(l) + ";";
  return out + "]";
}
template <class T, class E>
std::string Describe(const Result<T, E>& r) {
  return r ? "ok " + Describe(*r) : Describe(r.error());
}
template <class E>
std::string Describe(const Result<void, E>& r) {
  return r ? "ok" : Describe(r.error());
}

struct Backend {
  std::string name;
  std::unique_ptr<DbPool> pool;
  std::unique_ptr<DbConnectionTest> db;
};

class Scenario {
 public:
  Scenario(uint64_t seed, std::vector<Backend>* backends) : rng_(seed), backends_(backends) {
    now_ = DateTimeFromMicros(1'750'000'000'000'000 + int64_t(rng_() % 1'000'000'000));
    for (int i = 0; i < 2; ++i) executors_.push_back(core::ExecutorId(RandomUlid()));
    ffqns_ = {core::FunctionFqn::Parse("diff:pkg/ifc.alpha").value(),
              core::FunctionFqn::Parse("diff:pkg/ifc.beta").value()};
  }

  void Run(int steps) {
    for (int step = 0; step < steps; ++step) {
      now_ += milliseconds(rng_() % 400);
      Step();
      if (::testing::Test::HasFailure()) return;
    }
    CompareAllLogs();
  }

 private:
  // Applies `op` to every backend; outcomes must agree. Returns the oracle's
  // (first backend's) result for driving the next steps.
  template <class F>
  auto Apply(const std::string& what, F op) {
    auto oracle = op(*(*backends_)[0].db);
    for (size_t i = 1; i < backends_->size(); ++i) {
      auto other = op(*(*backends_)[i].db);
      EXPECT_EQ(Describe(oracle), Describe(other))
          << what << " diverged on " << (*backends_)[i].name << " at step " << trace_.size();
    }
    trace_.push_back(what + " -> " + Describe(oracle));
    if (static_cast<bool>(oracle)) ++succeeded_;
    return oracle;
  }

  Ulid RandomUlid() { return Ulid(rng_(), rng_()); }
  bool Chance(int percent) { return int(rng_() % 100) < percent; }
  template <class T>
  const T& Pick(const std::vector<T>& v) {
    return v[rng_() % v.size()];
  }
  DateTime Later(int max_ms) { return now_ + milliseconds(1 + rng_() % max_ms); }

  Version NextVersion(const ExecutionId& id) {
    auto log = (*backends_)[0].db->Get(id);
    if (!log) return Version(0);
    Version v = log->next_version;
    if (Chance(8)) v = Version(v.value() + (Chance(50) ? 1 : 0) + (v.value() > 0 ? -1 : 1));
    return v;
  }

  core::SupportedFunctionReturnValue RandomResult() {
    switch (rng_() % 3) {
      case 0:
        return core::ReturnValueOk{core::Json{{"z", rng_() % 10}, {"a", "x"}}};
      case 1:
        return core::ReturnValueErr{core::Json("boom")};
      default:
        return core::FinishedExecutionError{core::ExecutionFailureKind::kTimedOut, "r",
                                            std::nullopt};
    }
  }

  core::ComponentId Component() { return core::ComponentId::DummyActivity(); }

  CreateRequest NewCreate(ExecutionId id, std::optional<std::pair<ExecutionId, JoinSetId>> parent) {
    DateTime scheduled = Chance(70) ? now_ : Later(2000);
    return CreateRequest{
        now_,        std::move(id), Pick(ffqns_), core::Json::array({rng_() % 100}),
        parent,      scheduled,     Component(),  {},
        std::nullopt};
  }

  void Step() {
    const int pick = int(rng_() % 100);
    if (executions_.empty() || pick < 10) return CreateTopLevel();
    const ExecutionId id = Pick(executions_);
    if (pick < 25) return LockPending();
    if (pick < 32) return LockOne(id);
    if (pick < 60) return AppendRandom(id);
    if (pick < 70) return SubmitChild(id);
    if (pick < 80) return FinishChild();
    if (pick < 87) return RespondDelay();
    if (pick < 92) return CancelActivity(id);
    if (pick < 96) return Stub();
    return Expired();
  }

  void CreateTopLevel() {
    ExecutionId id(RandomUlid());
    auto req = NewCreate(id, std::nullopt);
    auto res =
        Apply("create " + id.ToString(), [&](DbConnectionTest& db) { return db.Create(req); });
    if (res) executions_.push_back(id);
    if (Chance(10)) {  // duplicate create must fail the same way everywhere
      (void)Apply("create twice", [&](DbConnectionTest& db) { return db.Create(req); });
    }
  }

  void LockPending() {
    const uint32_t batch = 1 + rng_() % 3;
    const auto executor = Pick(executors_);
    const core::RunId run(RandomUlid());
    const DateTime expires = Later(3000);
    const core::ComponentRetryConfig retry{Chance(50) ? std::optional<uint32_t>(2) : std::nullopt,
                                           core::Duration::FromMillis(100)};
    (void)Apply("lock pending", [&](DbConnectionTest& db) {
      return db.LockPendingByFfqns(batch, now_, ffqns_, now_, Component(), executor, expires, run,
                                   retry);
    });
  }

  void LockOne(const ExecutionId& id) {
    const auto executor = Pick(executors_);
    const core::RunId run(RandomUlid());
    const Version version = NextVersion(id);
    const DateTime expires = Chance(5) ? now_ : Later(3000);
    (void)Apply("lock one " + id.ToString(), [&](DbConnectionTest& db) {
      return db.LockOne(now_, Component(), id, run, version, executor, expires,
                        core::ComponentRetryConfig{3u, core::Duration::FromMillis(10)});
    });
  }

  std::optional<JoinSetId> KnownJoinSet(const ExecutionId& id) {
    auto it = join_sets_.find(id.ToString());
    if (it == join_sets_.end() || it->second.empty()) return std::nullopt;
    return Pick(it->second);
  }

  core::ExecutionRequest RandomEvent(const ExecutionId& id) {
    switch (rng_() % 10) {
      case 0:
        return core::Unlocked{Later(500), "limit reached"};
      case 1:
        return core::TemporarilyFailed{Later(500), "trap", "detail", std::nullopt};
      case 2:
        return core::TemporarilyTimedOut{Later(500), std::nullopt};
      case 3:
        return core::Finished{RandomResult(), std::nullopt};
      case 4: {
        auto js =
            JoinSetId::Create(core::JoinSetKind::kNamed, "n" + std::to_string(rng_() % 3)).value();
        join_sets_[id.ToString()].push_back(js);
        return core::HistoryEventRequest{core::HistoryJoinSetCreate{js}};
      }
      case 5: {
        auto js = KnownJoinSet(id).value_or(
            JoinSetId::Create(core::JoinSetKind::kOneOff, "1-sleep").value());
        core::DelayId delay(id, js, ++delay_counter_);
        delays_.push_back(delay);
        DateTime expires = Later(1500);
        return core::HistoryEventRequest{core::HistoryJoinSetRequest{
            js,
            core::DelayRequest{delay, expires,
                               core::HistoryEventScheduleAt::In(core::Duration::FromMillis(5))}}};
      }
      case 6:
      case 7: {
        auto js = KnownJoinSet(id).value_or(
            JoinSetId::Create(core::JoinSetKind::kGenerated, "1").value());
        DateTime run_expires = Chance(50) ? now_ : Later(1000);
        return core::HistoryEventRequest{
            core::HistoryJoinNext{js, run_expires, std::nullopt, Chance(20)}};
      }
      case 8:
        return core::HistoryEventRequest{core::HistoryPersist{{uint8_t(rng_()), uint8_t(rng_())},
                                                              core::PersistKindRandomU64{0, 255}}};
      default:
        return core::Locked{
            Component(), Pick(executors_), core::RunId(RandomUlid()), Later(2000),
            core::ComponentRetryConfig{std::nullopt, core::Duration::FromMillis(50)}};
    }
  }

  void AppendRandom(const ExecutionId& id) {
    const Version version = NextVersion(id);
    if (Chance(30)) {
      std::vector<AppendRequest> batch;
      for (int i = 0, n = 1 + int(rng_() % 3); i < n; ++i) {
        batch.push_back(AppendRequest{now_, RandomEvent(id)});
      }
      (void)Apply("append batch " + id.ToString(),
                  [&](DbConnectionTest& db) { return db.AppendBatch(now_, batch, id, version); });
      return;
    }
    AppendRequest req{now_, RandomEvent(id)};
    (void)Apply("append " + id.ToString() + " " + core::ToJson(req.event).dump(),
                [&](DbConnectionTest& db) { return db.Append(id, version, req); });
  }

  void SubmitChild(const ExecutionId& parent) {
    auto js = KnownJoinSet(parent).value_or(
        JoinSetId::Create(core::JoinSetKind::kOneOff, std::to_string(1 + rng_() % 3) + "-fn")
            .value());
    const auto child = parent.NextLevel(js, 1 + rng_() % 2);
    auto create = NewCreate(child, std::make_pair(parent, js));
    std::vector<AppendRequest> batch{AppendRequest{
        now_, core::HistoryEventRequest{core::HistoryJoinSetRequest{
                  js, core::ChildExecutionRequest{child, create.ffqn, create.params}}}}};
    const Version version = NextVersion(parent);
    auto res = Apply("submit child " + child.ToString(), [&](DbConnectionTest& db) {
      return db.AppendBatchCreateNewExecution(now_, batch, parent, version, {create});
    });
    if (res) {
      executions_.push_back(child);
      children_.push_back(child);
    }
  }

  void FinishChild() {
    if (children_.empty()) return;
    const auto child = Pick(children_);
    auto [parent, js] = child.SplitToParts();
    const Version version = NextVersion(child);
    const auto result = RandomResult();
    (void)Apply("finish child " + child.ToString(), [&](DbConnectionTest& db) {
      return db.AppendBatchRespondToParent(
          AppendEventsToExecution{
              child, version, {AppendRequest{now_, core::Finished{result, std::nullopt}}}},
          AppendResponseToExecution{parent, now_, js, child, version, result}, now_);
    });
  }

  void RespondDelay() {
    if (delays_.empty()) return;
    const auto delay = Pick(delays_);
    const bool ok = Chance(60);
    (void)Apply("delay response " + delay.ToString(), [&](DbConnectionTest& db) {
      return db.AppendDelayResponse(now_, delay.owner(), delay.join_set_id(), delay, ok);
    });
  }

  void CancelActivity(const ExecutionId& id) {
    (void)Apply("cancel " + id.ToString(),
                [&](DbConnectionTest& db) { return db.CancelActivity(id, now_); });
  }

  void Stub() {
    if (children_.empty()) return;
    const auto child = Pick(children_);
    auto [parent, js] = child.SplitToParts();
    const auto result = RandomResult();
    (void)Apply("stub " + child.ToString(), [&](DbConnectionTest& db) {
      return StubExecution(db, child, parent, js, now_, result);
    });
  }

  void Expired() {
    auto oracle = (*backends_)[0].db->GetExpiredTimers(now_);
    ASSERT_TRUE(oracle);
    for (size_t i = 1; i < backends_->size(); ++i) {
      auto other = (*backends_)[i].db->GetExpiredTimers(now_);
      ASSERT_TRUE(other);
      auto key = [](const ExpiredTimer& t) {
        return std::visit(
            [](const auto& v) {
              using V = std::decay_t<decltype(v)>;
              if constexpr (std::is_same_v<V, ExpiredLock>) {
                return "lock " + v.execution_id.ToString() + "@" + v.next_version.ToString() + "/" +
                       v.locked_at_version.ToString() +
                       " n=" + std::to_string(v.intermittent_event_count);
              } else if constexpr (std::is_same_v<V, ExpiredDelay>) {
                return "delay " + v.delay_id.ToString();
              } else {
                return "deadline " + v.execution_id.ToString();
              }
            },
            t);
      };
      std::vector<std::string> a, b;
      for (const auto& t : *oracle) a.push_back(key(t));
      for (const auto& t : *other) b.push_back(key(t));
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      EXPECT_EQ(a, b) << "expired timers diverged on " << (*backends_)[i].name;
    }
  }

  void CompareAllLogs() {
    for (const auto& id : executions_) {
      auto oracle = (*backends_)[0].db->Get(id);
      ASSERT_TRUE(oracle) << id.ToString();
      for (size_t i = 1; i < backends_->size(); ++i) {
        auto other = (*backends_)[i].db->Get(id);
        ASSERT_TRUE(other) << id.ToString() << " missing on " << (*backends_)[i].name;
        EXPECT_EQ(oracle->pending_state, other->pending_state)
            << id.ToString() << ": " << core::ToJson(oracle->pending_state).dump() << " vs "
            << core::ToJson(other->pending_state).dump();
        EXPECT_EQ(oracle->next_version, other->next_version) << id.ToString();
        ASSERT_EQ(oracle->events.size(), other->events.size()) << id.ToString();
        for (size_t e = 0; e < oracle->events.size(); ++e) {
          EXPECT_EQ(core::ToJson(oracle->events[e]).dump(), core::ToJson(other->events[e]).dump())
              << id.ToString() << " event " << e;
        }
        ASSERT_EQ(oracle->responses.size(), other->responses.size()) << id.ToString();
        for (size_t r = 0; r < oracle->responses.size(); ++r) {
          EXPECT_EQ(core::ToJson(oracle->responses[r]).dump(),
                    core::ToJson(other->responses[r]).dump())
              << id.ToString() << " response " << r;
        }
      }
    }
  }

 public:
  size_t operations() const { return trace_.size(); }
  size_t succeeded() const { return succeeded_; }
  std::string Trace() const {
    std::string out;
    for (size_t i = trace_.size() > 30 ? trace_.size() - 30 : 0; i < trace_.size(); ++i) {
      out += "  #" + std::to_string(i) + " " + trace_[i] + "\n";
    }
    return out;
  }

 private:
  std::mt19937_64 rng_;
  std::vector<Backend>* backends_;
  DateTime now_;
  std::vector<core::ExecutorId> executors_;
  std::vector<core::FunctionFqn> ffqns_;
  std::vector<ExecutionId> executions_;
  std::vector<core::ExecutionIdDerived> children_;
  std::vector<core::DelayId> delays_;
  std::map<std::string, std::vector<JoinSetId>> join_sets_;
  uint64_t delay_counter_ = 0;
  std::vector<std::string> trace_;
  size_t succeeded_ = 0;
};

TEST(DifferentialTest, MemoryAndSqliteAgree) {
  const uint64_t first_seed = EnvOr("STELE_TEST_SEED", std::random_device{}());
  const uint64_t runs = EnvOr("STELE_TEST_SEED_NUM", 60);
  const auto dir = std::filesystem::temp_directory_path() /
                   ("stele-diff-" + std::to_string(::getpid()) + "-" + std::to_string(first_seed));
  std::filesystem::create_directories(dir);
  size_t operations = 0, succeeded = 0;
  for (uint64_t run = 0; run < runs; ++run) {
    const uint64_t seed = first_seed + run;
    std::vector<Backend> backends;
    backends.push_back({"memory", memory::MemoryPool::Create(), nullptr});
    auto sqlite = sqlite::SqlitePool::Open(
        sqlite::SqliteOptions{.path = (dir / (std::to_string(seed) + ".sqlite")).string(),
                              .synchronous = sqlite::SqliteOptions::Synchronous::kNormal});
    ASSERT_TRUE(sqlite) << sqlite.error().ToString();
    backends.push_back({"sqlite", std::move(*sqlite), nullptr});
    for (auto& b : backends) b.db = b.pool->ConnectionTest().value();

    Scenario scenario(seed, &backends);
    scenario.Run(150);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "differential test failed; reproduce with STELE_TEST_SEED=" << seed
                    << " STELE_TEST_SEED_NUM=1\nlast operations:\n"
                    << scenario.Trace();
      break;
    }
    operations += scenario.operations();
    succeeded += scenario.succeeded();
    for (auto& b : backends) {
      b.db.reset();
      b.pool->Close();
    }
  }
  std::filesystem::remove_all(dir);
  std::cout << "differential: " << runs << " runs from seed " << first_seed << ", " << operations
            << " operations, " << succeeded << " succeeded\n";
  // The generator must mostly produce valid operations, or the comparison
  // would only cover error paths.
  EXPECT_GT(succeeded * 2, operations);
}

#ifdef STELE_DIFFERENTIAL_HAVE_POSTGRES
// The same scenarios against PostgreSQL (a fresh schema per run, see
// test_database.h; the server from STELE_TEST_POSTGRES_URL, see
// scripts/with_postgres.sh).
TEST(DifferentialTest, MemoryAndPostgresAgree) {
  if (!postgres::testing::AdminConninfo()) {
    STELE_POSTGRES_TEST_UNAVAILABLE(postgres::testing::UnavailableReason());
  }
  const uint64_t first_seed = EnvOr("STELE_TEST_SEED", std::random_device{}());
  const uint64_t runs = EnvOr("STELE_TEST_SEED_NUM", 30);
  size_t operations = 0, succeeded = 0;
  for (uint64_t run = 0; run < runs; ++run) {
    const uint64_t seed = first_seed + run;
    std::vector<Backend> backends;
    backends.push_back({"memory", memory::MemoryPool::Create(), nullptr});
    auto pg = postgres::testing::OpenFreshPool();
    ASSERT_TRUE(pg && *pg != nullptr) << (pg ? "no server" : pg.error().ToString());
    backends.push_back({"postgres", std::move(*pg), nullptr});
    for (auto& b : backends) b.db = b.pool->ConnectionTest().value();

    Scenario scenario(seed, &backends);
    scenario.Run(150);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "differential test failed; reproduce with STELE_TEST_SEED=" << seed
                    << " STELE_TEST_SEED_NUM=1\nlast operations:\n"
                    << scenario.Trace();
      break;
    }
    operations += scenario.operations();
    succeeded += scenario.succeeded();
    for (auto& b : backends) {
      b.db.reset();
      b.pool->Close();
    }
  }
  std::cout << "differential (postgres): " << runs << " runs from seed " << first_seed << ", "
            << operations << " operations, " << succeeded << " succeeded\n";
  EXPECT_GT(succeeded * 2, operations);
}
#endif

}  // namespace
}  // namespace stele::storage
