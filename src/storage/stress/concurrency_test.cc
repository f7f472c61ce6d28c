// Many executors on one store at once (label `concurrency`; also run under
// TSan by scripts/test.sh).
//
// Eight threads share one pool — one SQLite file, or the memory backend —
// and each runs the stress workload (workload.h): creating parents and
// activities, locking with LockPendingByFfqns under its own executor id,
// stealing with LockOne, failing temporarily, spawning children with
// AppendBatchCreateNewExecution, blocking parents on JoinNext and finishing
// children with AppendBatchRespondToParent, plus a reader taking snapshots.
//
// What must hold:
//  - no execution is locked by two runs at once: every granted lock finds
//    the previous holder gone (locks never expire here: one hour);
//  - every acknowledged write is in the log afterwards, at the acknowledged
//    version and with the acknowledged content, and the log holds nothing
//    that was not acknowledged (no lost and no phantom events);
//  - versions are 0..n without gaps; Created first, Finished last and once;
//  - every pending state — in mid-run snapshots and at the end — is the one
//    its log implies, and the whole store equals a sequential replay through
//    the memory reference backend;
//  - every parent has exactly one response per child, matching the child's
//    Finished event, and duplicate finishes are refused;
//  - LockOne races: of many threads locking (and appending at) the same
//    version, exactly one wins.
// Iteration counts are bounded (no wall-clock budgets); STELE_STRESS_SCALE
// multiplies the amount of work.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "base/clock.h"
#include "core/json_codec.h"
#include "storage/memory/memory_pool.h"
#include "storage/sqlite/sqlite_pool.h"
#include "storage/stress/log_checks.h"
#include "storage/stress/workload.h"

namespace stele::storage::stress {
namespace {

enum class Backend { kSqlite, kMemory };

std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kSqlite ? "Sqlite" : "Memory";
}

int Scale() {
  const char* env = std::getenv("STELE_STRESS_SCALE");
  int scale = env ? std::atoi(env) : 1;
  return scale > 0 ? scale : 1;
}

uint64_t Seed() {
  const char* env = std::getenv("STELE_STRESS_SEED");
  return env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
}

// Records what the store acknowledged and who holds which lock.
class Tracker final : public WorkloadObserver {
 public:
  struct Holder {
    core::RunId run_id;
    core::ExecutorId executor_id;
    Version locked_at;
    bool released = false;
  };

  void OnAck(const ExecutionId& id, Version version, const core::ExecutionEvent& event) override {
    std::lock_guard lock(mu_);
    auto [it, inserted] = acked_[id].emplace(version.value(), event);
    if (!inserted) {
      problems_.push_back(
          id.ToString() + ": version " + version.ToString() + " acknowledged twice (" +
          std::string(core::ExecutionRequestVariantName(it->second.event)) + " and " +
          std::string(core::ExecutionRequestVariantName(event.event)) + ")");
    }
  }
  void OnResponseAck(const ExecutionId& parent, const core::ExecutionIdDerived& child,
                     Version finished_version) override {
    std::lock_guard lock(mu_);
    auto [it, inserted] = responses_[parent].emplace(child.ToString(), finished_version);
    if (!inserted) {
      problems_.push_back(parent.ToString() + ": two acknowledged responses for " +
                          child.ToString());
    }
  }
  void OnLocked(const LockedExecution& locked, DateTime locked_at) override {
    const Version locked_at_version(locked.next_version.value() - 1);
    std::lock_guard lock(mu_);
    auto& holder = holders_[locked.execution_id];
    if (holder && !holder->released) {
      problems_.push_back(
          locked.execution_id.ToString() + ": locked by " + locked.locked_event.run_id.ToString() +
          " at v" + locked_at_version.ToString() + " while " + holder->run_id.ToString() +
          " (locked at v" + holder->locked_at.ToString() + ", lease unexpired) still holds it");
    }
    if (holder && holder->locked_at >= locked_at_version) {
      problems_.push_back(locked.execution_id.ToString() + ": lock at v" +
                          locked_at_version.ToString() + " is not after the previous lock at v" +
                          holder->locked_at.ToString());
    }
    holder = Holder{locked.locked_event.run_id, locked.locked_event.executor_id, locked_at_version,
                    false};
    // The Locked event itself is an acknowledged write.
    auto [it, inserted] = acked_[locked.execution_id].emplace(
        locked_at_version.value(),
        core::ExecutionEvent{locked_at, locked.locked_event, {}, locked_at_version});
    if (!inserted) {
      problems_.push_back(locked.execution_id.ToString() + ": Locked at v" +
                          locked_at_version.ToString() + " overwrites an acknowledged " +
                          std::string(core::ExecutionRequestVariantName(it->second.event)));
    }
    // What the executor was handed is checked against the final log, once
    // every in-flight acknowledgement has been recorded.
    locks_.emplace_back(locked, locked_at_version);
  }
  void OnReleasing(const ExecutionId& id, const core::RunId& run_id) override {
    std::lock_guard lock(mu_);
    auto& holder = holders_[id];
    if (!holder || holder->run_id != run_id) {
      problems_.push_back(id.ToString() + ": " + run_id.ToString() +
                          " releases a lock it does not hold");
      return;
    }
    holder->released = true;
  }
  void OnFinished(const ExecutionId&) override { finished_.fetch_add(1); }
  void OnProblem(const std::string& problem) override {
    std::lock_guard lock(mu_);
    problems_.push_back(problem);
  }

