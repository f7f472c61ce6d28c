// The HTTP operations beyond submit/status/result/list (api_ops.cc):
// events, responses, cancel, stub, upgrade, backtrace, components, follow
// (SSE), healthz, metrics (metrics.cc). Internal to src/server.
//
// Threading: handlers run on ServerImpl's worker pools; they only use the
// thread-safe parts of ServerImpl.
#pragma once

#include <string>

#include "base/result.h"
#include "core/json.h"
#include "core/pending_state.h"
#include "http/router.h"
#include "server/api_util.h"
#include "server/server_impl.h"

namespace stele::server::api {

using Handler = Result<core::Json, ApiError> (*)(ServerImpl& d, const http::Request& req);
// Runs `h` and replies 200 with its JSON, or with its error (api.cc).
http::Router::Handler Wrap(ServerImpl& d, Handler h);

// {"status": "pending_at"|"locked"|"blocked_by_join_set"|"finished", ...} (api.cc).
core::Json PendingStateToJson(const core::PendingState& state);

void InstallOperationRoutes(ServerImpl& d, http::Router& router, const std::string& id_path);
// GET /v1/executions/{id}/follow: a Server-Sent Events stream that holds
// no thread between its rounds (api_follow.cc).
http::Router::AsyncHandler FollowHandler(ServerImpl& d);
// /v1/executions/{id}/messages/{channel} and .../values (api_messages.cc).
void InstallMessageRoutes(ServerImpl& d, http::Router& router, const std::string& id_path);
// /v1/schedules... (api_schedules.cc).
void InstallScheduleRoutes(ServerImpl& d, http::Router& router);

// GET /metrics: Prometheus text (metrics.cc; the metrics are in docs/api.md).
void Metrics(ServerImpl& d, const http::Request& req, http::Response& res);

}  // namespace stele::server::api
