// Baseline: what plain SQLite does on this disk with the backend's PRAGMAs
// (WAL, page_size 8192, 16 MiB cache), writing rows shaped like
// t_execution_log rows (a 335-byte Created JSON):
//   - insert_per_commit: one INSERT per COMMIT (autocommit), the price of a
//     durable write when nothing is batched;
//   - insert_batch100: 100 INSERTs per COMMIT, what group commit can reach
//     at best when 100 operations share a transaction.
#include <sqlite3.h>

#include <string>

#include "bench/storage/bench_main.h"
#include "bench/storage/bench_util.h"

namespace stele::bench {
namespace {

void Exec(sqlite3* db, const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    Note(std::string("fatal: sqlite3_exec `") + sql + "`: " + (error ? error : "?"));
    std::exit(1);
  }
}

double InsertRows(sqlite3* db, int64_t rows, int64_t per_commit, int64_t& next_id) {
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db,
                     "INSERT INTO t_log (execution_id, version, created_at, json_value, variant) "
                     "VALUES (?, 0, ?, ?, 'created')",
                     -1, &insert, nullptr);
  const std::string json =
      R"({"created":{"ffqn":"stele:bench/activity.create","params":[{"order":42,"amount":1999}],)"
      R"("parent":null,"scheduled_at":"2026-01-02T03:04:05.123456Z","component_id":)"
      R"({"component_type":"activity_wasm","name":"dummy","input_digest":"sha256:)"
      R"(0000000000000000000000000000000000000000000000000000000000000000"},"metadata":{},)"
      R"("scheduled_by":null}})";
  const auto start = SteadyClock::now();
  for (int64_t done = 0; done < rows;) {
    if (per_commit > 1) Exec(db, "BEGIN IMMEDIATE");
    for (int64_t i = 0; i < per_commit && done < rows; ++i, ++done) {
      const std::string id = "E_" + std::to_string(next_id++);
      sqlite3_bind_text(insert, 1, id.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(insert, 2, next_id);
      sqlite3_bind_text(insert, 3, json.c_str(), static_cast<int>(json.size()), SQLITE_STATIC);
      if (sqlite3_step(insert) != SQLITE_DONE) {
        Note(std::string("fatal: insert: ") + sqlite3_errmsg(db));
        std::exit(1);
      }
      sqlite3_reset(insert);
    }
    if (per_commit > 1) Exec(db, "COMMIT");
  }
  const double seconds = SecondsSince(start);
  sqlite3_finalize(insert);
  return seconds;
}

}  // namespace

void RunRawSqliteBench(Sync sync) {
  const std::string bench = "sqlite_raw_" + std::string(SyncName(sync));
  const auto path = ScratchDir() / (bench + ".sqlite");
  RemoveDb(path);
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    Note("fatal: cannot open " + path.string());
    std::exit(1);
  }
  Exec(db, "PRAGMA page_size=8192");
  Exec(db, "PRAGMA journal_mode=WAL");
  Exec(db, sync == Sync::kFull ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
  Exec(db, "PRAGMA cache_size=-16384");
  Exec(db,
       "CREATE TABLE t_log (execution_id TEXT NOT NULL, version INTEGER NOT NULL, "
       "created_at INTEGER NOT NULL, json_value TEXT NOT NULL, variant TEXT NOT NULL, "
       "PRIMARY KEY (execution_id, version)) STRICT");
  int64_t next_id = 0;
  const int64_t single = Scaled(sync == Sync::kFull ? 1000 : 20000);
  double seconds = InsertRows(db, single, 1, next_id);
  Report(bench, "insert_per_commit", static_cast<double>(single) / seconds, "ops/s");
  Report(bench, "insert_per_commit_latency", seconds / static_cast<double>(single) * 1e6, "us/op");
  const int64_t batched = Scaled(100000);
  seconds = InsertRows(db, batched, 100, next_id);
  Report(bench, "insert_batch100", static_cast<double>(batched) / seconds, "ops/s");
  Report(bench, "insert_batch100_commits", static_cast<double>(batched) / 100 / seconds,
         "commits/s");
  sqlite3_close(db);
  RemoveDb(path);
}

}  // namespace stele::bench
