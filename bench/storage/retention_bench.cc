// Retention: what collecting a large backlog of finished executions costs
// the traffic that goes on meanwhile (docs/storage_contract.md "Retention").
//
// 1. Fills a SQLite store with N finished top-level executions
//    (STELE_BENCH_RETENTION_N, default 1,000,000) that finished 30 days
//    ago: nine in ten are activities (Created + Finished), one in ten a
//    workflow with three finished children (its tree is five executions
//    deep in rows: parent, three children and their responses).
// 2. Baseline: paced traffic for STELE_BENCH_RETENTION_SECONDS (default 10)
//    — STELE_BENCH_RETENTION_RATE executions per second (default 1000),
//    each a submit (Create) and an activity step (LockOne, then Finished:
//    two commits) — and the p50/p99/max latency of submit and step.
// 3. The same traffic while the service's retention pass
//    (service::RunRetentionPass, batches of STELE_BENCH_RETENTION_BATCH,
//    default 100) deletes everything older than 7 days; the latencies
//    during the pass, how long each batch transaction took, and how fast
//    the backlog went.
// 4. The file: its size and free pages after the pass, and after filling
//    the store again with a tenth of N (freed pages are reused: the file
//    should not grow).
//
// synchronous=NORMAL (STELE_BENCH_GROWTH_SYNC=full to change), like the
// growth bench, so that the latencies show the writer's queue, not fsyncs.
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/storage/bench_main.h"
#include "bench/storage/bench_util.h"
#include "service/retention.h"

