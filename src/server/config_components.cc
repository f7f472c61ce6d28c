// stele.toml's component tables ([[workflow_wasm]], [[activity_exec]],
// ...) and cron schedules ([[cron]]): the per-component part of the parse
// that config.cc runs (config_reader.h).
#include <map>
#include <string>
#include <vector>

#include "core/component_id.h"
#include "server/config_reader.h"
#include "service/cron/cron_expression.h"
#include "service/cron/tick_plan.h"

namespace stele::server::config_internal {

namespace {

namespace fs = std::filesystem;

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
            pr.Error(TableReader::Line(*pr.Get("name")), "name",
                     "duplicate parameter `" + *name + "`");
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
    if (auto env = r.StringTable("env")) c.env = std::move(*env);
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
                  "`" + host +
                      "` is not a host pattern (\"example.com\", \"example.com:8443\", "
                      "\"*.example.com\")");
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
    if (const toml::node* codes = r.Get("non_retryable_exit_codes")) {
      const auto* list = codes->as_array();
      bool valid = list != nullptr;
      for (size_t i = 0; valid && i < list->size(); ++i) {
        const std::optional<int64_t> code = (*list)[i].value<int64_t>();
        valid = code && *code >= 1 && *code <= 255;
        if (valid) c.non_retryable_exit_codes.push_back(static_cast<int>(*code));
      }
      if (!valid) {
        r.Error(TableReader::Line(*codes), "non_retryable_exit_codes",
                "expected an array of exit statuses 1..255");
      }
    }
  }
  ReadFunctions(r, c);
  if ((kind == ComponentKind::kActivityExec || kind == ComponentKind::kActivityStub) &&
      c.functions.empty() && !r.Get("functions")) {
    r.Error(c.line, "functions",
            "missing: declare at least one function (ffqn, params, return_type)");
  }
  if (kind != ComponentKind::kActivityStub) {
    if (auto v = r.Integer("max_retries", 0, 1000000)) c.max_retries = static_cast<uint32_t>(*v);
    if (auto v = r.Duration("retry_backoff", true)) c.retry_backoff = *v;
    if (auto v = r.Duration("max_retry_backoff", true)) c.max_retry_backoff = *v;
    if (auto v = r.Integer("retry_jitter_percent", 0, 100)) {
      c.retry_jitter_percent = static_cast<uint32_t>(*v);
    }
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

}  // namespace

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

namespace {

// A TOML value as JSON (params of [[cron]]): strings, integers, floats,
// booleans, arrays and tables; dates have no JSON form.
std::optional<core::Json> TomlToJson(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return core::Json(node.as_string()->get());
    case toml::node_type::integer:
      return core::Json(node.as_integer()->get());
    case toml::node_type::floating_point:
      return core::Json(node.as_floating_point()->get());
    case toml::node_type::boolean:
      return core::Json(node.as_boolean()->get());
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
    default:
      return std::nullopt;
  }
}

}  // namespace

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
        errors.push_back(
            ConfigError{file, c.line, std::string(ComponentKindName(c.kind)) + ".functions",
                        "function `" + f.ffqn.ToString() + "` is declared by components `" +
                            fit->second->name + "` and `" + c.name + "`: an ffqn must be unique"});
      }
    }
  }
}
}  // namespace stele::server::config_internal
