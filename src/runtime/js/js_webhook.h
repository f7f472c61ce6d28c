// Webhook endpoints written in JavaScript (docs/js.md, "Webhooks"): a
// [[webhook_js]] module answers the HTTP requests of one route with the
// same request, response, host operations and failures as a wasm webhook
// (runtime/webhook/webhook.h; docs/guest_abi.md §6).
//
//   export async function webhook(ctx, request) {
//     const id = ctx.submit("shop:orders/saga.place-order", [...]);
//     const result = await ctx.awaitResult(id, 2000);   // undefined: pending
//     return { status: 202, body: { execution_id: id } };
//   }
//
// Not durable and never replayed: every request runs in a fresh instance of
// the module (like an activity attempt); what it submits is durable.
//
// Threading: LoadJsWebhook is pure; RunJsWebhook runs the guest on the
// calling thread and may be called concurrently. Ownership: JsWebhook is
// immutable and shared; the host is borrowed for the call.
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
#include "runtime/js/js_engine.h"
#include "runtime/webhook/webhook.h"

namespace stele::runtime::js {

struct JsWebhook {
  core::ComponentId component_id;  // kWebhookEndpoint, sha256 of the file's bytes
  std::shared_ptr<JsEngine> engine;
  std::shared_ptr<const JsModule> module;
};

// Loads `source` as webhook `name` ([A-Za-z0-9_-]+); `file_name` is what
// stack frames name. The module must export `webhook`, a function. Errors
// are one readable line (file:line:column for the module's own errors).
Result<std::shared_ptr<const JsWebhook>, std::string> LoadJsWebhook(
    std::shared_ptr<JsEngine> engine, std::string source, std::string file_name, std::string name,
    const JsLimits& limits = {});

// Reads the file and calls LoadJsWebhook.
Result<std::shared_ptr<const JsWebhook>, std::string> LoadJsWebhookFile(
    std::shared_ptr<JsEngine> engine, const std::filesystem::path& path, std::string name,
    const JsLimits& limits = {});

// Runs one request: webhook(ctx, request) in a fresh module instance, all
// within `time_limit` (guest code and waits together: a wait is cut to
// what is left) or until `cancel` fires. `log_prefix` names the webhook in
// the log lines of ctx.log and console; `env` is ctx.env.
//   returned a response     the parsed response, or kBadResponse
//   threw / rejected, awaited what nothing settles, stack overflow, out of
//   memory                  kTrap (detail: the JS stack)
//   over time_limit, cancelled
//                           kTimeout
Result<webhook::WebhookResponse, webhook::WebhookFailure> RunJsWebhook(
    const JsWebhook& webhook, const webhook::WebhookRequest& request, webhook::WebhookHost& host,
    std::chrono::milliseconds time_limit, const CancellationToken& cancel,
    const std::string& log_prefix,
    const std::vector<std::pair<std::string, std::string>>& env = {});

}  // namespace stele::runtime::js
