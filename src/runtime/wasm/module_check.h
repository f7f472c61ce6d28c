// The engine-neutral checks of a module against ModuleLimits, run on the bytes
// before any engine sees them: size, imports (allowed names and exact
// signatures, functions only), memory (no shared memory, no memory64, at most
// one memory, initial size within the cap, maximum lowered to the cap) and
// exports. Produces the bytes to hand to the engine (the memory section
// rewritten when the cap applies; every mutable global and every table
// exported under a reserved name, so that an instance can be reset:
// WasmInstance::Checkpoint) and the module's description.
//
// Threading: pure function. Ownership: CheckedModule owns copies.

#ifndef STELE_RUNTIME_WASM_MODULE_CHECK_H_
#define STELE_RUNTIME_WASM_MODULE_CHECK_H_

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "runtime/wasm/wasm_engine.h"

namespace stele::wasm {

struct CheckedModule {
  std::vector<uint8_t> engine_bytes;  // what the engine compiles
  std::string digest;                 // of the original bytes
  std::vector<ExportedFunction> exports;
  std::vector<ImportSignature> imports;
  std::vector<std::pair<std::string, std::string>> custom_sections;
  std::map<uint32_t, std::string> function_names;
  std::optional<uint32_t> memory_initial_pages;
  std::optional<uint32_t> memory_max_pages;
  std::string reset_blocker;
  std::vector<std::string> reset_globals;
  std::vector<std::string> reset_tables;
};

// The prefix of the exports CheckModule adds ("stele:reset.global.3").
inline constexpr std::string_view kResetExportPrefix = "stele:reset.";

Result<CheckedModule, WasmError> CheckModule(std::span<const uint8_t> bytes,
                                             const ModuleLimits& limits);

// "sha256:<64 lowercase hex>".
std::string Sha256Digest(std::span<const uint8_t> bytes);

}  // namespace stele::wasm

#endif  // STELE_RUNTIME_WASM_MODULE_CHECK_H_
