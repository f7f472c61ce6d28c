// Small helpers of the storage benchmarks: report lines, timing, latency
// percentiles, thread fan-out, opening SQLite stores and building requests.
//
// Every figure is printed as one line
//
//   stele <bench> <metric> <value> <unit>
//
// on stdout; progress and notes go to stderr.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/time.h"
#include "storage/db_connection.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele::bench {

using Sync = storage::sqlite::SqliteOptions::Synchronous;
using SteadyClock = std::chrono::steady_clock;

std::string_view SyncName(Sync sync);  // "full" | "normal"

void Report(std::string_view bench, std::string_view metric, double value, std::string_view unit);
void Note(const std::string& text);  // to stderr

int64_t EnvInt(const char* name, int64_t default_value);
double EnvDouble(const char* name, double default_value);
// Counts scaled by STELE_BENCH_SCALE (default 1), at least 1.
int64_t Scaled(int64_t count);

// Where bench files go: $STELE_BENCH_DIR, else ./bench-tmp.
std::filesystem::path ScratchDir();
// Removes `path` and its -wal/-shm companions.
void RemoveDb(const std::filesystem::path& path);

std::unique_ptr<storage::sqlite::SqlitePool> OpenSqlite(const std::filesystem::path& path,
                                                        Sync sync);
storage::sqlite::SqliteStats Stats(storage::sqlite::SqlitePool& pool);

// Runs fn(thread_index) on `threads` threads released together; returns the
// wall time from the release until the last one returned, in seconds.
double RunThreads(int threads, const std::function<void(int)>& fn);

double SecondsSince(SteadyClock::time_point start);

struct Latency {
  double p50_us = 0;
  double p99_us = 0;
  double max_us = 0;
};
Latency Summarize(std::vector<double> micros);

// Text of an error: storage errors have ToString(), parse errors a message.
template <class E>
std::string ErrorText(const E& error) {
  if constexpr (requires { error.ToString(); }) {
    return error.ToString();
  } else {
    return error.message;
  }
}

// Aborts the benchmark with a message when `result` is an error.
template <class T, class E>
T OrDie(Result<T, E> result, const char* what) {
  if (!result) {
    Note(std::string("fatal: ") + what + ": " + ErrorText(result.error()));
    std::exit(1);
  }
  return std::move(*result);
}
template <class E>
void OrDie(Result<void, E> result, const char* what) {
  if (!result) {
    Note(std::string("fatal: ") + what + ": " + ErrorText(result.error()));
    std::exit(1);
  }
}

// --- requests ----------------------------------------------------------------

DateTime Now();
core::FunctionFqn Ffqn(const char* text);
storage::CreateRequest TopLevelCreate(const core::FunctionFqn& ffqn, DateTime now);

// Creates `count` pending children of `child_ffqn` under fresh top-level
// parents (`per_parent` each, one AppendBatchCreateNewExecution per parent,
// after locking the parent). Returns the parents, which stay locked.
std::vector<storage::ExecutionId> CreatePendingChildren(storage::DbConnection& db,
                                                        const core::FunctionFqn& child_ffqn,
                                                        int64_t count, int64_t per_parent);

// Locks executions of `ffqn` 100 at a time until none is pending.
std::vector<storage::LockedExecution> LockAll(storage::DbConnection& db,
                                              const core::FunctionFqn& ffqn);

// Finishes a locked child with its parent's response (one transaction).
void FinishChild(storage::DbConnection& db, const storage::LockedExecution& child);

// A Persist history event (~60 bytes of JSON): an append that changes no state.
core::ExecutionRequest PersistEvent(uint64_t value);

}  // namespace stele::bench
