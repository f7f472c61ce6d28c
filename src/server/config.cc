// Parsing of stele.toml with toml++ (header-only, built here without
// exceptions: parse errors come back as a parse_result).
#define TOML_EXCEPTIONS 0
#define TOML_HEADER_ONLY 1
#include "server/config.h"

#include <toml++/toml.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/component_id.h"
#include "service/cron/cron_expression.h"
#include "service/cron/tick_plan.h"
#include "server/toml_prescan.h"

namespace stele::server {

namespace {

namespace fs = std::filesystem;

// Walks one TOML table, remembers which keys were read and reports the rest
// as unknown. Every getter records an error (with key and line) and returns
// nullopt on a bad value.
class TableReader {
 public:
  TableReader(const toml::table& table, std::string prefix, const std::string& file,
              ConfigErrors& errors, const EnvLookup& env)
      : table_(table), prefix_(std::move(prefix)), file_(file), errors_(errors), env_(env) {}

  ~TableReader() {
    for (auto&& [key, node] : table_) {
      if (!seen_.count(std::string(key.str()))) {
        Error(Line(node), std::string(key.str()),
              "unknown key (see docs/config.md for the accepted keys)");
      }
    }
  }
  TableReader(const TableReader&) = delete;
  TableReader& operator=(const TableReader&) = delete;

  const toml::node* Get(std::string_view key) {
    seen_.insert(std::string(key));
    return table_.get(key);
  }

  std::optional<std::string> String(std::string_view key) {
    const toml::node* node = Get(key);
    if (!node) return std::nullopt;
    return StringOf(*node, std::string(key));
  }

  std::optional<std::string> StringOf(const toml::node& node, const std::string& key) {
    const auto* value = node.as_string();
    if (!value) {
      Error(Line(node), key, std::string("expected a string, got ") + TypeName(node));
      return std::nullopt;
    }
    return Interpolate(value->get(), Line(node), key);
  }

  std::optional<int64_t> Integer(std::string_view key, int64_t min, int64_t max) {
    const toml::node* node = Get(key);
    if (!node) return std::nullopt;
    const auto* value = node->as_integer();
    if (!value) {
      Error(Line(*node), std::string(key), std::string("expected an integer, got ") + TypeName(*node));
      return std::nullopt;
    }
    int64_t v = value->get();
    if (v < min || v > max) {
      Error(Line(*node), std::string(key),
            "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " +
                std::to_string(v));
      return std::nullopt;
    }
    return v;
  }

  std::optional<bool> Bool(std::string_view key) {
    const toml::node* node = Get(key);
    if (!node) return std::nullopt;
    const auto* value = node->as_boolean();
    if (!value) {
      Error(Line(*node), std::string(key), std::string("expected true or false, got ") + TypeName(*node));
      return std::nullopt;
    }
    return value->get();
  }

  std::optional<std::chrono::milliseconds> Duration(std::string_view key, bool allow_zero) {
    auto text = String(key);
    if (!text) return std::nullopt;
    auto parsed = ParseDurationText(*text);
    if (!parsed) {
      Error(Line(*table_.get(key)), std::string(key), parsed.error());
      return std::nullopt;
    }
    if (!allow_zero && parsed->count() == 0) {
      Error(Line(*table_.get(key)), std::string(key), "must be positive");
      return std::nullopt;
    }
    return *parsed;
  }

  std::optional<std::vector<std::string>> StringArray(std::string_view key) {
    const toml::node* node = Get(key);
    if (!node) return std::nullopt;
    const auto* array = node->as_array();
    if (!array) {
      Error(Line(*node), std::string(key), std::string("expected an array of strings, got ") + TypeName(*node));
      return std::nullopt;
    }
    std::vector<std::string> out;
    bool ok = true;
    for (size_t i = 0; i < array->size(); ++i) {
      std::string item_key = std::string(key) + "[" + std::to_string(i) + "]";
      auto s = StringOf(*array->get(i), item_key);
      if (!s) {
        ok = false;
        continue;
      }
      out.push_back(std::move(*s));
    }
    if (!ok) return std::nullopt;
    return out;
  }

  void Error(int line, const std::string& key, std::string message) {
    errors_.push_back(ConfigError{file_, line, prefix_.empty() ? key : prefix_ + "." + key,
                                  std::move(message)});
  }

