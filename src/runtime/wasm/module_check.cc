#include "runtime/wasm/module_check.h"

#include <openssl/sha.h>

#include <algorithm>

#include "runtime/wasm/wasm_binary.h"

namespace stele::wasm {
namespace {

constexpr uint64_t kWasm32MaxPages = 65536;

WasmError Error(WasmError::Kind kind, std::string message) {
  return WasmError::Make(kind, std::move(message));
}

std::string Qualified(const ParsedImport& imp) { return imp.module + "." + imp.name; }

// Exports the hidden state of the module (mutable globals, tables) under
// reserved names, or says why an instance cannot be reset.
Result<void, WasmError> AddResetExports(const ParsedModule& parsed, CheckedModule& out) {
  if (parsed.has_droppable_segments) {
    out.reset_blocker = "the module has passive segments or a data-count section";
    return {};
  }
  if (!parsed.export_section) {
    out.reset_blocker = "the module has no export section";
    return {};
  }
  for (const ParsedExport& e : parsed.exports) {
    if (e.name.rfind(kResetExportPrefix, 0) == 0) {
      out.reset_blocker = "the module exports " + e.name;
      return {};
    }
  }
  std::vector<ParsedExport> extra;
  for (uint32_t i = 0; i < parsed.globals.size(); ++i) {
    if (!parsed.globals[i].is_mutable) continue;
    const uint8_t type = parsed.globals[i].type;
    if (type != 0x7f && type != 0x7e && type != 0x7d && type != 0x7c) {
      out.reset_blocker = "mutable global " + std::to_string(i) + " is not of a number type";
      return {};
    }
    extra.push_back(
        {std::string(kResetExportPrefix) + "global." + std::to_string(i), ExternKind::kGlobal, i});
    out.reset_globals.push_back(extra.back().name);
  }
  for (uint32_t i = 0; i < parsed.tables; ++i) {
    extra.push_back(
        {std::string(kResetExportPrefix) + "table." + std::to_string(i), ExternKind::kTable, i});
    out.reset_tables.push_back(extra.back().name);
  }
  if (extra.empty()) return {};
  // Re-parsed: the memory section may have been rewritten already.
  STELE_ASSIGN_OR_RETURN(ParsedModule engine_parsed, ParseModule(out.engine_bytes));
  out.engine_bytes = AppendExports(out.engine_bytes, engine_parsed, extra);
  return {};
}

}  // namespace

std::string Sha256Digest(std::span<const uint8_t> bytes) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(bytes.data(), bytes.size(), md);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned char c : md) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

Result<CheckedModule, WasmError> CheckModule(std::span<const uint8_t> bytes,
                                             const ModuleLimits& limits) {
  using Kind = WasmError::Kind;
  if (bytes.size() > limits.max_module_bytes) {
    return Unexpected(Error(Kind::kInvalidModule, "module of " + std::to_string(bytes.size()) +
                                                      " bytes exceeds the limit of " +
                                                      std::to_string(limits.max_module_bytes)));
  }
  STELE_ASSIGN_OR_RETURN(ParsedModule parsed, ParseModule(bytes));

  CheckedModule out;
  out.digest = Sha256Digest(bytes);

  for (const ParsedImport& imp : parsed.imports) {
    if (imp.kind != ExternKind::kFunction) {
      return Unexpected(Error(
          Kind::kDisallowedImport,
          "import " + Qualified(imp) + " is not allowed: only function imports are supported"));
    }
    auto allowed = std::find_if(
        limits.allowed_imports.begin(), limits.allowed_imports.end(),
        [&](const ImportSignature& a) { return a.module == imp.module && a.name == imp.name; });
    if (allowed == limits.allowed_imports.end()) {
      return Unexpected(
          Error(Kind::kDisallowedImport, "import " + Qualified(imp) + " is not allowed"));
    }
    const std::optional<FuncType>& type = parsed.types[imp.type_index].type;
    if (!type || *type != allowed->type) {
      return Unexpected(Error(Kind::kDisallowedImport,
                              "import " + Qualified(imp) + " has signature " +
                                  (type ? type->ToString() : std::string("(non-number types)")) +
                                  ", expected " + allowed->type.ToString()));
    }
    out.imports.push_back(ImportSignature{imp.module, imp.name, *type});
  }

  out.engine_bytes.assign(bytes.begin(), bytes.end());
  if (parsed.memories.size() > 1) {
    return Unexpected(Error(Kind::kDisallowedFeature, "more than one memory is not allowed"));
  }
  if (parsed.memories.size() == 1) {
    Limits mem = parsed.memories[0];
    if (mem.shared) {
      return Unexpected(Error(Kind::kDisallowedFeature, "shared memory (threads) is not allowed"));
    }
    if (mem.is64) return Unexpected(Error(Kind::kDisallowedFeature, "memory64 is not allowed"));
    const uint64_t cap = std::min<uint64_t>(limits.max_memory_pages, kWasm32MaxPages);
    if (mem.initial > cap) {
      return Unexpected(
          Error(Kind::kMemoryLimit, "initial memory of " + std::to_string(mem.initial) +
                                        " pages exceeds the limit of " + std::to_string(cap)));
    }
    if (mem.max && *mem.max < mem.initial) {
      return Unexpected(Error(Kind::kInvalidModule, "memory maximum below its initial size"));
    }
    if (!mem.max || *mem.max > cap) {
      mem.max = cap;
      out.engine_bytes = RewriteMemorySection(bytes, parsed, mem);
    }
    out.memory_initial_pages = static_cast<uint32_t>(mem.initial);
    out.memory_max_pages = static_cast<uint32_t>(*mem.max);
  }

  for (const ParsedExport& e : parsed.exports) {
    if (e.kind != ExternKind::kFunction) continue;
    std::optional<FuncType> type = parsed.FunctionType(e.index);
    if (e.index >= parsed.function_types.size()) {
      return Unexpected(Error(Kind::kInvalidModule, "export " + e.name + " names no function"));
    }
    // Exports with reference or vector types cannot be called from the host;
    // they are left out rather than rejected (a toolchain may add some).
    if (type) out.exports.push_back(ExportedFunction{e.name, *type});
  }
  STELE_TRY(AddResetExports(parsed, out));
  out.custom_sections = std::move(parsed.custom_sections);
  out.function_names = std::move(parsed.function_names);
  return out;
}

}  // namespace stele::wasm
