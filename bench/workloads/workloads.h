// The benchmark workloads W1–W5 (bench/README.md) on libstele in-process:
// SQLite with synchronous=FULL as shipped, or PostgreSQL
// (STELE_BENCH_POSTGRES_URL) with one or two engine processes on the same
// database (STELE_BENCH_PROCESSES).
//
// Every figure is printed as `stele <workload> <metric> <value> <unit>`.
// A workload runs `STELE_BENCH_REPEAT` times (default 3) on a fresh
// database each time; the median is printed in that exact form and the
// range as `<metric>_range <min>-<max>`.
//
// Threading: the drivers are called from main only; each opens its own
// engine and stops it before returning.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stele/engine.h"

namespace stele::bench {

// The knobs of bench/README.md, read from the environment.
struct Knobs {
  uint32_t warmup_n = 50;
  uint32_t w1_n = 2000;
  uint32_t w1_conc = 2000;
  uint32_t w2_steps = 200;
  uint32_t w3_children = 200;
  uint32_t w4_n = 1000;
  uint32_t w4_sleep_ms = 2000;
  uint32_t w5_n = 500;
  uint32_t w5_sleep_ms = 3000;
  uint32_t w5_kill_after_ms = 1500;
  uint32_t w5_down_ms = 500;
  uint32_t repeat = 3;
  std::string dir;   // scratch directory for databases
  std::string self;  // this binary (W5 re-executes it as the engine process)
  // STELE_BENCH_POSTGRES_URL: libpq conninfo of a role that may CREATE
  // DATABASE; set → every run gets a fresh PostgreSQL database there.
  std::string postgres_url;
  // STELE_BENCH_PROCESSES (1 or 2): with 2, a second engine process
  // (`--engine-only`) serves the same functions on the same database.
  uint32_t processes = 1;

  static Knobs FromEnv(const std::string& self);
};

// One run's metrics: name → (value, unit).
struct Metric {
  double value = 0;
  std::string unit;
};
using Metrics = std::map<std::string, Metric>;

// The ffqns of the workloads' functions.
inline constexpr const char* kStep = "bench:w/activities.step";      // returns 1
inline constexpr const char* kNow = "bench:w/activities.now";        // returns now in µs
inline constexpr const char* kEffect = "bench:w/activities.effect";  // appends to a file
inline constexpr const char* kW1 = "bench:w/workflows.w1";           // one step
inline constexpr const char* kW2 = "bench:w/workflows.w2";           // [steps] sequential steps
// W1 and W2 with inline durable steps (WorkflowContext::step) in place of
// child activities: the same work, recorded in the workflow's own log.
inline constexpr const char* kW1Steps = "bench:w/workflows.w1-steps";
inline constexpr const char* kW2Steps = "bench:w/workflows.w2-steps";
inline constexpr const char* kW3 = "bench:w/workflows.w3";  // [children] W1 children
inline constexpr const char* kW4 = "bench:w/workflows.w4";  // [sleep_ms] lateness in µs
inline constexpr const char* kW5 = "bench:w/workflows.w5";  // [sleep_ms, id] sleep, effect

// Where one run keeps its data: exactly one field is set. Child processes
// get it as one argument, "sqlite:<path>" or "postgres:<conninfo>".
struct DbTarget {
  std::string sqlite_path;        // SQLite file, synchronous=FULL
  std::string postgres_conninfo;  // PostgreSQL database (libpq conninfo)

  bool is_postgres() const { return !postgres_conninfo.empty(); }
  std::string Encode() const;
  static DbTarget Decode(const std::string& arg);
};

// A fresh, empty database for one run: a new SQLite file under knobs.dir,
// or a new PostgreSQL database on knobs.postgres_url (dropped, with any
// session still on it, by the destructor). Exits the process on failure.
class FreshDb {
 public:
  FreshDb(const Knobs& knobs, const std::string& name);
  ~FreshDb();
  FreshDb(const FreshDb&) = delete;
  FreshDb& operator=(const FreshDb&) = delete;

