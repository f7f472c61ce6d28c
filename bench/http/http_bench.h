// stele_http_bench: the workloads W1–W5 (bench/README.md) driven through
// the HTTP API of the real `stele` binary, with the wasm workflows and
// activities of bench/http/guests (and one exec activity for W5's effect).
// The in-process counterpart is bench/workloads.
//
// Every run starts `stele server run` on a free 127.0.0.1 port with a
// generated stele.toml and a fresh data dir (SQLite, synchronous=FULL as
// shipped), submits with POST /v1/executions and waits for every result
// with GET /v1/executions/{id}/result. By default every workflow has a
// client thread and a keep-alive connection of its own, so all of them are
// in flight at once (as a user's asynchronous client has them);
// STELE_HTTP_CONNECTIONS=N shares N connections instead. A 503 refusal is
// counted (metric `refused_503`) and retried after its Retry-After, as a
// well-behaved client does. The server runs with an empty [executor]
// section and no per-component tuning (STELE_HTTP_SETTINGS=defaults, what a
// new user gets) or with the tuned settings of the in-process engine
// (STELE_HTTP_SETTINGS=tuned). A wrong result ends the driver with exit
// status 1: it is a failure, not a figure.
//
// Figures are printed as `stele-http <workload> <metric> <value> <unit>`
// (median of STELE_BENCH_REPEAT runs) and `<metric>_range <min>-<max>`.
// W1 and W4 also print `server_cpu`: the CPU time (user + system) the
// server used for the run, start-up included. On a shared machine it moves
// less than the wall-clock figures, so it is the one to compare when a
// change is meant to save work.
//
// Threading: the drivers run on main; the client threads they start end
// before they return.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace stele::http_bench {

using Json = nlohmann::json;

// The knobs of bench/README.md from the environment, plus where things are.
struct Knobs {
  uint32_t warmup_n = 50;
  uint32_t w1_n = 2000;
  uint32_t w2_steps = 200;
  uint32_t w3_children = 200;
  uint32_t w4_n = 1000;
  uint32_t w4_sleep_ms = 2000;
  uint32_t w5_n = 500;
  uint32_t w5_sleep_ms = 3000;
  uint32_t w5_kill_after_ms = 1500;
  uint32_t w5_down_ms = 500;
  uint32_t repeat = 3;
  // STELE_HTTP_CONNECTIONS: client threads, one connection each; 0 ("all",
  // the default): one per workflow, all in flight at once.
  uint32_t connections = 0;
  // STELE_HTTP_SETTINGS: false ("defaults"): an empty [executor] section;
  // true ("tuned"): the in-process engine's settings (server_process.cc).
  bool tuned = false;
  std::string dir;     // STELE_BENCH_DIR: scratch (one sub-folder per run)
  std::string stele;   // --stele PATH: the server binary
  std::string guests;  // --guests DIR: the folder holding the .wasm guests
  // STELE_HTTP_GUESTS=js: the JavaScript twins of the guests (js_guests/
  // workflows.js and activities.js) as [[workflow_js]] / [[activity_js]].
  bool js = false;
  std::string js_guests;  // the folder holding the .js guests

  static Knobs FromEnv();
};

// One run's metrics: name → (value, unit).
struct Metric {
  double value = 0;
  std::string unit;
};
using Metrics = std::map<std::string, Metric>;

// The ffqns of bench/http/guests and of the exec activity.
inline constexpr const char* kW1 = "bench:http/workflows.w1";
inline constexpr const char* kW2 = "bench:http/workflows.w2";
inline constexpr const char* kW3 = "bench:http/workflows.w3";
inline constexpr const char* kW4 = "bench:http/workflows.w4";
inline constexpr const char* kW5 = "bench:http/workflows.w5";

// A `stele server run` child process on a data dir of its own.
// Not thread-safe: owned and called by the driver's main thread.
class ServerProcess {
 public:
  // `run_dir` is created empty; it holds stele.toml, the data dir, the
  // server log, the exec activity's script and its effects file.
  ServerProcess(const Knobs& knobs, std::string run_dir);
  ~ServerProcess();  // SIGKILLs a running server
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts the server (again, on the same data dir after Kill) and waits
  // until it listens and /healthz answers. Exits the driver on failure.
  void Start();
  void Kill();  // SIGKILL and reap
  void Stop();  // SIGTERM, reap (SIGKILL after 30 s)

  int port() const { return port_; }
  // A field of /proc/PID/status in bytes ("VmRSS", "VmHWM"); 0 when gone.
  uint64_t StatusBytes(const char* field) const;
  // CPU time (user + system) the server has used so far, in seconds; 0
  // when gone. The figure to compare when wall-clock metrics are noisy.
  double CpuSeconds() const;
  uint64_t DatabaseBytes() const;  // the SQLite file with -wal and -shm
  uint64_t WalBytes() const;       // the -wal file alone
  std::string effects_path() const { return run_dir_ + "/effects.txt"; }
  std::string LogTail() const;

 private:
  void WriteFiles() const;

  const Knobs& knobs_;
  std::string run_dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// HTTP calls on one keep-alive connection (one per client thread).
class ApiClient {
 public:
  explicit ApiClient(int port);
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // POST /v1/executions; the new execution id. Exits the driver on failure.
  std::string Submit(const char* ffqn, const Json& params);
  // GET .../result?timeout=S until finished or `limit_s` passed; the
  // result object ({"ok": v} ...), or nullopt when it did not finish in
  // time or the server did not answer.
  std::optional<Json> WaitResult(const std::string& id, double limit_s);

  // 503 answers received by every ApiClient since the last call (each was
  // retried after its Retry-After). Thread-safe.
  static uint64_t TakeRefusals();

 private:
  struct Impl;
  Impl* impl_;
};

// Client threads for `n` workflows: knobs.connections, or n when it is 0.
uint32_t ClientThreads(const Knobs& knobs, uint32_t n);

// Submits `n` executions of ffqn(params) from ClientThreads threads
// (each submits its share, then waits for its results in order) and
// returns their ok values by submission order, for the caller to check. A
// result that is not {"ok": ...}, or none within 600 s, exits the driver.
struct FanOut {
  double first_submit = 0;  // NowSeconds()
  double all_acknowledged = 0;
  double last_result = 0;
  std::vector<std::string> ids;
  std::vector<Json> values;  // the ok values
};
FanOut SubmitAndWaitAll(const Knobs& knobs, int port, const char* ffqn, const Json& params,
                        uint32_t n);

Metrics RunWarmup(const Knobs& knobs);
Metrics RunW1(const Knobs& knobs);
Metrics RunW2(const Knobs& knobs);
Metrics RunW3(const Knobs& knobs);
Metrics RunW4(const Knobs& knobs);
Metrics RunW5(const Knobs& knobs);
Metrics RunIdle(const Knobs& knobs);

// Helpers shared by the drivers.
[[noreturn]] void Die(const std::string& message);
double NowSeconds();  // steady clock
std::string FreshRunDir(const Knobs& knobs, const std::string& name);
double Percentile(std::vector<double> values, double p);  // p in [0, 100]
// The ok value of `result`, or Die naming `what` when it is not {"ok": ...}.
Json OkValue(const Json& result, const std::string& what);

}  // namespace stele::http_bench