namespace stele::bench {
namespace {

using storage::AppendRequest;
using storage::CreateRequest;
using storage::ExecutionId;
using storage::Version;

const core::SupportedFunctionReturnValue kOk = core::ReturnValueOk{core::Json(1)};

// Creates `n` finished top-level executions (and children) created and
// finished at `at`, on `threads` threads.
void FillFinished(storage::sqlite::SqlitePool& pool, int64_t n, DateTime at, int threads) {
  const auto activity = Ffqn("stele:bench/retention.activity");
  const auto workflow = Ffqn("stele:bench/retention.workflow");
  const auto js = OrDie(core::JoinSetId::Create(core::JoinSetKind::kNamed, "fan-out"), "js");
  std::atomic<int64_t> next{0};
  const auto start = SteadyClock::now();
  RunThreads(threads, [&](int) {
    auto db = OrDie(pool.Connection(), "Connection");
    while (true) {
      const int64_t i = next.fetch_add(1);
      if (i >= n) break;
      if (i > 0 && i % 100000 == 0) {
        Note("fill: " + std::to_string(i) + "/" + std::to_string(n) + " after " +
             std::to_string(static_cast<int>(SecondsSince(start))) + " s");
      }
      CreateRequest top = TopLevelCreate(i % 10 == 9 ? workflow : activity, at);
      if (i % 10 != 9) {
        OrDie(db->Create(top), "create");
        OrDie(db->Append(top.execution_id, Version(1),
                         AppendRequest{at, core::Finished{kOk, std::nullopt}}),
              "finish");
        continue;
      }
      top.component_id = core::ComponentId::DummyWorkflow();
      OrDie(db->Create(top), "create parent");
      std::vector<AppendRequest> batch{
          AppendRequest{at, core::HistoryEventRequest{core::HistoryJoinSetCreate{js}}}};
      std::vector<CreateRequest> children;
      for (uint64_t c = 1; c <= 3; ++c) {
        auto child = top.execution_id.NextLevel(js, c);
        core::Params params = core::Json::array({core::Json(c)});
        batch.push_back(
            AppendRequest{at, core::HistoryEventRequest{core::HistoryJoinSetRequest{
                                  js, core::ChildExecutionRequest{child, activity, params}}}});
        children.push_back(CreateRequest{at,
                                         ExecutionId(child),
                                         activity,
                                         params,
                                         std::make_pair(top.execution_id, js),
                                         at,
                                         core::ComponentId::DummyActivity(),
                                         {},
                                         std::nullopt});
      }
      Version v = OrDie(
          db->AppendBatchCreateNewExecution(at, batch, top.execution_id, Version(1), children),
          "create children");
      for (uint64_t c = 1; c <= 3; ++c) {
        auto child = top.execution_id.NextLevel(js, c);
        OrDie(db->AppendBatchRespondToParent(
                  storage::AppendEventsToExecution{
                      ExecutionId(child),
                      Version(1),
                      {AppendRequest{at, core::Finished{kOk, std::nullopt}}}},
                  storage::AppendResponseToExecution{top.execution_id, at, js, child, Version(1),
                                                     kOk},
                  at),
              "finish child");
      }
      OrDie(db->Append(top.execution_id, v, AppendRequest{at, core::Finished{kOk, std::nullopt}}),
            "finish parent");
    }
  });
}

struct Traffic {
  std::mutex mu;
  std::vector<double> submit_us;
  std::vector<double> step_us;
};

// Paced submit + step traffic at `rate` executions/s on 4 threads until
// `stop`; latencies of this round go to `out`.
void RunTraffic(storage::sqlite::SqlitePool& pool, double rate, const std::atomic<bool>& stop,
                Traffic& out) {
  const auto ffqn = Ffqn("stele:bench/retention.live");
  constexpr int kThreads = 4;
  const auto period = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(kThreads / rate));
  RunThreads(kThreads, [&](int) {
    auto db = OrDie(pool.Connection(), "Connection");
    const auto executor = core::ExecutorId::Generate();
    std::vector<double> submit, step;
    auto due = SteadyClock::now();
    while (!stop.load()) {
      std::this_thread::sleep_until(due);
      due += period;
      const DateTime now = Now();
      CreateRequest req = TopLevelCreate(ffqn, now);
      auto t0 = SteadyClock::now();
      OrDie(db->Create(req), "submit");
      submit.push_back(SecondsSince(t0) * 1e6);
      t0 = SteadyClock::now();
      auto locked =
          OrDie(db->LockOne(now, core::ComponentId::DummyActivity(), req.execution_id,
                            core::RunId::Generate(), Version(1), executor,
                            now + std::chrono::seconds(30), core::ComponentRetryConfig{5u, {}}),
                "lock");
      OrDie(db->Append(req.execution_id, locked.next_version,
                       AppendRequest{Now(), core::Finished{kOk, std::nullopt}}),
            "step");
      step.push_back(SecondsSince(t0) * 1e6);
    }
    std::lock_guard lock(out.mu);
    out.submit_us.insert(out.submit_us.end(), submit.begin(), submit.end());
    out.step_us.insert(out.step_us.end(), step.begin(), step.end());
  });
}

void ReportLatencies(const std::string& phase, Traffic& traffic) {
  const Latency submit = Summarize(traffic.submit_us);
  const Latency step = Summarize(traffic.step_us);
  Report("retention", phase + "_submit_p50", submit.p50_us, "us");
  Report("retention", phase + "_submit_p99", submit.p99_us, "us");
  Report("retention", phase + "_submit_max", submit.max_us, "us");
  Report("retention", phase + "_step_p50", step.p50_us, "us");
  Report("retention", phase + "_step_p99", step.p99_us, "us");
  Report("retention", phase + "_step_max", step.max_us, "us");
  Report("retention", phase + "_executions", static_cast<double>(traffic.step_us.size()), "");
}

// PRAGMA page_count and freelist_count, read on a connection of its own.
std::pair<int64_t, int64_t> Pages(const std::filesystem::path& path) {
  sqlite3* raw = nullptr;
  std::pair<int64_t, int64_t> pages{0, 0};
  if (sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    for (auto [sql, slot] : {std::pair{"PRAGMA page_count", &pages.first},
                             std::pair{"PRAGMA freelist_count", &pages.second}}) {
      sqlite3_stmt* stmt = nullptr;
      if (sqlite3_prepare_v2(raw, sql, -1, &stmt, nullptr) == SQLITE_OK &&
          sqlite3_step(stmt) == SQLITE_ROW) {
        *slot = sqlite3_column_int64(stmt, 0);
      }
      sqlite3_finalize(stmt);
    }
  }
  sqlite3_close(raw);
  return pages;
}

void ReportFile(const std::string& phase, const std::filesystem::path& path) {
  const auto [pages, free_pages] = Pages(path);
  Report("retention", phase + "_file", static_cast<double>(pages) * 4096 / (1 << 20), "MiB");
  Report("retention", phase + "_free", static_cast<double>(free_pages) * 4096 / (1 << 20), "MiB");
}

}  // namespace

