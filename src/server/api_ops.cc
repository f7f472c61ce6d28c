// HTTP operations (api_ops.h): events, responses, cancel, stub, upgrade,
// backtrace, components, follow, healthz (metrics: metrics.cc).
#include "server/api_ops.h"

#include <chrono>
#include <optional>

#include "core/json_codec.h"
#include "storage/operations.h"

namespace stele::server::api {

namespace {

constexpr uint64_t kMaxEventsPage = 1000;

Result<core::Json, ApiError> ListEvents(ServerImpl& d, const httplib::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto id, PathExecutionId(req));
  STELE_ASSIGN_OR_RETURN(auto since, QueryUint(req, "since_version", 0, UINT32_MAX));
  STELE_ASSIGN_OR_RETURN(auto length, QueryUint(req, "length", 1, kMaxEventsPage));
  auto events = d.api->ListExecutionEvents(
      id, core::Version(static_cast<core::Version::Type>(since.value_or(0))),
      static_cast<core::Version::Type>(length.value_or(100)), true);
  if (!events) return Unexpected(FromRead(events.error(), "events of " + id.ToString()));
  core::Json list = core::Json::array();
  for (const auto& event : *events) list.push_back(core::ToJson(event));
  core::Json out = {{"events", list}};
  if (!events->empty() && events->size() == length.value_or(100)) {
    out["next_since_version"] = events->back().version.value() + 1;
  }
  return out;
}

Result<core::Json, ApiError> ListResponses(ServerImpl& d, const httplib::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto id, PathExecutionId(req));
  STELE_ASSIGN_OR_RETURN(auto cursor, QueryUint(req, "cursor", 0, UINT32_MAX));
  STELE_ASSIGN_OR_RETURN(auto length, QueryUint(req, "length", 1, kMaxEventsPage));
  auto len = static_cast<uint16_t>(length.value_or(100));
  // Without a cursor: from the first response on (cursor 0 included).
  auto pagination =
      cursor ? core::Pagination<uint32_t>::NewerThan(len, static_cast<uint32_t>(*cursor), false)
             : core::Pagination<uint32_t>::NewerThan(len, 0, true);
  auto page = d.api->ListResponses(id, pagination);
  if (!page) return Unexpected(FromRead(page.error(), "responses of " + id.ToString()));
  core::Json list = core::Json::array();
  for (const auto& r : *page) {
    list.push_back({{"cursor", r.cursor}, {"response", core::ToJson(r.event)}});
  }
  core::Json out = {{"responses", list}};
  if (!page->empty() && page->size() == len) out["next_cursor"] = page->back().cursor;
  return out;
}

core::Json Outcome(storage::CancelOutcome outcome) {
  return {{"outcome", outcome == storage::CancelOutcome::kCancelled ? "cancelled"
                                                                    : "already_finished"}};
}

Result<core::Json, ApiError> CancelExecution(ServerImpl& d, const httplib::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto id, PathExecutionId(req));
  auto created = d.api->GetCreateRequest(id);
  if (!created) return Unexpected(FromRead(created.error(), "cancel " + id.ToString()));
  auto type = created->component_id.component_type;
  if (type == core::ComponentType::kWorkflow || type == core::ComponentType::kWorkflowNative) {
    return Unexpected(Validation("execution " + id.ToString() +
                                 " is a workflow; only activities and delays can be cancelled"));
  }
  auto outcome = executor::CancelActivity(*d.api, d.cancels.get(), id, d.clock->Now());
  if (!outcome) return Unexpected(FromWrite(outcome.error(), "cancel " + id.ToString()));
  return Outcome(*outcome);
}

Result<core::Json, ApiError> CancelDelay(ServerImpl& d, const httplib::Request& req) {
  std::string text = req.matches.size() > 1 ? std::string(req.matches[1]) : std::string();
  auto delay = core::DelayId::Parse(text.substr(0, 512));
  if (!delay || text.size() > 512) {
    return Unexpected(Validation("invalid delay id `" + text.substr(0, 512) +
                                 "` (expected Delay_<ULID>...)"));
  }
  auto outcome = storage::CancelDelay(*d.api, *delay, d.clock->Now());
  if (!outcome) return Unexpected(FromWrite(outcome.error(), "cancel " + text));
  return Outcome(*outcome);
}

