// Differential test (docs/model.md §11): seeded random sequences of
// appends, locks and responses are applied in lockstep to the backend under
// test and to the reference model (the "memory" backend of the registry);
// every call must succeed or fail alike and the resulting execution logs,
// pending states and live timers must be equal.
//
// Seed and count come from STELE_TEST_SEED / STELE_TEST_SEED_NUM (defaults
// below); a failure prints the seed and the operations that led to it.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "storage/testing/conformance.h"
#include "storage/testing/conformance_util.h"

namespace stele::storage::conformance {
namespace {

constexpr uint64_t kDefaultSeed = 0x5eed;
constexpr int kDefaultRounds = 150;

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* value = std::getenv(name);
  return value == nullptr ? fallback : std::strtoull(value, nullptr, 0);
}

// "ok" or the error's kind (with the versions of a VersionConflict): what
// two conforming backends must agree on. Messages may differ.
template <class T>
std::string Outcome(const Result<T, DbErrorWrite>& result) {
  if (result.has_value()) return "ok";
  const DbErrorWrite& error = result.error();
  switch (error.kind()) {
    case DbErrorWrite::Kind::kNotFound:
      return "NotFound";
    case DbErrorWrite::Kind::kGeneric:
      return "Generic: " + error.ToString();
    case DbErrorWrite::Kind::kNonRetriable:
      break;
  }
  const DbErrorWriteNonRetriable& non_retriable = error.non_retriable();
  std::string text = "NonRetriable#" + std::to_string(static_cast<int>(non_retriable.kind()));
  if (error.IsVersionConflict()) {
    text += "{" + non_retriable.expected().ToString() + "," + non_retriable.requested().ToString() +
            "}";
  }
  return text;
}

// One random operation, applicable to any DbConnectionTest.
struct Operation {
  std::string description;
  std::function<std::string(DbConnectionTest&)> apply;
};

class OperationGenerator {
 public:
  OperationGenerator(uint64_t seed, ExecutionId id) : rng_(seed), id_(std::move(id)) {}

  // `next_version`: the execution's next version in the reference model.
  Operation Next(Version next_version, int step) {
    DateTime at = kT0 + std::chrono::seconds(step) + Millis(0, 1500);
    Version version = next_version;
    if (Chance(8)) version = Version(next_version.value() + Uniform(0, 2) - 1);
    switch (Uniform(0, 5)) {
      case 0:
        return LockOne(at, version);
      case 1:
        return DelayResponse(at);
      case 2:
        return Batch(at, version);
      default:
        return Append(at, version);
    }
  }

 private:
  uint32_t Uniform(uint32_t lo, uint32_t hi) {
    return std::uniform_int_distribution<uint32_t>(lo, hi)(rng_);
  }
  bool Chance(uint32_t one_in) { return Uniform(1, one_in) == 1; }
  std::chrono::milliseconds Millis(uint32_t lo, uint32_t hi) {
    return std::chrono::milliseconds(Uniform(lo, hi));
  }
  const Runner& SomeRunner() { return runners_[SomeRunnerIndex()]; }
  uint32_t SomeRunnerIndex() { return Uniform(0, 1); }
  const core::JoinSetId& SomeJoinSet() { return join_sets_[Uniform(0, 1)]; }

  AppendRequest RandomEvent(DateTime at) {
    const core::JoinSetId& join_set = SomeJoinSet();
    switch (Uniform(0, 11)) {
      case 0:
        // Occasionally an invalid lease (ends before it starts).
        return LockedReq(at, SomeRunner(), at + Millis(0, 8000) - Millis(0, 500));
      case 1:
        return UnlockedReq(at, at + Millis(0, 5000));
      case 2:
        return TemporarilyFailedReq(at, at + Millis(0, 5000));
      case 3:
        return TimedOutReq(at, at + Millis(0, 5000));
      case 4:
        return Chance(3) ? FinishedReq(at, OkResult(core::Json(1))) : PersistReq(at);
      case 5:
        return JoinSetCreateReq(at, join_set);
      case 6:
        return DelayRequestReq(at, core::DelayId(id_, join_set, Uniform(1, 3)),
                               at + Millis(0, 10000));
      case 7:
        return HistoryReq(at, core::HistoryJoinNextTooMany{join_set, std::nullopt});
      case 8:
        if (Chance(10)) return AppendRequest{at, CreateReq(id_, at).ToCreatedEvent()};
        [[fallthrough]];
      default:
        return JoinNextReq(at, join_set, at + Millis(0, 6000), Chance(4));
    }
  }

  Operation Append(DateTime at, Version version) {
    AppendRequest req = RandomEvent(at);
    ExecutionId id = id_;
    return {
        "Append@" + version.ToString() + " " + core::ExecutionRequestToString(req.event),
        [id, version, req](DbConnectionTest& db) { return Outcome(db.Append(id, version, req)); }};
  }

  Operation Batch(DateTime at, Version version) {
    std::vector<AppendRequest> batch;
    std::string description = "AppendBatch@" + version.ToString();
    for (uint32_t i = 0, n = Uniform(1, 3); i < n; ++i) {
      batch.push_back(RandomEvent(at));
      description += " " + core::ExecutionRequestToString(batch.back().event);
    }
    ExecutionId id = id_;
    return {description, [id, version, batch, at](DbConnectionTest& db) {
              return Outcome(db.AppendBatch(at, batch, id, version));
            }};
  }

