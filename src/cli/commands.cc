#include "cli/commands.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <thread>

#include "cli/api_client.h"

namespace stele::cli {
namespace {

using nlohmann::json;

int Code(ExitCode c) { return static_cast<int>(c); }

// Maps an API failure to the documented exit code.
ExitCode CodeFor(const ApiError& e) {
  switch (e.status) {
    case 0:
      return ExitCode::kServerError;
    case 400:
    case 413:
    case 422:
      return ExitCode::kUsage;
    case 401:
    case 403:
      return ExitCode::kUnauthorized;
    case 404:
      return ExitCode::kNotFound;
    case 408:
      return ExitCode::kTimedOut;
    case 409:
      return ExitCode::kConflict;
    default:
      return ExitCode::kServerError;
  }
}

int Fail(const ApiError& e, const std::string& api_url, std::ostream& err) {
  if (e.status == 0) {
    err << "stele: cannot reach the server at " << api_url << ": " << e.message << "\n";
  } else {
    err << "stele: " << (e.message.empty() ? e.kind : e.message) << " (" << e.kind << ", HTTP "
        << e.status << ")\n";
  }
  return Code(CodeFor(e));
}

// A string field, or the compact JSON of a non-string one, or "".
std::string Field(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "";
  const json& v = j[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string Shorten(std::string s, size_t max = 200) {
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

// "locked run=Run_... lock_expires_at=..." from {"status": "locked", ...}.
std::string StateLine(const json& state) {
  if (!state.is_object()) return state.dump();
  std::string line = Field(state, "status");
  for (const auto& [k, v] : state.items()) {
    if (k == "status") continue;
    line += " " + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return line;
}

// The result document {"ok": v} | {"err": v} | {"execution_error": {...}}.
bool ResultIsOk(const json& result) { return result.is_object() && result.contains("ok"); }

std::string ResultLine(const json& result) {
  if (!result.is_object()) return result.dump();
  if (result.contains("ok")) return "ok " + result["ok"].dump();
  if (result.contains("err")) return "err " + result["err"].dump();
  if (result.contains("execution_error")) {
    const json& e = result["execution_error"];
    std::string line = "execution error " + Field(e, "kind");
    if (std::string reason = Field(e, "reason"); !reason.empty()) line += ": " + reason;
    if (std::string detail = Field(e, "detail"); !detail.empty()) line += "\n  " + detail;
    return line;
  }
  return result.dump();
}

bool IsFinished(const json& status_doc) {
  return status_doc.is_object() && status_doc.contains("pending_state") &&
         Field(status_doc["pending_state"], "status") == "finished";
}

void PrintExecution(const json& doc, std::ostream& out) {
  auto row = [&](const char* label, const std::string& value) {
    if (!value.empty()) out << std::left << std::setw(12) << label << value << "\n";
  };
  row("Execution:", Field(doc, "execution_id"));
  row("Function:", Field(doc, "ffqn"));
  row("State:", doc.contains("pending_state") ? StateLine(doc["pending_state"]) : "");
  row("Created:", Field(doc, "created_at"));
  row("Scheduled:", Field(doc, "first_scheduled_at"));
  row("Component:", Field(doc, "component_digest"));
  if (doc.contains("result") && !doc["result"].is_null()) row("Result:", ResultLine(doc["result"]));
}

std::string ExecPath(const std::string& id) { return "/v1/executions/" + ApiClient::EncodeSegment(id); }

int ExitForFinished(const json& doc) {
  const json& result = doc.contains("result") ? doc["result"] : doc;
  return ResultIsOk(result) ? Code(ExitCode::kOk) : Code(ExitCode::kExecutionFailed);
}

// Streams state changes until the execution is finished. Uses the SSE
// endpoint for prompt updates and re-reads the status after every stream
// end, so that a restarted server or a dropped connection only delays the
// output; bounded by kMaxConsecutiveFailures reconnects in a row.
int Follow(ApiClient& api, const Command& cmd, const std::string& id, std::ostream& out,
           std::ostream& err) {
  constexpr int kMaxConsecutiveFailures = 20;
  constexpr auto kRetryPause = std::chrono::milliseconds(500);
  std::string last_state;
  int failures = 0;
  bool stream_supported = true;
  auto show_state = [&](const json& state) {
    std::string line = StateLine(state);
    if (line == last_state) return;
    last_state = line;
    if (!cmd.global.json) out << "state: " << line << "\n" << std::flush;
  };
  while (true) {
    auto got = api.Get(ExecPath(id));
    if (!got) {
      if (got.error().status != 0 && got.error().status < 500) return Fail(got.error(), cmd.global.api_url, err);
      if (++failures > kMaxConsecutiveFailures) return Fail(got.error(), cmd.global.api_url, err);
      std::this_thread::sleep_for(kRetryPause);
      continue;
    }
    failures = 0;
    const json& doc = got->body;
    if (cmd.global.json) {
      std::string line = doc.dump();
      if (line != last_state) out << line << "\n" << std::flush;
      last_state = line;
    } else if (doc.contains("pending_state")) {
      show_state(doc["pending_state"]);
    }
    if (IsFinished(doc)) {
      if (!cmd.global.json && doc.contains("result")) out << "result: " << ResultLine(doc["result"]) << "\n";
      return ExitForFinished(doc);
    }
    if (stream_supported) {
      bool saw_event = false;
      auto streamed = api.Stream(
          ExecPath(id) + "/follow",
          [&](const std::string& data) {
            saw_event = true;
            json event = json::parse(data, nullptr, /*allow_exceptions=*/false);
            if (event.is_discarded()) return true;
            const json* state = nullptr;
            if (event.is_object() && event.contains("pending_state")) {
              state = &event["pending_state"];
            } else if (event.is_object() && event.contains("status")) {
              state = &event;
            }
            if (state == nullptr) {
              // `event: finished` carries the result and ends the stream.
              return !(event.is_object() && event.contains("result"));
            }
            if (cmd.global.json) {
              out << event.dump() << "\n" << std::flush;
            } else {
              show_state(*state);
            }
            return Field(*state, "status") != "finished";
          },
          std::chrono::seconds(60));
      if (!streamed && streamed.error().status == 404) {
        stream_supported = false;  // no SSE route: fall back to long polls
      } else if (!streamed && streamed.error().status != 0 && streamed.error().status < 500) {
        return Fail(streamed.error(), cmd.global.api_url, err);
      } else if (!streamed || !saw_event) {
        std::this_thread::sleep_for(kRetryPause);
      }
      continue;
    }
    auto waited = api.Get(ExecPath(id) + "/result", {{"timeout", "20"}}, std::chrono::seconds(50));
    if (!waited && waited.error().status != 408 && waited.error().status != 0 &&
        waited.error().status < 500) {
      return Fail(waited.error(), cmd.global.api_url, err);
    }
    if (!waited && waited.error().status != 408) std::this_thread::sleep_for(kRetryPause);
  }
}

void PrintList(const json& body, std::ostream& out) {
  const json& items = body.contains("executions") ? body["executions"] : json::array();
  size_t id_w = 12, fn_w = 8;
  for (const json& e : items) {
    id_w = std::max(id_w, Field(e, "execution_id").size());
    fn_w = std::max(fn_w, Field(e, "ffqn").size());
  }
  out << std::left << std::setw(static_cast<int>(id_w + 2)) << "EXECUTION"
      << std::setw(static_cast<int>(fn_w + 2)) << "FUNCTION" << std::setw(22) << "STATE"
      << "CREATED\n";
  for (const json& e : items) {
    std::string state = e.contains("pending_state") ? Field(e["pending_state"], "status") : "";
    if (state == "finished" && e.contains("pending_state")) {
      std::string kind = Field(e["pending_state"], "result_kind");
      if (!kind.empty()) state += " (" + kind + ")";
    }
    out << std::left << std::setw(static_cast<int>(id_w + 2)) << Field(e, "execution_id")
        << std::setw(static_cast<int>(fn_w + 2)) << Field(e, "ffqn") << std::setw(22) << state
        << Field(e, "created_at") << "\n";
  }
  if (std::string next = Field(body, "next_cursor"); !next.empty()) {
    out << "next page: --cursor " << next << "\n";
  }
}

// The type of an event document: {"type": "x", ...} or {"x": {...}}.
std::string EventType(const json& event) {
  if (!event.is_object()) return event.dump();
  if (event.contains("type") && event["type"].is_string()) return event["type"].get<std::string>();
  if (event.size() == 1) return event.begin().key();
  return "";
}

void PrintEvents(const json& body, const char* list_key, std::ostream& out) {
  const json& items = body.is_object() && body.contains(list_key) ? body[list_key]
                      : body.is_array()                           ? body
                                                                  : json::array();
  for (const json& item : items) {
    const json& event = item.contains("event")      ? item["event"]
                        : item.contains("response") ? item["response"]
                                                    : item;
    std::string lead = Field(item, "version");
    if (lead.empty()) lead = Field(item, "cursor");
    std::string type = EventType(event);
    // The payload without repeating the type: {"locked": {...}} -> {...}.
    const json& payload = event.is_object() && event.size() == 1 ? event.begin().value() : event;
    out << std::left << std::setw(6) << lead << " " << std::setw(27) << Field(item, "created_at")
        << " " << std::setw(24) << type << " " << Shorten(payload.dump(), 160) << "\n";
  }
  if (body.is_object()) {
    if (std::string next = Field(body, "next_cursor"); !next.empty()) {
      out << "next page: --cursor " << next << "\n";
    }
    if (std::string next = Field(body, "next_since_version"); !next.empty()) {
      out << "next page: --since-version " << next << "\n";
    }
  }
}

void PrintComponents(const json& body, std::ostream& out) {
  const json& items = body.contains("components") ? body["components"]
                      : body.is_array()            ? body
                                                   : json::array();
  for (const json& c : items) {
    out << Field(c, "name") << "  " << Field(c, "type");
    std::string digest = Field(c, "digest");
    if (digest.empty()) digest = Field(c, "component_digest");
    if (!digest.empty()) out << "  " << digest;
    out << "\n";
    for (const char* key : {"exports", "functions"}) {
      if (!c.contains(key) || !c[key].is_array()) continue;
      for (const json& f : c[key]) {
        std::string name = f.is_string() ? f.get<std::string>() : Field(f, "ffqn");
        out << "  " << name;
        if (f.is_object() && f.contains("params")) out << " " << Shorten(f["params"].dump(), 120);
        out << "\n";
      }
    }
  }
}

}  // namespace

int RunCommand(const Command& cmd, std::ostream& out, std::ostream& err) {
  if (cmd.kind == CommandKind::kHelp) {
    out << cmd.help_text;
    return Code(ExitCode::kOk);
  }
  if (cmd.kind == CommandKind::kVersion) {
    out << "stele " << STELE_VERSION_STRING << "\n";
    return Code(ExitCode::kOk);
  }
  ApiClient api(cmd.global.api_url, cmd.global.token);
  auto fail = [&](const ApiError& e) { return Fail(e, cmd.global.api_url, err); };
  auto emit_json = [&](const json& body) { out << body.dump() << "\n"; };
  const std::string id = cmd.execution_id.value_or("");

  switch (cmd.kind) {
    case CommandKind::kExecutionSubmit: {
      json req = {{"ffqn", cmd.ffqn}, {"params", cmd.params}};
      if (cmd.execution_id) req["execution_id"] = *cmd.execution_id;
      if (cmd.scheduled_at) req["scheduled_at"] = *cmd.scheduled_at;
      auto res = api.Post("/v1/executions", req);
      if (!res) return fail(res.error());
      std::string new_id = Field(res->body, "execution_id");
      if (new_id.empty()) {
        err << "stele: the server's answer has no execution_id: " << Shorten(res->body.dump()) << "\n";
        return Code(ExitCode::kServerError);
      }
      if (cmd.global.json) {
        emit_json(res->body);
      } else {
        out << new_id << "\n" << std::flush;
      }
      if (!cmd.follow) return Code(ExitCode::kOk);
      return Follow(api, cmd, new_id, out, err);
    }
    case CommandKind::kExecutionGet: {
      if (cmd.follow) return Follow(api, cmd, id, out, err);
      auto res = api.Get(ExecPath(id));
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body);
      } else {
        PrintExecution(res->body, out);
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kExecutionResult: {
      uint32_t timeout = cmd.timeout_seconds.value_or(0);
      auto res = api.Get(ExecPath(id) + "/result", {{"timeout", std::to_string(timeout)}},
                         std::chrono::seconds(timeout + 30));
      if (!res) return fail(res.error());
      const json& result = res->body.contains("result") ? res->body["result"] : res->body;
      if (cmd.global.json) {
        emit_json(result);
      } else {
        out << ResultLine(result) << "\n";
      }
      return ResultIsOk(result) ? Code(ExitCode::kOk) : Code(ExitCode::kExecutionFailed);
    }
    case CommandKind::kExecutionList: {
      Query q;
      const ListFilters& f = cmd.list;
      if (f.ffqn_prefix) q.emplace_back("ffqn_prefix", *f.ffqn_prefix);
      if (f.execution_id_prefix) q.emplace_back("execution_id_prefix", *f.execution_id_prefix);
      if (f.show_derived) q.emplace_back("show_derived", "true");
      if (f.hide_finished) q.emplace_back("hide_finished", "true");
      if (f.cursor) q.emplace_back("cursor", *f.cursor);
      if (f.direction) q.emplace_back("direction", *f.direction);
      if (f.length) q.emplace_back("length", std::to_string(*f.length));
      auto res = api.Get("/v1/executions", q);
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body);
      } else {
        PrintList(res->body, out);
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kExecutionEvents:
    case CommandKind::kExecutionResponses: {
      bool events = cmd.kind == CommandKind::kExecutionEvents;
      Query q;
      if (cmd.since_version) q.emplace_back("since_version", std::to_string(*cmd.since_version));
      if (cmd.cursor) q.emplace_back("cursor", *cmd.cursor);
      if (cmd.length) q.emplace_back("length", std::to_string(*cmd.length));
      auto res = api.Get(ExecPath(id) + (events ? "/events" : "/responses"), q);
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body);
      } else {
        PrintEvents(res->body, events ? "events" : "responses", out);
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kExecutionCancel: {
      std::string path = cmd.cancel_is_delay ? "/v1/delays/" + ApiClient::EncodeSegment(id) + "/cancel"
                                             : ExecPath(id) + "/cancel";
      auto res = api.Put(path, json::object());
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body);
      } else {
        std::string outcome = Field(res->body, "outcome");
        out << (outcome.empty() ? "ok" : outcome) << "\n";
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kExecutionStub: {
      auto res = api.Put(ExecPath(id) + "/stub", json{{"result", cmd.stub_result}});
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body.is_null() ? json::object() : res->body);
      } else {
        std::string outcome = Field(res->body, "outcome");
        out << (outcome.empty() ? "stubbed" : outcome) << "\n";
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kComponentList: {
      auto res = api.Get("/v1/components");
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body);
      } else {
        PrintComponents(res->body, out);
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kHelp:
    case CommandKind::kVersion:
      break;
  }
  return Code(ExitCode::kOk);
}

int CliMain(const std::vector<std::string>& args, const EnvLookup& env, std::ostream& out,
            std::ostream& err) {
  auto cmd = ParseArgs(args, env);
  if (!cmd) {
    err << "stele: " << cmd.error().message << "\n";
    return Code(ExitCode::kUsage);
  }
  return RunCommand(*cmd, out, err);
}

}  // namespace stele::cli