Result<core::Json, ApiError> Stub(ServerImpl& d, const httplib::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto id, PathExecutionId(req));
  STELE_ASSIGN_OR_RETURN(core::Json body, ParseBodyObject(req));
  STELE_TRY(CheckKeys(body, {"result"}));
  if (!body.contains("result")) {
    return Unexpected(Validation("`result` is required: {\"ok\": value} or {\"err\": value}"));
  }
  STELE_ASSIGN_OR_RETURN(auto result, ResultFromJson(body["result"]));
  auto derived = id.AsDerived();
  if (!derived) {
    return Unexpected(Validation("execution " + id.ToString() +
                                 " is top-level; only child executions of stub activities can "
                                 "be stubbed"));
  }
  auto created = d.api->GetCreateRequest(id);
  if (!created) return Unexpected(FromRead(created.error(), "stub " + id.ToString()));
  if (created->component_id.component_type != core::ComponentType::kActivityStub) {
    return Unexpected(Validation("execution " + id.ToString() + " runs " +
                                 created->ffqn.ToString() + ", which is not a stub activity"));
  }
  if (auto sig = d.signatures.find(created->ffqn); sig != d.signatures.end()) {
    Result<void, std::string> checked;
    if (const auto* ok = std::get_if<core::ReturnValueOk>(&result)) {
      checked = core::CheckReturnValue(sig->second, *ok);
    } else {
      checked = core::CheckReturnValue(sig->second, std::get<core::ReturnValueErr>(result));
    }
    if (!checked) {
      return Unexpected(Validation("result of `" + created->ffqn.ToString() + "`: " + checked.error()));
    }
  }
  auto [parent, join_set] = derived->SplitToParts();
  auto stubbed = storage::StubExecution(*d.api, *derived, parent, join_set, d.clock->Now(), result);
  if (!stubbed) {
    if (stubbed.error().IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kConflict)) {
      return Unexpected(Conflict("execution " + id.ToString() + " holds a different result already"));
    }
    return Unexpected(FromWrite(stubbed.error(), "stub " + id.ToString()));
  }
  return core::Json{{"execution_id", id.ToString()}};
}

Result<core::Json, ApiError> Upgrade(ServerImpl& d, const httplib::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto id, PathExecutionId(req));
  STELE_ASSIGN_OR_RETURN(core::Json body, ParseBodyObject(req));
  STELE_TRY(CheckKeys(body, {"old_digest", "new_digest"}));
  std::optional<core::InputContentDigest> digests[2];
  const char* keys[2] = {"old_digest", "new_digest"};
  for (int i = 0; i < 2; ++i) {
    if (!body.contains(keys[i]) || !body[keys[i]].is_string()) {
      return Unexpected(Validation(std::string("`") + keys[i] + "` is required: sha256:<64 hex>"));
    }
    auto parsed = core::InputContentDigest::Parse(body[keys[i]].get<std::string>());
    if (!parsed) {
      return Unexpected(Validation(std::string("`") + keys[i] + "`: " + parsed.error().message));
    }
    digests[i] = *parsed;
  }
  auto upgraded = d.api->UpgradeExecutionComponent(id, *digests[0], *digests[1]);
  if (!upgraded) {
    if (upgraded.error().IsNonRetriable(storage::DbErrorWriteNonRetriable::Kind::kConflict)) {
      return Unexpected(Conflict("execution " + id.ToString() + " does not run component digest " +
                                 digests[0]->ToString()));
    }
    return Unexpected(FromWrite(upgraded.error(), "upgrade " + id.ToString()));
  }
  return core::Json{{"execution_id", id.ToString()}, {"component_digest", digests[1]->ToString()}};
}

Result<core::Json, ApiError> Backtrace(ServerImpl& d, const httplib::Request& req) {
  STELE_ASSIGN_OR_RETURN(auto id, PathExecutionId(req));
  storage::BacktraceFilter filter = storage::BacktraceFilter::Last();
  std::string version = req.has_param("version") ? req.get_param_value("version") : "last";
  if (version == "first") {
    filter = storage::BacktraceFilter::First();
  } else if (version != "last") {
    STELE_ASSIGN_OR_RETURN(auto v, QueryUint(req, "version", 0, UINT32_MAX));
    filter = storage::BacktraceFilter::Specific(core::Version(static_cast<core::Version::Type>(*v)));
  }
  auto state = d.api->GetPendingState(id);
  if (!state) return Unexpected(FromRead(state.error(), "backtrace of " + id.ToString()));
  auto bt = d.api->GetBacktrace(id, filter);
  if (!bt) {
    if (bt.error().IsNotFound()) {
      return Unexpected(NotFound("no backtrace stored for execution " + id.ToString() +
                                 " (version " + version + "); only workflows record backtraces"));
    }
    return Unexpected(FromRead(bt.error(), "backtrace of " + id.ToString()));
  }
  return core::Json{{"execution_id", id.ToString()},
                    {"component_id", core::ToJson(bt->component_id)},
                    {"version_min_including", bt->version_min_including.value()},
                    {"version_max_excluding", bt->version_max_excluding.value()},
                    {"wasm_backtrace", core::ToJson(bt->wasm_backtrace)}};
}