  static int Line(const toml::node& node) { return static_cast<int>(node.source().begin.line); }
  int TableLine() const { return static_cast<int>(table_.source().begin.line); }
  const std::string& prefix() const { return prefix_; }
  const std::string& file() const { return file_; }
  ConfigErrors& errors() { return errors_; }
  const EnvLookup& env() const { return env_; }
  const toml::table& table() const { return table_; }

 private:
  static std::string TypeName(const toml::node& node) {
    switch (node.type()) {
      case toml::node_type::table: return "a table";
      case toml::node_type::array: return "an array";
      case toml::node_type::string: return "a string";
      case toml::node_type::integer: return "an integer";
      case toml::node_type::floating_point: return "a float";
      case toml::node_type::boolean: return "a boolean";
      case toml::node_type::date:
      case toml::node_type::time:
      case toml::node_type::date_time: return "a date/time";
      default: return "nothing";
    }
  }

  // `${VAR}` → the variable's value; `$$` → `$`. A missing variable is an
  // error (a silently empty token or path would be worse).
  std::optional<std::string> Interpolate(const std::string& text, int line, const std::string& key) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] != '$') {
        out += text[i];
        continue;
      }
      if (i + 1 < text.size() && text[i + 1] == '$') {
        out += '$';
        ++i;
        continue;
      }
      if (i + 1 >= text.size() || text[i + 1] != '{') {
        out += '$';
        continue;
      }
      size_t end = text.find('}', i + 2);
      if (end == std::string::npos) {
        Error(line, key, "unterminated `${` in string (write `$$` for a literal `$`)");
        return std::nullopt;
      }
      std::string name = text.substr(i + 2, end - i - 2);
      bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
      for (char c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') valid = false;
      }
      if (!valid) {
        Error(line, key, "invalid environment variable name `" + name + "` in `${...}`");
        return std::nullopt;
      }
      auto value = env_(name);
      if (!value) {
        Error(line, key, "environment variable `" + name + "` is not set");
        return std::nullopt;
      }
      out += *value;
      i = end;
    }
    return out;
  }

  const toml::table& table_;
  std::string prefix_;
  const std::string& file_;
  ConfigErrors& errors_;
  const EnvLookup& env_;
  std::set<std::string> seen_;
};

std::string Resolve(const std::string& base, const std::string& path) {
  fs::path p(path);
  if (p.is_absolute()) return p.lexically_normal().string();
  return (fs::path(base) / p).lexically_normal().string();
}

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

