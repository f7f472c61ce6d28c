#include "runtime/wasm_host/webhook_guest.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/log.h"
#include "core/json_codec.h"
#include "runtime/wasm_host/wasi_host.h"
#include "runtime/wasm_host/wasm_component.h"

namespace stele::runtime::wasm_host {

namespace {

using wasm::HostCall;
using wasm::ValType;
using wasm::Value;
using wasm::WasmError;
using HostResult = Result<std::vector<Value>, WasmError>;
using SteadyClock = std::chrono::steady_clock;

// Longest ffqn, params and id a guest may hand to a host function: the
// service checks params against its own limit, this only bounds the copy.
constexpr uint32_t kMaxHostArgBytes = 16u << 20;

std::string WebhookDump(const core::Json& json) {
  return json.dump(-1, ' ', false, core::Json::error_handler_t::replace);
}

core::Json WebhookErrorJson(const WebhookHost::Error& e) {
  return core::Json{{"kind", e.kind}, {"message", e.message}};
}

HostResult WebhookStatusValue(Status s) {
  return std::vector<Value>{Value::I32(static_cast<int32_t>(s))};
}

uint32_t WebhookU32(const Value& v) { return static_cast<uint32_t>(v.AsI32()); }

// The state of one request's instance.
struct WebhookCallState {
  WebhookHost* host = nullptr;
  SteadyClock::time_point deadline;
};

HostResult WebhookSubmit(WebhookCallState& state, HostCall& call, std::span<const Value> a) {
  const uint32_t out = WebhookU32(a[4]);
  auto fail = [&](const WebhookHost::Error& e) -> HostResult {
    STELE_TRY(WriteOut(call, out, WebhookDump(WebhookErrorJson(e))));
    return WebhookStatusValue(Status::kErr);
  };
  if (WebhookU32(a[1]) > kMaxHostArgBytes || WebhookU32(a[3]) > kMaxHostArgBytes) {
    return fail(
        {"too_large", "ffqn or params over " + std::to_string(kMaxHostArgBytes) + " bytes"});
  }
  STELE_ASSIGN_OR_RETURN(std::string ffqn, call.ReadString(WebhookU32(a[0]), WebhookU32(a[1])));
  STELE_ASSIGN_OR_RETURN(std::string params_text,
                         call.ReadString(WebhookU32(a[2]), WebhookU32(a[3])));
  auto params = core::ParseJson(params_text);
  if (!params) return fail({"validation", "params are not JSON: " + params.error().message});
  std::optional<decltype(state.host->Submit(ffqn, *params))> id;
  call.Park([&] { id.emplace(state.host->Submit(ffqn, *params)); });
  if (!*id) return fail(id->error());
  STELE_TRY(WriteOut(call, out, **id));
  return WebhookStatusValue(Status::kOk);
}

HostResult WebhookAwaitResult(WebhookCallState& state, HostCall& call, std::span<const Value> a) {
  const uint32_t out = WebhookU32(a[3]);
  if (WebhookU32(a[1]) > kMaxHostArgBytes) return WebhookStatusValue(Status::kNotFound);
  STELE_ASSIGN_OR_RETURN(std::string id, call.ReadString(WebhookU32(a[0]), WebhookU32(a[1])));
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(state.deadline - SteadyClock::now());
  auto wait = std::min(std::chrono::milliseconds(WebhookU32(a[2])), left);
  if (wait.count() < 0) wait = std::chrono::milliseconds(0);
  std::optional<decltype(state.host->AwaitResult(id, wait))> awaited;
  call.Park([&] { awaited.emplace(state.host->AwaitResult(id, wait)); });
  auto& result = *awaited;
  if (!result) {
    STELE_TRY(WriteOut(call, out, WebhookDump(WebhookErrorJson(result.error()))));
    return WebhookStatusValue(Status::kNotFound);
  }
  if (!*result) return WebhookStatusValue(Status::kPending);
  auto [status, payload] = ResultPayload(**result);
  STELE_TRY(WriteOut(call, out, payload));
  return WebhookStatusValue(status);
}

void AddWebhookImports(wasm::ImportTable& table, std::shared_ptr<WebhookCallState> state) {
  constexpr ValType i32 = ValType::kI32;
  table.Add(std::string(kWebhookModule), "submit", wasm::FuncType{{i32, i32, i32, i32, i32}, {i32}},
            [state](HostCall& call, std::span<const Value> args) {
              return WebhookSubmit(*state, call, args);
            });
  table.Add(std::string(kWebhookModule), "await_result",
            wasm::FuncType{{i32, i32, i32, i32}, {i32}},
            [state](HostCall& call, std::span<const Value> args) {
              return WebhookAwaitResult(*state, call, args);
            });
}

void LogWebhookOutput(const std::string& prefix, const WasiState& state) {
  for (const auto& [text, stream] :
       {std::pair{&state.stdout_text, "stdout"}, std::pair{&state.stderr_text, "stderr"}}) {
    size_t pos = 0;
    while (pos < text->size()) {
      size_t end = text->find('\n', pos);
      if (end == std::string::npos) end = text->size();
      STELE_LOG(kInfo,
                prefix << " [" << stream << "] " << std::string_view(*text).substr(pos, end - pos));
      pos = end + 1;
    }
  }
}

}  // namespace

Result<std::shared_ptr<const WasmWebhook>, std::string> LoadWasmWebhookFile(
    std::shared_ptr<wasm::WasmEngine> engine, const std::filesystem::path& path, std::string name,
    uint32_t max_memory_pages) {
  const std::string what = "webhook `" + name + "`";
  if (!core::ComponentId::IsValidName(name)) {
    return Unexpected(what + ": invalid name (use ASCII letters, digits, '_' and '-')");
  }
  if (engine == nullptr) return Unexpected(what + ": no wasm engine");
  auto bytes = ReadFileBytes(path);
  if (!bytes) return Unexpected(what + ": " + bytes.error());
  wasm::ImportTable table;
  AddWasiImports(table, std::make_shared<WasiState>());
  AddWebhookImports(table, std::make_shared<WebhookCallState>());
  auto module = engine->Compile(*bytes, table.AsLimits(max_memory_pages));
  if (!module) return Unexpected(what + ": " + module.error().ToString());
  const wasm::ExportedFunction* alloc = (*module)->FindExport(kAllocExport);
  if (alloc == nullptr ||
      !(alloc->type == wasm::FuncType{{wasm::ValType::kI32}, {wasm::ValType::kI32}})) {
    return Unexpected(what +
                      ": the module must export `stele_alloc: (i32) -> (i32)` "
                      "(include sdk/stele_webhook.h)");
  }
  if (!(*module)->memory_initial_pages()) {
    return Unexpected(what + ": the module must export its linear memory as `memory`");
  }
  const wasm::ExportedFunction* handle = (*module)->FindExport(kWebhookExport);
  if (handle == nullptr || !(handle->type == ExportFuncType())) {
    return Unexpected(what +
                      ": the module must export `stele_webhook: (i32, i32) -> (i64)` "
                      "(STELE_WEBHOOK of sdk/stele_webhook.h)");
  }
  auto digest = core::InputContentDigest::Parse((*module)->digest());
  if (!digest)
    return Unexpected(what + ": engine digest `" + (*module)->digest() + "` is malformed");
  auto webhook = std::make_shared<WasmWebhook>();
  webhook->component_id =
      core::ComponentId{core::ComponentType::kWebhookEndpoint, std::move(name), *digest};
  webhook->engine = std::move(engine);
  webhook->module = std::move(*module);
  return std::shared_ptr<const WasmWebhook>(std::move(webhook));
}

Result<WebhookResponse, WebhookFailure> RunWasmWebhook(
    const WasmWebhook& webhook, const WebhookRequest& request, WebhookHost& host,
    std::chrono::milliseconds time_limit, const CancellationToken& cancel,
    const std::string& log_prefix, const WasiConfig& wasi_config) {
  auto wasi = std::make_shared<WasiState>();
  wasi->config = wasi_config;
  auto state = std::make_shared<WebhookCallState>();
  state->host = &host;
  state->deadline = SteadyClock::now() + time_limit;
  auto table = std::make_shared<wasm::ImportTable>();
  AddWasiImports(*table, wasi);
  AddWebhookImports(*table, state);

  auto failed = [&](const WasmError& error) -> WebhookFailure {
    LogWebhookOutput(log_prefix, *wasi);
    if (error.kind == WasmError::Kind::kInterrupted) {
      return {WebhookFailure::Kind::kTimeout,
              "the webhook did not answer within " + std::to_string(time_limit.count()) + " ms",
              error.ToString()};
    }
    std::string message = error.message;
    if (wasi->exit_code)
      message = "the webhook called proc_exit(" + std::to_string(*wasi->exit_code) + ")";
    return {WebhookFailure::Kind::kTrap, "the webhook failed: " + message, error.ToString()};
  };
  auto instance = webhook.engine->Instantiate(webhook.module, table);
  if (!instance) return Unexpected(failed(instance.error()));
  wasm::WasmInstance& guest = **instance;
  const wasm::CallBudget budget{time_limit, cancel};
  if (webhook.module->FindExport("_initialize") != nullptr) {
    auto init = guest.Call("_initialize", {}, budget);
    if (!init) return Unexpected(failed(init.error()));
  }
  const std::string json = request.ToJson();
  auto ptr = PlaceInGuest(guest, json);
  if (!ptr) return Unexpected(failed(ptr.error()));
  const wasm::Value args[] = {wasm::Value::I32(static_cast<int32_t>(*ptr)),
                              wasm::Value::I32(static_cast<int32_t>(json.size()))};
  // What is left of the time limit after `_initialize`.
  const auto left = std::max(
      std::chrono::milliseconds(1),
      std::chrono::duration_cast<std::chrono::milliseconds>(state->deadline - SteadyClock::now()));
  auto called = guest.Call(kWebhookExport, args, wasm::CallBudget{left, cancel});
  if (!called) return Unexpected(failed(called.error()));
  LogWebhookOutput(log_prefix, *wasi);
  const uint64_t packed = static_cast<uint64_t>((*called)[0].AsI64());
  auto bytes = guest.ReadBytes(PackedPtr(packed), PackedLen(packed));
  if (!bytes) {
    return Unexpected(WebhookFailure{WebhookFailure::Kind::kBadResponse,
                                     "the webhook's response is outside its memory",
                                     bytes.error().ToString()});
  }
  auto response = webhook::ParseWebhookResponse(
      std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  if (!response) {
    return Unexpected(WebhookFailure{WebhookFailure::Kind::kBadResponse,
                                     "the webhook's response is malformed: " + response.error(),
                                     ""});
  }
  return std::move(*response);
}

}  // namespace stele::runtime::wasm_host
