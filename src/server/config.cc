// Parsing of stele.toml with toml++ (header-only, built without
// exceptions: parse errors come back as a parse_result): the server-wide
// tables here, the component tables and [[cron]] in config_components.cc.
#include "server/config.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/component_id.h"
#include "server/config_reader.h"
#include "server/toml_prescan.h"

namespace stele::server {

namespace {

namespace fs = std::filesystem;
using config_internal::CheckComponents;
using config_internal::ReadComponents;
using config_internal::ReadCron;
using config_internal::Resolve;
using config_internal::TableAt;
using config_internal::TableReader;

// `host:port`, `[v6]:port`.
bool ParseListen(const std::string& text, std::string& host, int& port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= text.size()) return false;
  host = text.substr(0, colon);
  if (host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  std::string port_text = text.substr(colon + 1);
  if (port_text.size() > 5) return false;
  for (char c : port_text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  port = std::stoi(port_text);
  return port <= 65535 && !host.empty();
}

// [api] ui_listen (after `listen` and `ui` are read): a second address for
// the web UI, which needs the UI on and an address other than `listen`.
void ReadUiListen(TableReader& r, ApiConfig& api) {
  auto text = r.String("ui_listen");
  if (!text) return;
  const int line = TableReader::Line(*r.Get("ui_listen"));
  ApiConfig::UiListen ui;
  if (!ParseListen(*text, ui.host, ui.port)) {
    r.Error(line, "ui_listen", "expected HOST:PORT (e.g. \"127.0.0.1:5006\"), got `" + *text + "`");
  } else if (!api.ui) {
    r.Error(line, "ui_listen",
            "the web UI is off (`ui = false`): remove ui_listen or turn the UI on");
  } else if (ui.port != 0 && ui.port == api.listen_port && ui.host == api.listen_host) {
    r.Error(
        line, "ui_listen",
        "must differ from `listen` (" + *text + "); omit it to serve the UI on the API's address");
  } else {
    api.ui_listen = std::move(ui);
  }
}

void ReadApi(TableReader& root, ServerConfig& config) {
  const toml::table* table = TableAt(root, "api");
  if (!table) return;
  TableReader r(*table, "api", root.file(), root.errors(), root.env());
  if (auto listen = r.String("listen")) {
    if (!ParseListen(*listen, config.api.listen_host, config.api.listen_port)) {
      r.Error(TableReader::Line(*r.Get("listen")), "listen",
              "expected HOST:PORT (e.g. \"127.0.0.1:5005\"), got `" + *listen + "`");
    }
  }
  config.api.token = r.String("token");
  if (config.api.token && config.api.token->empty()) {
    r.Error(TableReader::Line(*r.Get("token")), "token", "must not be empty");
  }
  if (auto hash = r.String("token_sha256")) {
    bool ok = hash->size() == 64;
    for (char c : *hash) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) ok = false;
    }
    if (!ok) {
      r.Error(TableReader::Line(*r.Get("token_sha256")), "token_sha256",
              "expected 64 hex digits (the SHA-256 of the token)");
    } else {
      std::string lower;
      for (char c : *hash) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      config.api.token_sha256 = lower;
    }
  }
  if (config.api.token && config.api.token_sha256) {
    r.Error(TableReader::Line(*r.Get("token_sha256")), "token_sha256",
            "set either `token` or `token_sha256`, not both");
  }
  if (auto v = r.Integer("max_body_bytes", 1024, int64_t{1} << 30)) {
    config.api.max_body_bytes = static_cast<size_t>(*v);
  }
  if (auto v = r.Integer("max_list_length", 1, 10000)) {
    config.api.max_list_length = static_cast<uint16_t>(*v);
  }
  if (auto v = r.Integer("max_result_wait_secs", 1, 86400)) {
    config.api.max_result_wait = std::chrono::seconds(*v);
  }
  auto max_connections = r.Integer("max_connections", 2, 1000000);
  if (max_connections) {
    config.api.max_connections = static_cast<size_t>(*max_connections);
    config.api.max_connections_configured = true;
  }
  auto max_waiters = r.Integer("max_waiters", 1, 999999);
  if (max_waiters) {
    config.api.max_waiters = static_cast<size_t>(*max_waiters);
  } else if (max_connections) {
    // Unset, it follows max_connections: five sixths of them (50,000 of
    // the default 60,000), the rest left to the other requests.
    config.api.max_waiters = std::max<size_t>(1, config.api.max_connections * 5 / 6);
  }
  if ((max_connections || max_waiters) && config.api.max_waiters >= config.api.max_connections) {
    const char* key = max_waiters ? "max_waiters" : "max_connections";
    r.Error(TableReader::Line(*r.Get(key)), key,
            "max_waiters (" + std::to_string(config.api.max_waiters) +
                ") must be below max_connections (" + std::to_string(config.api.max_connections) +
                "), so that waiting requests leave room for the others");
  }
  if (auto v = r.Integer("workers", 1, 1024)) config.api.workers = static_cast<size_t>(*v);
  if (auto v = r.Bool("ui")) config.api.ui = *v;
  ReadUiListen(r, config.api);
}

void ReadDatabase(TableReader& root, ServerConfig& config) {
  const toml::table* table = TableAt(root, "database");
  if (!table) return;
  TableReader r(*table, "database", root.file(), root.errors(), root.env());
  auto sqlite = r.String("sqlite");
  auto postgres = r.String("postgres");
  if (sqlite && postgres) {
    r.Error(TableReader::Line(*r.Get("postgres")), "postgres",
            "set either `sqlite` or `postgres`, not both");
  }
  if (sqlite) {
    if (sqlite->empty() || *sqlite == ":memory:") {
      r.Error(TableReader::Line(*r.Get("sqlite")), "sqlite",
              "expected the path of a database file");
    } else {
      config.database.sqlite = Resolve(config.config_dir, *sqlite);
    }
  }
  if (postgres) {
    if (postgres->empty()) {
      r.Error(TableReader::Line(*r.Get("postgres")), "postgres", "must not be empty");
    } else {
      config.database.postgres = *postgres;
    }
  }
  // The pool's size, poll interval and statement timeout
  // (PostgresOptions), PostgreSQL only.
  if (auto v = r.Integer("postgres_max_connections", 1, 1000)) {
    config.database.postgres_max_connections = static_cast<size_t>(*v);
  }
  if (auto v = r.Duration("postgres_poll_interval", false)) {
    if (*v < std::chrono::milliseconds(10) || *v > std::chrono::hours(1)) {
      r.Error(TableReader::Line(*r.Get("postgres_poll_interval")), "postgres_poll_interval",
              "must be between 10ms and 1h");
    } else {
      config.database.postgres_poll_interval = *v;
    }
  }
  if (auto v = r.Duration("postgres_statement_timeout", false)) {
    if (*v < std::chrono::milliseconds(100) || *v > std::chrono::hours(1)) {
      r.Error(TableReader::Line(*r.Get("postgres_statement_timeout")), "postgres_statement_timeout",
              "must be between 100ms and 1h");
    } else {
      config.database.postgres_statement_timeout = *v;
    }
  }
  if (r.Get("postgres") == nullptr) {
    for (const char* key :
         {"postgres_max_connections", "postgres_poll_interval", "postgres_statement_timeout"}) {
      if (const toml::node* node = r.Get(key)) {
        r.Error(TableReader::Line(*node), key,
                "applies only with `postgres` (the database is SQLite)");
      }
    }
  }
  if (auto sync = r.String("sqlite_synchronous")) {
    if (*sync == "full") {
      config.database.sqlite_synchronous_full = true;
    } else if (*sync == "normal") {
      config.database.sqlite_synchronous_full = false;
    } else {
      r.Error(TableReader::Line(*r.Get("sqlite_synchronous")), "sqlite_synchronous",
              "expected \"full\" or \"normal\", got `" + *sync + "`");
    }
  }
}

void ReadExecutor(TableReader& root, ServerConfig& config) {
  const toml::table* table = TableAt(root, "executor");
  if (!table) return;
  TableReader r(*table, "executor", root.file(), root.errors(), root.env());
  auto& e = config.executor;
  if (auto v = r.Integer("batch_size", 1, 10000)) e.batch_size = static_cast<uint32_t>(*v);
  if (auto v = r.Duration("tick_sleep", false)) e.tick_sleep = *v;
  if (auto v = r.Duration("lock_expiry", false)) e.lock_expiry = *v;
  if (auto v = r.Duration("workflow_lock_expiry", false)) e.workflow_lock_expiry = *v;
  if (auto v = r.Duration("cancel_grace", true)) e.cancel_grace = *v;
  if (auto v = r.Integer("workflow_max_retries", 0, 1000000)) {
    e.workflow_max_retries = static_cast<uint32_t>(*v);
  }
  if (auto v = r.Duration("max_retry_backoff", true)) e.max_retry_backoff = *v;
  if (auto v = r.Integer("retry_jitter_percent", 0, 100)) {
    e.retry_jitter_percent = static_cast<uint32_t>(*v);
  }
  if (auto v = r.Integer("max_events_per_execution", 10, 100000000)) {
    e.max_events_per_execution = static_cast<uint32_t>(*v);
  }
  if (auto v = r.Integer("max_concurrency", 1, 100000))
    e.max_concurrency = static_cast<uint32_t>(*v);
  if (auto v = r.Integer("max_workflow_concurrency", 1, 100000)) {
    e.max_workflow_concurrency = static_cast<uint32_t>(*v);
  }
}

void ReadWatcher(TableReader& root, ServerConfig& config) {
  const toml::table* table = TableAt(root, "watcher");
  if (!table) return;
  TableReader r(*table, "watcher", root.file(), root.errors(), root.env());
  if (auto v = r.Duration("tick_sleep", false)) config.watcher.tick_sleep = *v;
  if (auto v = r.Duration("leeway", true)) config.watcher.leeway = *v;
  if (auto v = r.Bool("enabled")) config.watcher.enabled = *v;
}

// [retention]: deleting finished executions (docs/config.md).
void ReadRetention(TableReader& root, ServerConfig& config) {
  const toml::table* table = TableAt(root, "retention");
  if (!table) return;
  TableReader r(*table, "retention", root.file(), root.errors(), root.env());
  if (auto v = r.Duration("finished_after", false)) config.retention.finished_after = *v;
  if (auto v = r.Duration("interval", false)) config.retention.interval = *v;
  if (auto v = r.Integer("batch_size", 1, 10000)) {
    config.retention.batch_size = static_cast<uint32_t>(*v);
  }
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
}

std::string_view ComponentKindName(ComponentKind kind) {
  switch (kind) {
    case ComponentKind::kWorkflowWasm:
      return "workflow_wasm";
    case ComponentKind::kActivityWasm:
      return "activity_wasm";
    case ComponentKind::kActivityExec:
      return "activity_exec";
    case ComponentKind::kActivityStub:
      return "activity_stub";
    case ComponentKind::kWorkflowJs:
      return "workflow_js";
    case ComponentKind::kActivityJs:
      return "activity_js";
  }
  return "?";
}

std::string ConfigError::ToString() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  out += ": ";
  if (!key.empty()) out += key + ": ";
  return out + message;
}

