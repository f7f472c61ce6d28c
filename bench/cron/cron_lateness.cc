// stele_cron_bench: cron tick lateness at many schedules (BENCHMARKS.md,
// "Cron tick lateness"). One libstele Engine on a SQLite file
// (synchronous=FULL) with N schedules of a no-op activity, run for S
// seconds of wall-clock time; then every tick's lateness is read from the
// store: created_at − the tick's instant (first_scheduled_at), i.e. how
// late the ticker created the execution.
//
// Two shapes (STELE_BENCH_CRON_MODE): `spread` — schedule i fires every
// 10 s at second i mod 10 (N/10 ticks per second, steady); `burst` — all
// N fire together every 10 s (`*/10 * * * * *`), the worst case for one
// ticker. Overlap and catch-up are the defaults (skip, last).
//
// Output: `stele cron_<mode> <metric> <value> <unit>` lines.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "stele/stele.h"
#include "storage/sqlite/sqlite_pool.h"

namespace {

uint32_t EnvU32(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
}

constexpr const char* kNoop = "bench:cron/api.noop";

int Run(const std::string& mode, uint32_t schedules, uint32_t seconds, const std::string& dir) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  stele::storage::sqlite::SqliteOptions sqlite;
  sqlite.path = dir + "/cron.sqlite";
  auto opened = stele::storage::sqlite::SqlitePool::Open(sqlite);
  if (!opened) {
    std::fprintf(stderr, "cannot open %s\n", sqlite.path.c_str());
    return 1;
  }
  std::shared_ptr<stele::storage::DbPool> pool(std::move(*opened));
  stele::EngineOptions options;
  options.pool = pool;
  auto engine = stele::Engine::Open(options);
  if (!engine) return 1;
  (void)(*engine)->RegisterActivity(
      kNoop, [](stele::ActivityContext&, const stele::Json&) -> stele::ActivityResult {
        return stele::Json(nullptr);
      });
  for (uint32_t i = 0; i < schedules; ++i) {
    const std::string cron =
        mode == "burst" ? "*/10 * * * * *" : std::to_string(i % 10) + "/10 * * * * *";
    auto created =
        (*engine)->CreateSchedule("s" + std::to_string(i), cron, kNoop, stele::Json::array());
    if (!created) {
      std::fprintf(stderr, "%s\n", created.error().ToString().c_str());
      return 1;
    }
  }
  if (!(*engine)->Start()) return 1;
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  (*engine)->Stop();

  auto api = pool->ExternalApiConn();
  if (!api) return 1;
  std::vector<double> lateness_ms;
  std::optional<stele::core::ExecutionId> cursor;
  while (true) {
    auto page = (*api)->ListExecutions(
        std::nullopt, true,
        stele::core::Pagination<std::optional<stele::core::ExecutionId>>::OlderThan(1000, cursor,
                                                                                    false));
    if (!page || page->empty()) break;
    for (const auto& row : *page) {
      lateness_ms.push_back(
          std::chrono::duration<double, std::milli>(row.created_at - row.first_scheduled_at)
              .count());
    }
    cursor = page->back().execution_id;
  }
  engine->reset();
  pool->Close();
  if (lateness_ms.empty()) {
    std::fprintf(stderr, "no ticks fired\n");
    return 1;
  }
  std::sort(lateness_ms.begin(), lateness_ms.end());
  auto pct = [&](double p) {
    return lateness_ms[std::min(lateness_ms.size() - 1,
                                static_cast<size_t>(p * static_cast<double>(lateness_ms.size())))];
  };
  std::printf("stele cron_%s schedules %u count\n", mode.c_str(), schedules);
  std::printf("stele cron_%s ticks %zu count\n", mode.c_str(), lateness_ms.size());
  std::printf("stele cron_%s ticks_per_s %.1f rate\n", mode.c_str(),
              static_cast<double>(lateness_ms.size()) / seconds);
  std::printf("stele cron_%s lateness_p50 %.1f ms\n", mode.c_str(), pct(0.50));
  std::printf("stele cron_%s lateness_p99 %.1f ms\n", mode.c_str(), pct(0.99));
  std::printf("stele cron_%s lateness_max %.1f ms\n", mode.c_str(), lateness_ms.back());
  return 0;
}

}  // namespace

int main() {
  const uint32_t schedules = EnvU32("STELE_BENCH_CRON_SCHEDULES", 1000);
  const uint32_t seconds = EnvU32("STELE_BENCH_CRON_SECONDS", 60);
  const char* dir_env = std::getenv("STELE_BENCH_DIR");
  const std::string dir = std::string(dir_env != nullptr ? dir_env : "/tmp") + "/cron_bench";
  const char* mode_env = std::getenv("STELE_BENCH_CRON_MODE");
  std::vector<std::string> modes = {"spread", "burst"};
  if (mode_env != nullptr && *mode_env != '\0') modes = {mode_env};
  for (const std::string& mode : modes) {
    if (int rc = Run(mode, schedules, seconds, dir); rc != 0) return rc;
  }
  return 0;
}
