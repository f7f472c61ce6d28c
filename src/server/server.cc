// Server: opens the storage, hands the loaded components to the execution
// service (which runs the executors and the watcher) and serves the HTTP
// listeners over it.
#include "server/server.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "base/log.h"
#include "server/server_impl.h"
#include "stele/defaults.h"
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

// The execution service's settings from the config: every unset key keeps
// the service's default (docs/config.md).
service::ServiceOptions ToServiceOptions(const ServerConfig& config, SharedClock clock,
                                         std::shared_ptr<storage::DbPool> pool) {
  service::ServiceOptions o;
  o.pool = std::move(pool);
  o.clock = std::move(clock);
  const ExecutorDefaults& e = config.executor;
  if (e.batch_size) o.batch_size = *e.batch_size;
  if (e.tick_sleep) o.tick_sleep = *e.tick_sleep;
  if (e.lock_expiry) o.activity_lock_expiry = *e.lock_expiry;
  if (e.workflow_lock_expiry) o.workflow_lock_expiry = *e.workflow_lock_expiry;
  if (e.cancel_grace) o.cancel_grace = *e.cancel_grace;
  if (e.workflow_max_retries) o.workflow_max_retries = *e.workflow_max_retries;
  if (e.max_retry_backoff) o.max_retry_backoff = *e.max_retry_backoff;
  if (e.retry_jitter_percent) o.retry_jitter_percent = *e.retry_jitter_percent;
  if (e.max_events_per_execution) {
    o.workflow_run.max_events_per_execution = *e.max_events_per_execution;
  }
  o.max_events_setting =
      "max_events_per_execution of the component, else [executor] max_events_per_execution";
  // Named by the reason of every timeout event (executor/outcome.h).
  o.activity_lock_expiry_setting = "lock_expiry of the component, else [executor] lock_expiry";
  o.workflow_lock_expiry_setting =
      "lock_expiry of the component, else [executor] workflow_lock_expiry";
  if (e.max_concurrency) o.max_concurrency = *e.max_concurrency;
  o.max_workflow_concurrency =
      e.max_workflow_concurrency.value_or(defaults::kGuestMaxWorkflowConcurrency);
  o.start_watcher = config.watcher.enabled;
  o.watcher_tick = config.watcher.tick_sleep;
  o.watcher_leeway = config.watcher.leeway;
  o.max_list_length = config.api.max_list_length;
  o.retention_finished_after = config.retention.finished_after;
  o.retention_interval = config.retention.interval;
  o.retention_batch_size = config.retention.batch_size;
  return o;
}

service::ComponentSpec ToSpec(const LoadedComponent& component) {
  const ComponentConfig& c = component.config;
  service::ComponentSpec spec;
  spec.component_id = component.component_id;
  spec.kind = component.kind;
  for (const auto& f : component.functions) spec.functions.push_back(f.ffqn);
  spec.signatures = component.functions;
  spec.make_worker = component.make_worker;
  spec.executor.batch_size = c.batch_size;
  spec.executor.lock_expiry = c.lock_expiry;
  spec.executor.max_retries = c.max_retries;
  spec.executor.retry_backoff = c.retry_backoff;
  spec.executor.max_retry_backoff = c.max_retry_backoff;
  spec.executor.retry_jitter_percent = c.retry_jitter_percent;
  spec.executor.max_events_per_execution = c.max_events_per_execution;
  // A wasm or JS workflow replays its history on the code that locks it,
  // so it runs only on the component digest it was created with (or
  // upgraded to): a restart with changed code leaves older executions
  // pending instead of replaying them on other code. Activities are not
  // replayed.
  spec.executor.lock_by_component_id =
      c.kind == ComponentKind::kWorkflowWasm || c.kind == ComponentKind::kWorkflowJs;
  return spec;
}

// [api] ui_listen: a second listener with the UI and every API route (the
// pages call /v1 on their own origin, and get the same token check). An
// error names the address.
Result<void, std::string> BindUiListener(ServerImpl& d) {
  const auto& ui = d.config.api.ui_listen;
  if (!ui) return {};
  d.ui_http = std::make_unique<ServerImpl::Listener>();
  InstallRoutes(d, *d.ui_http);
  STELE_ASSIGN_OR_RETURN(d.ui_http->port,
                         d.ui_http->server->Bind(ui->host, ui->port, "[api] ui_listen"));
  return {};
}

void StopAll(ServerImpl& d) {
  {
    std::lock_guard lock(d.mu);
    if (d.stopped) return;
    d.stopped = true;
  }
  d.stopping = true;
  d.stop_wait.Cancel();
  // The listeners first (no new requests; open ones are abandoned), then
  // the pools, whose waits end with stop_wait.
  if (d.http.server) d.http.server->Stop();
  if (d.ui_http && d.ui_http->server) d.ui_http->server->Stop();
  if (d.waits) d.waits->Stop();
  if (d.workers) d.workers->Stop();
  if (d.service) d.service->Stop();
  d.service.reset();
  if (d.pool) d.pool->Close();
  d.stopped_cv.notify_all();
}

