// The host side of the Stele guest ABI (docs/guest_abi.md): the
// "stele:functions" declarations, the status codes, the packed (ptr, len)
// convention, the result JSON of an export and helpers that move bytes in
// and out of guest memory through the guest's `stele_alloc`.
//
// Threading: pure functions, or functions on a HostCall / WasmInstance that
// the caller uses from its own thread. Ownership: values are returned by
// value; HostCall and WasmInstance are borrowed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "core/function_fqn.h"
#include "core/return_value.h"
#include "runtime/wasm/wasm_engine.h"

namespace stele::runtime::wasm_host {

inline constexpr std::string_view kImportModule = "stele";
inline constexpr std::string_view kFunctionsSection = "stele:functions";
inline constexpr std::string_view kAllocExport = "stele_alloc";

// Status codes of host functions (sdk/stele_guest.h).
enum class Status : int32_t {
  kOk = 0,
  kErr = 1,
  kFailed = 2,
  kAllProcessed = 3,
  kMismatch = 4,
  kNotFound = 5,
  kCancelled = 6,  // join_next: the workflow is being cancelled
  kPending = 7,    // join_next_try: nothing has arrived yet
};

enum class GuestKind { kWorkflow, kActivity };

// One entry of the "stele:functions" section.
struct DeclaredFunction {
  GuestKind kind = GuestKind::kWorkflow;
  core::FunctionFqn ffqn;
  std::string export_name;
  // WIT-like strings as declared, e.g. "name: string, count: u64" and
  // "result<string, string>". Kept raw: core has no type parser yet.
  std::string params;
  std::string return_type;
  // `params` split at top-level commas into (name, type).
  std::vector<std::pair<std::string, std::string>> param_list;
};

// Parses the payloads of every "stele:functions" section: JSON objects, one
// per line; NUL bytes and blank lines are ignored. Errors name the entry.
// Also checks that each export exists with type (i32, i32) -> i64 and that
// no ffqn is declared twice.
Result<std::vector<DeclaredFunction>, std::string> ParseDeclarations(
    const std::vector<std::string_view>& payloads,
    const std::vector<wasm::ExportedFunction>& exports);

// Splits "a: string, b: result<string, string>" at top-level commas.
Result<std::vector<std::pair<std::string, std::string>>, std::string> ParseParamList(
    std::string_view text);

// The FuncType every function export has: (params_ptr i32, params_len i32) -> i64.
wasm::FuncType ExportFuncType();

inline uint64_t Pack(uint32_t ptr, uint32_t len) { return (uint64_t{ptr} << 32) | len; }
inline uint32_t PackedPtr(uint64_t packed) { return static_cast<uint32_t>(packed >> 32); }
inline uint32_t PackedLen(uint64_t packed) { return static_cast<uint32_t>(packed); }

// Parses the JSON an export returned: {"ok": v} or {"err": v} (v may be
// null or absent), an err optionally with "retryable": false (a permanent
// failure: *non_retryable is set when given). Anything else is an error
// message (a result parsing error of the guest).
Result<core::SupportedFunctionReturnValue, std::string> ParseExportResult(
    std::string_view text, bool* non_retryable = nullptr);

// The status and payload a finished child's result gives the guest:
// ok → (kOk, value JSON), err → (kErr, value JSON), execution error →
// (kFailed, {"kind":..,"reason":..,"detail":..}).
std::pair<Status, std::string> ResultPayload(const core::SupportedFunctionReturnValue& value);
// The reverse for `stub`: a status (kOk / kErr) and a JSON payload ("" = null).
Result<core::SupportedFunctionReturnValue, std::string> StubValue(int32_t status,
                                                                  std::string_view payload);

// --- Guest memory --------------------------------------------------------------

// Allocates `bytes.size()` bytes through the guest's stele_alloc, copies
// `bytes` there and returns the guest pointer. An allocation failure
// (stele_alloc returned 0, or outside memory) is a kTrap-kind error saying
// the guest is out of memory.
Result<uint32_t, wasm::WasmError> PlaceInGuest(wasm::HostCall& call, std::string_view bytes);
Result<uint32_t, wasm::WasmError> PlaceInGuest(wasm::WasmInstance& instance,
                                               std::string_view bytes);

// Places `bytes` and writes {ptr, len} (two little-endian u32) at `out_ptr`.
// out_ptr == 0 means the guest does not want the payload.
Result<void, wasm::WasmError> WriteOut(wasm::HostCall& call, uint32_t out_ptr,
                                       std::string_view bytes);

}  // namespace stele::runtime::wasm_host
