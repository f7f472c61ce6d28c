#include "runtime/wasm_host/http_host.h"

#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "runtime/wasm_host/guest_abi.h"

namespace stele::runtime::wasm_host {

namespace {

using wasm::HostCall;
using wasm::ValType;
using wasm::Value;
using wasm::WasmError;
using HostResult = Result<std::vector<Value>, WasmError>;

HostResult StatusValue(Status s) { return std::vector<Value>{Value::I32(static_cast<int32_t>(s))}; }

HostResult HandleRequest(HttpState& state, HostCall& call, std::span<const Value> a) {
  const auto u32 = [](const Value& v) { return static_cast<uint32_t>(v.AsI32()); };
  const uint32_t out = u32(a[2]);
  auto fail = [&](std::string message) -> HostResult {
    STELE_TRY(WriteOut(call, out, message));
    return StatusValue(Status::kErr);
  };
  if (u32(a[1]) > http::kMaxRequestJsonBytes) return fail("request too large");
  STELE_ASSIGN_OR_RETURN(auto text, call.ReadString(u32(a[0]), u32(a[1])));
  // The exchange may take up to its timeout: the isolate serves other runs.
  std::optional<decltype(http::PerformRequest(state, text))> performed;
  call.Park([&] { performed.emplace(http::PerformRequest(state, text)); });
  auto& response = *performed;
  if (!response) {
    if (response.error().interrupted) {
      return Unexpected(WasmError::Make(WasmError::Kind::kInterrupted, response.error().message));
    }
    return fail(response.error().message);
  }
  STELE_TRY(WriteOut(call, out, *response));
  return StatusValue(Status::kOk);
}

}  // namespace

void AddHttpImports(wasm::ImportTable& table, std::shared_ptr<HttpState> state) {
  constexpr ValType I = ValType::kI32;
  table.Add(std::string(kHttpModule), "request", wasm::FuncType{{I, I, I}, {I}},
            [state = std::move(state)](HostCall& call, std::span<const Value> args) {
              return HandleRequest(*state, call, args);
            });
}

}  // namespace stele::runtime::wasm_host
