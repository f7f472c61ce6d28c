// stele.toml's [[webhook_wasm]] and [[webhook_js]] tables (docs/config.md):
// the part of the parse that config.cc runs (config_reader.h). Both kinds
// share the keys, the names and the routes.
#include <map>
#include <string>
#include <vector>

#include "core/component_id.h"
#include "server/config_reader.h"
#include "server/webhook_routes.h"

namespace stele::server::config_internal {

namespace {

// The smallest V8 heap a [[webhook_js]] gets (as max_heap_mib of JS
// components).
constexpr int64_t kMinJsHeapMib = 8;

// One [[webhook_wasm]] or [[webhook_js]] (`key`); false when it has an
// error (it is left out).
bool ReadWebhook(const toml::table& table, const std::string& key, size_t index, TableReader& root,
                 ServerConfig& config, WebhookConfig& out, RoutePattern& route) {
  const std::string prefix = key + "[" + std::to_string(index) + "]";
  TableReader r(table, prefix, root.file(), root.errors(), root.env());
  const size_t errors_before = root.errors().size();
  out.line = r.TableLine();
  if (auto name = r.String("name")) {
    if (!core::ComponentId::IsValidName(*name) || name->size() > 128) {
      r.Error(TableReader::Line(*r.Get("name")), "name",
              "invalid webhook name `" + *name + "` (1..128 of [A-Za-z0-9_-])");
    }
    out.name = *name;
  } else if (!r.Get("name")) {
    r.Error(out.line, "name", "missing (every webhook needs a unique name)");
  }
  if (auto location = r.String("location")) {
    out.location = Resolve(config.config_dir, *location);
  } else if (!r.Get("location")) {
    r.Error(
        out.line, "location",
        std::string("missing (the path of the webhook's ") + (out.js ? ".js" : ".wasm") + " file)");
  }
  if (auto text = r.String("route")) {
    auto parsed = ParseRoutePattern(*text);
    if (!parsed) {
      r.Error(TableReader::Line(*r.Get("route")), "route",
              "webhook `" + out.name + "`: route `" + *text + "`: " + parsed.error());
    } else {
      route = std::move(*parsed);
      out.route = route.ToString();
    }
  } else if (!r.Get("route")) {
    r.Error(out.line, "route", "missing: the method and path it serves, e.g. \"POST /orders/:id\"");
  }
  if (auto auth = r.String("auth")) {
    if (*auth == "none" || *auth == "api") {
      out.auth_none = *auth == "none";
    } else {
      r.Error(TableReader::Line(*r.Get("auth")), "auth",
              "expected \"api\" (the [api] token) or \"none\", got `" + *auth + "`");
    }
  }
  if (auto v = r.Duration("timeout", false)) {
    if (*v > std::chrono::minutes(5)) {
      r.Error(TableReader::Line(*r.Get("timeout")), "timeout", "at most 5m");
    } else {
      out.timeout = *v;
    }
  }
  if (auto v = r.Integer("max_memory_mib", out.js ? kMinJsHeapMib : 1, 4096)) {
    out.max_memory_mib = static_cast<uint32_t>(*v);
  }
  if (auto env = r.StringTable("env")) out.env = std::move(*env);
  return root.errors().size() == errors_before;
}

}  // namespace

void ReadWebhooks(TableReader& root, ServerConfig& config) {
  std::vector<RoutePattern> routes;
  std::map<std::string, int> names;
  for (const auto& c : config.components) names.emplace(c.name, c.line);
  for (const bool js : {false, true}) {
    const std::string key = js ? "webhook_js" : "webhook_wasm";
    const toml::node* node = root.Get(key);
    if (!node) continue;
    const auto* array = node->as_array();
    if (!array) {
      root.Error(TableReader::Line(*node), key,
                 "expected an array of tables: write [[" + key + "]]");
      continue;
    }
    for (size_t i = 0; i < array->size(); ++i) {
      const std::string prefix = key + "[" + std::to_string(i) + "]";
      const auto* table = array->get(i)->as_table();
      if (!table) {
        root.Error(TableReader::Line(*array->get(i)), prefix, "expected a table");
        continue;
      }
      WebhookConfig webhook;
      webhook.js = js;
      RoutePattern route;
      if (!ReadWebhook(*table, key, i, root, config, webhook, route)) continue;
      // Webhooks and components share one namespace of names (the
      // component list and the metrics name both).
      if (auto [it, inserted] = names.emplace(webhook.name, webhook.line); !inserted) {
        root.Error(webhook.line, prefix + ".name",
                   "webhook `" + webhook.name + "`: the name is taken (by the table at line " +
                       std::to_string(it->second) + ")");
        continue;
      }
      routes.push_back(route);
      config.webhooks.push_back(std::move(webhook));
    }
  }
  for (auto [i, j] : DuplicateRoutes(routes)) {
    const WebhookConfig& a = config.webhooks[i];
    const WebhookConfig& b = config.webhooks[j];
    root.Error(b.line, std::string(b.js ? "webhook_js" : "webhook_wasm") + ".route",
               "webhook `" + b.name + "`: route `" + b.route + "` matches the same requests as `" +
                   a.route + "` of webhook `" + a.name + "` (line " + std::to_string(a.line) + ")");
  }
}

}  // namespace stele::server::config_internal