  size_t finished() const { return finished_.load(); }
  std::vector<std::string> problems() const {
    std::lock_guard lock(mu_);
    return problems_;
  }
  std::map<ExecutionId, std::map<Version::Type, core::ExecutionEvent>> acked() const {
    std::lock_guard lock(mu_);
    return {acked_.begin(), acked_.end()};
  }
  std::map<ExecutionId, std::map<std::string, Version>> responses() const {
    std::lock_guard lock(mu_);
    return responses_;
  }

  // Every LockedExecution handed out must describe its log as it was at the
  // lock: the history and temporary-failure count below the lock's version,
  // a prefix of the responses, the creation data.
  std::vector<std::string> CheckLocksAgainst(const LogMap& logs) const {
    std::lock_guard lock(mu_);
    std::vector<std::string> problems;
    for (const auto& [locked, at] : locks_) {
      const std::string where =
          locked.execution_id.ToString() + ": LockedExecution at v" + at.ToString() + " ";
      auto it = logs.find(locked.execution_id);
      if (it == logs.end()) {
        problems.push_back(where + "of a missing execution");
        continue;
      }
      const auto& log = it->second;
      if (at.value() >= log.events.size() ||
          !(log.events[at.value()].event == core::ExecutionRequest(locked.locked_event))) {
        problems.push_back(where + "does not match the stored Locked event");
        continue;
      }
      std::vector<std::pair<core::HistoryEvent, Version>> history;
      uint32_t temporary = 0;
      for (Version::Type v = 0; v < at.value(); ++v) {
        const auto& event = log.events[v].event;
        if (const auto* h = std::get_if<core::HistoryEventRequest>(&event)) {
          history.emplace_back(h->event, Version(v));
        }
        if (core::IsTemporaryEvent(event)) ++temporary;
      }
      if (!(history == locked.event_history)) {
        problems.push_back(where + "has an event_history different from the log's");
      }
      if (temporary != locked.intermittent_event_count) {
        problems.push_back(where + "has intermittent_event_count " +
                           std::to_string(locked.intermittent_event_count) + ", the log " +
                           std::to_string(temporary));
      }
      if (locked.next_version != at.Increment()) {
        problems.push_back(where + "has next_version " + locked.next_version.ToString());
      }
      if (locked.responses.size() > log.responses.size() ||
          !std::equal(locked.responses.begin(), locked.responses.end(), log.responses.begin())) {
        problems.push_back(where + "has responses that are not a prefix of the log's");
      }
      const auto& created = std::get<core::Created>(log.events.front().event);
      if (!(created.parent == locked.parent) || !(created.params == locked.params) ||
          !(created.ffqn == locked.ffqn) || !(created.metadata == locked.metadata)) {
        problems.push_back(where + "has creation data different from the Created event");
      }
    }
    return problems;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<ExecutionId, std::map<Version::Type, core::ExecutionEvent>> acked_;
  std::map<ExecutionId, std::map<std::string, Version>> responses_;
  std::unordered_map<ExecutionId, std::optional<Holder>> holders_;
  std::vector<std::pair<LockedExecution, Version>> locks_;
  std::vector<std::string> problems_;
  std::atomic<size_t> finished_{0};
};

class ConcurrencyTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kSqlite) {
      dir_ = std::filesystem::temp_directory_path() /
             ("stele-concurrency-" + core::ExecutionId::Generate().ToString());
      std::filesystem::create_directories(dir_);
      sqlite::SqliteOptions options;
      options.path = (dir_ / "stress.sqlite").string();
      auto pool = sqlite::SqlitePool::Open(options);
      ASSERT_TRUE(pool.has_value()) << pool.error().ToString();
      pool_ = std::move(*pool);
    } else {
      pool_ = memory::MemoryPool::Create();
    }
  }
  void TearDown() override {
    if (pool_) pool_->Close();
    pool_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<DbConnectionTest> Conn() {
    auto conn = pool_->ConnectionTest();
    STELE_CHECK(conn.has_value(), "ConnectionTest failed");
    return std::move(*conn);
  }

  std::unique_ptr<DbPool> pool_;
  std::filesystem::path dir_;
};

