// Loading of components, one function per kind.
#include "server/components.h"

#include <openssl/sha.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/json_codec.h"
#include "server/timed_db_connection.h"
#if STELE_SERVER_HAVE_EXEC
#include "runtime/exec/exec_activity_worker.h"
#endif
#if STELE_SERVER_HAVE_JS
#include "runtime/js/js_activity_worker.h"
#include "runtime/js/js_component.h"
#include "runtime/js/js_workflow_worker.h"
#endif
#if STELE_SERVER_HAVE_WASM
#include "runtime/wasm_host/wasm_activity_worker.h"
#include "runtime/wasm_host/wasm_component.h"
#include "runtime/wasm_host/wasm_workflow_worker.h"
#endif

namespace stele::server {

namespace {

namespace fs = std::filesystem;
using runtime::workflow::FunctionKind;

ConfigError ErrorAt(const ComponentConfig& c, const std::string& file, std::string key,
                    std::string message) {
  return ConfigError{file, c.line, std::string(ComponentKindName(c.kind)) + "." + key,
                     "component `" + c.name + "`: " + std::move(message)};
}

// The declared functions in canonical JSON: part of a digest, so changing a
// declaration makes a new component version.
std::string FunctionsText(const std::vector<core::FunctionSignature>& functions) {
  core::Json array = core::Json::array();
  for (const auto& f : functions) array.push_back(core::FunctionSignatureToJson(f));
  return core::SerializeJson(array);
}

Result<LoadedComponent, ConfigError> LoadStub(const ComponentConfig& c, const std::string& file) {
  (void)file;
  LoadedComponent out;
  out.config = c;
  out.kind = FunctionKind::kActivityStub;
  out.functions = c.functions;
  out.component_id = core::ComponentId{core::ComponentType::kActivityStub, c.name,
                                       Sha256Digest("stub\n" + FunctionsText(c.functions))};
  return out;
}

Result<LoadedComponent, ConfigError> LoadExec(const ComponentConfig& c, const std::string& file) {
#if STELE_SERVER_HAVE_EXEC
  std::error_code ec;
  const std::string& program = c.command.at(0);
  // The program's bytes are part of the digest when it is a file we can
  // read (a bare name is looked up in PATH at run time).
  std::string program_bytes;
  if (program.find('/') != std::string::npos) {
    if (!fs::is_regular_file(program, ec)) {
      return Unexpected(ErrorAt(c, file, "command", "no such program `" + program + "`"));
    }
    std::ifstream in(program, std::ios::binary);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    program_bytes = buffer.str();
  }
  if (c.working_dir && !fs::is_directory(*c.working_dir, ec)) {
    return Unexpected(ErrorAt(c, file, "working_dir", "no such folder `" + *c.working_dir + "`"));
  }
  runtime::exec::ExecActivityConfig exec;
  exec.functions = c.functions;
  exec.argv = c.command;
  exec.working_dir = c.working_dir.value_or(std::string());
  exec.env_allow_list = c.env_allow;
  exec.env = c.env;
  exec.max_stdout_bytes = c.max_stdout_bytes;
  exec.max_stderr_bytes = c.max_stderr_bytes;
  exec.retry_on_err = c.retry_on_err;
  exec.non_retryable_exit_codes = c.non_retryable_exit_codes;
  // Validate now, so `verify` reports a bad config; the server creates its
  // own worker at start (the env snapshot is taken then).
  auto probe = runtime::exec::ExecActivityWorker::Create(exec);
  if (!probe) return Unexpected(ErrorAt(c, file, "command", probe.error()));
  std::string digest_input = "exec\n";
  for (const auto& arg : c.command) digest_input += arg + '\0';
  digest_input += FunctionsText(c.functions) + '\0' + program_bytes;
  LoadedComponent out;
  out.config = c;
  out.kind = FunctionKind::kActivity;
  out.functions = c.functions;
  out.component_id =
      core::ComponentId{core::ComponentType::kActivityExec, c.name, Sha256Digest(digest_input)};
  out.make_worker =
      [exec](const WorkerEnv& env) -> Result<std::shared_ptr<executor::Worker>, std::string> {
    auto worker = runtime::exec::ExecActivityWorker::Create(exec, env.clock);
    if (!worker) return Unexpected(worker.error());
    return std::shared_ptr<executor::Worker>(std::move(*worker));
  };
  return out;
#else
  return Unexpected(ErrorAt(c, file, "command",
                            "[[activity_exec]] is not supported yet: this build has no exec "
                            "activity runtime (runtime/exec)"));
#endif
}

// One function a guest declares itself (wasm: its "stele:functions"
// section; JS: its `functions` export).
struct GuestDeclaration {
  core::FunctionFqn ffqn;
  std::vector<std::pair<std::string, std::string>> params;  // name, type text
  std::string return_type;                                  // "" = not declared
};

// The guest's own declarations as signatures; a declaration in the config
// for the same ffqn wins (it may add types the guest left out).
Result<std::vector<core::FunctionSignature>, std::string> Signatures(
    const std::vector<GuestDeclaration>& declared_functions, const ComponentConfig& c) {
  std::vector<core::FunctionSignature> out;
  for (const auto& declared : declared_functions) {
    auto configured = std::find_if(c.functions.begin(), c.functions.end(),
                                   [&](const auto& f) { return f.ffqn == declared.ffqn; });
    if (configured != c.functions.end()) {
      out.push_back(*configured);
      continue;
    }
    core::FunctionSignature sig{declared.ffqn, {}, std::nullopt};
    for (const auto& [name, type] : declared.params) {
      auto desc = core::TypeDesc::Parse(type);
      if (!desc) {
        return Unexpected("function `" + declared.ffqn.ToString() + "` declares parameter `" +
                          name + "` of invalid type `" + type + "`: " + desc.error());
      }
      sig.params.push_back(core::ParamSpec{name, *desc});
    }
    if (!declared.return_type.empty()) {
      auto desc = core::TypeDesc::Parse(declared.return_type);
      if (!desc) {
        return Unexpected("function `" + declared.ffqn.ToString() +
                          "` declares an invalid return type `" + declared.return_type +
                          "`: " + desc.error());
      }
      sig.return_type = *desc;
    }
    out.push_back(std::move(sig));
  }
  for (const auto& f : c.functions) {
    bool exported = std::any_of(declared_functions.begin(), declared_functions.end(),
                                [&](const auto& d) { return d.ffqn == f.ffqn; });
    if (!exported) {
      return Unexpected("`functions` declares `" + f.ffqn.ToString() +
                        "`, which the component does not export");
    }
  }
  return out;
}

// A workflow worker's database connection: metered when the service
// meters workflow writes.
Result<std::shared_ptr<storage::DbConnection>, std::string> WorkflowConnection(
    const WorkerEnv& env) {
  auto conn = env.pool->Connection();
  if (!conn) return Unexpected("cannot connect to the database: " + conn.error().ToString());
  std::shared_ptr<storage::DbConnection> db(std::move(*conn));
  if (env.workflow_writes) db = std::make_shared<TimedDbConnection>(db, env.workflow_writes);
  return db;
}

runtime::workflow::WorkflowRunOptions RunOptions(const WorkerEnv& env, const ComponentConfig& c) {
  runtime::workflow::WorkflowRunOptions options = env.workflow_run;
  if (c.blocking_strategy_await) {
    options.blocking_strategy = *c.blocking_strategy_await
                                    ? runtime::workflow::BlockingStrategy::kAwait
                                    : runtime::workflow::BlockingStrategy::kInterrupt;
  }
  return options;
}

#if STELE_SERVER_HAVE_WASM
std::shared_ptr<wasm::WasmEngine> Engine() { return SharedWasmEngine(); }

std::vector<GuestDeclaration> Declarations(const runtime::wasm_host::WasmComponent& component) {
  std::vector<GuestDeclaration> out;
  for (const auto& d : component.functions) out.push_back({d.ffqn, d.param_list, d.return_type});
  return out;
}
#endif

Result<LoadedComponent, ConfigError> LoadWasm(const ComponentConfig& c, const std::string& file) {
  std::error_code ec;
  if (!fs::is_regular_file(c.location, ec)) {
    return Unexpected(ErrorAt(c, file, "location", "no such file `" + c.location + "`"));
  }
#if STELE_SERVER_HAVE_WASM
  namespace wh = runtime::wasm_host;
  bool workflow = c.kind == ComponentKind::kWorkflowWasm;
  auto component = wh::LoadWasmComponentFile(
      Engine(), c.location, c.name, workflow ? wh::GuestKind::kWorkflow : wh::GuestKind::kActivity);
  if (!component) return Unexpected(ErrorAt(c, file, "location", component.error()));
  auto signatures = Signatures(Declarations(**component), c);
  if (!signatures) return Unexpected(ErrorAt(c, file, "functions", signatures.error()));
  LoadedComponent out;
  out.config = c;
  out.kind = workflow ? FunctionKind::kWorkflow : FunctionKind::kActivity;
  out.functions = std::move(*signatures);
  out.component_id = (*component)->component_id;
  std::shared_ptr<const wh::WasmComponent> loaded = *component;
  if (workflow) {
    out.make_worker =
        [loaded,
         c](const WorkerEnv& env) -> Result<std::shared_ptr<executor::Worker>, std::string> {
      wh::WasmWorkflowWorkerDeps deps;
      STELE_ASSIGN_OR_RETURN(deps.db, WorkflowConnection(env));
      deps.clock = env.clock;
      deps.functions = env.registry;
      deps.dispatch = env.dispatch;
      deps.handoff = env.handoff;
      deps.cancel_registry = env.cancels;
      deps.run_options = RunOptions(env, c);
      deps.lock_expiry_setting = env.lock_expiry_setting;
      return std::shared_ptr<executor::Worker>(
          std::make_shared<wh::WasmWorkflowWorker>(loaded, std::move(deps)));
    };
  } else {
    wh::WasmActivityOptions options;
    options.retry_on_err = c.retry_on_err;
    options.wasi.args = c.args;
    options.wasi.env.assign(c.env.begin(), c.env.end());
    options.http.allowed_hosts = c.allowed_hosts;
    out.make_worker =
        [loaded,
         options](const WorkerEnv&) -> Result<std::shared_ptr<executor::Worker>, std::string> {
      return std::shared_ptr<executor::Worker>(
          std::make_shared<wh::WasmActivityWorker>(loaded, options));
    };
  }
  return out;
#else
  return Unexpected(ErrorAt(c, file, "location",
                            std::string("[[") + std::string(ComponentKindName(c.kind)) +
                                "]] is not supported yet: this build has no WebAssembly "
                                "runtime (runtime/wasm_host)"));
#endif
}

Result<LoadedComponent, ConfigError> LoadJs(const ComponentConfig& c, const std::string& file) {
  std::error_code ec;
  if (!fs::is_regular_file(c.location, ec)) {
    return Unexpected(ErrorAt(c, file, "location", "no such file `" + c.location + "`"));
  }
#if STELE_SERVER_HAVE_JS
  namespace js = runtime::js;
  const bool workflow = c.kind == ComponentKind::kWorkflowJs;
  js::JsLimits limits;
  if (c.max_heap_mib) limits.max_heap_bytes = size_t{*c.max_heap_mib} << 20;
  auto component =
      js::LoadJsComponentFile(js::CreateV8JsEngine(), c.location, c.name,
                              workflow ? js::JsFlavor::kWorkflow : js::JsFlavor::kActivity, limits);
  if (!component) return Unexpected(ErrorAt(c, file, "location", component.error()));
  std::vector<GuestDeclaration> declared;
  for (const auto& f : (*component)->functions) {
    declared.push_back({f.ffqn, f.params, f.returns.value_or("")});
  }
  auto signatures = Signatures(declared, c);
  if (!signatures) return Unexpected(ErrorAt(c, file, "functions", signatures.error()));
  LoadedComponent out;
  out.config = c;
  out.kind = workflow ? FunctionKind::kWorkflow : FunctionKind::kActivity;
  out.functions = std::move(*signatures);
  out.component_id = (*component)->component_id;
  std::shared_ptr<const js::JsComponent> loaded = *component;
  if (workflow) {
    out.make_worker =
        [loaded,
         c](const WorkerEnv& env) -> Result<std::shared_ptr<executor::Worker>, std::string> {
      js::JsWorkflowWorkerDeps deps;
      STELE_ASSIGN_OR_RETURN(deps.db, WorkflowConnection(env));
      deps.clock = env.clock;
      deps.functions = env.registry;
      deps.dispatch = env.dispatch;
      deps.handoff = env.handoff;
      deps.cancel_registry = env.cancels;
      deps.run_options = RunOptions(env, c);
      deps.lock_expiry_setting = env.lock_expiry_setting;
      if (c.guest_slice) deps.guest_slice = *c.guest_slice;
      return std::shared_ptr<executor::Worker>(
          std::make_shared<js::JsWorkflowWorker>(loaded, std::move(deps)));
    };
  } else {
    js::JsActivityOptions options;
    options.retry_on_err = c.retry_on_err;
    options.env.assign(c.env.begin(), c.env.end());
    options.http.allowed_hosts = c.allowed_hosts;
    out.make_worker =
        [loaded,
         options](const WorkerEnv&) -> Result<std::shared_ptr<executor::Worker>, std::string> {
      return std::shared_ptr<executor::Worker>(
          std::make_shared<js::JsActivityWorker>(loaded, options));
    };
  }
  return out;
#else
  return Unexpected(ErrorAt(c, file, "location",
                            std::string("[[") + std::string(ComponentKindName(c.kind)) +
                                "]] is not supported yet: this build has no JavaScript "
                                "runtime (runtime/js)"));
#endif
}

}  // namespace

#if STELE_SERVER_HAVE_WASM
std::shared_ptr<wasm::WasmEngine> SharedWasmEngine() {
  static std::shared_ptr<wasm::WasmEngine> engine = wasm::CreateV8Engine();
  return engine;
}
#endif

core::InputContentDigest Sha256Digest(std::string_view bytes) {
  core::InputContentDigest::Bytes digest{};
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest.data());
  return core::InputContentDigest(digest);
}

