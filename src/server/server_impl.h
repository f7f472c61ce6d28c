// ServerImpl: the running server's state, shared by the composition code
// (server.cc) and the HTTP handlers (api*.cc). Internal to src/server.
//
// Threading: everything below is set up before the listener starts and is
// read-only afterwards, except the atomics and what is guarded by `mu`.
// The storage connection and the registries are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "base/cancellation.h"
#include "base/clock.h"
#include "http/router.h"
#include "http/server.h"
#include "http/worker_pool.h"
#include "server/api_util.h"
#include "server/components.h"
#include "server/config.h"
#include "server/webhooks.h"
#include "service/execution_service.h"

namespace stele::server {

class ServerImpl {
 public:
  ServerConfig config;
  SharedClock clock;
  std::shared_ptr<storage::DbPool> pool;  // closed by Stop, after the service
  // Every use case and the executors (service/execution_service.h); the
  // handlers translate HTTP into its calls.
  std::unique_ptr<service::ExecutionService> service;
  // The loaded components, as configured (for GET /v1/components and
  // /metrics).
  std::vector<LoadedComponent> components;
  // [[webhook_wasm]] endpoints and their routes, index for index
  // (webhooks.h).
  std::vector<LoadedWebhook> webhooks;
  std::vector<RoutePattern> webhook_routes;

  // A listening address with its routes (docs/api.md): [api] listen, and
  // [api] ui_listen when set.
  struct Listener {
    http::Router router;
    std::unique_ptr<http::HttpServer> server;
    int port = 0;
  };
  Listener http;
  // The second listener of [api] ui_listen (null without it): the UI and
  // the same API routes as `http`.
  std::unique_ptr<Listener> ui_http;
  // Requests' blocking work runs on `workers` ([api] workers), never on the
  // HTTP layer's I/O threads. Result and value waits and follow streams
  // hold no thread while they wait; webhooks, whose guests may wait, run
  // on `waits`. Stopped (joined) by Stop before the listeners are
  // destroyed: their tasks hold Responders.
  std::unique_ptr<http::WorkerPool> workers;
  std::unique_ptr<http::WorkerPool> waits;
  std::atomic<bool> stopping{false};  // ends follow streams
  CancellationToken stop_wait;        // cancelled by Stop: ends result waits

  std::mutex mu;
  std::condition_variable stopped_cv;
  bool stopped = false;  // guarded by mu

  // Requests holding a slot of [api] max_waiters (TryAcquireWaiter).
  std::atomic<uint64_t> waiters{0};
  std::atomic<uint64_t> waiters_refused{0};

  // Counters for /metrics.
  std::mutex metrics_mu;
  std::map<int, uint64_t> responses_by_status;  // guarded by metrics_mu
  // Webhook responses by (index into webhooks, status); guarded by metrics_mu.
  std::map<std::pair<size_t, int>, uint64_t> webhook_responses;
  std::atomic<uint64_t> follow_streams{0};

  // Database snapshots for /metrics, re-read at most every few seconds
  // (metrics.cc). A separate mutex: a refresh reads the database, and the
  // response logger must not wait for it.
  std::mutex snapshots_mu;
  std::chrono::milliseconds snapshot_max_age{5000};  // ServerHooks::metrics_snapshot_max_age
  std::optional<storage::ExecutionCounts> execution_counts;   // guarded by snapshots_mu
  std::chrono::steady_clock::time_point execution_counts_at;  // guarded by snapshots_mu
  std::optional<std::map<std::string, storage::PendingCounts>>
      queue_depths;                                           // by component; snapshots_mu
  std::chrono::steady_clock::time_point queue_depths_at;      // guarded by snapshots_mu
  std::optional<std::vector<storage::DigestCount>> unserved;  // guarded by snapshots_mu
  std::chrono::steady_clock::time_point unserved_at;          // guarded by snapshots_mu
};

// A slot of [api] max_waiters for a request that waits (GET .../result
// with a timeout, a follow stream): false, and counted as refused, when all
// are taken. Every true must be paired with one ReleaseWaiter.
bool TryAcquireWaiter(ServerImpl& d);
void ReleaseWaiter(ServerImpl& d);

// Threads of `waits` (webhook requests): at most this many, and at most
// max_waiters.
constexpr size_t kMaxBlockingWaits = 1536;

// Registers every route of docs/api.md on `listener` and creates its
// HttpServer (api.cc): `impl.http`, and `impl.ui_http` too when [api]
// ui_listen is set. Both share the handlers and state of `impl`.
void InstallRoutes(ServerImpl& impl, ServerImpl::Listener& listener);

// A route handler that runs on `impl.waits` (a request that may wait and
// still blocks: webhooks, follow streams).
http::Router::AsyncHandler OnWaitPool(ServerImpl& impl, http::Router::Handler handler);

// Requests that wait without a thread (api_waits.cc): `start` runs on
// `impl.workers` and either answers at once or starts a service wait
// (service/async_wait.h) that answers through the Responder later.
using WaitStarter = void (*)(ServerImpl& impl, const http::RequestPtr& req,
                             const http::ResponderPtr& out);
http::Router::AsyncHandler OnWorkersAsync(ServerImpl& impl, WaitStarter start);
// A held slot of [api] max_waiters, released when the last copy goes
// (with the wait's callback); null when all are taken.
std::shared_ptr<void> AcquireWaiterSlot(ServerImpl& impl);
// Runs a wait's reads on `impl.workers`.
service::PostFn PostToWorkers(ServerImpl& impl);
// Abandons `wait` when the client goes away before its answer.
void AbandonWithClient(const http::ResponderPtr& out,
                       const std::shared_ptr<service::AsyncWait>& wait);
// Sends `answer` (200 with its JSON, or its error) through `out`.
void SendAnswer(const http::ResponderPtr& out, const Result<core::Json, api::ApiError>& answer);

// Connections open and refused, over every listener (for /metrics).
uint64_t OpenConnections(const ServerImpl& impl);
uint64_t RefusedConnections(const ServerImpl& impl);

// The web UI at /ui/ (ui_routes.cc), on the listener ServesUi names: with
// `[api] ui` on, `impl.ui_http` when [api] ui_listen is set, else
// `impl.http`. IsUiPath tells the auth check which paths of that listener
// are the UI's static files (they need no token).
bool ServesUi(const ServerImpl& impl, const ServerImpl::Listener& listener);
void InstallUiRoutes(ServerImpl& impl, ServerImpl::Listener& listener);
bool IsUiPath(const ServerImpl& impl, const ServerImpl::Listener& listener,
              const std::string& path);

}  // namespace stele::server