void ExpectNoProblems(const std::vector<std::string>& problems, const std::string& what) {
  EXPECT_TRUE(problems.empty()) << what << ": " << problems.size() << " problem(s)";
  for (size_t i = 0; i < problems.size() && i < 30; ++i) ADD_FAILURE() << problems[i];
}

TEST_P(ConcurrencyTest, ManyExecutorsOnOneStore) {
  const uint64_t seed = Seed();
  std::cout << "seed " << seed << " (STELE_STRESS_SEED to reproduce the choices)\n";
  constexpr int kThreads = 8;
  const int parents_per_thread = 6 * Scale();
  const int activities_per_thread = 10 * Scale();
  WorkerOptions options;
  options.children_per_parent = 3;
  options.lock_batch = 3;
  const size_t total =
      static_cast<size_t>(kThreads) *
      (parents_per_thread * (1 + options.children_per_parent) + activities_per_thread);
  constexpr int kMaxTicks = 20000;

  Tracker tracker;
  // Ids for LockOne poaching, shared among threads.
  std::mutex ids_mu;
  std::vector<std::pair<ExecutionId, core::FunctionFqn>> ids;
  std::atomic<bool> done{false};

  auto run_worker = [&](int index) {
    auto conn = Conn();
    Worker worker(*conn, tracker, seed + static_cast<uint64_t>(index), options);
    std::mt19937_64 rng(seed ^ (0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(index + 1)));
    int parents = parents_per_thread;
    int activities = activities_per_thread;
    for (int tick = 0; tick < kMaxTicks && tracker.finished() < total; ++tick) {
      if (parents > 0 || activities > 0) {
        const bool parent = activities == 0 || (parents > 0 && rng() % 3 == 0);
        auto id = parent ? worker.CreateParent() : worker.CreateActivity();
        (parent ? parents : activities)--;
        if (id) {
          std::lock_guard lock(ids_mu);
          ids.emplace_back(*id, parent ? ParentFfqn() : ActivityFfqn());
        }
      }
      if (rng() % 8 == 0) {
        std::optional<std::pair<ExecutionId, core::FunctionFqn>> victim;
        {
          std::lock_guard lock(ids_mu);
          if (!ids.empty()) victim = ids[rng() % ids.size()];
        }
        if (victim) worker.TryLockOne(victim->first, victim->second);
      }
      if (worker.LockAndProcess() == 0 && parents == 0 && activities == 0) {
        conn->WaitForPendingByFfqn(SystemClock::Instance().Now(), AllFfqns(),
                                   WaitOptions::For(std::chrono::milliseconds(5)));
      }
    }
  };

  // A reader: snapshots of single executions must always be consistent.
  std::atomic<size_t> snapshots{0};
  auto run_reader = [&] {
    auto conn = Conn();
    std::mt19937_64 rng(seed * 31);
    while (!done.load()) {
      std::optional<ExecutionId> id;
      {
        std::lock_guard lock(ids_mu);
        if (!ids.empty()) id = ids[rng() % ids.size()].first;
      }
      if (!id) {
        std::this_thread::yield();
        continue;
      }
      auto log = conn->Get(*id);
      if (!log) {
        tracker.OnProblem("reader Get " + id->ToString() + ": " + log.error().ToString());
        continue;
      }
      for (const auto& p : CheckLog(*log)) tracker.OnProblem("snapshot: " + p);
      snapshots.fetch_add(1);
      if (rng() % 16 == 0) {
        auto list =
            conn->ListExecutions(std::nullopt, true, core::Pagination<std::optional<DateTime>>{});
        if (!list) tracker.OnProblem("reader ListExecutions: " + list.error().ToString());
      }
    }
  };

  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(run_worker, i);
  std::thread reader(run_reader);
  for (auto& t : threads) t.join();
  done = true;
  reader.join();

  std::cout << "finished " << tracker.finished() << "/" << total << " executions, "
            << snapshots.load() << " reader snapshots\n";
  ExpectNoProblems(tracker.problems(), "during the run");
  EXPECT_EQ(tracker.finished(), total)
      << "not every execution finished within " << kMaxTicks << " ticks per thread";

  auto conn = Conn();
  auto logs = ReadAllLogs(*conn);
  ASSERT_TRUE(logs.has_value()) << logs.error();
  EXPECT_EQ(logs->size(), total);

  // Acknowledged == stored, event by event.
  std::vector<std::string> problems;
  const auto acked = tracker.acked();
  for (const auto& [id, events] : acked) {
    auto it = logs->find(id);
    if (it == logs->end()) {
      problems.push_back(id.ToString() + ": acknowledged but missing from the store");
      continue;
    }
    const auto& log = it->second;
    if (log.events.size() != events.size()) {
      problems.push_back(id.ToString() + ": " + std::to_string(log.events.size()) +
                         " stored events, " + std::to_string(events.size()) + " acknowledged");
    }
    for (const auto& [version, event] : events) {
      if (version >= log.events.size()) {
        problems.push_back(id.ToString() + ": acknowledged v" + std::to_string(version) +
                           " is lost");
      } else if (!(log.events[version] == event)) {
        problems.push_back(id.ToString() + ": v" + std::to_string(version) + " stored as " +
                           core::ToJson(log.events[version]).dump() + ", acknowledged as " +
                           core::ToJson(event).dump());
      }
    }
  }
  for (const auto& [id, log] : *logs) {
    if (acked.count(id) == 0) problems.push_back(id.ToString() + ": stored but never acknowledged");
    for (const auto& p : CheckLog(log)) problems.push_back(p);
    if (!log.pending_state.IsFinished()) {
      problems.push_back(id.ToString() + ": not finished: " + log.pending_state.ToString());
    }
  }
  // Every acknowledged response is there, and exactly one per child.
  for (const auto& [parent, children] : tracker.responses()) {
    auto it = logs->find(parent);
    if (it == logs->end()) continue;
    size_t child_responses = 0;
    for (const auto& r : it->second.responses) {
      if (const auto* c = std::get_if<core::ChildExecutionFinished>(&r.event.event)) {
        ++child_responses;
        auto ack = children.find(c->child_execution_id.ToString());
        if (ack == children.end()) {
          problems.push_back(parent.ToString() + ": unacknowledged response for " +
                             c->child_execution_id.ToString());
        } else if (ack->second != c->finished_version) {
          problems.push_back(parent.ToString() + ": response for " + ack->first +
                             " at a different finished_version");
        }
      }
    }
    if (child_responses != options.children_per_parent) {
      problems.push_back(parent.ToString() + ": " + std::to_string(child_responses) +
                         " child responses, expected " +
                         std::to_string(options.children_per_parent));
    }
  }
  for (const auto& p : CheckParentChildResponses(*logs)) problems.push_back(p);
  for (const auto& p : tracker.CheckLocksAgainst(*logs)) problems.push_back(p);
  ExpectNoProblems(problems, "after the run");

  auto oracle = memory::MemoryPool::Create();
  ExpectNoProblems(CompareWithOracle(*oracle, *logs), "replay through the memory oracle");
}

