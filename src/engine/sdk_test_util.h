// Test support for the SDK tests: an Engine on a fresh SQLite file in a
// temporary directory (optionally on a pool the test reads too), and
// bounded waits for an execution's state (polling the database; never a
// sleep whose length decides the outcome).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/ids.h"
#include "stele/engine.h"
#include "storage/db_external_api.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele::testing {

inline std::filesystem::path MakeTempDir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
  char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  return std::filesystem::path(pattern);
}

template <class R>
auto OkOrDie(R result, const char* what) {
  if (!result) {
    ADD_FAILURE() << what << ": " << result.error().ToString();
    std::abort();
  }
  return std::move(*result);
}

// Waits until `id` reaches state `state` ("BlockedByJoinSet", "Locked", ...);
// false when it does not within `limit`.
inline bool WaitForState(Engine& engine, const std::string& id, const std::string& state,
                         std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    auto status = engine.GetStatus(id);
    if (status && status->state == state) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

// Waits until `predicate()` holds; false when it does not within `limit`.
template <class P>
bool WaitUntil(P predicate, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("stele_sdk_"); }
  void TearDown() override {
    engine_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Options for a fast test engine on a file in the test's directory.
  EngineOptions Options() {
    EngineOptions options;
    options.sqlite_path = (dir_ / "test.sqlite").string();
    options.sqlite_synchronous_full = false;
    options.tick_sleep = std::chrono::milliseconds(50);
    options.watcher_tick = std::chrono::milliseconds(20);
    options.watcher_leeway = std::chrono::milliseconds(0);
    return options;
  }
  Engine& Open(EngineOptions options) {
    engine_ = OkOrDie(Engine::Open(std::move(options)), "open");
    return *engine_;
  }
  Engine& Open() { return Open(Options()); }

  ExecutionResult Await(const std::string& id,
                        std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    auto result = engine_->WaitForResult(id, limit);
    if (!result) {
      ADD_FAILURE() << "waiting for " << id << ": " << result.error().ToString();
      return ExecutionResult::Failed("test", "no result");
    }
    return *result;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Engine> engine_;
};

// An EngineTest whose engine runs on a SQLite pool the test opened itself,
// so that it can read what the Engine API does not show: execution logs
// and the pool's commit counters.
class PoolEngineTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    storage::sqlite::SqliteOptions sqlite;
    sqlite.path = (dir_ / "pool.sqlite").string();
    sqlite.synchronous = storage::sqlite::SqliteOptions::Synchronous::kFull;
    pool_ = std::shared_ptr<storage::sqlite::SqlitePool>(
        OkOrDie(storage::sqlite::SqlitePool::Open(sqlite), "open pool"));
    api_ = OkOrDie(pool_->ExternalApiConn(), "api connection");
  }
  void TearDown() override {
    engine_.reset();
    api_.reset();
    pool_->Close();
    EngineTest::TearDown();
  }
  // EngineTest::Options on this test's pool.
  EngineOptions Options() {
    EngineOptions options = EngineTest::Options();
    options.pool = pool_;
    return options;
  }
  using EngineTest::Open;
  Engine& Open() { return Open(Options()); }
  // The whole log of execution `id`.
  std::vector<core::ExecutionEvent> Events(const std::string& id) {
    auto parsed = core::ExecutionId::Parse(id);
    EXPECT_TRUE(parsed.has_value()) << id;
    return OkOrDie(api_->ListExecutionEvents(*parsed, core::Version(0), 1000, false), "events");
  }

  std::shared_ptr<storage::sqlite::SqlitePool> pool_;
  std::unique_ptr<storage::DbExternalApi> api_;
};

}  // namespace stele::testing
