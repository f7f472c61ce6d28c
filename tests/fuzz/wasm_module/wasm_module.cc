// Fuzzes the engine-neutral checks a wasm component goes through before V8
// sees it (runtime/wasm module_check.h, wasm_binary.h) and the parser of its
// "stele:functions" declarations (runtime/wasm_host guest_abi.h). The input
// is the module's bytes. CheckModule must accept or reject without crashing
// or allocating unboundedly; an accepted module's engine bytes (memory
// section rewritten to the cap) must parse again with the same imports and
// exports, and its custom sections go through ParseDeclarations as the
// component loader does. V8's own validation and compilation are not fuzzed
// here (the engine is upstream's to fuzz; the loader hands it only bytes
// that passed these checks).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "runtime/wasm/module_check.h"
#include "runtime/wasm/wasm_binary.h"
#include "runtime/wasm_host/guest_abi.h"

namespace {

using namespace stele;  // NOLINT(google-build-using-namespace): fuzz target

// The workflow host's allow-list (workflow_host.cc WorkflowHost::Imports)
// plus a WASI function of the activity host, and the component loader's
// default memory cap (wasm_component.h).
wasm::ModuleLimits Limits() {
  constexpr auto I = wasm::ValType::kI32;
  constexpr auto L = wasm::ValType::kI64;
  wasm::ModuleLimits limits;
  limits.max_memory_pages = 1024;
  limits.max_module_bytes = 1u << 20;
  const std::vector<std::pair<const char*, wasm::FuncType>> stele = {
      {"call", {{I, I, I, I, I}, {I}}},
      {"join_set_create", {{I}, {I}}},
      {"join_set_create_named", {{I, I, I}, {I}}},
      {"submit", {{I, I, I, I, I, I, I}, {I}}},
      {"submit_delay", {{I, I, L, I}, {I}}},
      {"join_next", {{I, I, I, I, I, I}, {I}}},
      {"join_set_close", {{I, I}, {I}}},
      {"get", {{I, I, I, I, I}, {I}}},
      {"sleep", {{L}, {I}}},
      {"schedule", {{I, I, I, I, L, I}, {I}}},
      {"stub", {{I, I, I, I, I, I, I}, {I}}},
      {"random_u64", {{L, L}, {L}}},
      {"random_u64_inclusive", {{L, L}, {L}}},
      {"random_string", {{I, I, I}, {I}}},
      {"log", {{I, I, I}, {}}},
  };
  for (const auto& [name, type] : stele) limits.Allow("stele", name, type);
  limits.Allow("wasi_snapshot_preview1", "fd_write", {{I, I, I, I}, {I}});
  return limits;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const wasm::ModuleLimits kLimits = Limits();
  const std::span<const uint8_t> bytes(data, size);
  (void)wasm::ParseModule(bytes);
  auto checked = wasm::CheckModule(bytes, kLimits);
  if (!checked) return 0;
  FUZZ_CHECK(checked->digest == wasm::Sha256Digest(bytes));
  if (checked->memory_max_pages) FUZZ_CHECK(*checked->memory_max_pages <= kLimits.max_memory_pages);

  // What the engine gets must still be a module with the same interface.
  auto again = wasm::CheckModule(checked->engine_bytes, kLimits);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->imports.size() == checked->imports.size());
  FUZZ_CHECK(again->exports.size() == checked->exports.size());
  FUZZ_CHECK(again->memory_initial_pages == checked->memory_initial_pages);

  std::vector<std::string_view> payloads;
  for (const auto& [name, payload] : checked->custom_sections) {
    if (name == "stele:functions") payloads.push_back(payload);
  }
  auto declared = runtime::wasm_host::ParseDeclarations(payloads, checked->exports);
  if (declared) {
    for (const auto& fn : *declared) FUZZ_CHECK(!fn.export_name.empty());
  }
  return 0;
}