// Many threads race LockOne and then Append at the same version of the same
// executions: exactly one wins each race; the losers get VersionConflict or
// IllegalState and write nothing.
TEST_P(ConcurrencyTest, OneWinnerPerVersion) {
  constexpr int kThreads = 8;
  const int executions = 20 * Scale();
  auto setup = Conn();
  std::vector<ExecutionId> ids;
  const DateTime start = SystemClock::Instance().Now();
  for (int i = 0; i < executions; ++i) {
    ids.push_back(ExecutionId::Generate());
    ASSERT_TRUE(setup
                    ->Create(CreateRequest{start,
                                           ids.back(),
                                           ActivityFfqn(),
                                           core::Json::array(),
                                           std::nullopt,
                                           start,
                                           ComponentFor(ActivityFfqn()),
                                           {},
                                           std::nullopt})
                    .has_value());
  }
  std::vector<std::atomic<int>> lock_wins(ids.size());
  std::vector<std::atomic<int>> append_wins(ids.size());
  std::vector<std::vector<std::string>> problems(kThreads);
  std::barrier sync(kThreads);
  auto race = [&](int t) {
    auto conn = Conn();
    const auto executor = core::ExecutorId::Generate();
    for (size_t i = 0; i < ids.size(); ++i) {
      sync.arrive_and_wait();
      const DateTime now = SystemClock::Instance().Now();
      auto locked =
          conn->LockOne(now, ComponentFor(ActivityFfqn()), ids[i], core::RunId::Generate(),
                        Version(1), executor, now + std::chrono::hours(1), ActivityRetry());
      if (locked) {
        lock_wins[i].fetch_add(1);
      } else if (!locked.error().IsVersionConflict() &&
                 !locked.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kIllegalState)) {
        problems[t].push_back("LockOne: " + locked.error().ToString());
      }
      sync.arrive_and_wait();
      auto appended = conn->Append(
          ids[i], Version(2),
          AppendRequest{now, core::Finished{core::ReturnValueOk{core::Json(t)}, std::nullopt}});
      if (appended) {
        append_wins[i].fetch_add(1);
      } else if (!appended.error().IsVersionConflict() &&
                 !appended.error().IsNonRetriable(DbErrorWriteNonRetriable::Kind::kIllegalState)) {
        problems[t].push_back("Append: " + appended.error().ToString());
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(race, t);
  for (auto& th : threads) th.join();
  for (const auto& p : problems) ExpectNoProblems(p, "racing thread");
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(lock_wins[i].load(), 1) << ids[i].ToString();
    EXPECT_EQ(append_wins[i].load(), 1) << ids[i].ToString();
    auto log = setup->Get(ids[i]);
    ASSERT_TRUE(log.has_value());
    EXPECT_EQ(log->events.size(), 3u) << DescribeLog(*log);
    ExpectNoProblems(CheckLog(*log), ids[i].ToString());
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ConcurrencyTest,
                         ::testing::Values(Backend::kSqlite, Backend::kMemory), BackendName);

}  // namespace
}  // namespace stele::storage::stress
