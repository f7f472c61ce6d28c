// Server: wiring of storage, registry, executors, watcher and the HTTP
// listener (composition modelled on runtime/native/engine.cc).
#include "server/server.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "base/log.h"
#include "server/server_impl.h"
#include "storage/sqlite/sqlite_pool.h"
#if STELE_SERVER_HAVE_POSTGRES
#include "storage/postgres/postgres_pool.h"
#endif

namespace stele::server {

namespace {

namespace wf = runtime::workflow;

// SQLite says only "unable to open database file" when the file or its
// folder (which must hold the -wal and -shm files) cannot be written: name
// the actual cause, a read-only file, folder or file system.
std::string WritabilityHint(const std::string& path) {
  const std::string folder = std::filesystem::path(path).parent_path().string();
  for (const std::string& p : {path, folder}) {
    if (::access(p.c_str(), F_OK) == 0 && ::access(p.c_str(), W_OK) != 0) {
      return " — `" + p + "` is not writable (" + std::strerror(errno) +
             "); the database needs write access to the file and its folder";
    }
  }
  return "";
}

Result<std::unique_ptr<storage::DbPool>, std::string> OpenPool(const ServerConfig& config) {
  if (config.database.postgres) {
#if STELE_SERVER_HAVE_POSTGRES
    storage::postgres::PostgresOptions options;
    options.conninfo = *config.database.postgres;
    options.max_connections = config.database.postgres_max_connections;
    options.poll_interval = config.database.postgres_poll_interval;
    options.statement_timeout = config.database.postgres_statement_timeout;
    auto pool = storage::postgres::PostgresPool::Open(options);
    if (!pool) return Unexpected("cannot open PostgreSQL database: " + pool.error().ToString());
    return std::unique_ptr<storage::DbPool>(std::move(*pool));
#else
    return Unexpected(std::string("[database] postgres: this build has no PostgreSQL backend"));
#endif
  }
  storage::sqlite::SqliteOptions options;
  options.path = *config.database.sqlite;
  // The library's fallback to STELE_POSTGRES_URL is not the server's: its
  // database comes from the config alone (docs/config.md). Say so.
  if (const char* url = std::getenv("STELE_POSTGRES_URL"); url != nullptr && *url != '\0') {
    STELE_LOG(kWarn, "STELE_POSTGRES_URL is set, but [database] postgres is not: using SQLite at `"
                         << options.path
                         << "` (write postgres = \"${STELE_POSTGRES_URL}\" under [database] to "
                            "use PostgreSQL)");
  }
  options.synchronous = config.database.sqlite_synchronous_full
                            ? storage::sqlite::SqliteOptions::Synchronous::kFull
                            : storage::sqlite::SqliteOptions::Synchronous::kNormal;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(options.path).parent_path(), ec);
  if (ec) {
    return Unexpected("cannot create the folder of the SQLite database `" + options.path +
                      "`: " + ec.message());
  }
  auto pool = storage::sqlite::SqlitePool::Open(options);
  if (!pool) {
    return Unexpected("cannot open SQLite database `" + options.path +
                      "`: " + pool.error().ToString() + WritabilityHint(options.path));
  }
  return std::unique_ptr<storage::DbPool>(std::move(*pool));
}

Result<void, std::string> StartExecutors(ServerImpl& d) {
  const auto& defaults = d.config.executor;
  d.limiter = executor::ConcurrencyLimiter::Create(defaults.max_concurrency);
  d.workflow_limiter = executor::ConcurrencyLimiter::Create(defaults.max_workflow_concurrency);
  WorkerEnv env;
  env.pool = d.pool.get();
  env.clock = d.clock;
  env.registry = &d.registry;
  env.default_lock_expiry = defaults.LockExpiry(/*workflow=*/true);
  env.dispatch = &d.dispatch;
  env.handoff = d.handoff.get();
  env.cancels = d.cancels.get();
  std::vector<std::unique_ptr<executor::ExecTask>> tasks;
  for (auto& component : d.components) {
    if (!component.make_worker) continue;  // stubs
    bool workflow = component.kind == wf::FunctionKind::kWorkflow;
    env.workflow_writes = nullptr;
    if (workflow) {
      env.workflow_writes = std::make_shared<executor::LatencyHistogram>();
      d.workflow_writes.emplace_back(component.component_id.name, env.workflow_writes);
    }
    auto worker = component.make_worker(env);
    if (!worker) {
      return Unexpected("component `" + component.config.name + "`: " + worker.error());
    }
    const ComponentConfig& c = component.config;
    executor::ExecutorOptions exec;
    exec.batch_size = c.batch_size.value_or(defaults.batch_size);
    exec.lock_expiry = c.lock_expiry.value_or(defaults.LockExpiry(workflow));
    exec.lock_expiry_setting = kLockExpirySetting;
    exec.tick_sleep = defaults.tick_sleep;
    exec.component_id = component.component_id;
    // A wasm workflow replays its history on the code that locks it, so it
    // runs only on the component digest it was created with (or upgraded
    // to, PUT /v1/executions/{id}/upgrade): a restart with changed code
    // leaves older executions pending instead of replaying them on other
    // code. Activities are not replayed and stay locked by ffqn.
    if (c.kind == ComponentKind::kWorkflowWasm) {
      exec.locking_strategy = executor::LockingStrategy::kByComponentId;
    }
    std::optional<uint32_t> max_retries = workflow ? std::nullopt : c.max_retries;
    if (!workflow && !c.max_retries) max_retries = 5;
    exec.retry_config = core::ComponentRetryConfig{
        max_retries, core::Duration::FromMillis(static_cast<uint64_t>(c.retry_backoff.count()))};
    exec.concurrency_limiter = workflow ? d.workflow_limiter : d.limiter;
    exec.response_handoff = d.handoff;
    if (!workflow) exec.cancel_registry = d.cancels;
    auto db = d.pool->DbExecConn();
    if (!db) return Unexpected("cannot connect to the database: " + db.error().ToString());
    tasks.push_back(
        std::make_unique<executor::ExecTask>(*worker, std::move(*db), d.clock, exec));
    d.dispatch.Add((*worker)->ExportedFunctions(), tasks.back().get());
  }
  if (d.config.watcher.enabled) {
    auto conn = d.pool->Connection();
    if (!conn) return Unexpected("cannot connect to the database: " + conn.error().ToString());
    executor::ExpiredTimersWatcherOptions watcher_options;
    watcher_options.tick_sleep = d.config.watcher.tick_sleep;
    watcher_options.leeway = d.config.watcher.leeway;
    watcher_options.lock_expiry_setting = kLockExpirySetting;
    d.watcher = std::make_unique<executor::ExpiredTimersWatcher>(std::move(*conn), d.clock,
                                                                 watcher_options);
  }
  for (auto& task : tasks) task->Start();
  if (d.watcher) d.watcher->Start();
  d.tasks = std::move(tasks);
  return {};
}

// Binds `http` to host:port (port 0: any free port); the bound port or -1.
int Bind(httplib::Server& http, const std::string& host, int port) {
  if (port == 0) return http.bind_to_any_port(host);
  return http.bind_to_port(host, port) ? port : -1;
}

// [api] ui_listen: a second listener with the UI and every API route (the
// pages call /v1 on their own origin, and get the same token check). An
// error names the address. (A failure leaves the API's socket bound but
// unused until the process exits: httplib closes a socket only once it has
// listened.)
Result<void, std::string> BindUiListener(ServerImpl& d) {
  const auto& ui = d.config.api.ui_listen;
  if (!ui) return {};
  d.ui_http = std::make_unique<httplib::Server>();
  InstallRoutes(d, *d.ui_http);
  d.ui_port = Bind(*d.ui_http, ui->host, ui->port);
  if (d.ui_port <= 0) {
    return Unexpected("cannot listen on " + ui->host + ":" + std::to_string(ui->port) +
                      " ([api] ui_listen; address in use or not local?)");
  }
  return {};
}

// Runs `http` on a new `thread` and returns once it is listening (or has
// already returned): httplib's stop() does nothing before listen began, so
// a Stop right after Start would leave the thread blocked in accept().
void StartListening(httplib::Server& http, std::thread& thread) {
  auto returned = std::make_shared<std::atomic<bool>>(false);
  thread = std::thread([&http, returned] {
    http.listen_after_bind();
    *returned = true;
  });
  while (!http.is_running() && !*returned) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void StopAll(ServerImpl& d) {
  {
    std::lock_guard lock(d.mu);
    if (d.stopped) return;
    d.stopped = true;
  }
  d.stopping = true;
  d.stop_wait.Cancel();
  d.http.stop();
  if (d.http_thread.joinable()) d.http_thread.join();
  if (d.ui_http) d.ui_http->stop();
  if (d.ui_http_thread.joinable()) d.ui_http_thread.join();
  for (auto& task : d.tasks) task->Stop();
  d.tasks.clear();
  if (d.watcher) d.watcher->Stop();
  d.watcher.reset();
  d.api.reset();
  if (d.pool) d.pool->Close();
  d.stopped_cv.notify_all();
}

}  // namespace

Server::Server(std::unique_ptr<ServerImpl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

Result<std::unique_ptr<Server>, std::string> Server::Start(ServerConfig config,
                                                           std::vector<LoadedComponent> components,
                                                           ServerHooks hooks) {
  auto impl = std::make_unique<ServerImpl>();
  ServerImpl& d = *impl;
  d.config = std::move(config);
  d.clock = hooks.clock ? hooks.clock : SystemClock::Shared();
  d.snapshot_max_age = hooks.metrics_snapshot_max_age;
  for (auto& extra : hooks.extra_components) components.push_back(std::move(extra));
  for (const auto& component : components) {
    for (const auto& f : component.functions) {
      if (d.registry.Find(f.ffqn)) {
        return Unexpected("function `" + f.ffqn.ToString() + "` is exported by two components");
      }
      d.registry.Add(f.ffqn, wf::FunctionInfo{component.component_id, component.kind});
      d.signatures.emplace(f.ffqn, f);
    }
  }
  d.components = std::move(components);

  auto pool = OpenPool(d.config);
  if (!pool) return Unexpected(pool.error());
  d.pool = std::move(*pool);
  auto api = d.pool->ExternalApiConn();
  if (!api) {
    d.pool->Close();
    return Unexpected("cannot connect to the database: " + api.error().ToString());
  }
  d.api = std::move(*api);

  InstallRoutes(d, d.http);
  const auto& listen = d.config.api;
  d.port = Bind(d.http, listen.listen_host, listen.listen_port);
  std::optional<std::string> bind_error;
  if (d.port <= 0) {
    bind_error = "cannot listen on " + listen.listen_host + ":" +
                 std::to_string(listen.listen_port) + " (address in use or not local?)";
  } else if (auto ui = BindUiListener(d); !ui) {
    bind_error = ui.error();
  }
  if (bind_error) {
    d.api.reset();
    d.pool->Close();
    return Unexpected(*bind_error);
  }
  // Executors start after the bind, so a server that cannot listen does no work.
  if (auto started = StartExecutors(d); !started) {
    StopAll(d);
    return Unexpected(started.error());
  }
  StartListening(d.http, d.http_thread);
  if (d.ui_http) StartListening(*d.ui_http, d.ui_http_thread);
  STELE_LOG(kInfo, "stele server listening on " << listen.listen_host << ":" << d.port << " with "
                                                << d.components.size() << " component(s)");
  if (d.ui_http)
    STELE_LOG(kInfo, "web UI on " << listen.ui_listen->host << ":" << d.ui_port << "/ui/");
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port() const { return impl_->port; }

int Server::ui_port() const { return impl_->ui_port; }

void Server::Wait() {
  std::unique_lock lock(impl_->mu);
  impl_->stopped_cv.wait(lock, [&] { return impl_->stopped; });
}

void Server::Stop() {
  if (impl_) StopAll(*impl_);
}

storage::DbPool& Server::pool() { return *impl_->pool; }

}  // namespace stele::server
