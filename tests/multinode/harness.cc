#include "harness.h"

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "storage/postgres/pg_conn.h"
#include "storage/postgres/test_database.h"

#ifndef STELE_BINARY
#error "STELE_BINARY must name the stele executable (set by tests/multinode/CMakeLists.txt)"
#endif
#ifndef STELE_MULTINODE_WASM_DIR
#error "STELE_MULTINODE_WASM_DIR must name <build>/examples/wasm"
#endif

extern "C" char** environ;

namespace stele::multinode {
namespace {

namespace pgtest = storage::postgres::testing;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// A TOML basic string.
std::string TomlString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string SteleBinary() {
  std::string over = Env("MULTINODE_STELE_BINARY");
  return over.empty() ? STELE_BINARY : over;
}

std::string WasmDir() {
  std::string over = Env("MULTINODE_WASM_DIR");
  return over.empty() ? STELE_MULTINODE_WASM_DIR : over;
}

std::string SkipReason() {
  if (!pgtest::AdminConninfo()) return pgtest::UnavailableReason();
#if !STELE_MULTINODE_HAS_WASM
  return "the `stele` binary of this build has no wasm runtime (V8 not found: scripts/setup_v8.sh)";
#endif
  if (access(SteleBinary().c_str(), X_OK) != 0) return "no executable " + SteleBinary();
  for (const char* guest : {"fan_out.wasm", "square_activity.wasm"}) {
    if (!fs::exists(fs::path(WasmDir()) / guest)) {
      return "wasm guest " + (fs::path(WasmDir()) / guest).string() +
             " is missing (build stele_wasm_fan_out and stele_wasm_square_activity)";
    }
  }
  return "";
}

std::string RequiredBy() {
  if (pgtest::PostgresTestsRequired()) return "STELE_REQUIRE_POSTGRES_TESTS=1";
  if (Env("STELE_REQUIRE_WASM") == "1") return "STELE_REQUIRE_WASM=1";
  return "";
}

int OperationSessions(const std::string& database) {
  auto admin = pgtest::AdminConninfo();
  if (!admin) return -1;
  auto conn = storage::postgres::internal::PgConn::Connect(*admin);
  if (!conn) return -1;
  auto res = (*conn)->Exec(
      "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'stele'",
      storage::postgres::internal::Params().Text(database));
  return res ? static_cast<int>(res->Int(0, 0)) : -1;
}

int WorkflowCount(int fallback) {
  std::string v = Env("MULTINODE_N");
  int n = v.empty() ? fallback : std::atoi(v.c_str());
  return n > 0 ? n : fallback;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

HttpReply HttpGet(int port, const std::string& path, std::chrono::seconds read_timeout) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(std::chrono::seconds(2));
  client.set_read_timeout(read_timeout);
  auto res = client.Get(path.c_str());
  if (!res) return {};
  return {res->status, res->body};
}

HttpReply HttpPost(int port, const std::string& path, const std::string& body) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(std::chrono::seconds(2));
  client.set_read_timeout(std::chrono::seconds(10));
  auto res = client.Post(path.c_str(), body, "application/json");
  if (!res) return {};
  return {res->status, res->body};
}

HttpReply HttpGetRetrying(int port, const std::string& path, std::chrono::seconds limit) {
  auto deadline = Clock::now() + limit;
  for (;;) {
    HttpReply reply = HttpGet(port, path);
    bool retry = reply.status == 0 || reply.status >= 500;
    if (!retry || Clock::now() >= deadline) return reply;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Node::Node(int index, fs::path config, fs::path log)
    : index_(index), config_(std::move(config)), log_(std::move(log)) {}

Node::~Node() { Kill(SIGKILL); }

std::optional<std::string> Node::Start() {
  // The environment is built before fork: the child only calls
  // async-signal-safe functions. STELE_* of ours is not inherited (the
  // test's STELE_TEST_POSTGRES_URL must not leak into the server).
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).rfind("STELE_", 0) == 0) continue;
    env.emplace_back(*e);
  }
  env.emplace_back("STELE_LOG=debug");  // prints the executor ids
  std::vector<std::string> args = {SteleBinary(), "server", "run", "--config", config_.string()};
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot open " + log_.string();
  pid_ = fork();
  if (pid_ == 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(fd);
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline && port_ == 0) {
    if (!Running()) return "node " + std::to_string(index_) + " exited at start; log:\n" + Log();
    std::string text = Log();
    size_t at = text.find("listening on port ");
    if (at != std::string::npos) port_ = std::atoi(text.c_str() + at + 18);
    if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (port_ <= 0) return "node " + std::to_string(index_) + " did not listen; log:\n" + Log();
  HttpReply health = HttpGetRetrying(port_, "/healthz", std::chrono::seconds(30));
  if (health.status != 200) {
    return "node " + std::to_string(index_) + ": /healthz answered " +
           std::to_string(health.status) + "; log:\n" + Log();
  }
  return std::nullopt;
}

bool Node::Running() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

void Node::Kill(int sig) {
  if (pid_ <= 0) return;
  kill(pid_, sig);
  if (sig == SIGKILL) {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
}

std::vector<std::string> Node::ExecutorIds() const {
  static const std::regex started("executor (Exr_[0-9A-Za-z]+) of \\S+ started");
  std::vector<std::string> out;
  std::string text = Log();
  for (std::sregex_iterator it(text.begin(), text.end(), started), end; it != end; ++it) {
    out.push_back((*it)[1].str());
  }
  return out;
}

std::unique_ptr<Cluster> Cluster::Create(int nodes, std::string* error) {
  std::unique_ptr<Cluster> cluster(new Cluster());
  char tmpl[] = "/tmp/stele_multinode_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    *error = "mkdtemp failed";
    return nullptr;
  }
  cluster->dir_ = tmpl;
  auto database = pgtest::CreateFreshDatabase();
  if (!database) {
    *error = "cannot create a database: " + database.error().ToString();
    return nullptr;
  }
  cluster->database_ = *database;
  auto conninfo = pgtest::WithDatabase(*pgtest::AdminConninfo(), *database);
  if (!conninfo) {
    *error = conninfo.error().ToString();
    return nullptr;
  }
  // Short leases so that a killed node's work moves on within seconds; a
  // small watcher leeway for the same reason.
  const fs::path wasm = WasmDir();
  std::string toml =
      "[api]\nlisten = \"127.0.0.1:0\"\n\n[database]\npostgres = " + TomlString(*conninfo) +
      "\npostgres_max_connections = " + std::to_string(kNodePoolSize) +
      "\npostgres_poll_interval = \"500ms\"" +
      "\n\n[executor]\nlock_expiry = \"2s\"\ntick_sleep = \"100ms\"\n"
      "batch_size = 10\n\n[watcher]\nleeway = \"200ms\"\n\n"
      "[[workflow_wasm]]\nname = \"fan_out\"\nlocation = " +
      TomlString((wasm / "fan_out.wasm").string()) +
      "\nblocking_strategy = \"await\"\n\n"
      "[[activity_wasm]]\nname = \"square\"\nlocation = " +
      TomlString((wasm / "square_activity.wasm").string()) + "\n";
  const fs::path config = cluster->dir_ / "stele.toml";
  WriteFile(config, toml);
  for (int i = 0; i < nodes; ++i) {
    cluster->nodes_.push_back(
        std::make_unique<Node>(i, config, cluster->dir_ / ("node" + std::to_string(i) + ".log")));
  }
  return cluster;
}

Cluster::~Cluster() {
  for (auto& node : nodes_) node->Kill(SIGKILL);
  if (!database_.empty()) pgtest::DropDatabase(database_);
  std::error_code ec;
  if (!dir_.empty() && std::getenv("MULTINODE_KEEP") == nullptr) fs::remove_all(dir_, ec);
}

std::optional<std::string> Cluster::StartAll() {
  for (auto& node : nodes_) {
    if (auto failed = node->Start()) return failed;
  }
  return std::nullopt;
}

std::map<std::string, int> Cluster::ExecutorOwners() const {
  std::map<std::string, int> out;
  for (const auto& node : nodes_) {
    for (const auto& id : node->ExecutorIds()) out[id] = node->index();
  }
  return out;
}

std::string Cluster::Logs(size_t tail) const {
  std::string out;
  for (const auto& node : nodes_) {
    std::string log = node->Log();
    if (log.size() > tail) log = "..." + log.substr(log.size() - tail);
    out += "--- node " + std::to_string(node->index()) + " ---\n" + log + "\n";
  }
  return out;
}

}  // namespace stele::multinode