// Each connection is a file descriptor: raises the soft RLIMIT_NOFILE to
// fit [api] max_connections (on every listener) plus the database's and
// the runtimes' own files, up to the hard limit. When that is lower, a
// max_connections left at its default is lowered to fit (and max_waiters
// to at most five sixths of that, so it stays below), so that the server
// answers 503 past it instead of the kernel refusing connections; a
// configured one that does not fit is kept, with a warning.
void FitOpenFileLimit(ServerConfig& config) {
  constexpr rlim_t kOwnFiles = 1024;
  const rlim_t listeners = config.api.ui_listen ? 2 : 1;
  const rlim_t wanted = static_cast<rlim_t>(config.api.max_connections) * listeners + kOwnFiles;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= wanted) return;
  const rlim_t before = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
  if (limit.rlim_cur > before) (void)::setrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur >= wanted) return;
  ::getrlimit(RLIMIT_NOFILE, &limit);  // what setrlimit left
  const size_t fits = limit.rlim_cur > kOwnFiles + 2 * listeners
                          ? static_cast<size_t>((limit.rlim_cur - kOwnFiles) / listeners)
                          : 2;
  if (!config.api.max_connections_configured) {
    STELE_LOG(kInfo, "[api] max_connections: "
                         << fits << " (the default " << config.api.max_connections
                         << " lowered to fit the open-file limit, hard " << limit.rlim_max << ")");
    config.api.max_connections = fits;
    config.api.max_waiters = std::min(config.api.max_waiters, std::max<size_t>(1, fits * 5 / 6));
    return;
  }
  STELE_LOG(kWarn, "the open-file limit (RLIMIT_NOFILE, hard "
                       << limit.rlim_max << ") is below what [api] max_connections = "
                       << config.api.max_connections << " needs (" << wanted
                       << "): connections beyond it are refused by the kernel until others "
                          "close; raise `ulimit -n` or lower max_connections");
}

// Executions left on a component version this configuration no longer
// serves would wait silently; say so once at start-up (the gauge
// stele_executions_unserved keeps counting them).
void WarnAboutUnservedDigests(service::ExecutionService& service) {
  auto unserved = service.CountPendingOnUnservedDigests();
  if (!unserved) return;  // the metrics report it once the database answers
  for (const auto& [digest, count] : *unserved) {
    STELE_LOG(kWarn, count << " pending execution(s) wait on component digest " << digest.ToString()
                           << ", which no component of this server serves: add the component "
                              "version back, or move them with `stele execution upgrade`");
  }
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

  auto pool = OpenPool(d.config);
  if (!pool) return Unexpected(pool.error());
  d.pool = std::move(*pool);
  auto service = service::ExecutionService::Create(ToServiceOptions(d.config, d.clock, d.pool));
  if (!service) {
    d.pool->Close();
    return Unexpected(service.error().message);
  }
  d.service = std::move(*service);
  for (const auto& component : components) {
    if (auto added = d.service->AddComponent(ToSpec(component)); !added) {
      d.service.reset();
      d.pool->Close();
      return Unexpected(added.error().message);
    }
  }
  d.components = std::move(components);
  // [[webhook_wasm]]: compiled before anything listens (their routes are
  // checked by the config's parse).
  auto webhooks = LoadWebhooks(d.config, d.config.config_file);
  if (!webhooks) {
    d.service.reset();
    d.pool->Close();
    return Unexpected(FormatErrors(webhooks.error()));
  }
  d.webhooks = std::move(*webhooks);
  for (const auto& w : d.webhooks) d.webhook_routes.push_back(w.route);
  // stele.toml's [[cron]] schedules, upserted before anything ticks.
  std::vector<service::ScheduleSpec> schedules;
  for (const CronConfig& c : d.config.cron) {
    schedules.push_back(service::ScheduleSpec{c.name, c.schedule, c.time_zone, c.ffqn, c.params,
                                              c.overlap, c.catch_up, c.catch_up_limit});
  }
  if (auto declared = d.service->DeclareSchedules(schedules); !declared) {
    d.service.reset();
    d.pool->Close();
    return Unexpected("[[cron]]: " + declared.error().message);
  }

  FitOpenFileLimit(d.config);
  d.workers = std::make_unique<http::WorkerPool>(d.config.api.workers);
  // For what still blocks (webhooks, whose guests may wait for a result).
  // Result and value waits and follow streams hold no thread
  // (api_waits.cc, api_follow.cc).
  d.waits = std::make_unique<http::WorkerPool>(
      std::min(d.config.api.max_waiters, kMaxBlockingWaits) + 16);
  InstallRoutes(d, d.http);
  const auto& listen = d.config.api;
  std::optional<std::string> bind_error;
  auto port = d.http.server->Bind(listen.listen_host, listen.listen_port, "[api] listen");
  if (!port) {
    bind_error = port.error();
  } else {
    d.http.port = *port;
    if (auto ui = BindUiListener(d); !ui) bind_error = ui.error();
  }
  if (bind_error) {
    d.service.reset();
    d.pool->Close();
    return Unexpected(*bind_error);
  }
  // Executors start after the bind, so a server that cannot listen does no work.
  if (auto started = d.service->Start(); !started) {
    StopAll(d);
    return Unexpected(started.error().message);
  }
  d.http.server->Start();
  if (d.ui_http) d.ui_http->server->Start();
  STELE_LOG(kInfo, "stele server listening on " << listen.listen_host << ":" << d.http.port
                                                << " with " << d.components.size()
                                                << " component(s) and " << d.webhooks.size()
                                                << " webhook(s)");
  if (d.ui_http)
    STELE_LOG(kInfo, "web UI on " << listen.ui_listen->host << ":" << d.ui_http->port << "/ui/");
  WarnAboutUnservedDigests(*d.service);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port() const { return impl_->http.port; }

int Server::ui_port() const { return impl_->ui_http ? impl_->ui_http->port : 0; }

void Server::Wait() {
  std::unique_lock lock(impl_->mu);
  impl_->stopped_cv.wait(lock, [&] { return impl_->stopped; });
}

void Server::Stop() {
  if (impl_) StopAll(*impl_);
}

storage::DbPool& Server::pool() { return *impl_->pool; }

}  // namespace stele::server
