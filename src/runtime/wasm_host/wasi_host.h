// The WASI preview 1 subset Stele gives wasm activities
// (docs/guest_abi.md §5). Every function of wasi_snapshot_preview1 is
// importable with its exact signature, so modules built against wasi-libc
// link; only these do something:
//   fd_write to 1/2          captured (up to a cap) and logged with the run
//   fd_fdstat_get 0..2       a character device without seek/tell rights (a
//                            terminal to wasi-libc: stdout is line-buffered);
//                            fd_seek 0..2 → ESPIPE
//   fd_read 0                end of file; fd_close 0..2 → success
//   fd_prestat_get           EBADF (no preopened directories: no files)
//   args_* / environ_*       from WasiConfig
//   clock_time_get/res_get   realtime and monotonic clocks
//   random_get               the OS random source
//   sched_yield              success
//   proc_exit(code)          aborts the guest; the attempt is a trap
// Everything else returns ENOSYS (52): files, sockets, poll.
//
// Threading: one WasiState per instance, used from the thread calling it.
// Ownership: the import table's functions share the state (shared_ptr).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/wasm/wasm_engine.h"

namespace stele::runtime::wasm_host {

inline constexpr std::string_view kWasiModule = "wasi_snapshot_preview1";

struct WasiConfig {
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  // Most bytes of stdout + stderr kept per attempt; the rest is dropped
  // (and counted).
  size_t max_captured_output = 64 * 1024;
};

struct WasiState {
  WasiConfig config;
  std::string stdout_text;
  std::string stderr_text;
  size_t dropped_bytes = 0;
  std::optional<int32_t> exit_code;  // set by proc_exit
};

// Adds the wasi_snapshot_preview1 functions to `table`, bound to `state`:
// all of them, or only those `imported_by` imports (a run's table, built
// for every attempt, then holds a handful of functions instead of all
// forty-odd).
void AddWasiImports(wasm::ImportTable& table, std::shared_ptr<WasiState> state,
                    const wasm::WasmModule* imported_by = nullptr);

// The message of the host error proc_exit raises (to recognise it).
inline constexpr std::string_view kProcExitMessage = "proc_exit";

}  // namespace stele::runtime::wasm_host
