#include "cli/commands.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "cli/api_client.h"
#include "cli/print.h"
#include "core/json_codec.h"

namespace stele::cli {
namespace {

using core::Json;

std::string Abbreviated(std::string s, size_t max = 200) {
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

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

// The result document {"ok": v} | {"err": v} | {"execution_error": {...}}.
bool ResultIsOk(const Json& result) { return result.is_object() && result.contains("ok"); }

bool IsFinished(const Json& status_doc) {
  return status_doc.is_object() && status_doc.contains("pending_state") &&
         Field(status_doc["pending_state"], "status") == "finished";
}

std::string ExecPath(const std::string& id) {
  return "/v1/executions/" + ApiClient::EncodeSegment(id);
}
std::string SchedulePath(const std::string& name) {
  return "/v1/schedules/" + ApiClient::EncodeSegment(name);
}

int ExitForFinished(const Json& doc) {
  const Json& result = doc.contains("result") ? doc["result"] : doc;
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
  auto show_state = [&](const Json& state) {
    std::string line = StateLine(state);
    if (line == last_state) return;
    last_state = line;
    if (!cmd.global.json) out << "state: " << line << "\n" << std::flush;
  };
  while (true) {
    auto got = api.Get(ExecPath(id));
    if (!got) {
      if (got.error().status != 0 && got.error().status < 500)
        return Fail(got.error(), cmd.global.api_url, err);
      if (++failures > kMaxConsecutiveFailures) return Fail(got.error(), cmd.global.api_url, err);
      std::this_thread::sleep_for(kRetryPause);
      continue;
    }
    failures = 0;
    const Json& doc = got->body;
    if (cmd.global.json) {
      std::string line = core::SerializeJson(doc);
      if (line != last_state) out << line << "\n" << std::flush;
      last_state = line;
    } else if (doc.contains("pending_state")) {
      show_state(doc["pending_state"]);
    }
    if (IsFinished(doc)) {
      if (!cmd.global.json && doc.contains("result"))
        out << "result: " << ResultLine(doc["result"]) << "\n";
      return ExitForFinished(doc);
    }
    if (stream_supported) {
      bool saw_event = false;
      auto streamed = api.Stream(
          ExecPath(id) + "/follow",
          [&](const std::string& data) {
            saw_event = true;
            auto parsed = core::ParseJson(data);
            if (!parsed) return true;
            const Json& event = *parsed;
            const Json* state = nullptr;
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
              out << core::SerializeJson(event) << "\n" << std::flush;
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
  auto emit_json = [&](const Json& body) { out << core::SerializeJson(body) << "\n"; };
  const std::string id = cmd.execution_id.value_or("");

  switch (cmd.kind) {
    case CommandKind::kExecutionSubmit: {
      Json req = {{"ffqn", cmd.ffqn}, {"params", cmd.params}};
      if (cmd.execution_id) req["execution_id"] = *cmd.execution_id;
      if (cmd.scheduled_at) req["scheduled_at"] = *cmd.scheduled_at;
      if (cmd.submit_timeout) req["timeout"] = *cmd.submit_timeout;
      if (cmd.deadline) req["deadline"] = *cmd.deadline;
      if (cmd.max_retries) req["retry"] = Json{{"max_retries", *cmd.max_retries}};
      auto res = api.Post("/v1/executions", req);
      if (!res) return fail(res.error());
      std::string new_id = Field(res->body, "execution_id");
      if (new_id.empty()) {
        err << "stele: the server's answer has no execution_id: "
            << Abbreviated(core::SerializeJson(res->body)) << "\n";
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
      const Json& result = res->body.contains("result") ? res->body["result"] : res->body;
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
      if (f.status) q.emplace_back("status", *f.status);
      if (f.cursor) q.emplace_back("cursor", *f.cursor);
      if (f.direction) q.emplace_back("direction", *f.direction);
      if (f.length) q.emplace_back("length", std::to_string(*f.length));
      auto res = api.Get("/v1/executions", q);
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body);
      } else {
        PrintList(res->body, cmd, out);
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
        if (events) {
          PrintEvents(res->body, cmd, out);
        } else {
          PrintResponses(res->body, cmd, out);
        }
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kExecutionCancel:
    case CommandKind::kExecutionTerminate:
    case CommandKind::kExecutionPause:
    case CommandKind::kExecutionResume: {
      std::string path;
      switch (cmd.kind) {
        case CommandKind::kExecutionTerminate:
          path = ExecPath(id) + "/terminate";
          break;
        case CommandKind::kExecutionPause:
          path = ExecPath(id) + "/pause";
          break;
        case CommandKind::kExecutionResume:
          path = ExecPath(id) + "/resume";
          break;
        default:
          path = cmd.cancel_is_delay ? "/v1/delays/" + ApiClient::EncodeSegment(id) + "/cancel"
                                     : ExecPath(id) + "/cancel";
      }
      Json body = Json::object();
      if (cmd.cancel_grace) body["grace"] = *cmd.cancel_grace;
      if (cmd.cancel_reason) body["reason"] = *cmd.cancel_reason;
      auto res = api.Put(path, body);
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
      auto res = api.Put(ExecPath(id) + "/stub", Json{{"result", cmd.stub_result}});
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body.is_null() ? Json::object() : res->body);
      } else {
        std::string outcome = Field(res->body, "outcome");
        out << (outcome.empty() ? "stubbed" : outcome) << "\n";
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kExecutionSend: {
      Json body{{"body", cmd.message_body}};
      if (cmd.message_id) body["message_id"] = *cmd.message_id;
      auto res =
          api.Post(ExecPath(id) + "/messages/" + ApiClient::EncodeSegment(cmd.channel), body);
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body);
      } else {
        out << Field(res->body, "message_id") << "\n";
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kExecutionValues: {
      auto res = api.Get(ExecPath(id) + "/values");
      if (!res) return fail(res.error());
      const Json values = res->body.contains("values") ? res->body["values"] : Json::array();
      if (cmd.global.json) {
        emit_json(values);
      } else {
        for (const Json& row : values) {
          out << (row.contains("key") ? row["key"].get<std::string>() : std::string()) << "\t"
              << (row.contains("version") ? row["version"].dump() : std::string()) << "\t"
              << (row.contains("value") ? core::SerializeJson(row["value"]) : std::string())
              << "\n";
        }
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kExecutionValue: {
      const uint32_t timeout = cmd.timeout_seconds.value_or(0);
      Query q{{"timeout", std::to_string(timeout)}};
      if (cmd.after_version) q.emplace_back("after_version", std::to_string(*cmd.after_version));
      auto res = api.Get(ExecPath(id) + "/values/" + ApiClient::EncodeSegment(cmd.value_key), q,
                         std::chrono::seconds(timeout + 30));
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body);
      } else {
        out << (res->body.contains("value") ? core::SerializeJson(res->body["value"])
                                            : std::string("null"))
            << "\n";
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kExecutionUpgrade: {
      // The API moves an execution from the digest the caller saw: without
      // --from, the one it runs now (a concurrent upgrade between the two
      // requests then makes this one a conflict, exit 5).
      std::string from = cmd.upgrade_from.value_or("");
      if (from.empty()) {
        auto got = api.Get(ExecPath(id));
        if (!got) return fail(got.error());
        from = Field(got->body, "component_digest");
        if (from.empty()) {
          err << "stele: the server's answer has no component_digest: "
              << Abbreviated(core::SerializeJson(got->body)) << "\n";
          return Code(ExitCode::kServerError);
        }
      }
      auto res = api.Put(
          ExecPath(id) + "/upgrade",
          Json{{"old_digest", from}, {"new_digest", cmd.upgrade_digest}, {"force", cmd.force}});
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body);
      } else {
        out << "upgraded " << id << " from " << from << " to " << cmd.upgrade_digest << "\n";
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
    case CommandKind::kScheduleList: {
      auto res = api.Get("/v1/schedules");
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body);
      } else {
        PrintSchedules(res->body, out);
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kScheduleCreate: {
      const ScheduleArgs& a = cmd.schedule;
      Json req = {
          {"name", a.name}, {"schedule", a.expression}, {"ffqn", a.ffqn}, {"params", a.params}};
      if (a.time_zone) req["time_zone"] = *a.time_zone;
      if (a.overlap) req["overlap"] = *a.overlap;
      if (a.catch_up) req["catch_up"] = *a.catch_up;
      if (a.catch_up_limit) req["catch_up_limit"] = *a.catch_up_limit;
      auto res = api.Post("/v1/schedules", req);
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body);
      } else {
        PrintSchedule(res->body, out);
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kScheduleGet:
    case CommandKind::kSchedulePause:
    case CommandKind::kScheduleResume: {
      const std::string path = SchedulePath(cmd.schedule.name);
      auto res = cmd.kind == CommandKind::kScheduleGet ? api.Get(path)
                 : cmd.kind == CommandKind::kSchedulePause
                     ? api.Put(path + "/pause", Json::object())
                     : api.Put(path + "/resume", Json::object());
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body);
      } else if (cmd.kind == CommandKind::kScheduleGet) {
        PrintSchedule(res->body, out);
      } else {
        out << (cmd.kind == CommandKind::kSchedulePause ? "paused " : "resumed ")
            << cmd.schedule.name << "\n";
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kScheduleDelete: {
      auto res = api.Delete(SchedulePath(cmd.schedule.name));
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body);
      } else {
        out << "deleted " << cmd.schedule.name << "\n";
      }
      return Code(ExitCode::kOk);
    }
    case CommandKind::kScheduleTrigger: {
      auto res = api.Post(SchedulePath(cmd.schedule.name) + "/trigger", Json::object());
      if (!res) return fail(res.error());
      if (cmd.global.json) {
        emit_json(res->body);
      } else {
        out << Field(res->body, "execution_id") << "\n";
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
