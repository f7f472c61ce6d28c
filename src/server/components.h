// Components: turns the [[workflow_wasm]], [[activity_wasm]],
// [[activity_exec]] and [[activity_stub]] sections of the config into
// loaded components — a core::ComponentId with its sha256 digest, the
// declared functions, the registry kind and (for everything but stubs) a
// factory of the executor::Worker that runs them. One small function per
// kind (components.cc); a kind whose runtime module is not built reports a
// clear "not supported yet" error naming the section and line.
//
// Threading: LoadComponents is a pure function of the config and the files
// it names. Ownership: LoadedComponent is a value; its worker factory is
// called once by the execution service when it starts the component's
// executor.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "core/component_id.h"
#include "core/function_type.h"
#include "runtime/workflow/function_registry.h"
#include "server/config.h"
#include "service/component.h"

namespace stele::wasm {
class WasmEngine;
}  // namespace stele::wasm

namespace stele::server {

using service::WorkerEnv;
using service::WorkerFactory;

struct LoadedComponent {
  ComponentConfig config;
  core::ComponentId component_id;
  runtime::workflow::FunctionKind kind = runtime::workflow::FunctionKind::kActivity;
  std::vector<core::FunctionSignature> functions;
  WorkerFactory make_worker;  // empty for stubs (no executor)
};

// Loads every component of `config`; collects all errors.
Result<std::vector<LoadedComponent>, ConfigErrors> LoadComponents(const ServerConfig& config,
                                                                  const std::string& file);

// The process's one wasm engine (it keeps the compiled modules), shared by
// components and webhooks. Only in builds with the wasm runtime.
std::shared_ptr<wasm::WasmEngine> SharedWasmEngine();

// sha256 of `bytes` as a digest.
core::InputContentDigest Sha256Digest(std::string_view bytes);
// Lowercase hex of the SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);

}  // namespace stele::server
