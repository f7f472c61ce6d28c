// Webhook endpoints of the server (docs/api.md, "Webhooks"): loading the
// [[webhook_wasm]] and [[webhook_js]] guests, serving their routes on the
// API's listeners (and on [api] ui_listen, which serves the same routes),
// their auth exception, and the WebhookHost they submit and wait through — the
// execution service's Submit and WaitForResult, as POST /v1/executions and
// GET .../result use them.
//
// The guest runtime (wasm_host or js) stays behind LoadedWebhook::serve:
// both serve routes through the same code.
//
// Threading: LoadWebhooks is pure; the handlers run on the connection
// threads and share ServerImpl (webhook counters under metrics_mu).
// Ownership: LoadedWebhook is a value sharing its compiled guest.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/cancellation.h"
#include "base/result.h"
#include "core/component_id.h"
#include "runtime/webhook/webhook.h"
#include "server/config.h"
#include "server/webhook_routes.h"

namespace httplib {
class Server;
struct Request;
}  // namespace httplib

namespace stele::server {

class ServerImpl;

struct LoadedWebhook {
  WebhookConfig config;
  RoutePattern route;
  core::ComponentId component_id;  // kWebhookEndpoint with the guest's digest
  // Runs one request on the guest; the time limit is the config's.
  std::function<Result<runtime::webhook::WebhookResponse, runtime::webhook::WebhookFailure>(
      const runtime::webhook::WebhookRequest&, runtime::webhook::WebhookHost&,
      const CancellationToken&)>
      serve;
};

// Loads (compiles) every webhook of `config`; errors name the webhook,
// the file and the line.
Result<std::vector<LoadedWebhook>, ConfigErrors> LoadWebhooks(const ServerConfig& config,
                                                              const std::string& file);

// Registers the webhook routes on `http` (after the API's own routes).
void InstallWebhookRoutes(ServerImpl& d, httplib::Server& http);

// Whether `req` goes to a webhook with auth = "none" (no token needed).
bool IsPublicWebhookRequest(const ServerImpl& d, const httplib::Request& req);

}  // namespace stele::server
