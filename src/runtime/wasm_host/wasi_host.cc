#include "runtime/wasm_host/wasi_host.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <span>
#include <string_view>

namespace stele::runtime::wasm_host {

namespace {

using wasm::FuncType;
using wasm::HostCall;
using wasm::ValType;
using wasm::Value;
using wasm::WasmError;
using Args = std::span<const Value>;
using HostResult = Result<std::vector<Value>, WasmError>;

constexpr int32_t kSuccess = 0;
constexpr int32_t kEbadf = 8;
constexpr int32_t kEinval = 28;
constexpr int32_t kEnosys = 52;
constexpr int32_t kEspipe = 70;

constexpr ValType I = ValType::kI32;
constexpr ValType L = ValType::kI64;

HostResult Errno(int32_t e) { return std::vector<Value>{Value::I32(e)}; }

uint32_t U32(const Value& v) { return static_cast<uint32_t>(v.AsI32()); }

Result<void, WasmError> WriteU32(HostCall& c, uint32_t ptr, uint32_t v) {
  uint8_t b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  return c.WriteBytes(ptr, b);
}
Result<void, WasmError> WriteU64(HostCall& c, uint32_t ptr, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  return c.WriteBytes(ptr, b);
}
uint32_t ReadU32(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t{b[at]} | uint32_t{b[at + 1]} << 8 | uint32_t{b[at + 2]} << 16 |
         uint32_t{b[at + 3]} << 24;
}

// The full preview 1 list: name and signature. Those not bound below
// return ENOSYS.
struct WasiSig {
  const char* name;
  std::vector<ValType> params;
  std::vector<ValType> results;
};
const std::vector<WasiSig>& AllSignatures() {
  static const std::vector<WasiSig> sigs = {
      {"args_get", {I, I}, {I}},
      {"args_sizes_get", {I, I}, {I}},
      {"environ_get", {I, I}, {I}},
      {"environ_sizes_get", {I, I}, {I}},
      {"clock_res_get", {I, I}, {I}},
      {"clock_time_get", {I, L, I}, {I}},
      {"fd_advise", {I, L, L, I}, {I}},
      {"fd_allocate", {I, L, L}, {I}},
      {"fd_close", {I}, {I}},
      {"fd_datasync", {I}, {I}},
      {"fd_fdstat_get", {I, I}, {I}},
      {"fd_fdstat_set_flags", {I, I}, {I}},
      {"fd_fdstat_set_rights", {I, L, L}, {I}},
      {"fd_filestat_get", {I, I}, {I}},
      {"fd_filestat_set_size", {I, L}, {I}},
      {"fd_filestat_set_times", {I, L, L, I}, {I}},
      {"fd_pread", {I, I, I, L, I}, {I}},
      {"fd_prestat_get", {I, I}, {I}},
      {"fd_prestat_dir_name", {I, I, I}, {I}},
      {"fd_pwrite", {I, I, I, L, I}, {I}},
      {"fd_read", {I, I, I, I}, {I}},
      {"fd_readdir", {I, I, I, L, I}, {I}},
      {"fd_renumber", {I, I}, {I}},
      {"fd_seek", {I, L, I, I}, {I}},
      {"fd_sync", {I}, {I}},
      {"fd_tell", {I, I}, {I}},
      {"fd_write", {I, I, I, I}, {I}},
      {"path_create_directory", {I, I, I}, {I}},
      {"path_filestat_get", {I, I, I, I, I}, {I}},
      {"path_filestat_set_times", {I, I, I, I, L, L, I}, {I}},
      {"path_link", {I, I, I, I, I, I, I}, {I}},
      {"path_open", {I, I, I, I, I, L, L, I, I}, {I}},
      {"path_readlink", {I, I, I, I, I, I}, {I}},
      {"path_remove_directory", {I, I, I}, {I}},
      {"path_rename", {I, I, I, I, I, I}, {I}},
      {"path_symlink", {I, I, I, I, I}, {I}},
      {"path_unlink_file", {I, I, I}, {I}},
      {"poll_oneoff", {I, I, I, I}, {I}},
      {"proc_exit", {I}, {}},
      {"proc_raise", {I}, {I}},
      {"sched_yield", {}, {I}},
      {"random_get", {I, I}, {I}},
      {"sock_accept", {I, I, I}, {I}},
      {"sock_recv", {I, I, I, I, I, I}, {I}},
      {"sock_send", {I, I, I, I, I}, {I}},
      {"sock_shutdown", {I, I}, {I}},
  };
  return sigs;
}

// Writes NUL-terminated `items` contiguously at buf and their pointers at ptrs.
HostResult WriteStrings(HostCall& c, const std::vector<std::string>& items, uint32_t ptrs,
                        uint32_t buf) {
  uint32_t at = buf;
  for (size_t i = 0; i < items.size(); ++i) {
    STELE_TRY(WriteU32(c, ptrs + static_cast<uint32_t>(4 * i), at));
    std::string with_nul = items[i] + '\0';
    STELE_TRY(c.WriteString(at, with_nul));
    at += static_cast<uint32_t>(with_nul.size());
  }
  return Errno(kSuccess);
}
HostResult WriteSizes(HostCall& c, const std::vector<std::string>& items, uint32_t count_ptr,
                      uint32_t size_ptr) {
  uint32_t total = 0;
  for (const auto& s : items) total += static_cast<uint32_t>(s.size() + 1);
  STELE_TRY(WriteU32(c, count_ptr, static_cast<uint32_t>(items.size())));
  STELE_TRY(WriteU32(c, size_ptr, total));
  return Errno(kSuccess);
}
std::vector<std::string> EnvStrings(const WasiConfig& config) {
  std::vector<std::string> out;
  for (const auto& [k, v] : config.env) out.push_back(k + "=" + v);
  return out;
}

// The functions WASI guests get beyond ENOSYS, by name; each takes the
// run's state (AddWasiImports binds it).
using WasiFn = HostResult (*)(WasiState&, HostCall&, Args);
const std::map<std::string_view, WasiFn>& Implemented() {
  static const std::map<std::string_view, WasiFn> fns = {
      {"args_sizes_get",
       [](WasiState& state, HostCall& c, Args a) -> HostResult {
         return WriteSizes(c, state.config.args, U32(a[0]), U32(a[1]));
       }},
      {"args_get",
       [](WasiState& state, HostCall& c, Args a) -> HostResult {
         return WriteStrings(c, state.config.args, U32(a[0]), U32(a[1]));
       }},
      {"environ_sizes_get",
       [](WasiState& state, HostCall& c, Args a) -> HostResult {
         return WriteSizes(c, EnvStrings(state.config), U32(a[0]), U32(a[1]));
       }},
      {"environ_get",
       [](WasiState& state, HostCall& c, Args a) -> HostResult {
         return WriteStrings(c, EnvStrings(state.config), U32(a[0]), U32(a[1]));
       }},
      {"clock_res_get",
       [](WasiState&, HostCall& c, Args a) -> HostResult {
         if (U32(a[0]) > 1) return Errno(kEinval);
         STELE_TRY(WriteU64(c, U32(a[1]), 1000));
         return Errno(kSuccess);
       }},
      {"clock_time_get",
       [](WasiState&, HostCall& c, Args a) -> HostResult {
         uint64_t ns;
         if (U32(a[0]) == 0) {
           ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
         } else if (U32(a[0]) == 1) {
           ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
         } else {
           return Errno(kEinval);
         }
         STELE_TRY(WriteU64(c, U32(a[2]), ns));
         return Errno(kSuccess);
       }},
      {"random_get",
       [](WasiState&, HostCall& c, Args a) -> HostResult {
         uint32_t len = U32(a[1]);
         if (len > (1u << 20)) return Errno(kEinval);
         static thread_local std::random_device device;
         std::vector<uint8_t> bytes(len);
         for (auto& b : bytes) b = static_cast<uint8_t>(device());
         STELE_TRY(c.WriteBytes(U32(a[0]), bytes));
         return Errno(kSuccess);
       }},
      {"fd_write",
       [](WasiState& state, HostCall& c, Args a) -> HostResult {
         uint32_t fd = U32(a[0]), iovs = U32(a[1]), count = U32(a[2]), nwritten = U32(a[3]);
         if (fd != 1 && fd != 2) return Errno(kEbadf);
         if (count > 1024) return Errno(kEinval);
         STELE_ASSIGN_OR_RETURN(auto table_bytes, c.ReadBytes(iovs, count * 8));
         uint32_t total = 0;
         std::string& sink = fd == 1 ? state.stdout_text : state.stderr_text;
         for (uint32_t i = 0; i < count; ++i) {
           uint32_t ptr = ReadU32(table_bytes, 8 * i), len = ReadU32(table_bytes, 8 * i + 4);
           STELE_ASSIGN_OR_RETURN(std::string text, c.ReadString(ptr, len));
           size_t room = state.config.max_captured_output -
                         std::min(state.config.max_captured_output,
                                  state.stdout_text.size() + state.stderr_text.size());
           sink.append(text, 0, std::min(room, text.size()));
           if (text.size() > room) state.dropped_bytes += text.size() - room;
           total += len;
         }
         STELE_TRY(WriteU32(c, nwritten, total));
         return Errno(kSuccess);
       }},
      {"fd_fdstat_get",
       [](WasiState&, HostCall& c, Args a) -> HostResult {
         if (U32(a[0]) > 2) return Errno(kEbadf);
         std::vector<uint8_t> stat(24, 0);
         stat[0] = 2;  // character device
         // rights_base: everything but fd_seek (bit 2) and fd_tell (bit 5). A
         // character device that cannot seek is a terminal to wasi-libc's
         // isatty, so stdio line-buffers stdout: an activity is a reactor that
         // never exits, and a fully buffered stream would never be flushed.
         for (int i = 8; i < 16; ++i) stat[static_cast<size_t>(i)] = 0xff;
         stat[8] = static_cast<uint8_t>(0xff & ~(1u << 2) & ~(1u << 5));
         STELE_TRY(c.WriteBytes(U32(a[1]), stat));
         return Errno(kSuccess);
       }},
      {"fd_seek",
       [](WasiState&, HostCall&, Args a) -> HostResult {
         return Errno(U32(a[0]) <= 2 ? kEspipe : kEbadf);
       }},
      {"fd_close",
       [](WasiState&, HostCall&, Args a) -> HostResult {
         return Errno(U32(a[0]) <= 2 ? kSuccess : kEbadf);
       }},
      {"fd_prestat_get", [](WasiState&, HostCall&, Args) -> HostResult { return Errno(kEbadf); }},
      {"fd_read",
       [](WasiState&, HostCall& c, Args a) -> HostResult {
         if (U32(a[0]) != 0) return Errno(kEbadf);
         STELE_TRY(WriteU32(c, U32(a[3]), 0));  // end of file
         return Errno(kSuccess);
       }},
      {"sched_yield", [](WasiState&, HostCall&, Args) -> HostResult { return Errno(kSuccess); }},
      {"proc_exit",
       [](WasiState& state, HostCall&, Args a) -> HostResult {
         state.exit_code = a[0].AsI32();
         return Unexpected(WasmError::Make(
             WasmError::Kind::kHostError,
             std::string(kProcExitMessage) + "(" + std::to_string(a[0].AsI32()) + ")"));
       }},
  };
  return fns;
}

// Adds the function of `sig` bound to `state`.
void AddOne(wasm::ImportTable& table, const WasiSig& sig, const std::shared_ptr<WasiState>& state) {
  auto it = Implemented().find(sig.name);
  wasm::HostFn fn = [](HostCall&, Args) { return Errno(kEnosys); };
  if (it != Implemented().end()) {
    fn = [impl = it->second, state](HostCall& c, Args a) { return impl(*state, c, a); };
  }
  table.Add(std::string(kWasiModule), sig.name, FuncType{sig.params, sig.results}, std::move(fn));
}

}  // namespace

void AddWasiImports(wasm::ImportTable& table, std::shared_ptr<WasiState> state,
                    const wasm::WasmModule* imported_by) {
  if (imported_by == nullptr) {
    for (const WasiSig& sig : AllSignatures()) AddOne(table, sig, state);
    return;
  }
  for (const wasm::ImportSignature& imp : imported_by->imports()) {
    if (imp.module != kWasiModule) continue;
    for (const WasiSig& sig : AllSignatures()) {
      if (sig.name == imp.name) AddOne(table, sig, state);
    }
  }
}

}  // namespace stele::runtime::wasm_host