const toml::table* TableAt(TableReader& parent, std::string_view key) {
  const toml::node* node = parent.Get(key);
  if (!node) return nullptr;
  const auto* table = node->as_table();
  if (!table) {
    parent.Error(TableReader::Line(*node), std::string(key), "expected a table");
    return nullptr;
  }
  return table;
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
  auto max_connections = r.Integer("max_connections", 2, 16384);
  if (max_connections) config.api.max_connections = static_cast<size_t>(*max_connections);
  auto max_waiters = r.Integer("max_waiters", 1, 16383);
  if (max_waiters) config.api.max_waiters = static_cast<size_t>(*max_waiters);
  if ((max_connections || max_waiters) && config.api.max_waiters >= config.api.max_connections) {
    const char* key = max_waiters ? "max_waiters" : "max_connections";
    r.Error(TableReader::Line(*r.Get(key)), key,
            "max_waiters (" + std::to_string(config.api.max_waiters) +
                ") must be below max_connections (" + std::to_string(config.api.max_connections) +
                "), so that waiting requests leave room for the others");
  }
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
  if (auto v = r.Integer("max_events_per_execution", 10, 100000000)) {
    e.max_events_per_execution = static_cast<uint32_t>(*v);
  }
  if (auto v = r.Integer("max_concurrency", 1, 100000)) e.max_concurrency = static_cast<uint32_t>(*v);
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

void ReadFunctions(TableReader& r, ComponentConfig& component) {
  const toml::node* node = r.Get("functions");
  if (!node) return;
  const auto* array = node->as_array();
  if (!array) {
    r.Error(TableReader::Line(*node), "functions",
            "expected an array of tables ([[...functions]] or [{ffqn = ...}])");
    return;
  }
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& item = *array->get(i);
    std::string key = "functions[" + std::to_string(i) + "]";
    const auto* table = item.as_table();
    if (!table) {
      r.Error(TableReader::Line(item), key, "expected a table with ffqn, params, return_type");
      continue;
    }
    TableReader f(*table, r.prefix() + "." + key, r.file(), r.errors(), r.env());
    int line = TableReader::Line(item);
    auto ffqn_text = f.String("ffqn");
    if (!ffqn_text) {
      if (!f.Get("ffqn")) f.Error(line, "ffqn", "missing (the function's ns:pkg/ifc.fn)");
      continue;
    }
    auto ffqn = core::FunctionFqn::Parse(*ffqn_text);
    if (!ffqn) {
      f.Error(TableReader::Line(*f.Get("ffqn")), "ffqn",
              ffqn.error().message + " (expected ns:pkg/ifc.fn)");
      continue;
    }
    core::FunctionSignature sig{*ffqn, {}, std::nullopt};
    bool ok = true;
    if (const toml::node* params = f.Get("params")) {
      const auto* list = params->as_array();
      if (!list) {
        f.Error(TableReader::Line(*params), "params",
                "expected an array of {name = \"...\", type = \"...\"}");
        ok = false;
      } else {
        std::set<std::string> names;
        for (size_t j = 0; j < list->size(); ++j) {
          const toml::node& p = *list->get(j);
          std::string pkey = "params[" + std::to_string(j) + "]";
          const auto* pt = p.as_table();
          if (!pt) {
            f.Error(TableReader::Line(p), pkey, "expected {name = \"...\", type = \"...\"}");
            ok = false;
            continue;
          }
          TableReader pr(*pt, f.prefix() + "." + pkey, r.file(), r.errors(), r.env());
          auto name = pr.String("name");
          auto type = pr.String("type");
          if (!name || !type) {
            if (!pr.Get("name")) pr.Error(TableReader::Line(p), "name", "missing");
            if (!pr.Get("type")) pr.Error(TableReader::Line(p), "type", "missing");
            ok = false;
            continue;
          }
          if (!core::IsValidTypeName(*name)) {
            pr.Error(TableReader::Line(*pr.Get("name")), "name",
                     "invalid parameter name `" + *name + "` (kebab-case, e.g. `user-id`)");
            ok = false;
          } else if (!names.insert(*name).second) {
            pr.Error(TableReader::Line(*pr.Get("name")), "name", "duplicate parameter `" + *name + "`");
            ok = false;
          }
          auto desc = core::TypeDesc::Parse(*type);
          if (!desc) {
            pr.Error(TableReader::Line(*pr.Get("type")), "type",
                     "invalid type `" + *type + "`: " + desc.error());
            ok = false;
            continue;
          }
          sig.params.push_back(core::ParamSpec{*name, *desc});
        }
      }
    }
    if (auto ret = f.String("return_type")) {
      auto desc = core::TypeDesc::Parse(*ret);
      if (!desc) {
        f.Error(TableReader::Line(*f.Get("return_type")), "return_type",
                "invalid type `" + *ret + "`: " + desc.error());
        ok = false;
      } else {
        sig.return_type = *desc;
      }
    }
    if (ok) component.functions.push_back(std::move(sig));
  }
}

