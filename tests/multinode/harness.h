// Harness of the multi-node tests: real `stele server run` processes on
// 127.0.0.1, all on one fresh PostgreSQL database, driven over HTTP.
//
// - Node: one server process (fork/execve of the built binary), its log in
//   a file, its port and executor ids read from that log (STELE_LOG=debug
//   prints "executor Exr_... of ... started" per executor).
// - Cluster: a fresh database on the STELE_TEST_POSTGRES_URL server, a
//   stele.toml (fan_out workflow + square activity, short lock expiry) and
//   N nodes on it; dropped (database too) when destroyed.
// - Http: GET/POST with a bounded retry of transport errors and 503, so a
//   database restart or a killed node shows up as a slow answer, not a
//   failure of the driver.
//
// Threading: a Node or Cluster is used from the test thread; Http and
// Node::port()/url() may be used from several threads at once (each call
// opens its own client). Ownership: a Node kills its process when destroyed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace stele::multinode {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

// Paths of the artefacts under test; MULTINODE_STELE_BINARY and
// MULTINODE_WASM_DIR override the ones CMake built.
std::string SteleBinary();
std::string WasmDir();
// Empty when the tests can run, else why they are skipped.
std::string SkipReason();
// Set when a test that cannot run must fail instead of skipping: names the
// variable that asks for it — STELE_REQUIRE_POSTGRES_TESTS=1 (these are
// PostgreSQL tests: every prerequisite counts, wasm guests included) or
// STELE_REQUIRE_WASM=1 — else empty.
std::string RequiredBy();
// MULTINODE_N (default `fallback`): workflows per test.
int WorkflowCount(int fallback = 2000);

// `[database] postgres_max_connections` of every node: its pool's bound.
inline constexpr int kNodePoolSize = 6;
// Sessions of `database` that the nodes' pools opened for operations
// (application_name "stele": storage/postgres/pg_conn.h; the listener and
// notice sender excluded). A pool keeps what it opened, so after a run
// this is the most each node had open at once, summed. -1 on error.
int OperationSessions(const std::string& database);

std::string ReadFile(const fs::path& p);
void WriteFile(const fs::path& p, const std::string& text);

struct HttpReply {
  int status = 0;  // 0: no answer (transport error)
  std::string body;
};
// One request on a fresh connection; `read_timeout` bounds the answer.
HttpReply HttpGet(int port, const std::string& path,
                  std::chrono::seconds read_timeout = std::chrono::seconds(10));
HttpReply HttpPost(int port, const std::string& path, const std::string& body);
// GET until a 2xx/4xx answer (transport errors and 5xx retried every
// 100 ms) or `limit` passes; the last reply.
HttpReply HttpGetRetrying(int port, const std::string& path,
                          std::chrono::seconds limit = std::chrono::seconds(60));

class Node {
 public:
  Node(int index, fs::path config, fs::path log);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Starts the process and waits until /healthz answers; error text on failure.
  std::optional<std::string> Start();
  bool Running();
  void Kill(int sig);
  int index() const { return index_; }
  int port() const { return port_; }
  // Executor ids this process started (from its log).
  std::vector<std::string> ExecutorIds() const;
  std::string Log() const { return ReadFile(log_); }

 private:
  int index_;
  fs::path config_;
  fs::path log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

class Cluster {
 public:
  // Creates a fresh database and the config; nullopt + `error` on failure.
  static std::unique_ptr<Cluster> Create(int nodes, std::string* error);
  ~Cluster();

  // Starts every node; error text on failure.
  std::optional<std::string> StartAll();
  Node& node(int i) { return *nodes_[static_cast<size_t>(i)]; }
  int size() const { return static_cast<int>(nodes_.size()); }
  const fs::path& dir() const { return dir_; }
  const std::string& database() const { return database_; }
  // executor id -> node index, over every node.
  std::map<std::string, int> ExecutorOwners() const;
  // The logs of every node (for failure messages), the last `tail` bytes each.
  std::string Logs(size_t tail = 4000) const;

 private:
  Cluster() = default;
  fs::path dir_;
  std::string database_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace stele::multinode
