// Growth: do latencies stay flat as finished executions pile up?
//
// Measures single-caller latencies (p50/p99) of create, lock (batches of 1
// and of 100) and ListExecutions (newest 20: all, top level only, one ffqn,
// by id) on an empty store, then on a store holding N finished executions
// (STELE_BENCH_GROWTH_N, default 1,000,000), and prints the ratios.
//
// The filled store is built through the contract, fast: each filler thread
// creates a parent, spawns 1000 children in one AppendBatchCreateNewExecution,
// locks them 100 at a time, finishes each with AppendBatchRespondToParent
// and finishes the parent. Both stores run at synchronous=NORMAL, so that
// the latencies show query cost rather than fsync time (STELE_BENCH_GROWTH_SYNC
// = full to change). STELE_BENCH_KEEP=1 keeps the filled file (and reuses it
// on the next run, for EXPLAIN QUERY PLAN work).
#include <atomic>
#include <fstream>
#include <mutex>
#include <string>

#include "bench/storage/bench_main.h"
#include "bench/storage/bench_util.h"

namespace stele::bench {
namespace {

using storage::ExecutionId;
using storage::Version;

struct Measured {
  std::vector<std::pair<std::string, Latency>> rows;
};

template <class F>
Latency Sample(int64_t samples, F&& op) {
  std::vector<double> micros;
  micros.reserve(static_cast<size_t>(samples));
  for (int64_t i = 0; i < samples; ++i) {
    const auto start = SteadyClock::now();
    op();
    micros.push_back(SecondsSince(start) * 1e6);
  }
  return Summarize(std::move(micros));
}

Measured Measure(storage::sqlite::SqlitePool& pool, const std::string& bench) {
  Measured m;
  auto db = OrDie(pool.ConnectionTest(), "ConnectionTest");
  const auto probe = Ffqn("stele:bench/activity.probe");
  const auto probe_batch = Ffqn("stele:bench/activity.probe-batch");
  const auto executor = core::ExecutorId::Generate();
  const core::ComponentRetryConfig retry{5u, {}};

  // Warm-up, not measured: page cache, prepared statements, the writer.
  for (int i = 0; i < 50; ++i) OrDie(db->Create(TopLevelCreate(probe, Now())), "Create");
  for (int i = 0; i < 50; ++i) {
    OrDie(db->ListExecutions(std::nullopt, false, core::Pagination<std::optional<DateTime>>{}),
          "List");
  }
  m.rows.emplace_back("create", Sample(Scaled(1000), [&] {
                        OrDie(db->Create(TopLevelCreate(probe, Now())), "Create");
                      }));
  m.rows.emplace_back("lock1", Sample(Scaled(500), [&] {
                        const DateTime now = Now();
                        auto got = OrDie(
                            db->LockPendingByFfqns(
                                1, now, {probe}, now, core::ComponentId::DummyActivity(), executor,
                                now + std::chrono::hours(1), core::RunId::Generate(), retry),
                            "LockPendingByFfqns");
                        if (got.size() != 1) {
                          Note("fatal: lock1 found nothing pending");
                          std::exit(1);
                        }
                      }));
  const int64_t batches = Scaled(100);
  CreatePendingChildren(*db, probe_batch, batches * 100, 1000);
  m.rows.emplace_back(
      "lock100", Sample(batches, [&] {
        const DateTime now = Now();
        auto got = OrDie(db->LockPendingByFfqns(
                             100, now, {probe_batch}, now, core::ComponentId::DummyActivity(),
                             executor, now + std::chrono::hours(1), core::RunId::Generate(), retry),
                         "LockPendingByFfqns");
        if (got.size() != 100) {
          Note("fatal: lock100 locked " + std::to_string(got.size()));
          std::exit(1);
        }
      }));
  const int64_t list_samples = Scaled(300);
  auto list = [&](const char* name, std::optional<core::FunctionFqn> ffqn, bool top_level,
                  core::ExecutionListPagination pagination) {
    m.rows.emplace_back(name, Sample(list_samples, [&] {
                          auto page =
                              OrDie(db->ListExecutions(ffqn, top_level, pagination), "List");
                          if (page.size() != 20) {
                            Note(std::string("fatal: ") + name + " returned " +
                                 std::to_string(page.size()) + " executions");
                            std::exit(1);
                          }
                        }));
  };
  list("list_newest", std::nullopt, false, core::Pagination<std::optional<DateTime>>{});
  list("list_top_level", std::nullopt, true, core::Pagination<std::optional<DateTime>>{});
  list("list_ffqn", probe_batch, false, core::Pagination<std::optional<DateTime>>{});
  list("list_by_id", std::nullopt, false, core::Pagination<std::optional<ExecutionId>>{});
  for (const auto& [name, latency] : m.rows) {
    Report(bench, name + "_p50", latency.p50_us, "us");
    Report(bench, name + "_p99", latency.p99_us, "us");
  }
  return m;
}

// Fills `pool` with about `n` finished children (+ n/1000 finished parents).
void Fill(storage::sqlite::SqlitePool& pool, int64_t n, const core::FunctionFqn& filler_ffqn) {
  const int threads = static_cast<int>(EnvInt("STELE_BENCH_FILL_THREADS", 8));
  constexpr int64_t kChunk = 1000;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::atomic<int64_t> next_chunk{0};
  std::atomic<int64_t> finished{0};
  std::mutex progress_mu;
  int64_t next_report = n / 10;
  const auto start = SteadyClock::now();
  const double seconds = RunThreads(threads, [&](int) {
    auto db = OrDie(pool.Connection(), "Connection");
    const auto executor = core::ExecutorId::Generate();
    while (true) {
      const int64_t chunk = next_chunk.fetch_add(1);
      if (chunk >= chunks) break;
      const int64_t size = std::min(kChunk, n - chunk * kChunk);
      auto parents = CreatePendingChildren(*db, filler_ffqn, size, kChunk);
      // Lock whatever is pending (possibly another thread's children).
      while (true) {
        const DateTime now = Now();
        auto locked = OrDie(
            db->LockPendingByFfqns(100, now, {filler_ffqn}, now, core::ComponentId::DummyActivity(),
                                   executor, now + std::chrono::hours(1), core::RunId::Generate(),
                                   core::ComponentRetryConfig{5u, {}}),
            "LockPendingByFfqns");
        if (locked.empty()) break;
        for (const auto& child : locked) FinishChild(*db, child);
        const int64_t done = finished.fetch_add(static_cast<int64_t>(locked.size())) +
                             static_cast<int64_t>(locked.size());
        std::lock_guard lock(progress_mu);
        if (done >= next_report) {
          Note("fill: " + std::to_string(done) + "/" + std::to_string(n) + " after " +
               std::to_string(static_cast<int64_t>(SecondsSince(start))) + " s");
          next_report += n / 10;
        }
      }
      // The parent: Created, Locked, JoinSetCreate + `size` requests.
      const Version finish_at(static_cast<Version::Type>(3 + size));
      OrDie(
          db->Append(parents.front(), finish_at,
                     storage::AppendRequest{
                         Now(), core::Finished{core::ReturnValueOk{core::Json(1)}, std::nullopt}}),
          "finish parent");
    }
  });
  Report("growth_fill", "rate", static_cast<double>(n) / seconds, "executions/s");
  Report("growth_fill", "seconds", seconds, "s");
}

}  // namespace

void RunGrowthBench() {
  const int64_t n = EnvInt("STELE_BENCH_GROWTH_N", 1000000);
  const char* sync_env = std::getenv("STELE_BENCH_GROWTH_SYNC");
  const Sync sync = sync_env && std::string(sync_env) == "full" ? Sync::kFull : Sync::kNormal;
  const auto filler = Ffqn("stele:bench/activity.filler");
  const auto dir = ScratchDir();

  const auto empty_path = dir / "growth-empty.sqlite";
  RemoveDb(empty_path);
  Measured empty;
  {
    auto pool = OpenSqlite(empty_path, sync);
    empty = Measure(*pool, "growth_empty");
    pool->Close();
  }
  RemoveDb(empty_path);

  const auto path = dir / ("growth-" + std::to_string(n) + ".sqlite");
  const auto marker = dir / ("growth-" + std::to_string(n) + ".filled");
  const bool keep = EnvInt("STELE_BENCH_KEEP", 0) != 0;
  if (!(std::filesystem::exists(marker) && std::filesystem::exists(path))) {
    RemoveDb(path);
    auto pool = OpenSqlite(path, Sync::kNormal);
    Note("filling " + path.string() + " with " + std::to_string(n) + " finished executions");
    Fill(*pool, n, filler);
    pool->Close();
    std::ofstream(marker) << n << "\n";
  } else {
    Note("reusing " + path.string());
  }
  const std::string bench = "growth_" + std::to_string(n);
  Measured filled;
  {
    auto pool = OpenSqlite(path, sync);
    filled = Measure(*pool, bench);
    pool->Close();
  }
  const auto bytes = std::filesystem::file_size(path);
  Report(bench, "db_size", static_cast<double>(bytes) / (1 << 20), "MiB");
  Report(bench, "bytes_per_execution", static_cast<double>(bytes) / static_cast<double>(n), "B");
  for (size_t i = 0; i < filled.rows.size(); ++i) {
    const auto& [name, latency] = filled.rows[i];
    const double base = empty.rows[i].second.p50_us;
    const double base99 = empty.rows[i].second.p99_us;
    Report(bench, name + "_p50_ratio", base > 0 ? latency.p50_us / base : 0, "x");
    Report(bench, name + "_p99_ratio", base99 > 0 ? latency.p99_us / base99 : 0, "x");
  }
  if (keep) {
    Note("kept " + path.string());
  } else {
    RemoveDb(path);
    std::filesystem::remove(marker);
  }
}

}  // namespace stele::bench