  const DbTarget& target() const { return target_; }
  // SQLite: file + WAL + shm. PostgreSQL: tables, indexes and TOAST.
  uint64_t Bytes() const;
  // SQLite: the WAL file alone (0 when absent, and on PostgreSQL).
  uint64_t WalBytes() const;

 private:
  DbTarget target_;
  std::string postgres_admin_;  // empty for SQLite
  std::string postgres_dbname_;
};

// Opens an engine on `db` with every workload function registered and
// starts it. `effects_path` is the file kEffect appends to.
Result<std::unique_ptr<Engine>, Error> OpenBenchEngine(const DbTarget& db,
                                                       const std::string& effects_path = "");

// With knobs.processes == 2: the second engine process on `db`, running
// executors for every workload function (`<self> --engine-only <db>
// <effects>`); started (and ready) when the constructor returns, SIGKILLed
// by Stop or the destructor. Does nothing with one process.
class SecondEngine {
 public:
  SecondEngine(const Knobs& knobs, const DbTarget& db, const std::string& effects_path = "");
  ~SecondEngine();
  SecondEngine(const SecondEngine&) = delete;
  SecondEngine& operator=(const SecondEngine&) = delete;
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `<self> --engine-only <db> <effects>`: opens the bench engine, prints
// "ready", runs until killed.
int EngineOnlyMain(int argc, char** argv);

// The PostgreSQL side (postgres_setup.cc).
namespace pg {
// A pool on `conninfo` for the engine (STELE_BENCH_PG_CONNECTIONS, default
// 16 connections).
Result<std::shared_ptr<storage::DbPool>, Error> OpenPool(const std::string& conninfo);
// CREATE DATABASE `dbname` (the server's default template) on the server of
// `admin`; returns the conninfo of the new database.
Result<std::string, Error> CreateDatabase(const std::string& admin, const std::string& dbname);
void DropDatabase(const std::string& admin, const std::string& dbname);
// Bytes of every table of the database with its indexes and TOAST.
uint64_t DatabaseBytes(const std::string& conninfo);
// "server_version=... fsync=... synchronous_commit=...", for the record.
std::string ServerSettings(const std::string& admin);
}  // namespace pg

Metrics RunWarmup(const Knobs& knobs);
Metrics RunW1(const Knobs& knobs);
Metrics RunW2(const Knobs& knobs);
Metrics RunW1Steps(const Knobs& knobs);  // W1 with an inline step (ctx.step)
Metrics RunW2Steps(const Knobs& knobs);  // W2 with inline steps
Metrics RunW3(const Knobs& knobs);
Metrics RunW4(const Knobs& knobs);
Metrics RunW5(const Knobs& knobs);
// Replay cost by history size and memory with many blocked or warm
// workflows (replay_memory.cc; SQLite only).
Metrics RunReplay(const Knobs& knobs);
Metrics RunMemory(const Knobs& knobs);
// `<self> --memory-probe sleepers|warm`: one memory measurement in a fresh
// process; prints "memory rss_mib=... per_workflow_kib=... n=...".
int MemoryProbeMain(int argc, char** argv);
// In this process (the --idle-probe child) / in a fresh child process.
Metrics RunIdle(const Knobs& knobs);
Metrics RunIdleInFreshProcess(const Knobs& knobs);

// The W5 engine process: `<self> --w5-engine <db> <effects> <ids-file> <n>
// <sleep_ms>` (<db> a DbTarget::Encode()). With n > 0 it submits n W5 workflows, writes their ids
// to ids-file and prints "submitted" once all are acknowledged; then it runs until killed, printing
// "done" when every id in ids-file has finished.
int W5EngineMain(int argc, char** argv);

// Helpers shared by the drivers.
double NowSeconds();
uint64_t PeakRssBytes();
uint64_t CurrentRssBytes();
double Percentile(std::vector<double> values, double p);  // p in [0, 100]

}  // namespace stele::bench