Result<core::Json, ApiError> Components(ServerImpl& d, const httplib::Request&) {
  core::Json list = core::Json::array();
  for (const auto& c : d.components) {
    core::Json functions = core::Json::array();
    for (const auto& f : c.functions) functions.push_back(core::FunctionSignatureToJson(f));
    list.push_back({{"name", c.component_id.name},
                    {"type", std::string(core::ComponentTypeName(c.component_id.component_type))},
                    {"digest", c.component_id.input_digest.ToString()},
                    {"functions", functions}});
  }
  return core::Json{{"components", list}};
}

// Server-Sent Events: `event: state` with the pending state on every change,
// then `event: finished` with the result, then the stream ends.
void Follow(ServerImpl& d, const httplib::Request& req, httplib::Response& res) {
  auto id = PathExecutionId(req);
  if (!id) return ReplyError(res, id.error());
  auto state = d.api->GetPendingState(*id);
  if (!state) return ReplyError(res, FromRead(state.error(), "follow " + id->ToString()));
  // A stream holds its connection's thread: one of [api] max_waiters,
  // released when the stream ends (the releaser below).
  if (!TryAcquireWaiter(d)) {
    return ReplyError(res, Overloaded("too many waiting requests (the limit is " +
                                      std::to_string(d.config.api.max_waiters) +
                                      ", [api] max_waiters); retry later"));
  }
  auto deadline = std::chrono::steady_clock::now() + d.config.api.max_follow;
  auto last = std::make_shared<std::string>();
  core::ExecutionId eid = *id;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [&d, eid, last, deadline](size_t, httplib::DataSink& sink) {
        if (d.stopping || std::chrono::steady_clock::now() > deadline) {
          sink.done();
          return true;
        }
        auto current = d.api->GetPendingState(eid);
        if (!current) {
          std::string msg = "event: error\ndata: " +
                            core::SerializeJson({{"message", current.error().ToString()}}) + "\n\n";
          sink.write(msg.data(), msg.size());
          sink.done();
          return true;
        }
        std::string text = core::SerializeJson(PendingStateToJson(*current));
        if (text != *last) {
          *last = text;
          std::string msg = "event: state\ndata: " + text + "\n\n";
          if (!sink.write(msg.data(), msg.size())) return false;
        }
        if (current->IsFinished()) {
          auto result = d.api->WaitForFinishedResult(eid, storage::WaitOptions::For(std::chrono::seconds(1)));
          core::Json data = {{"execution_id", eid.ToString()}};
          if (result) data["result"] = ResultToJson(*result);
          std::string msg = "event: finished\ndata: " + core::SerializeJson(data) + "\n\n";
          sink.write(msg.data(), msg.size());
          sink.done();
          return true;
        }
        // Wakes at once when the execution finishes; otherwise polls the
        // state again after a short wait (locks and unlocks have no waiter).
        (void)d.api->WaitForFinishedResult(
            eid, storage::WaitOptions::For(std::chrono::milliseconds(200), d.stop_wait));
        return sink.is_writable();
      },
      [&d](bool) {
        --d.follow_streams;
        ReleaseWaiter(d);
      });
  ++d.follow_streams;
}

void Healthz(ServerImpl& d, const httplib::Request&, httplib::Response& res) {
  core::ExecutionListPagination one =
      core::Pagination<std::optional<core::ExecutionId>>::OlderThan(1, std::nullopt, false);
  auto rows = d.api->ListExecutions(std::nullopt, true, one);
  if (!rows) return ReplyError(res, FromGeneric(rows.error(), "database check"));
  ReplyJson(res, 200, {{"status", "ok"}});
}

}  // namespace

void InstallOperationRoutes(ServerImpl& d, httplib::Server& http, const std::string& id_path) {
  http.Get(id_path + "/events", Wrap(d, ListEvents));
  http.Get(id_path + "/responses", Wrap(d, ListResponses));
  http.Put(id_path + "/cancel", Wrap(d, CancelExecution));
  http.Put("/v1/delays/([^/]+)/cancel", Wrap(d, CancelDelay));
  http.Put(id_path + "/stub", Wrap(d, Stub));
  http.Put(id_path + "/upgrade", Wrap(d, Upgrade));
  http.Get(id_path + "/backtrace", Wrap(d, Backtrace));
  http.Get("/v1/components", Wrap(d, Components));
  http.Get(id_path + "/follow",
           [&d](const httplib::Request& req, httplib::Response& res) { Follow(d, req, res); });
  http.Get("/healthz", [&d](const httplib::Request& req, httplib::Response& res) { Healthz(d, req, res); });
  http.Get("/metrics", [&d](const httplib::Request& req, httplib::Response& res) { Metrics(d, req, res); });
}

}  // namespace stele::server::api