  Operation LockOne(DateTime at, Version version) {
    uint32_t runner_index = SomeRunnerIndex();
    Runner runner = runners_[runner_index];
    DateTime expires = at + Millis(1, 8000);
    ExecutionId id = id_;
    return {"LockOne@" + version.ToString() + " by runner " + std::to_string(runner_index) +
                " until +" + std::to_string((expires - at) / 1ms) + "ms",
            [id, version, runner, at, expires](DbConnectionTest& db) {
              auto locked = LockOneAt(db, id, version, at, runner, expires);
              if (!locked.has_value()) return Outcome(locked);
              // What the executor is handed must agree too.
              return "ok" + ::testing::PrintToString(*locked);
            }};
  }

  Operation DelayResponse(DateTime at) {
    const core::JoinSetId& join_set = SomeJoinSet();
    core::DelayId delay(id_, join_set, Uniform(1, 3));
    bool ok = !Chance(3);
    ExecutionId id = id_;
    return {"AppendDelayResponse " + delay.ToString() + (ok ? " ok" : " cancelled"),
            [id, join_set, delay, ok, at](DbConnectionTest& db) {
              auto result = db.AppendDelayResponse(at, id, join_set, delay, ok);
              if (!result.has_value()) return Outcome(result);
              return "ok#" + std::to_string(static_cast<int>(*result));
            }};
  }

  std::mt19937_64 rng_;
  ExecutionId id_;
  const std::vector<Runner> runners_ = {Runner::New(), Runner::New()};
  const std::vector<core::JoinSetId> join_sets_ = {NamedJoinSet("a"), NamedJoinSet("b")};
};

// The watcher's view of `id`: its expired lock, if any (with the retry
// count and the progress versions), and its live timers.
std::vector<ExpiredLock> ExpiredLocksOfId(DbConnectionTest& db, const ExecutionId& id) {
  std::vector<ExpiredLock> locks;
  for (ExpiredLock& lock : ExpiredLocksOf(Must(db.GetExpiredTimers(kT0 + 1000h)))) {
    if (lock.execution_id == id) locks.push_back(std::move(lock));
  }
  return locks;
}

std::vector<ExpiredDelay> DelaysOf(DbConnectionTest& db, const ExecutionId& id) {
  std::vector<ExpiredDelay> delays;
  for (ExpiredDelay& delay : ExpiredDelaysOf(Must(db.GetExpiredTimers(kT0 + 1000h)))) {
    if (delay.execution_id == id) delays.push_back(std::move(delay));
  }
  std::sort(delays.begin(), delays.end(), [](const ExpiredDelay& a, const ExpiredDelay& b) {
    return a.delay_id.ToString() < b.delay_id.ToString();
  });
  return delays;
}

ExecutionLog Sanitized(ExecutionLog log) {
  for (core::ExecutionEvent& event : log.events) event.backtrace_id.reset();
  return log;
}

class DiffTest : public ConformanceTest {
 protected:
  void SetUp() override {
    ConformanceTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    for (const BackendFactory& backend : ConformanceBackends()) {
      if (backend.name == "memory") oracle_pool_ = backend.open(scratch_dir() + "/oracle");
    }
    ASSERT_NE(oracle_pool_, nullptr) << "the reference model (memory) is not registered";
    oracle_ = Must(oracle_pool_->ConnectionTest());
  }
  void TearDown() override {
    oracle_.reset();
    oracle_pool_.reset();
    ConformanceTest::TearDown();
  }
  DbConnectionTest& oracle() { return *oracle_; }

 private:
  std::unique_ptr<DbPool> oracle_pool_;
  std::unique_ptr<DbConnectionTest> oracle_;
};
STELE_INSTANTIATE_CONFORMANCE_SUITE(DiffTest);

TEST_P(DiffTest, RandomOperationsMatchTheReferenceModel) {
  const uint64_t seed = EnvOr("STELE_TEST_SEED", kDefaultSeed);
  const uint64_t rounds = EnvOr("STELE_TEST_SEED_NUM", kDefaultRounds);
  for (uint64_t round = 0; round < rounds; ++round) {
    ExecutionId id = NewId();
    Must(db().Create(CreateReq(id, kT0)));
    Must(oracle().Create(CreateReq(id, kT0)));
    OperationGenerator generator(seed + round, id);
    std::ostringstream trace;
    trace << "seed " << seed + round << " (STELE_TEST_SEED=" << seed << ", round " << round
          << "):\n";
    bool diverged = false;
    for (int step = 0, steps = 5 + static_cast<int>((seed + round) % 11); step < steps; ++step) {
      Operation op = generator.Next(Must(oracle().Get(id)).next_version, step);
      std::string expected = op.apply(oracle());
      std::string actual = op.apply(db());
      trace << "  " << op.description << " -> " << expected << "\n";
      if (expected != actual) {
        ADD_FAILURE() << trace.str() << "backend returned " << actual << " instead";
        diverged = true;
        break;
      }
    }
    if (diverged) break;
    ExecutionLog expected_log = Sanitized(Must(oracle().Get(id)));
    ExecutionLog actual_log = Sanitized(Must(db().Get(id)));
    EXPECT_EQ(actual_log.pending_state, expected_log.pending_state) << trace.str();
    EXPECT_EQ(actual_log.next_version, expected_log.next_version) << trace.str();
    EXPECT_EQ(actual_log.events, expected_log.events) << trace.str();
    EXPECT_EQ(actual_log.responses, expected_log.responses) << trace.str();
    EXPECT_EQ(DelaysOf(db(), id), DelaysOf(oracle(), id)) << trace.str();
    EXPECT_EQ(ExpiredLocksOfId(db(), id), ExpiredLocksOfId(oracle(), id)) << trace.str();
    if (HasFailure()) break;
  }
}

}  // namespace
}  // namespace stele::storage::conformance
