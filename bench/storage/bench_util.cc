#include "bench/storage/bench_util.h"

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "base/clock.h"

namespace stele::bench {

using storage::AppendRequest;
using storage::CreateRequest;
using storage::ExecutionId;
using storage::Version;

std::string_view SyncName(Sync sync) { return sync == Sync::kFull ? "full" : "normal"; }

void Report(std::string_view bench, std::string_view metric, double value, std::string_view unit) {
  char number[64];
  if (value >= 100 || value == std::floor(value)) {
    std::snprintf(number, sizeof number, "%.0f", value);
  } else if (value >= 10) {
    std::snprintf(number, sizeof number, "%.1f", value);
  } else {
    std::snprintf(number, sizeof number, "%.2f", value);
  }
  std::cout << "stele " << bench << " " << metric << " " << number << " " << unit << std::endl;
}

void Note(const std::string& text) { std::cerr << "# " << text << std::endl; }

int64_t EnvInt(const char* name, int64_t default_value) {
  const char* env = std::getenv(name);
  return env && *env ? std::strtoll(env, nullptr, 10) : default_value;
}

double EnvDouble(const char* name, double default_value) {
  const char* env = std::getenv(name);
  return env && *env ? std::strtod(env, nullptr) : default_value;
}

int64_t Scaled(int64_t count) {
  static const double scale = EnvDouble("STELE_BENCH_SCALE", 1.0);
  return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(count) * scale));
}

std::filesystem::path ScratchDir() {
  const char* env = std::getenv("STELE_BENCH_DIR");
  std::filesystem::path dir = env && *env ? env : "bench-tmp";
  std::filesystem::create_directories(dir);
  return dir;
}

void RemoveDb(const std::filesystem::path& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(path.string() + suffix);
  }
}

std::unique_ptr<storage::sqlite::SqlitePool> OpenSqlite(const std::filesystem::path& path,
                                                        Sync sync) {
  storage::sqlite::SqliteOptions options;
  options.path = path.string();
  options.synchronous = sync;
  options.integrity_check_at_open = false;
  // STELE_BENCH_PRAGMAS="name=value,name=value": extra PRAGMAs for experiments.
  if (const char* env = std::getenv("STELE_BENCH_PRAGMAS"); env && *env) {
    const std::string list = env;
    for (size_t pos = 0; pos < list.size();) {
      size_t comma = list.find(',', pos);
      if (comma == std::string::npos) comma = list.size();
      const std::string item = list.substr(pos, comma - pos);
      const size_t eq = item.find('=');
      if (eq != std::string::npos) {
        options.extra_pragmas.emplace_back(item.substr(0, eq), item.substr(eq + 1));
      }
      pos = comma + 1;
    }
  }
  return OrDie(storage::sqlite::SqlitePool::Open(options), "SqlitePool::Open");
}

storage::sqlite::SqliteStats Stats(storage::sqlite::SqlitePool& pool) { return pool.stats(); }

double RunThreads(int threads, const std::function<void(int)>& fn) {
  std::barrier start(threads + 1);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      fn(t);
    });
  }
  start.arrive_and_wait();
  const auto begin = SteadyClock::now();
  for (auto& th : pool) th.join();
  return SecondsSince(begin);
}

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

Latency Summarize(std::vector<double> micros) {
  if (micros.empty()) return {};
  std::sort(micros.begin(), micros.end());
  auto at = [&](double q) {
    size_t i = static_cast<size_t>(q * static_cast<double>(micros.size() - 1) + 0.5);
    return micros[std::min(i, micros.size() - 1)];
  };
  return {at(0.50), at(0.99), micros.back()};
}

DateTime Now() { return SystemClock::Instance().Now(); }

core::FunctionFqn Ffqn(const char* text) {
  return OrDie(core::FunctionFqn::Parse(text), "FunctionFqn::Parse");
}

CreateRequest TopLevelCreate(const core::FunctionFqn& ffqn, DateTime now) {
  return CreateRequest{now,
                       ExecutionId::Generate(),
                       ffqn,
                       core::Json::array({core::Json{{"order", 42}, {"amount", 1999}}}),
                       std::nullopt,
                       now,
                       core::ComponentId::DummyActivity(),
                       {},
                       std::nullopt};
}

