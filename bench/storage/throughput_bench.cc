// Throughput of the storage contract on SQLite, per operation, with one
// caller and with many concurrent callers, at synchronous FULL and NORMAL.
// Each configuration uses a fresh file. With several callers the writer
// thread folds queued operations into one transaction (group commit); the
// pool's counters show how many operations each COMMIT carried.
//
//   create       DbConnection::Create of a top-level execution
//   lock100      LockPendingByFfqns, batches of 100 (executions locked/s)
//   append       DbExecutor::Append of a history event to a locked execution
//   child_finish AppendBatchRespondToParent: a child's Finished + the
//                parent's response, one transaction
#include <algorithm>
#include <atomic>
#include <string>

#include "bench/storage/bench_main.h"
#include "bench/storage/bench_util.h"

namespace stele::bench {
namespace {

using storage::ExecutionId;
using storage::Version;

struct Window {
  storage::sqlite::SqlitePool& pool;
  storage::sqlite::SqliteStats before;
  explicit Window(storage::sqlite::SqlitePool& p) : pool(p), before(p.stats()) {}
  double OpsPerCommit() const {
    const auto after = pool.stats();
    const double commits =
        static_cast<double>(after.transactions_committed - before.transactions_committed);
    const double ops = static_cast<double>(after.ops_committed - before.ops_committed);
    return commits > 0 ? ops / commits : 0;
  }
};

}  // namespace

void RunThroughputBench(Sync sync, int threads) {
  const std::string bench =
      "storage_" + std::string(SyncName(sync)) + "_t" + std::to_string(threads);
  const auto path = ScratchDir() / (bench + ".sqlite");
  RemoveDb(path);
  auto pool = OpenSqlite(path, sync);
  std::vector<std::unique_ptr<storage::DbConnection>> conns;
  for (int t = 0; t < threads; ++t) conns.push_back(OrDie(pool->Connection(), "Connection"));
  const bool full = sync == Sync::kFull;
  // One caller does `base` operations of each kind; concurrent runs share
  // 4 * base among their callers (a few seconds each on a slow fsync).
  const int64_t base = full ? 1200 : 6000;
  const int64_t per_thread =
      Scaled(threads == 1 ? base : std::max<int64_t>(4 * base / threads, 20));
  const int64_t total = per_thread * threads;

  // create
  {
    const auto ffqn = Ffqn("stele:bench/activity.create");
    Window window(*pool);
    const double seconds = RunThreads(threads, [&](int t) {
      for (int64_t i = 0; i < per_thread; ++i) {
        OrDie(conns[static_cast<size_t>(t)]->Create(TopLevelCreate(ffqn, Now())), "Create");
      }
    });
    Report(bench, "create", static_cast<double>(total) / seconds, "ops/s");
    Report(bench, "create_ops_per_commit", window.OpsPerCommit(), "ops/commit");
  }

  // lock100: every caller locks batches of 100 until nothing is pending.
  {
    const auto ffqn = Ffqn("stele:bench/activity.lock");
    const int64_t pending = Scaled(full ? 20000 : 40000);
    CreatePendingChildren(*conns[0], ffqn, pending, 1000);
    std::atomic<int64_t> locked{0};
    std::atomic<int64_t> calls{0};
    Window window(*pool);
    const double seconds = RunThreads(threads, [&](int t) {
      const auto executor = core::ExecutorId::Generate();
      while (true) {
        const DateTime now = Now();
        auto got = OrDie(conns[static_cast<size_t>(t)]->LockPendingByFfqns(
                             100, now, {ffqn}, now, core::ComponentId::DummyActivity(), executor,
                             now + std::chrono::hours(1), core::RunId::Generate(),
                             core::ComponentRetryConfig{5u, {}}),
                         "LockPendingByFfqns");
        calls.fetch_add(1);
        if (got.empty()) break;
        locked.fetch_add(static_cast<int64_t>(got.size()));
      }
    });
    if (locked.load() != pending) {
      Note("fatal: locked " + std::to_string(locked.load()) + " of " + std::to_string(pending));
      std::exit(1);
    }
    Report(bench, "lock100", static_cast<double>(pending) / seconds, "executions/s");
    Report(bench, "lock100_calls", static_cast<double>(calls.load()) / seconds, "calls/s");
    Report(bench, "lock100_ops_per_commit", window.OpsPerCommit(), "ops/commit");
  }

  // append: each caller appends to its own locked execution.
  {
    const auto ffqn = Ffqn("stele:bench/activity.append");
    std::vector<ExecutionId> ids;
    for (int t = 0; t < threads; ++t) {
      auto req = TopLevelCreate(ffqn, Now());
      OrDie(conns[0]->Create(req), "Create");
      ids.push_back(req.execution_id);
    }
    const auto executor = core::ExecutorId::Generate();
    for (const auto& id : ids) {
      const DateTime now = Now();
      OrDie(conns[0]->LockOne(now, core::ComponentId::DummyActivity(), id, core::RunId::Generate(),
                              Version(1), executor, now + std::chrono::hours(1),
                              core::ComponentRetryConfig{5u, {}}),
            "LockOne");
    }
    Window window(*pool);
    const double seconds = RunThreads(threads, [&](int t) {
      Version version(2);
      for (int64_t i = 0; i < per_thread; ++i) {
        version = OrDie(conns[static_cast<size_t>(t)]->Append(
                            ids[static_cast<size_t>(t)], version,
                            storage::AppendRequest{Now(), PersistEvent(static_cast<uint64_t>(i))}),
                        "Append");
      }
    });
    Report(bench, "append", static_cast<double>(total) / seconds, "ops/s");
    Report(bench, "append_ops_per_commit", window.OpsPerCommit(), "ops/commit");
  }

  // child_finish: locked children, split among the callers.
  {
    const auto ffqn = Ffqn("stele:bench/activity.child");
    CreatePendingChildren(*conns[0], ffqn, total, 500);
    auto children = LockAll(*conns[0], ffqn);
    Window window(*pool);
    const double seconds = RunThreads(threads, [&](int t) {
      for (size_t i = static_cast<size_t>(t); i < children.size();
           i += static_cast<size_t>(threads)) {
        FinishChild(*conns[static_cast<size_t>(t)], children[i]);
      }
    });
    Report(bench, "child_finish", static_cast<double>(children.size()) / seconds, "ops/s");
    Report(bench, "child_finish_ops_per_commit", window.OpsPerCommit(), "ops/commit");
  }

  conns.clear();
  pool->Close();
  pool.reset();
  RemoveDb(path);
}

}  // namespace stele::bench