std::string FormatErrors(const ConfigErrors& errors) {
  std::string out;
  for (const auto& e : errors) out += e.ToString() + "\n";
  return out;
}

Result<std::chrono::milliseconds, std::string> ParseDurationText(std::string_view text) {
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    if (value > 1'000'000'000'000ULL) return Unexpected(std::string("duration is too large"));
    value = value * 10 + static_cast<uint64_t>(text[i] - '0');
    ++i;
  }
  std::string_view unit = text.substr(i);
  std::string bad = "invalid duration `" + std::string(text) +
                    "`: expected a whole number and a unit: \"250ms\", \"10s\", \"5m\", \"1h\", "
                    "\"7d\"";
  if (i == 0) return Unexpected(bad);
  uint64_t factor = 0;
  if (unit == "ms") {
    factor = 1;
  } else if (unit == "s") {
    factor = 1000;
  } else if (unit == "m") {
    factor = 60'000;
  } else if (unit == "h") {
    factor = 3'600'000;
  } else if (unit == "d") {
    factor = 86'400'000;
  } else {
    return Unexpected(bad);
  }
  uint64_t ms = value * factor;
  if (ms > 365ULL * 24 * 3'600'000)
    return Unexpected("duration `" + std::string(text) + "` is over a year");
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

Result<ServerConfig, ConfigErrors> ParseConfig(std::string_view text, const std::string& file,
                                               const std::string& config_dir,
                                               const EnvLookup& env) {
  ConfigErrors errors;
  if (const auto hazard = FindTomlHazard(text)) {
    errors.push_back(
        ConfigError{file, hazard->line, "", "TOML syntax error: " + std::string(hazard->reason)});
    return Unexpected(std::move(errors));
  }
  toml::parse_result parsed = toml::parse(text, file);
  if (!parsed) {
    const auto& e = parsed.error();
    errors.push_back(ConfigError{file, static_cast<int>(e.source().begin.line), "",
                                 "TOML syntax error: " + std::string(e.description())});
    return Unexpected(std::move(errors));
  }
  ServerConfig config;
  config.config_file = file;
  config.config_dir = config_dir;
  config.data_dir = Resolve(config_dir, ".stele");
  {
    TableReader root(parsed.table(), "", file, errors, env);
    if (auto dir = root.String("data_dir")) {
      if (dir->empty()) {
        root.Error(TableReader::Line(*root.Get("data_dir")), "data_dir", "must not be empty");
      } else {
        config.data_dir = Resolve(config_dir, *dir);
      }
    }
    ReadApi(root, config);
    ReadDatabase(root, config);
    ReadExecutor(root, config);
    ReadWatcher(root, config);
    ReadRetention(root, config);
    for (auto kind :
         {ComponentKind::kWorkflowWasm, ComponentKind::kActivityWasm, ComponentKind::kActivityExec,
          ComponentKind::kActivityStub, ComponentKind::kWorkflowJs, ComponentKind::kActivityJs}) {
      ReadComponents(root, kind, config);
    }
    ReadCron(root, config);
    config_internal::ReadWebhooks(root, config);
  }  // ~TableReader reports unknown top-level keys
  if (!config.database.sqlite && !config.database.postgres) {
    config.database.sqlite = (fs::path(config.data_dir) / "stele.sqlite").string();
  }
  CheckComponents(config, file, errors);
  if (!errors.empty()) {
    std::stable_sort(errors.begin(), errors.end(),
                     [](const ConfigError& a, const ConfigError& b) { return a.line < b.line; });
    return Unexpected(std::move(errors));
  }
  return config;
}

Result<ServerConfig, ConfigErrors> LoadConfig(const std::string& path, bool missing_ok,
                                              const EnvLookup& env) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) return Unexpected(ConfigErrors{{path, 0, "", "invalid path: " + ec.message()}});
  if (!fs::exists(p, ec)) {
    if (missing_ok) return ParseConfig("", path, fs::current_path(ec).string(), env);
    return Unexpected(ConfigErrors{{path, 0, "", "config file does not exist"}});
  }
  if (fs::is_directory(p, ec)) {
    return Unexpected(ConfigErrors{{path, 0, "", "is a directory, expected a TOML file"}});
  }
  std::ifstream in(p, std::ios::binary);
  if (!in) return Unexpected(ConfigErrors{{path, 0, "", "cannot read the config file"}});
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (text.size() > 4 * 1024 * 1024) {
    return Unexpected(ConfigErrors{{path, 0, "", "config file is over 4 MiB"}});
  }
  return ParseConfig(text, path, p.parent_path().lexically_normal().string(), env);
}

}  // namespace stele::server
