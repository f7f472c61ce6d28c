// Internal to src/server/config*.cc: the TOML table reader stele.toml is
// parsed with, and the parts of the parse that live in config_components.cc
// (components and cron schedules). Not part of the module's interface.
//
// Threading: a TableReader is used by one thread for one parse.
#pragma once

// toml++ header-only, without exceptions (errors come back as values); the
// same settings in every file that includes it.
#define TOML_EXCEPTIONS 0
#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "server/config.h"

namespace stele::server::config_internal {

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
      Error(Line(*node), std::string(key),
            std::string("expected an integer, got ") + TypeName(*node));
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
      Error(Line(*node), std::string(key),
            std::string("expected true or false, got ") + TypeName(*node));
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

  // A table of NAME = "value" (each interpolated as String), e.g. `env`;
  // nullopt when absent or not a table (reported).
  std::optional<std::map<std::string, std::string>> StringTable(std::string_view key) {
    const toml::node* node = Get(key);
    if (!node) return std::nullopt;
    const auto* table = node->as_table();
    if (!table) {
      Error(Line(*node), std::string(key), "expected a table of NAME = \"value\"");
      return std::nullopt;
    }
    TableReader inner(*table, prefix_ + "." + std::string(key), file_, errors_, env_);
    std::map<std::string, std::string> out;
    for (auto&& [name, value] : *table) {
      std::string k(name.str());
      if (auto v = inner.String(k)) out[k] = *v;
    }
    return out;
  }

  std::optional<std::vector<std::string>> StringArray(std::string_view key) {
    const toml::node* node = Get(key);
    if (!node) return std::nullopt;
    const auto* array = node->as_array();
    if (!array) {
      Error(Line(*node), std::string(key),
            std::string("expected an array of strings, got ") + TypeName(*node));
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
    errors_.push_back(
        ConfigError{file_, line, prefix_.empty() ? key : prefix_ + "." + key, std::move(message)});
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
      case toml::node_type::table:
        return "a table";
      case toml::node_type::array:
        return "an array";
      case toml::node_type::string:
        return "a string";
      case toml::node_type::integer:
        return "an integer";
      case toml::node_type::floating_point:
        return "a float";
      case toml::node_type::boolean:
        return "a boolean";
      case toml::node_type::date:
      case toml::node_type::time:
      case toml::node_type::date_time:
        return "a date/time";
      default:
        return "nothing";
    }
  }

  // `${VAR}` → the variable's value; `$$` → `$`. A missing variable is an
  // error (a silently empty token or path would be worse).
  std::optional<std::string> Interpolate(const std::string& text, int line,
                                         const std::string& key) {
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

// `path` relative to `base` unless absolute, normalised.
inline std::string Resolve(const std::string& base, const std::string& path) {
  std::filesystem::path p(path);
  if (p.is_absolute()) return p.lexically_normal().string();
  return (std::filesystem::path(base) / p).lexically_normal().string();
}

// The table at `key` of `parent`, or nullptr (an error when it is another
// kind of value).
inline const toml::table* TableAt(TableReader& parent, std::string_view key) {
  const toml::node* node = parent.Get(key);
  if (!node) return nullptr;
  const auto* table = node->as_table();
  if (!table) {
    parent.Error(TableReader::Line(*node), std::string(key), "expected a table");
    return nullptr;
  }
  return table;
}

// [[workflow_wasm]], [[activity_exec]], ... of one kind.
void ReadComponents(TableReader& root, ComponentKind kind, ServerConfig& config);
// [[cron]].
void ReadCron(TableReader& root, ServerConfig& config);
// [[webhook_wasm]], with its checks across webhooks (names, routes) and
// against component names (config_webhooks.cc).
void ReadWebhooks(TableReader& root, ServerConfig& config);
// Checks across components: unique names and ffqns.
void CheckComponents(const ServerConfig& config, const std::string& file, ConfigErrors& errors);

}  // namespace stele::server::config_internal
