#include "runtime/wasm_host/wasm_component.h"

#include <fstream>
#include <iterator>
#include <memory>
#include <utility>

#include "runtime/wasm_host/http_host.h"
#include "runtime/wasm_host/wasi_host.h"
#include "runtime/wasm_host/workflow_host.h"

namespace stele::runtime::wasm_host {

std::vector<core::FunctionFqn> WasmComponent::Ffqns() const {
  std::vector<core::FunctionFqn> out;
  for (const auto& fn : functions) out.push_back(fn.ffqn);
  return out;
}

const DeclaredFunction* WasmComponent::Find(const core::FunctionFqn& ffqn) const {
  for (const auto& fn : functions) {
    if (fn.ffqn == ffqn) return &fn;
  }
  return nullptr;
}

void WasmComponent::RegisterIn(workflow::MapFunctionRegistry& registry) const {
  for (const auto& fn : functions) {
    registry.Add(fn.ffqn,
                 workflow::FunctionInfo{component_id, fn.kind == GuestKind::kWorkflow
                                                          ? workflow::FunctionKind::kWorkflow
                                                          : workflow::FunctionKind::kActivity});
  }
}

namespace {

wasm::ModuleLimits ActivityModuleLimits(uint32_t max_memory_pages) {
  wasm::ImportTable table;
  AddWasiImports(table, std::make_shared<WasiState>());
  AddHttpImports(table, std::make_shared<HttpState>());
  return table.AsLimits(max_memory_pages);
}

std::string_view KindName(GuestKind kind) {
  return kind == GuestKind::kWorkflow ? "workflow" : "activity";
}

}  // namespace

Result<std::shared_ptr<const WasmComponent>, std::string> LoadWasmComponent(
    std::shared_ptr<wasm::WasmEngine> engine, std::span<const uint8_t> bytes, std::string name,
    GuestKind kind, const WasmComponentLimits& limits) {
  const std::string what = std::string(KindName(kind)) + " component `" + name + "`";
  if (!core::ComponentId::IsValidName(name)) {
    return Unexpected(what + ": invalid name (use ASCII letters, digits, '_' and '-')");
  }
  if (engine == nullptr) return Unexpected(what + ": no wasm engine");
  wasm::ModuleLimits module_limits = kind == GuestKind::kWorkflow
                                         ? WorkflowModuleLimits(limits.max_memory_pages)
                                         : ActivityModuleLimits(limits.max_memory_pages);
  module_limits.max_module_bytes = limits.max_module_bytes;
  auto module = engine->Compile(bytes, module_limits);
  if (!module) {
    std::string message = what + ": " + module.error().ToString();
    if (kind == GuestKind::kWorkflow &&
        module.error().kind == wasm::WasmError::Kind::kDisallowedImport) {
      message += " (workflows may import only the \"stele\" host functions; no WASI)";
    }
    return Unexpected(std::move(message));
  }
  const wasm::ExportedFunction* alloc = (*module)->FindExport(kAllocExport);
  if (alloc == nullptr ||
      !(alloc->type == wasm::FuncType{{wasm::ValType::kI32}, {wasm::ValType::kI32}})) {
    return Unexpected(what +
                      ": the module must export `stele_alloc: (i32) -> (i32)` "
                      "(include the Stele guest SDK)");
  }
  if (!(*module)->memory_initial_pages()) {
    return Unexpected(what + ": the module must export its linear memory as `memory`");
  }
  auto declared =
      ParseDeclarations((*module)->CustomSections(kFunctionsSection), (*module)->exports());
  if (!declared) return Unexpected(what + ": " + declared.error());
  if (declared->empty()) {
    return Unexpected(what +
                      ": no functions declared (no \"stele:functions\" custom section; "
                      "use STELE_WORKFLOW / STELE_ACTIVITY)");
  }
  for (const auto& fn : *declared) {
    if (fn.kind != kind) {
      return Unexpected(what + ": " + fn.ffqn.ToString() + " is declared as a " +
                        std::string(KindName(fn.kind)));
    }
  }
  auto digest = core::InputContentDigest::Parse((*module)->digest());
  if (!digest)
    return Unexpected(what + ": engine digest `" + (*module)->digest() + "` is malformed");

  auto component = std::make_shared<WasmComponent>();
  component->kind = kind;
  component->component_id =
      core::ComponentId{kind == GuestKind::kWorkflow ? core::ComponentType::kWorkflow
                                                     : core::ComponentType::kActivityWasm,
                        std::move(name), *digest};
  component->engine = std::move(engine);
  component->module = std::move(*module);
  component->functions = std::move(*declared);
  return std::shared_ptr<const WasmComponent>(std::move(component));
}

Result<std::vector<uint8_t>, std::string> ReadFileBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Unexpected("cannot open `" + path.string() + "`");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) return Unexpected("cannot read `" + path.string() + "`");
  return bytes;
}

Result<std::shared_ptr<const WasmComponent>, std::string> LoadWasmComponentFile(
    std::shared_ptr<wasm::WasmEngine> engine, const std::filesystem::path& path, std::string name,
    GuestKind kind, const WasmComponentLimits& limits) {
  STELE_ASSIGN_OR_RETURN(auto bytes, ReadFileBytes(path));
  if (bytes.size() > limits.max_module_bytes) {
    return Unexpected("`" + path.string() + "` is " + std::to_string(bytes.size()) +
                      " bytes, over the limit of " + std::to_string(limits.max_module_bytes));
  }
  return LoadWasmComponent(std::move(engine), bytes, std::move(name), kind, limits);
}

}  // namespace stele::runtime::wasm_host