void ReadComponent(const toml::table& table, ComponentKind kind, size_t index, TableReader& root,
                   ServerConfig& config) {
  std::string prefix = std::string(ComponentKindName(kind)) + "[" + std::to_string(index) + "]";
  TableReader r(table, prefix, root.file(), root.errors(), root.env());
  ComponentConfig c;
  c.kind = kind;
  c.line = r.TableLine();
  if (auto name = r.String("name")) {
    if (!core::ComponentId::IsValidName(*name)) {
      r.Error(TableReader::Line(*r.Get("name")), "name",
              "invalid component name `" + *name + "` (use [A-Za-z0-9_-])");
    }
    c.name = *name;
  } else if (!r.Get("name")) {
    r.Error(c.line, "name", "missing (every component needs a unique name)");
  }
  bool wasm = kind == ComponentKind::kWorkflowWasm || kind == ComponentKind::kActivityWasm;
  bool js = kind == ComponentKind::kWorkflowJs || kind == ComponentKind::kActivityJs;
  bool workflow = kind == ComponentKind::kWorkflowWasm || kind == ComponentKind::kWorkflowJs;
  if (wasm || js) {
    if (auto location = r.String("location")) {
      c.location = Resolve(config.config_dir, *location);
    } else if (!r.Get("location")) {
      r.Error(c.line, "location",
              wasm ? "missing (the path of the .wasm file)"
                   : "missing (the path of the bundled JavaScript module, an ES module)");
    }
  }
  if (js) {
    if (auto v = r.Integer("max_heap_mib", 8, 16384)) c.max_heap_mib = static_cast<uint32_t>(*v);
    if (workflow) {
      if (auto v = r.Duration("guest_slice", false)) c.guest_slice = *v;
    }
  }
  if (kind == ComponentKind::kActivityExec) {
    if (auto command = r.StringArray("command")) {
      if (command->empty() || (*command)[0].empty()) {
        r.Error(TableReader::Line(*r.Get("command")), "command",
                "must name a program: [\"./script.sh\", \"arg\", ...]");
      } else {
        // A relative program with a '/' is relative to the config folder; a
        // bare name is looked up in PATH when run.
        if ((*command)[0].find('/') != std::string::npos) {
          (*command)[0] = Resolve(config.config_dir, (*command)[0]);
        }
        c.command = std::move(*command);
      }
    } else if (!r.Get("command")) {
      r.Error(c.line, "command", "missing (argv array: [\"./script.sh\", \"arg\"])");
    }
    // Default: the config folder, so relative paths in scripts behave the
    // same whatever folder the server was started from.
    c.working_dir = config.config_dir;
    if (auto dir = r.String("working_dir")) c.working_dir = Resolve(config.config_dir, *dir);
    if (auto allow = r.StringArray("env_allow")) c.env_allow = std::move(*allow);
  }
  if (kind == ComponentKind::kActivityExec || kind == ComponentKind::kActivityWasm ||
      kind == ComponentKind::kActivityJs) {
    if (const toml::node* env = r.Get("env")) {
      if (const auto* et = env->as_table()) {
        TableReader er(*et, prefix + ".env", root.file(), root.errors(), root.env());
        for (auto&& [key, node] : *et) {
          std::string k(key.str());
          if (auto v = er.String(k)) c.env[k] = *v;
        }
      } else {
        r.Error(TableReader::Line(*env), "env", "expected a table of NAME = \"value\"");
      }
    }
    if (auto v = r.Bool("retry_on_err")) c.retry_on_err = *v;
  }
  if (kind == ComponentKind::kActivityWasm) {
    if (auto args = r.StringArray("args")) c.args = std::move(*args);
  }
  if (kind == ComponentKind::kActivityWasm || kind == ComponentKind::kActivityJs) {
    if (auto hosts = r.StringArray("allowed_hosts")) {
      for (const std::string& host : *hosts) {
        bool bad = host.empty() || host.find_first_of(" \t/@?#") != std::string::npos;
        if (bad) {
          r.Error(TableReader::Line(*r.Get("allowed_hosts")), "allowed_hosts",
                  "`" + host + "` is not a host pattern (\"example.com\", \"example.com:8443\", \"*.example.com\")");
        }
      }
      c.allowed_hosts = std::move(*hosts);
    }
  }
  if (kind == ComponentKind::kActivityExec) {
    if (auto v = r.Integer("max_stdout_bytes", 1, int64_t{1} << 30)) {
      c.max_stdout_bytes = static_cast<size_t>(*v);
    }
    if (auto v = r.Integer("max_stderr_bytes", 1, int64_t{1} << 30)) {
      c.max_stderr_bytes = static_cast<size_t>(*v);
    }
  }
  ReadFunctions(r, c);
  if ((kind == ComponentKind::kActivityExec || kind == ComponentKind::kActivityStub) &&
      c.functions.empty() && !r.Get("functions")) {
    r.Error(c.line, "functions", "missing: declare at least one function (ffqn, params, return_type)");
  }
  if (kind != ComponentKind::kActivityStub) {
    if (!workflow) {
      if (auto v = r.Integer("max_retries", 0, 1000000)) c.max_retries = static_cast<uint32_t>(*v);
    }
    if (auto v = r.Duration("retry_backoff", true)) c.retry_backoff = *v;
    if (auto v = r.Duration("lock_expiry", false)) c.lock_expiry = *v;
    if (auto v = r.Integer("batch_size", 1, 10000)) c.batch_size = static_cast<uint32_t>(*v);
  }
  if (workflow) {
    if (auto v = r.Integer("max_events_per_execution", 10, 100000000)) {
      c.max_events_per_execution = static_cast<uint32_t>(*v);
    }
    if (auto v = r.String("blocking_strategy")) {
      if (*v == "await" || *v == "interrupt") {
        c.blocking_strategy_await = *v == "await";
      } else {
        r.Error(TableReader::Line(*r.Get("blocking_strategy")), "blocking_strategy",
                "expected \"await\" or \"interrupt\", got `" + *v + "`");
      }
    }
  }
  config.components.push_back(std::move(c));
}

