// Loading a wasm component (docs/guest_abi.md): compile the module under the
// limits of its kind, read its "stele:functions" declarations and derive its
// ComponentId (type, name, sha256 of the file). The server calls
// LoadWasmComponentFile once per configured component and then builds the
// worker with MakeWasmWorkflowWorker / MakeWasmActivityWorker
// (wasm_workflow_worker.h, wasm_activity_worker.h):
//
//   auto engine = wasm::CreateV8Engine();
//   auto wf = LoadWasmComponentFile(engine, "hello.wasm", "hello", GuestKind::kWorkflow);
//   wf.value()->RegisterIn(registry);                 // before any run starts
//   auto worker = std::make_shared<WasmWorkflowWorker>(*wf, WasmWorkflowWorkerDeps{
//       shared_db_connection, &clock, &registry, run_options});
//   // ExecTask(worker, pool->DbExecConn(), clock, {.component_id = (*wf)->component_id,
//   //          .retry_config = {std::nullopt, backoff}, ...})
//   auto act = LoadWasmComponentFile(engine, "greet.wasm", "greet", GuestKind::kActivity);
//   auto activity_worker = std::make_shared<WasmActivityWorker>(*act, WasmActivityOptions{});
//
// Threading: a WasmComponent is immutable and shared by the workers and
// threads that run it. Ownership: shared_ptr; it keeps the engine and the
// compiled module alive.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "core/component_id.h"
#include "core/function_fqn.h"
#include "runtime/wasm/wasm_engine.h"
#include "runtime/wasm_host/guest_abi.h"
#include "runtime/workflow/function_registry.h"

namespace stele::runtime::wasm_host {

struct WasmComponentLimits {
  // Linear memory cap, 64 KiB pages (memory.grow beyond it returns -1,
  // which the SDK's allocator turns into a trap).
  uint32_t max_memory_pages = 1024;  // 64 MiB
  size_t max_module_bytes = 64u << 20;
};

struct WasmComponent {
  GuestKind kind = GuestKind::kWorkflow;
  core::ComponentId component_id;  // kWorkflow or kActivityWasm, digest of the bytes
  std::shared_ptr<wasm::WasmEngine> engine;
  std::shared_ptr<const wasm::WasmModule> module;
  std::vector<DeclaredFunction> functions;

  std::vector<core::FunctionFqn> Ffqns() const;
  const DeclaredFunction* Find(const core::FunctionFqn& ffqn) const;
  // Adds every declared function to the registry the workflows consult
  // (kWorkflow or kActivity, with this component's id).
  void RegisterIn(workflow::MapFunctionRegistry& registry) const;
};

// Compiles `bytes` as a component named `name` ([A-Za-z0-9_-]+). Errors are
// one readable line naming the problem: a disallowed import (a workflow
// importing WASI), a missing stele_alloc or memory export, a malformed or
// empty "stele:functions" section, a declaration of the other kind, an
// export of the wrong type, the memory cap.
Result<std::shared_ptr<const WasmComponent>, std::string> LoadWasmComponent(
    std::shared_ptr<wasm::WasmEngine> engine, std::span<const uint8_t> bytes, std::string name,
    GuestKind kind, const WasmComponentLimits& limits = {});

// Reads the file and calls LoadWasmComponent.
Result<std::shared_ptr<const WasmComponent>, std::string> LoadWasmComponentFile(
    std::shared_ptr<wasm::WasmEngine> engine, const std::filesystem::path& path, std::string name,
    GuestKind kind, const WasmComponentLimits& limits = {});

// Reads a whole file (used by the loader and tests).
Result<std::vector<uint8_t>, std::string> ReadFileBytes(const std::filesystem::path& path);

}  // namespace stele::runtime::wasm_host
