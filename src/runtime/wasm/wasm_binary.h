// A small reader of the WebAssembly binary format: just the sections the
// adapter's engine-neutral checks need (types, imports, functions, memories,
// exports, custom sections and the `name` section's function names, what
// decides whether an instance can be reset: mutable globals, tables, passive
// segments), plus rewrites of the memory section (lower the declared maximum
// to a cap) and of the export section (export hidden state to the host).
//
// It validates only what it reads; full validation is the engine's job. It
// must never crash or allocate unboundedly on hostile input: every length is
// checked against the bytes that remain before anything is reserved.
//
// Threading: pure functions on their arguments. Ownership: ParsedModule owns
// copies of everything it reports.

#ifndef STELE_RUNTIME_WASM_WASM_BINARY_H_
#define STELE_RUNTIME_WASM_WASM_BINARY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "runtime/wasm/wasm_engine.h"

namespace stele::wasm {

enum class ExternKind : uint8_t { kFunction = 0, kTable = 1, kMemory = 2, kGlobal = 3, kTag = 4 };

struct Limits {
  uint64_t initial = 0;
  std::optional<uint64_t> max;
  bool shared = false;
  bool is64 = false;
};

struct ParsedImport {
  std::string module;
  std::string name;
  ExternKind kind = ExternKind::kFunction;
  uint32_t type_index = 0;  // functions
};

struct ParsedExport {
  std::string name;
  ExternKind kind = ExternKind::kFunction;
  uint32_t index = 0;
};

// A type of the type section; `type` is set only when every param and result
// is an MVP number type (others cannot cross the host boundary).
struct ParsedType {
  std::optional<FuncType> type;
};

// A global defined by the module (imported globals are not listed).
struct ParsedGlobal {
  uint8_t type = 0;  // value type byte (0x7f i32 ...)
  bool is_mutable = false;
};

struct ParsedModule {
  std::vector<ParsedType> types;
  std::vector<ParsedImport> imports;
  // Type index of every function in the function index space (imports first).
  std::vector<uint32_t> function_types;
  std::vector<Limits> memories;  // imported memories are not listed here
  std::vector<ParsedExport> exports;
  std::vector<std::pair<std::string, std::string>> custom_sections;  // name, payload
  std::map<uint32_t, std::string> function_names;
  // Byte range [begin, end) of the memory section (id byte to end), if any.
  std::optional<std::pair<size_t, size_t>> memory_section;
  // Byte range of the export section and the offset of its first entry.
  std::optional<std::pair<size_t, size_t>> export_section;
  size_t export_entries_begin = 0;
  std::vector<ParsedGlobal> globals;
  uint32_t tables = 0;  // defined tables
  // What the reset of an instance cannot see: a data-count section (needed
  // by memory.init and data.drop, whose dropped-segment state is per
  // instance) or a passive element segment (elem.drop). Also set when a
  // global or element section holds something this reader does not decode.
  bool has_droppable_segments = false;

  // The FuncType of function `index`, if it is a number-only signature.
  std::optional<FuncType> FunctionType(uint32_t index) const;
};

// kInvalidModule with a message naming the offset on malformed input.
Result<ParsedModule, WasmError> ParseModule(std::span<const uint8_t> bytes);

// The bytes with the memory section replaced by one declaring `memory`.
// REQUIRES: parsed.memory_section is set (parsed from `bytes`).
std::vector<uint8_t> RewriteMemorySection(std::span<const uint8_t> bytes,
                                          const ParsedModule& parsed, const Limits& memory);

// The bytes with `extra` appended to the export section.
// REQUIRES: parsed.export_section is set (parsed from `bytes`).
std::vector<uint8_t> AppendExports(std::span<const uint8_t> bytes, const ParsedModule& parsed,
                                   const std::vector<ParsedExport>& extra);

// Reads an unsigned LEB128 of at most `bits` bits at bytes[*pos]; advances pos.
// Exposed for tests.
std::optional<uint64_t> ReadLeb(std::span<const uint8_t> bytes, size_t* pos, int bits);
void AppendLeb(std::vector<uint8_t>* out, uint64_t value);

}  // namespace stele::wasm

#endif  // STELE_RUNTIME_WASM_WASM_BINARY_H_