void ReadComponents(TableReader& root, ComponentKind kind, ServerConfig& config) {
  std::string key(ComponentKindName(kind));
  const toml::node* node = root.Get(key);
  if (!node) return;
  const auto* array = node->as_array();
  if (!array) {
    root.Error(TableReader::Line(*node), key, "expected an array of tables: write [[" + key + "]]");
    return;
  }
  for (size_t i = 0; i < array->size(); ++i) {
    const auto* table = array->get(i)->as_table();
    if (!table) {
      root.Error(TableReader::Line(*array->get(i)), key + "[" + std::to_string(i) + "]",
                 "expected a table");
      continue;
    }
    ReadComponent(*table, kind, i, root, config);
  }
}

// A TOML value as JSON (params of [[cron]]): strings, integers, floats,
// booleans, arrays and tables; dates have no JSON form.
std::optional<core::Json> TomlToJson(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return core::Json(node.as_string()->get());
    case toml::node_type::integer: return core::Json(node.as_integer()->get());
    case toml::node_type::floating_point: return core::Json(node.as_floating_point()->get());
    case toml::node_type::boolean: return core::Json(node.as_boolean()->get());
    case toml::node_type::array: {
      core::Json out = core::Json::array();
      for (const toml::node& item : *node.as_array()) {
        auto v = TomlToJson(item);
        if (!v) return std::nullopt;
        out.push_back(std::move(*v));
      }
      return out;
    }
    case toml::node_type::table: {
      core::Json out = core::Json::object();
      for (auto&& [key, item] : *node.as_table()) {
        auto v = TomlToJson(item);
        if (!v) return std::nullopt;
        out[std::string(key.str())] = std::move(*v);
      }
      return out;
    }
    default: return std::nullopt;
  }
}