std::string Sha256Hex(std::string_view bytes) {
  auto digest = Sha256Digest(bytes);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : digest.bytes()) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

Result<std::vector<LoadedComponent>, ConfigErrors> LoadComponents(const ServerConfig& config,
                                                                  const std::string& file) {
  std::vector<LoadedComponent> out;
  ConfigErrors errors;
  for (const auto& c : config.components) {
    Result<LoadedComponent, ConfigError> loaded = Unexpected(ConfigError{});
    switch (c.kind) {
      case ComponentKind::kActivityStub:
        loaded = LoadStub(c, file);
        break;
      case ComponentKind::kActivityExec:
        loaded = LoadExec(c, file);
        break;
      case ComponentKind::kWorkflowWasm:
      case ComponentKind::kActivityWasm:
        loaded = LoadWasm(c, file);
        break;
      case ComponentKind::kWorkflowJs:
      case ComponentKind::kActivityJs:
        loaded = LoadJs(c, file);
        break;
    }
    if (loaded) {
      out.push_back(std::move(*loaded));
    } else {
      errors.push_back(std::move(loaded.error()));
    }
  }
  if (!errors.empty()) {
    // In file order, as the config's own errors (components are loaded by kind).
    std::stable_sort(errors.begin(), errors.end(),
                     [](const ConfigError& a, const ConfigError& b) { return a.line < b.line; });
    return Unexpected(std::move(errors));
  }
  return out;
}

}  // namespace stele::server
