// Webhook guests (docs/guest_abi.md §6): a wasm32-wasi reactor that answers
// one HTTP request of a [[webhook_wasm]] route. It is not durable and is
// never replayed: every request gets a fresh instance (like an activity
// attempt), the request JSON goes into its `stele_webhook` export and the
// JSON that export returns is the response. What it starts through the
// host (WebhookHost) is durable; the request's handling is not.
//
// Host functions, import module "stele_webhook":
//   submit(ffqn_ptr, ffqn_len, params_ptr, params_len, out) -> status
//     STELE_OK: out = the new execution id (text); STELE_ERR: out =
//     {"kind": "validation" | "not_found" | ..., "message": "..."}.
//   await_result(id_ptr, id_len, timeout_ms, out) -> status
//     STELE_OK / STELE_ERR / STELE_FAILED: finished, out as join_next's
//     payload (guest_abi.h ResultPayload); STELE_PENDING: not finished
//     within min(timeout_ms, what is left of the request's time limit);
//     STELE_NOT_FOUND: out = the error {"kind", "message"}.
// plus the WASI subset of wasi_host.h (printf goes to the server's log).
//
// The request and response types and WebhookHost are runtime/webhook's,
// independent of wasm, so that another guest runtime can serve the same
// routes.
//
// Threading: LoadWasmWebhookFile is pure; RunWasmWebhook runs the guest on the
// calling thread and may be called concurrently (a fresh instance each).
// Ownership: WasmWebhook is immutable and shared; the host is borrowed for
// the call.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/cancellation.h"
#include "base/result.h"
#include "core/component_id.h"
#include "core/json.h"
#include "runtime/wasm/wasm_engine.h"
#include "runtime/wasm_host/guest_abi.h"
#include "runtime/wasm_host/wasi_host.h"
#include "runtime/webhook/webhook.h"

namespace stele::runtime::wasm_host {

using webhook::WebhookFailure;
using webhook::WebhookHost;
using webhook::WebhookRequest;
using webhook::WebhookResponse;

inline constexpr std::string_view kWebhookModule = "stele_webhook";
inline constexpr std::string_view kWebhookExport = "stele_webhook";

struct WasmWebhook {
  core::ComponentId component_id;  // kWebhookEndpoint, digest of the bytes
  std::shared_ptr<wasm::WasmEngine> engine;
  std::shared_ptr<const wasm::WasmModule> module;
};

// Compiles a webhook guest: WASI and stele_webhook imports only, memory
// capped at `max_memory_pages`, exports `memory`, `stele_alloc` and
// `stele_webhook: (i32, i32) -> i64`. Errors are one readable line.
Result<std::shared_ptr<const WasmWebhook>, std::string> LoadWasmWebhookFile(
    std::shared_ptr<wasm::WasmEngine> engine, const std::filesystem::path& path, std::string name,
    uint32_t max_memory_pages = 1024);

// Runs one request: a fresh instance, `_initialize` when exported, then
// stele_webhook, all within `time_limit` (host calls included: a wait is
// cut to what is left) or until `cancel` fires. `log_prefix` names the
// webhook in the lines its output is logged with; `wasi` is its WASI
// environment.
Result<WebhookResponse, WebhookFailure> RunWasmWebhook(
    const WasmWebhook& webhook, const WebhookRequest& request, WebhookHost& host,
    std::chrono::milliseconds time_limit, const CancellationToken& cancel,
    const std::string& log_prefix, const WasiConfig& wasi = {});

}  // namespace stele::runtime::wasm_host