std::vector<ExecutionId> CreatePendingChildren(storage::DbConnection& db,
                                               const core::FunctionFqn& child_ffqn, int64_t count,
                                               int64_t per_parent) {
  static const core::FunctionFqn parent_ffqn = Ffqn("stele:bench/workflow.parent");
  const auto js = OrDie(core::JoinSetId::Create(core::JoinSetKind::kNamed, "fan-out"), "js");
  const auto executor = core::ExecutorId::Generate();
  std::vector<ExecutionId> parents;
  for (int64_t done = 0; done < count; done += per_parent) {
    const int64_t n = std::min(per_parent, count - done);
    DateTime now = Now();
    CreateRequest parent = TopLevelCreate(parent_ffqn, now);
    parent.component_id = core::ComponentId::DummyWorkflow();
    OrDie(db.Create(parent), "create parent");
    OrDie(db.LockOne(now, parent.component_id, parent.execution_id, core::RunId::Generate(),
                     Version(1), executor, now + std::chrono::hours(1),
                     core::ComponentRetryConfig{std::nullopt, core::Duration::FromMillis(100)}),
          "lock parent");
    std::vector<AppendRequest> batch{
        AppendRequest{now, core::HistoryEventRequest{core::HistoryJoinSetCreate{js}}}};
    std::vector<CreateRequest> children;
    for (int64_t i = 1; i <= n; ++i) {
      auto child = parent.execution_id.NextLevel(js, static_cast<uint64_t>(i));
      core::Params params = core::Json::array({core::Json(i)});
      batch.push_back(
          AppendRequest{now, core::HistoryEventRequest{core::HistoryJoinSetRequest{
                                 js, core::ChildExecutionRequest{child, child_ffqn, params}}}});
      children.push_back(CreateRequest{now,
                                       ExecutionId(child),
                                       child_ffqn,
                                       params,
                                       std::make_pair(parent.execution_id, js),
                                       now,
                                       core::ComponentId::DummyActivity(),
                                       {},
                                       std::nullopt});
    }
    OrDie(db.AppendBatchCreateNewExecution(now, batch, parent.execution_id, Version(2), children),
          "AppendBatchCreateNewExecution");
    parents.push_back(parent.execution_id);
  }
  return parents;
}

std::vector<storage::LockedExecution> LockAll(storage::DbConnection& db,
                                              const core::FunctionFqn& ffqn) {
  const auto executor = core::ExecutorId::Generate();
  std::vector<storage::LockedExecution> all;
  while (true) {
    const DateTime now = Now();
    auto locked =
        OrDie(db.LockPendingByFfqns(100, now, {ffqn}, now, core::ComponentId::DummyActivity(),
                                    executor, now + std::chrono::hours(1), core::RunId::Generate(),
                                    core::ComponentRetryConfig{5u, {}}),
              "LockPendingByFfqns");
    if (locked.empty()) break;
    for (auto& l : locked) all.push_back(std::move(l));
  }
  return all;
}

void FinishChild(storage::DbConnection& db, const storage::LockedExecution& child) {
  const DateTime now = Now();
  const auto derived = child.execution_id.AsDerived();
  if (!derived || !child.parent) {
    Note("fatal: FinishChild of a top-level execution");
    std::exit(1);
  }
  const core::SupportedFunctionReturnValue result = core::ReturnValueOk{core::Json(1)};
  OrDie(db.AppendBatchRespondToParent(
            storage::AppendEventsToExecution{
                child.execution_id,
                child.next_version,
                {AppendRequest{now, core::Finished{result, std::nullopt}}}},
            storage::AppendResponseToExecution{child.parent->first, now, child.parent->second,
                                               *derived, child.next_version, result},
            now),
        "AppendBatchRespondToParent");
}

core::ExecutionRequest PersistEvent(uint64_t value) {
  std::vector<uint8_t> bytes(8);
  for (int i = 0; i < 8; ++i)
    bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(value >> (56 - 8 * i));
  return core::HistoryEventRequest{
      core::HistoryPersist{bytes, core::PersistKindRandomU64{0, UINT64_MAX}}};
}

}  // namespace stele::bench
