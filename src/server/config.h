// ServerConfig: the parsed and validated stele.toml (every key is
// documented in docs/config.md).
//
// LoadConfig reads the file, interpolates `${VAR}` in every string value,
// rejects unknown keys and bad values (each error names the key and its
// line), resolves relative paths against the config file's folder and
// checks what can be checked without loading components (names, ffqns,
// type strings, duplicate ffqns across components). Loading the
// components themselves (wasm files, commands) is components.h's job.
//
// Threading: pure functions; ServerConfig is a plain value.
// Ownership: plain values.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "core/function_type.h"

namespace stele::server {

// Looks up an environment variable for `${VAR}` interpolation.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup ProcessEnv();

struct ApiConfig {
  std::string listen_host = "127.0.0.1";
  int listen_port = 5005;  // 0: any free port (tests)
  // Bearer token auth: at most one of these is set; both empty = no auth.
  std::optional<std::string> token;
  std::optional<std::string> token_sha256;  // 64 lowercase hex
  size_t max_body_bytes = 1024 * 1024;
  uint16_t max_list_length = 1000;
  std::chrono::seconds max_result_wait{60};
  std::chrono::seconds max_follow{3600};
  // Connections served at once (idle keep-alive included); beyond it a 503
  // and the connection is closed. Each is a file descriptor (the server
  // raises its soft RLIMIT_NOFILE to fit, server.cc).
  size_t max_connections = 60000;
  // max_connections was written in the config. Unset, the default is
  // lowered to fit the hard open-file limit instead of warning (server.cc).
  bool max_connections_configured = false;
  // Threads that run the requests' database work (http/worker_pool.h).
  size_t workers = 16;
  // Of those, requests that wait (GET .../result and .../values/{key}
  // with a timeout, follow streams); beyond it a 503. Below
  // max_connections, so that waiting clients never starve the other
  // requests. None of them holds a thread while it waits (api_waits.cc,
  // api_follow.cc).
  // When only max_connections is set, five sixths of it (config.cc).
  size_t max_waiters = 50000;
  bool ui = true;  // serve the web UI at /ui/ (docs/ui.md)
  // [api] ui_listen: serve the UI on this address instead of `listen`. That
  // listener also serves the same API routes (same handlers, token and
  // limits), so the pages call /v1 on their own origin; `listen` then serves
  // the API only. Port 0: any free port (tests).
  struct UiListen {
    std::string host;
    int port = 0;
  };
  std::optional<UiListen> ui_listen;
};

struct DatabaseConfig {
  // Exactly one is used; sqlite is the default (also when
  // STELE_POSTGRES_URL is set: the server reads the database from the
  // config only; `postgres = "${STELE_POSTGRES_URL}"` uses the variable).
  std::optional<std::string> sqlite;  // absolute path after loading
  std::optional<std::string> postgres;
  bool sqlite_synchronous_full = true;
  // PostgresOptions of the pool (only with `postgres`): connections used
  // by operations (the LISTEN and notice connections are 2 more), how
  // often waits re-check without a notice, and how long a call waits for
  // the server's reply to one round trip (statement_timeout).
  size_t postgres_max_connections = 8;
  std::chrono::milliseconds postgres_poll_interval{1000};
  std::chrono::milliseconds postgres_statement_timeout{30000};
};

// [executor]: each unset key takes the execution service's default
// (service::ServiceOptions, the same as libstele's; docs/config.md).
struct ExecutorDefaults {
  std::optional<uint32_t> batch_size;
  std::optional<std::chrono::milliseconds> tick_sleep;
  // An activity attempt's time limit.
  std::optional<std::chrono::milliseconds> lock_expiry;
  // A workflow run's lease (extended while it makes progress).
  std::optional<std::chrono::milliseconds> workflow_lock_expiry;
  // How long a cancelled workflow may clean up (docs/model.md §9.5).
  std::optional<std::chrono::milliseconds> cancel_grace;
  // Retry defaults of every component (docs/config.md, "Retries").
  std::optional<uint32_t> workflow_max_retries;
  std::optional<std::chrono::milliseconds> max_retry_backoff;
  std::optional<uint32_t> retry_jitter_percent;
  // Longest log of a workflow execution, in events.
  std::optional<uint32_t> max_events_per_execution;
  std::optional<uint32_t> max_concurrency;
  std::optional<uint32_t> max_workflow_concurrency;
};

struct WatcherConfig {
  std::chrono::milliseconds tick_sleep{10};
  std::chrono::milliseconds leeway{500};
  bool enabled = true;
};

// [retention]: the server's collector of finished executions
// (service::ServiceOptions::retention_*). Off unless finished_after is set.
struct RetentionConfig {
  std::optional<std::chrono::milliseconds> finished_after;
  std::chrono::milliseconds interval{60000};
  uint32_t batch_size = 100;
};

enum class ComponentKind {
  kWorkflowWasm,
  kActivityWasm,
  kActivityExec,
  kActivityStub,
  kWorkflowJs,
  kActivityJs,
};
std::string_view ComponentKindName(ComponentKind kind);  // the TOML table name

struct ComponentConfig {
  ComponentKind kind = ComponentKind::kActivityStub;
  std::string name;
  int line = 0;  // of the [[table]] header, for errors found after parsing
  // wasm, js: the file (absolute after loading).
  std::string location;
  // exec: argv; argv[0] resolved against the config folder when relative
  // and containing '/'.
  std::vector<std::string> command;
  std::optional<std::string> working_dir;  // exec: default the config folder
  std::vector<std::string> env_allow;
  // exec: added to the allowed environment; wasm activities: their whole
  // WASI environment; JS activities: ctx.env.
  std::map<std::string, std::string> env;
  std::vector<std::string> args;           // wasm activities: WASI argv after the name
  std::vector<std::string> allowed_hosts;  // wasm, JS activities: HTTP allow-list; empty = any
  size_t max_stdout_bytes = 1024 * 1024;
  size_t max_stderr_bytes = 64 * 1024;
  bool retry_on_err = true;  // an `err` result is retried while retries remain
  // exec: exit statuses that are permanent failures (final at once).
  std::vector<int> non_retryable_exit_codes;
  // Declared functions (exec, stub; optional for wasm, which declares its own).
  std::vector<core::FunctionSignature> functions;
  // Retry and executor tuning; nullopt: the [executor] defaults.
  // max_retries: activities 5, workflows 10 when unset (docs/config.md,
  // "Retries"); max_retry_backoff and retry_jitter_percent: the service's.
  std::optional<uint32_t> max_retries;
  std::chrono::milliseconds retry_backoff{100};
  std::optional<std::chrono::milliseconds> max_retry_backoff;
  std::optional<uint32_t> retry_jitter_percent;
  std::optional<std::chrono::milliseconds> lock_expiry;
  // Workflows: the longest log of one execution, in events; unset: [executor].
  std::optional<uint32_t> max_events_per_execution;
  std::optional<uint32_t> batch_size;
  // workflows: "await" | "interrupt"; nullopt: the service's default (await).
  std::optional<bool> blocking_strategy_await;
  // JS (docs/js.md): the heap of one realm, in MiB; and for workflows the
  // longest the guest may compute between two operations.
  std::optional<uint32_t> max_heap_mib;
  std::optional<std::chrono::milliseconds> guest_slice;
};

// A [[cron]] schedule (docs/config.md, "[[cron]]"); the execution service
// validates the function and params at start (ExecutionService::DeclareSchedules).
struct CronConfig {
  int line = 0;  // of the [[cron]] header
  std::string name;
  std::string schedule;  // six-field cron expression
  std::string time_zone = "UTC";
  std::string ffqn;
  core::Json params = core::Json::array();
  std::string overlap = "skip";
  std::string catch_up = "last";
  uint32_t catch_up_limit = 10;
};

// A [[webhook_wasm]] or [[webhook_js]] endpoint (docs/config.md,
// "[[webhook_wasm]]"): an HTTP route on the API's listener served by a
// wasm guest (docs/guest_abi.md §6) or a JavaScript module (docs/js.md,
// "Webhooks"). The route is checked at parse time
// (server/webhook_routes.h): malformed, reserved, duplicate.
struct WebhookConfig {
  int line = 0;     // of the [[webhook_wasm]] / [[webhook_js]] header
  bool js = false;  // [[webhook_js]]
  std::string name;
  std::string location;  // the .wasm or .js file, absolute after loading
  std::string route;     // "POST /orders/:id" as written
  // auth = "api" (the default: [api] token, when set, is required) or
  // "none" (anyone who reaches the listener; the guest checks what it
  // needs, e.g. a signature header).
  bool auth_none = false;
  // The request's time limit: guest code and its waits (504 beyond it).
  std::chrono::milliseconds timeout{10000};
  // Linear memory of the wasm guest, or the V8 heap of the JS one, in
  // MiB (as activities: 64).
  uint32_t max_memory_mib = 64;
  std::map<std::string, std::string> env;  // WASI environment / ctx.env
};

struct ServerConfig {
  std::string config_file;  // as given to ParseConfig (named in errors found later)
  std::string config_dir;   // absolute folder relative paths were resolved against
  std::string data_dir;     // absolute
  ApiConfig api;
  DatabaseConfig database;
  ExecutorDefaults executor;
  WatcherConfig watcher;
  RetentionConfig retention;
  std::vector<ComponentConfig> components;
  std::vector<CronConfig> cron;
  std::vector<WebhookConfig> webhooks;
};

// One problem, located: "stele.toml:12: [[activity_exec]].command: expected
// an array of strings".
struct ConfigError {
  std::string file;
  int line = 0;  // 0: no line (file-level)
  std::string key;
  std::string message;
  std::string ToString() const;
};
using ConfigErrors = std::vector<ConfigError>;
std::string FormatErrors(const ConfigErrors& errors);

// Parses TOML text. `file` names the source in errors; relative paths are
// resolved against `config_dir` (absolute).
Result<ServerConfig, ConfigErrors> ParseConfig(std::string_view text, const std::string& file,
                                               const std::string& config_dir, const EnvLookup& env);
// Reads and parses `path`. When `missing_ok` and the file does not exist,
// returns the built-in defaults relative to the current directory.
Result<ServerConfig, ConfigErrors> LoadConfig(const std::string& path, bool missing_ok,
                                              const EnvLookup& env);

// "100ms", "10s", "5m", "1h", "7d" (whole numbers; at most a year). Errors
// name the accepted forms.
Result<std::chrono::milliseconds, std::string> ParseDurationText(std::string_view text);

}  // namespace stele::server