void ReadCron(TableReader& root, ServerConfig& config) {
  const toml::node* node = root.Get("cron");
  if (!node) return;
  const auto* array = node->as_array();
  if (!array) {
    root.Error(TableReader::Line(*node), "cron", "expected an array of tables: write [[cron]]");
    return;
  }
  std::map<std::string, int> names;
  for (size_t i = 0; i < array->size(); ++i) {
    const std::string prefix = "cron[" + std::to_string(i) + "]";
    const auto* table = array->get(i)->as_table();
    if (!table) {
      root.Error(TableReader::Line(*array->get(i)), prefix, "expected a table");
      continue;
    }
    TableReader r(*table, prefix, root.file(), root.errors(), root.env());
    CronConfig c;
    c.line = r.TableLine();
    const size_t errors_before = root.errors().size();
    auto name = r.String("name");
    if (!name) {
      if (!r.Get("name")) r.Error(c.line, "name", "missing");
    } else if (!core::ComponentId::IsValidName(*name) || name->size() > 128) {
      r.Error(TableReader::Line(*r.Get("name")), "name",
              "`" + *name + "` is not a schedule name (1..128 of [A-Za-z0-9_-])");
    } else if (auto [it, inserted] = names.emplace(*name, c.line); !inserted) {
      r.Error(TableReader::Line(*r.Get("name")), "name",
              "duplicate schedule name `" + *name + "` (first at line " +
                  std::to_string(it->second) + ")");
    } else {
      c.name = *name;
    }
    if (auto v = r.String("schedule")) {
      c.schedule = *v;
    } else if (!r.Get("schedule")) {
      r.Error(c.line, "schedule", "missing: a cron expression with seconds, e.g. \"0 0 2 * * *\"");
    }
    if (auto v = r.String("time_zone")) c.time_zone = *v;
    if (auto v = r.String("ffqn")) {
      c.ffqn = *v;
    } else if (!r.Get("ffqn")) {
      r.Error(c.line, "ffqn", "missing: the function each tick submits");
    }
    if (const toml::node* params = r.Get("params")) {
      auto json = params->as_array() ? TomlToJson(*params) : std::nullopt;
      if (!json) {
        r.Error(TableReader::Line(*params), "params",
                "expected an array of TOML values without dates (the function's params)");
      } else {
        c.params = std::move(*json);
      }
    }
    if (auto v = r.String("overlap")) {
      if (!service::cron::ParseOverlapPolicy(*v)) {
        r.Error(TableReader::Line(*r.Get("overlap")), "overlap",
                "expected \"skip\", \"allow\" or \"buffer_one\", got `" + *v + "`");
      } else {
        c.overlap = *v;
      }
    }
    if (auto v = r.String("catch_up")) {
      if (!service::cron::ParseCatchUpPolicy(*v)) {
        r.Error(TableReader::Line(*r.Get("catch_up")), "catch_up",
                "expected \"skip\", \"last\" or \"all\", got `" + *v + "`");
      } else {
        c.catch_up = *v;
      }
    }
    if (auto v = r.Integer("catch_up_limit", 1, service::cron::kMaxCatchUpLimit)) {
      c.catch_up_limit = static_cast<uint32_t>(*v);
    }
    if (!c.schedule.empty() && r.Get("schedule")) {
      auto parsed = service::cron::CronExpression::Parse(c.schedule, c.time_zone);
      if (!parsed) r.Error(TableReader::Line(*r.Get("schedule")), "schedule", parsed.error());
    }
    if (root.errors().size() == errors_before) config.cron.push_back(std::move(c));
  }
}

// Checks across components: unique names and ffqns.
void CheckComponents(const ServerConfig& config, const std::string& file, ConfigErrors& errors) {
  std::map<std::string, const ComponentConfig*> names;
  std::map<core::FunctionFqn, const ComponentConfig*> ffqns;
  for (const auto& c : config.components) {
    if (c.name.empty()) continue;
    auto [it, inserted] = names.emplace(c.name, &c);
    if (!inserted) {
      errors.push_back(ConfigError{file, c.line, std::string(ComponentKindName(c.kind)) + ".name",
                                   "duplicate component name `" + c.name + "` (first at line " +
                                       std::to_string(it->second->line) + ")"});
    }
    for (const auto& f : c.functions) {
      auto [fit, finserted] = ffqns.emplace(f.ffqn, &c);
      if (!finserted) {
        errors.push_back(ConfigError{
            file, c.line, std::string(ComponentKindName(c.kind)) + ".functions",
            "function `" + f.ffqn.ToString() + "` is declared by components `" +
                fit->second->name + "` and `" + c.name + "`: an ffqn must be unique"});
      }
    }
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
    case ComponentKind::kWorkflowWasm: return "workflow_wasm";
    case ComponentKind::kActivityWasm: return "activity_wasm";
    case ComponentKind::kActivityExec: return "activity_exec";
    case ComponentKind::kActivityStub: return "activity_stub";
    case ComponentKind::kWorkflowJs: return "workflow_js";
    case ComponentKind::kActivityJs: return "activity_js";
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
  if (ms > 365ULL * 24 * 3'600'000) return Unexpected("duration `" + std::string(text) + "` is over a year");
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

Result<ServerConfig, ConfigErrors> ParseConfig(std::string_view text, const std::string& file,
                                               const std::string& config_dir,
                                               const EnvLookup& env) {
  ConfigErrors errors;
  if (const int line = LineOfNonAsciiOutsideStrings(text); line != 0) {
    errors.push_back(ConfigError{file, line, "",
                                 "TOML syntax error: a non-ASCII character outside a string or a "
                                 "comment (keys that are not quoted must be ASCII)"});
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
    for (auto kind : {ComponentKind::kWorkflowWasm, ComponentKind::kActivityWasm,
                      ComponentKind::kActivityExec, ComponentKind::kActivityStub,
                      ComponentKind::kWorkflowJs, ComponentKind::kActivityJs}) {
      ReadComponents(root, kind, config);
    }
    ReadCron(root, config);
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