void RunRetentionBench() {
  const int64_t n = EnvInt("STELE_BENCH_RETENTION_N", 1'000'000);
  const double rate = EnvDouble("STELE_BENCH_RETENTION_RATE", 1000);
  const int64_t seconds = EnvInt("STELE_BENCH_RETENTION_SECONDS", 10);
  const auto batch = static_cast<uint32_t>(EnvInt("STELE_BENCH_RETENTION_BATCH", 100));
  const char* sync_env = std::getenv("STELE_BENCH_GROWTH_SYNC");
  const Sync sync = sync_env && std::string(sync_env) == "full" ? Sync::kFull : Sync::kNormal;
  const auto path = ScratchDir() / "retention.sqlite";
  RemoveDb(path);
  auto pool = OpenSqlite(path, sync);
  Note("retention: filling " + path.string() + " with " + std::to_string(n) +
       " executions finished 30 days ago");
  const DateTime old = Now() - std::chrono::hours(24 * 30);
  auto fill_start = SteadyClock::now();
  FillFinished(*pool, n, old, static_cast<int>(EnvInt("STELE_BENCH_FILL_THREADS", 8)));
  const double fill_seconds = SecondsSince(fill_start);
  Report("retention", "fill_rate", static_cast<double>(n) / fill_seconds, "top-level/s");
  ReportFile("filled", path);

  {
    Note("retention: baseline traffic, no collection");
    Traffic traffic;
    std::atomic<bool> stop{false};
    std::thread timer([&] {
      std::this_thread::sleep_for(std::chrono::seconds(seconds));
      stop = true;
    });
    RunTraffic(*pool, rate, stop, traffic);
    timer.join();
    ReportLatencies("baseline", traffic);
  }

  Note("retention: the same traffic while the backlog is collected");
  Traffic traffic;
  std::atomic<bool> stop{false};
  std::vector<double> batch_ms;
  service::RetentionReport report;
  double gc_seconds = 0;
  std::thread gc([&] {
    auto api = OrDie(pool->ExternalApiConn(), "ExternalApiConn");
    service::RetentionCounters counters;
    const auto start = SteadyClock::now();
    report =
        OrDie(service::RunRetentionPass(
                  *api, Now() - std::chrono::hours(24 * 7), batch, CancellationToken(), counters,
                  [&](const storage::DeletedExecutions&, SteadyClock::duration took) {
                    batch_ms.push_back(std::chrono::duration<double, std::milli>(took).count());
                  }),
              "RunRetentionPass");
    gc_seconds = SecondsSince(start);
    stop = true;
  });
  RunTraffic(*pool, rate, stop, traffic);
  gc.join();
  ReportLatencies("collecting", traffic);
  const Latency batches = Summarize(batch_ms);
  Report("retention", "batch_size", batch, "top-level");
  Report("retention", "batch_p50", batches.p50_us, "ms");
  Report("retention", "batch_p99", batches.p99_us, "ms");
  Report("retention", "batch_max", batches.max_us, "ms");
  Report("retention", "deleted", static_cast<double>(report.deleted), "executions");
  Report("retention", "deleted_top_level", static_cast<double>(report.deleted_top_level),
         "top-level");
  Report("retention", "collect_seconds", gc_seconds, "s");
  Report("retention", "collect_rate", static_cast<double>(report.deleted) / gc_seconds,
         "executions/s");
  if (report.deleted_top_level != static_cast<uint64_t>(n)) {
    Note("fatal: collected " + std::to_string(report.deleted_top_level) + " of " +
         std::to_string(n) + " top-level executions");
    std::exit(1);
  }
  ReportFile("collected", path);

  Note("retention: filling a tenth of the backlog again");
  FillFinished(*pool, std::max<int64_t>(n / 10, 1), old, 8);
  ReportFile("refilled", path);
  pool->Close();
  RemoveDb(path);
}

}  // namespace stele::bench
