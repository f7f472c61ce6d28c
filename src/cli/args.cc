#include "cli/args.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "core/component_id.h"
#include "core/function_fqn.h"
#include "core/ids.h"
#include "core/json_codec.h"

namespace stele::cli {
namespace {

// Every flag of every command, with whether it takes a value. One table for
// all commands, so that flags may precede the command words (`stele --json
// execution list`); which command accepts which flag is checked afterwards.
struct FlagSpec {
  std::string_view name;
  bool takes_value;
};
constexpr FlagSpec kFlags[] = {
    {"api-url", true},        {"token", true},         {"json", false},
    {"help", false},          {"version", false},      {"id", true},
    {"follow", false},        {"scheduled-at", true},  {"timeout", true},
    {"ffqn-prefix", true},    {"id-prefix", true},     {"show-derived", false},
    {"hide-finished", false}, {"cursor", true},        {"direction", true},
    {"length", true},         {"since-version", true}, {"force", false},
    {"from", true},           {"grace", true},         {"reason", true},
    {"time-zone", true},      {"overlap", true},       {"catch-up", true},
    {"catch-up-limit", true}, {"deadline", true},      {"max-retries", true},
    {"status", true},         {"message-id", true},    {"after-version", true},
};

// Files given as `@FILE` larger than this are refused: params are meant for
// one request body, not for streaming data sets.
constexpr std::streamsize kMaxArgFileBytes = 16 << 20;

struct Tokens {
  std::vector<std::string> positionals;
  std::map<std::string, std::string, std::less<>> flags;  // value "" for boolean flags
  bool help = false;
};

Unexpected<UsageError> Usage(std::string message) {
  return Unexpected(UsageError{std::move(message)});
}

const FlagSpec* FindFlag(std::string_view name) {
  for (const FlagSpec& f : kFlags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Result<Tokens, UsageError> Tokenize(const std::vector<std::string>& args) {
  Tokens t;
  bool flags_ended = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& tok = args[i];
    if (flags_ended || tok.size() < 2 || tok[0] != '-') {
      t.positionals.push_back(tok);
      continue;
    }
    if (tok == "--") {
      flags_ended = true;
      continue;
    }
    if (tok == "-h") {
      t.help = true;
      continue;
    }
    std::string name;
    std::optional<std::string> value;
    if (tok == "-f") {
      name = "follow";
    } else if (tok.rfind("--", 0) == 0) {
      std::string_view body = std::string_view(tok).substr(2);
      size_t eq = body.find('=');
      name = std::string(body.substr(0, eq));
      if (eq != std::string_view::npos) value = std::string(body.substr(eq + 1));
    } else {
      return Usage("unknown flag `" + tok + "`");
    }
    const FlagSpec* spec = FindFlag(name);
    if (spec == nullptr) return Usage("unknown flag `--" + name + "`");
    if (name == "help") {
      if (value) return Usage("flag `--help` takes no value");
      t.help = true;
      continue;
    }
    if (spec->takes_value && !value) {
      if (i + 1 >= args.size()) return Usage("flag `--" + name + "` needs a value");
      value = args[++i];
    } else if (!spec->takes_value && value) {
      return Usage("flag `--" + name + "` takes no value");
    }
    if (!t.flags.emplace(name, value.value_or("")).second) {
      return Usage("flag `--" + name + "` given twice");
    }
  }
  return t;
}

Result<uint64_t, UsageError> ParseUnsigned(std::string_view flag, const std::string& text,
                                           uint64_t min, uint64_t max) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || v < min || v > max) {
    return Usage("`--" + std::string(flag) + "` expects an integer in [" + std::to_string(min) +
                 ", " + std::to_string(max) + "], got `" + text + "`");
  }
  return v;
}

// Reads `@FILE` or returns the text itself.
Result<std::string, UsageError> ArgText(std::string_view what, const std::string& arg) {
  if (arg.empty() || arg[0] != '@') return arg;
  std::string path = arg.substr(1);
  std::ifstream in(path, std::ios::binary);
  if (!in) return Usage("cannot read " + std::string(what) + " file `" + path + "`");
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (static_cast<std::streamsize>(text.size()) > kMaxArgFileBytes) {
      return Usage(std::string(what) + " file `" + path + "` is larger than 16 MiB");
    }
  }
  return text;
}

Result<core::Json, UsageError> ParseJsonArg(std::string_view what, const std::string& arg) {
  STELE_ASSIGN_OR_RETURN(std::string text, ArgText(what, arg));
  auto parsed = core::ParseJson(text);  // depth-limited, never throws
  if (!parsed) return Usage(std::string(what) + " is not valid JSON: " + parsed.error().message);
  return std::move(*parsed);
}

// The parsers' messages already name what was invalid ("invalid execution id
// `x`: ..."), so they are passed on as they are, never prefixed again.
Result<void, UsageError> CheckExecutionId(const std::string& text) {
  auto id = core::ExecutionId::Parse(text);
  if (!id) return Usage(id.error().message);
  return {};
}

// A schedule name goes into the request path: the server's rule,
// [A-Za-z0-9_-], 1..128 bytes, checked before anything is sent.
Result<void, UsageError> CheckScheduleName(const std::string& name) {
  if (name.empty() || name.size() > 128 || !core::ComponentId::IsValidName(name)) {
    return Usage("invalid schedule name: 1 to 128 letters, digits, '_' or '-'");
  }
  return {};
}

// Visible ASCII only: a token ends up in an HTTP header.
bool IsValidToken(std::string_view token) {
  if (token.empty()) return false;
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

// Accepts http(s)://host[:port][/]; the API lives at the root, so a path is
// almost certainly a mistake.
Result<void, UsageError> CheckApiUrl(const std::string& url) {
  std::string_view rest = url;
  if (rest.rfind("http://", 0) == 0) {
    rest.remove_prefix(7);
  } else if (rest.rfind("https://", 0) == 0) {
    rest.remove_prefix(8);
  } else {
    return Usage("API URL `" + url + "` must start with http:// or https://");
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos) {
    return Usage("API URL `" + url + "` has a path; give only scheme, host and port");
  }
  std::string_view host = rest;
  std::optional<std::string_view> port;
  if (!rest.empty() && rest.front() == '[') {  // [IPv6]
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return Usage("API URL `" + url + "` has an unclosed `[`");
    host = rest.substr(1, close - 1);
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Usage("API URL `" + url + "` is malformed");
      port = after.substr(1);
    }
  } else if (size_t colon = rest.find(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (host.empty()) return Usage("API URL `" + url + "` has no host");
  for (char c : host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || (c == ':' && rest.front() == '[');
    if (!ok) return Usage("API URL `" + url + "` has a malformed host");
  }
  if (port) {
    uint64_t p = 0;
    auto [ptr, ec] = std::from_chars(port->data(), port->data() + port->size(), p);
    if (port->empty() || ec != std::errc() || ptr != port->data() + port->size() || p == 0 ||
        p > 65535) {
      return Usage("API URL `" + url + "` has an invalid port");
    }
  }
  return {};
}

// ---------------------------------------------------------------- help texts

constexpr std::string_view kGlobalHelp =
    "Global flags (accepted anywhere):\n"
    "  --api-url URL   server address (default http://127.0.0.1:5005, env STELE_API_URL)\n"
    "  --token TOKEN   bearer token (env STELE_TOKEN)\n"
    "  --json          machine-readable output: one JSON document per line\n"
    "  -h, --help      show help\n";

constexpr std::string_view kExitCodesHelp =
    "Exit codes: 0 ok, 1 execution finished with an error, 2 usage error or request\n"
    "rejected as malformed, 3 not found, 4 server or connection error, 5 conflict,\n"
    "6 unauthorized, 7 timed out waiting for the result.\n";

// The commands main.cc hands to src/server before the client parses
// anything (`stele help server|db` too); listed here so that the top-level
// help names every command.
constexpr std::string_view kLocalCommandSynopses[] = {
    "stele server run|verify [--config FILE]",
    "stele db check [--config PATH | --sqlite PATH | --postgres URL] [--max-findings N] [--quiet]",
    "stele db gc --older-than DURATION [--config PATH | --sqlite PATH | --postgres URL] "
    "[--batch-size N]",
};

struct CommandHelp {
  std::string_view path;  // "execution submit"
  std::string_view synopsis;
  std::string_view body;
};

constexpr CommandHelp kCommandHelp[] = {
    {"execution submit",
     "stele execution submit FFQN PARAMS_JSON [--id ID] [--scheduled-at TIME]\n"
     "                             [--timeout DURATION | --deadline TIME] [--max-retries N] "
     "[--follow]",
     "Submits an execution of FFQN (ns:pkg/ifc.fn) with PARAMS_JSON, a JSON array\n"
     "(or @FILE holding one). Prints the execution id.\n"
     "  --id ID             client-chosen execution id (E_<ULID>); resubmitting the\n"
     "                      same id with equal params is idempotent, different params\n"
     "                      are a conflict (exit 5)\n"
     "  --scheduled-at TIME first run not before TIME (RFC 3339)\n"
     "  --timeout DURATION  the whole execution's time limit from now (\"10m\"): past\n"
     "                      it the execution ends timed_out, with its children\n"
     "  --deadline TIME     the same as an instant (RFC 3339)\n"
     "  --max-retries N     retries of this execution (default: its component's)\n"
     "  -f, --follow        stream state changes until finished; exit 1 if the\n"
     "                      execution finished with an error\n"},
    {"execution get", "stele execution get ID [--follow]",
     "Shows the state and, when finished, the result of an execution.\n"
     "  -f, --follow   stream state changes until finished; exit 1 if the\n"
     "                 execution finished with an error\n"},
    {"execution result", "stele execution result ID [--timeout SECONDS]",
     "Waits up to SECONDS (default 0: do not wait) for the execution to finish and\n"
     "prints its result. Exit 1 if it finished with an error, 7 if still running.\n"},
    {"execution list",
     "stele execution list [--ffqn-prefix P] [--id-prefix P] [--show-derived] [--hide-finished]\n"
     "                     [--status S] [--cursor C] [--direction older|newer] [--length N]",
     "Lists executions, newest first (children after their parent, in creation\n"
     "order). When there is more, prints the command that fetches the next page.\n"
     "  --status S  only executions in status S: pending_at, locked,\n"
     "              blocked_by_join_set, finished, paused or cancelling\n"},
    {"execution events", "stele execution events ID [--since-version N] [--length N]",
     "Prints the event log of an execution.\n"},
    {"execution responses", "stele execution responses ID [--cursor N] [--length N]",
     "Prints the responses (child results, fired delays) delivered to an execution.\n"},
    {"execution cancel", "stele execution cancel ID [--grace DURATION] [--reason TEXT]",
     "Cancels an execution (E_...) or a delay (Delay_...). Prints the outcome:\n"
     "`cancelled` for an activity or delay (at once), `cancelling` for a workflow,\n"
     "which sees the request at its next wait, may clean up for the grace period\n"
     "and then finishes `cancelled` with its open children cancelled. Idempotent.\n"
     "Exit 5 when the execution finished otherwise (nothing is written).\n"
     "  --grace DURATION  how long a workflow may clean up (\"30s\", \"5m\"; default:\n"
     "                    the server's [executor] cancel_grace)\n"
     "  --reason TEXT     recorded with the request\n"},
    {"execution terminate", "stele execution terminate ID [--reason TEXT]",
     "Ends a workflow at once, without cleanup: its open activities, delays and\n"
     "child workflows are cancelled and it finishes `cancelled`. Prints the\n"
     "outcome (`cancelling` until it has). An activity is cancelled as by\n"
     "`execution cancel`. Exit 5 when it finished otherwise.\n"},
    {"execution pause", "stele execution pause ID [--reason TEXT]",
     "Pauses an execution: it is not run again until resumed. A run in progress\n"
     "is stopped (a workflow at its next write; an activity's attempt at once, its\n"
     "outcome discarded, no retry counted). Child results and sleeps that end\n"
     "meanwhile are kept and seen after the resume. Prints `paused`. Idempotent.\n"
     "Exit 5 when the execution is finished (nothing is written).\n"},
    {"execution resume", "stele execution resume ID [--reason TEXT]",
     "Resumes a paused execution; it runs again as soon as it is due. Prints\n"
     "`resumed`. Idempotent. Exit 5 when the execution is finished.\n"},
    {"execution stub", "stele execution stub ID RESULT_JSON",
     "Writes the result of a stub activity execution. RESULT_JSON is {\"ok\": VALUE}\n"
     "or {\"err\": VALUE} (or @FILE holding one). Idempotent for an equal result;\n"
     "a different result is a conflict (exit 5).\n"},
    {"execution upgrade", "stele execution upgrade ID DIGEST [--from DIGEST] [--force]",
     "Moves an unfinished execution to DIGEST (sha256:<64 hex>), another version of\n"
     "its component. Prints the execution id and its new digest. Refused (exit 5)\n"
     "when the server serves no component with DIGEST, when the execution is\n"
     "finished, or when it does not run the digest it was read with.\n"
     "  --from DIGEST  the digest the execution must run now (default: the one\n"
     "                 `execution get` shows, read just before)\n"
     "  --force        move it even though no component of this server serves\n"
     "                 DIGEST (another server on the database, or a restart, will)\n"},
    {"execution send", "stele execution send ID CHANNEL BODY_JSON [--message-id ID]",
     "Sends a message: BODY_JSON (any JSON value, or @FILE) to CHANNEL of a running\n"
     "execution, where its workflow's receive(CHANNEL) takes it. Prints the message\n"
     "id. With --message-id the send is idempotent: the same id and body are\n"
     "delivered once. Exit 5 when the execution finished (nothing delivered) or the\n"
     "id was used with another body; exit 3 when there is no such execution.\n"
     "  --message-id ID  1 to 128 ASCII letters, digits and _ . : @ / -\n"},
    {"execution values", "stele execution values ID",
     "Lists the values the workflow published: key, version, value.\n"},
    {"execution value", "stele execution value ID KEY [--after-version N] [--timeout SECONDS]",
     "Prints the last value the workflow published under KEY. With --timeout, waits\n"
     "for one published after --after-version (any value without it). Exit 3 when\n"
     "there is none (and the execution finished, or no wait was asked).\n"},
    {"component list", "stele component list",
     "Lists the components the server runs and their functions.\n"},
    {"schedule list", "stele schedule list",
     "Lists the cron schedules: name, cron expression and zone, function, state,\n"
     "next tick.\n"},
    {"schedule get", "stele schedule get NAME", "Shows one cron schedule.\n"},
    {"schedule create",
     "stele schedule create NAME CRON FFQN PARAMS_JSON [--time-zone TZ] [--overlap P]\n"
     "                      [--catch-up P] [--catch-up-limit N]",
     "Creates a cron schedule: each tick of CRON (six fields with seconds, e.g.\n"
     "'0 0 2 * * *', or @daily) in TZ submits FFQN with PARAMS_JSON (or @FILE).\n"
     "  --time-zone TZ        IANA zone (default UTC), e.g. Europe/Berlin\n"
     "  --overlap P           skip (default), allow or buffer_one: a tick while the\n"
     "                        previous tick's execution runs\n"
     "  --catch-up P          last (default), skip or all: ticks missed while down\n"
     "  --catch-up-limit N    with --catch-up all, at most N (1..1000, default 10)\n"
     "A name in use is a conflict (exit 5).\n"},
    {"schedule pause", "stele schedule pause NAME",
     "Pauses a schedule: its ticks do not fire until it is resumed (never later).\n"},
    {"schedule resume", "stele schedule resume NAME", "Resumes a paused schedule.\n"},
    {"schedule delete", "stele schedule delete NAME",
     "Deletes a schedule (one of stele.toml comes back at the server's next start).\n"},
    {"schedule trigger", "stele schedule trigger NAME",
     "Submits the schedule's function now, outside its ticks. Prints the execution id.\n"},
};

std::string HelpFor(std::string_view path) {
  std::ostringstream out;
  for (const CommandHelp& h : kCommandHelp) {
    if (h.path == path) {
      out << "Usage: " << h.synopsis << "\n\n"
          << h.body << "\n"
          << kGlobalHelp << "\n"
          << kExitCodesHelp;
      return out.str();
    }
  }
  // A group: list its commands.
  out << "Usage: stele " << path << " COMMAND [ARGS...]\n\nCommands:\n";
  for (const CommandHelp& h : kCommandHelp) {
    if (h.path.rfind(std::string(path) + " ", 0) == 0) out << "  " << h.synopsis << "\n";
  }
  out << "\n" << kGlobalHelp << "\nRun `stele " << path << " COMMAND --help` for details.\n";
  return out.str();
}

bool IsKnownPath(std::string_view path) {
  for (const CommandHelp& h : kCommandHelp) {
    if (h.path == path) return true;
  }
  return false;
}

struct CommandSpec {
  std::string_view path;
  CommandKind kind;
  size_t positionals;
  std::vector<std::string_view> flags;  // besides the global ones
};

const std::vector<CommandSpec>& CommandSpecs() {
  static const std::vector<CommandSpec> specs = {
      {"execution submit",
       CommandKind::kExecutionSubmit,
       2,
       {"id", "follow", "scheduled-at", "timeout", "deadline", "max-retries"}},
      {"execution get", CommandKind::kExecutionGet, 1, {"follow"}},
      {"execution result", CommandKind::kExecutionResult, 1, {"timeout"}},
      {"execution list",
       CommandKind::kExecutionList,
       0,
       {"ffqn-prefix", "id-prefix", "show-derived", "hide-finished", "status", "cursor",
        "direction", "length"}},
      {"execution events", CommandKind::kExecutionEvents, 1, {"since-version", "length"}},
      {"execution responses", CommandKind::kExecutionResponses, 1, {"cursor", "length"}},
      {"execution cancel", CommandKind::kExecutionCancel, 1, {"grace", "reason"}},
      {"execution terminate", CommandKind::kExecutionTerminate, 1, {"reason"}},
      {"execution pause", CommandKind::kExecutionPause, 1, {"reason"}},
      {"execution resume", CommandKind::kExecutionResume, 1, {"reason"}},
      {"execution stub", CommandKind::kExecutionStub, 2, {}},
      {"execution upgrade", CommandKind::kExecutionUpgrade, 2, {"from", "force"}},
      {"execution send", CommandKind::kExecutionSend, 3, {"message-id"}},
      {"execution values", CommandKind::kExecutionValues, 1, {}},
      {"execution value", CommandKind::kExecutionValue, 2, {"after-version", "timeout"}},
      {"component list", CommandKind::kComponentList, 0, {}},
      {"schedule list", CommandKind::kScheduleList, 0, {}},
      {"schedule get", CommandKind::kScheduleGet, 1, {}},
      {"schedule create",
       CommandKind::kScheduleCreate,
       4,
       {"time-zone", "overlap", "catch-up", "catch-up-limit"}},
      {"schedule pause", CommandKind::kSchedulePause, 1, {}},
      {"schedule resume", CommandKind::kScheduleResume, 1, {}},
      {"schedule delete", CommandKind::kScheduleDelete, 1, {}},
      {"schedule trigger", CommandKind::kScheduleTrigger, 1, {}},
  };
  return specs;
}

std::optional<std::string> Flag(const Tokens& t, std::string_view name) {
  auto it = t.flags.find(name);
  if (it == t.flags.end()) return std::nullopt;
  return it->second;
}

Result<void, UsageError> FillCommand(const CommandSpec& spec, const Tokens& t,
                                     const std::vector<std::string>& pos, Command& cmd) {
  switch (spec.kind) {
    case CommandKind::kExecutionSubmit: {
      auto fqn = core::FunctionFqn::Parse(pos[0]);
      if (!fqn) return Usage(fqn.error().message);
      cmd.ffqn = pos[0];
      STELE_ASSIGN_OR_RETURN(cmd.params, ParseJsonArg("PARAMS_JSON", pos[1]));
      if (!cmd.params.is_array())
        return Usage("PARAMS_JSON must be a JSON array, e.g. '[1, \"two\"]'");
      if (auto id = Flag(t, "id")) {
        auto parsed = core::ExecutionId::Parse(*id);
        if (!parsed || !parsed->IsTopLevel()) {
          return Usage("`--id` expects a top-level execution id E_<ULID>, got `" + *id + "`");
        }
        cmd.execution_id = *id;
      }
      if (auto at = Flag(t, "scheduled-at")) {
        if (at->empty()) return Usage("`--scheduled-at` needs a time (RFC 3339)");
        cmd.scheduled_at = *at;
      }
      // Checked by the server (one of them, a future instant, a positive
      // duration); here only that they have a value.
      if (auto timeout = Flag(t, "timeout")) {
        if (timeout->empty()) return Usage("`--timeout` needs a duration, e.g. 10m");
        cmd.submit_timeout = *timeout;
      }
      if (auto deadline = Flag(t, "deadline")) {
        if (deadline->empty()) return Usage("`--deadline` needs a time (RFC 3339)");
        cmd.deadline = *deadline;
      }
      if (cmd.submit_timeout && cmd.deadline) {
        return Usage("give `--timeout` or `--deadline`, not both");
      }
      if (auto retries = Flag(t, "max-retries")) {
        STELE_ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned("max-retries", *retries, 0, 1000000));
        cmd.max_retries = static_cast<uint32_t>(n);
      }
      cmd.follow = Flag(t, "follow").has_value();
      return {};
    }
    case CommandKind::kExecutionGet:
      STELE_TRY(CheckExecutionId(pos[0]));
      cmd.execution_id = pos[0];
      cmd.follow = Flag(t, "follow").has_value();
      return {};
    case CommandKind::kExecutionResult:
      STELE_TRY(CheckExecutionId(pos[0]));
      cmd.execution_id = pos[0];
      if (auto v = Flag(t, "timeout")) {
        STELE_ASSIGN_OR_RETURN(uint64_t s, ParseUnsigned("timeout", *v, 0, 86400));
        cmd.timeout_seconds = static_cast<uint32_t>(s);
      }
      return {};
    case CommandKind::kExecutionList: {
      ListFilters& f = cmd.list;
      f.ffqn_prefix = Flag(t, "ffqn-prefix");
      f.execution_id_prefix = Flag(t, "id-prefix");
      f.show_derived = Flag(t, "show-derived").has_value();
      f.hide_finished = Flag(t, "hide-finished").has_value();
      if (auto status = Flag(t, "status")) {
        static constexpr std::string_view kStatuses[] = {
            "pending_at", "locked", "blocked_by_join_set", "finished", "paused", "cancelling"};
        if (std::find(std::begin(kStatuses), std::end(kStatuses), *status) == std::end(kStatuses)) {
          return Usage(
              "`--status` expects pending_at, locked, blocked_by_join_set, finished, "
              "paused or cancelling, got `" +
              *status + "`");
        }
        f.status = *status;
      }
      f.cursor = Flag(t, "cursor");
      if (f.cursor && f.cursor->empty()) return Usage("`--cursor` needs a value");
      if (auto d = Flag(t, "direction")) {
        if (*d != "older" && *d != "newer") {
          return Usage("`--direction` expects `older` or `newer`, got `" + *d + "`");
        }
        f.direction = *d;
      }
      if (auto v = Flag(t, "length")) {
        STELE_ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned("length", *v, 1, 100000));
        f.length = static_cast<uint32_t>(n);
      }
      return {};
    }
    case CommandKind::kExecutionEvents:
      STELE_TRY(CheckExecutionId(pos[0]));
      cmd.execution_id = pos[0];
      if (auto v = Flag(t, "since-version")) {
        STELE_ASSIGN_OR_RETURN(cmd.since_version,
                               ParseUnsigned("since-version", *v, 0, UINT32_MAX));
      }
      if (auto v = Flag(t, "length")) {
        STELE_ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned("length", *v, 1, 100000));
        cmd.length = static_cast<uint32_t>(n);
      }
      return {};
    case CommandKind::kExecutionResponses:
      STELE_TRY(CheckExecutionId(pos[0]));
      cmd.execution_id = pos[0];
      if (auto v = Flag(t, "cursor")) {
        STELE_TRY(ParseUnsigned("cursor", *v, 0, UINT32_MAX));
        cmd.cursor = *v;
      }
      if (auto v = Flag(t, "length")) {
        STELE_ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned("length", *v, 1, 100000));
        cmd.length = static_cast<uint32_t>(n);
      }
      return {};
    case CommandKind::kExecutionCancel:
      if (pos[0].rfind("Delay_", 0) == 0) {
        auto id = core::DelayId::Parse(pos[0]);
        if (!id) return Usage(id.error().message);
        cmd.cancel_is_delay = true;
        if (Flag(t, "grace") || Flag(t, "reason")) {
          return Usage("--grace and --reason apply to executions, not to delays");
        }
      } else {
        STELE_TRY(CheckExecutionId(pos[0]));
      }
      cmd.execution_id = pos[0];
      if (auto v = Flag(t, "grace")) {
        if (v->empty()) return Usage("--grace needs a duration such as 30s");
        cmd.cancel_grace = *v;  // the server checks its form and range
      }
      cmd.cancel_reason = Flag(t, "reason");
      return {};
    case CommandKind::kExecutionTerminate:
    case CommandKind::kExecutionPause:
    case CommandKind::kExecutionResume:
      STELE_TRY(CheckExecutionId(pos[0]));
      cmd.execution_id = pos[0];
      cmd.cancel_reason = Flag(t, "reason");
      return {};
    case CommandKind::kExecutionStub: {
      STELE_TRY(CheckExecutionId(pos[0]));
      cmd.execution_id = pos[0];
      STELE_ASSIGN_OR_RETURN(cmd.stub_result, ParseJsonArg("RESULT_JSON", pos[1]));
      const core::Json& r = cmd.stub_result;
      if (!r.is_object() || r.size() != 1 || (!r.contains("ok") && !r.contains("err"))) {
        return Usage("RESULT_JSON must be {\"ok\": VALUE} or {\"err\": VALUE}");
      }
      return {};
    }
    case CommandKind::kExecutionSend: {
      // The server checks the channel and the message id (one rule).
      STELE_TRY(CheckExecutionId(pos[0]));
      cmd.execution_id = pos[0];
      cmd.channel = pos[1];
      STELE_ASSIGN_OR_RETURN(cmd.message_body, ParseJsonArg("BODY_JSON", pos[2]));
      cmd.message_id = Flag(t, "message-id");
      return {};
    }
    case CommandKind::kExecutionValues:
      STELE_TRY(CheckExecutionId(pos[0]));
      cmd.execution_id = pos[0];
      return {};
    case CommandKind::kExecutionValue: {
      STELE_TRY(CheckExecutionId(pos[0]));
      cmd.execution_id = pos[0];
      cmd.value_key = pos[1];
      if (auto v = Flag(t, "timeout")) {
        STELE_ASSIGN_OR_RETURN(uint64_t s, ParseUnsigned("timeout", *v, 0, 86400));
        cmd.timeout_seconds = static_cast<uint32_t>(s);
      }
      if (auto v = Flag(t, "after-version")) {
        STELE_ASSIGN_OR_RETURN(cmd.after_version,
                               ParseUnsigned("after-version", *v, 0, UINT32_MAX));
      }
      return {};
    }
    case CommandKind::kExecutionUpgrade: {
      STELE_TRY(CheckExecutionId(pos[0]));
      cmd.execution_id = pos[0];
      if (auto digest = core::InputContentDigest::Parse(pos[1]); !digest) {
        return Usage(digest.error().message);
      }
      cmd.upgrade_digest = pos[1];
      if (auto from = Flag(t, "from")) {
        if (auto digest = core::InputContentDigest::Parse(*from); !digest) {
          return Usage("`--from`: " + digest.error().message);
        }
        cmd.upgrade_from = *from;
      }
      cmd.force = Flag(t, "force").has_value();
      return {};
    }
    case CommandKind::kScheduleCreate: {
      STELE_TRY(CheckScheduleName(pos[0]));
      cmd.schedule.name = pos[0];
      if (pos[1].empty()) return Usage("CRON must not be empty, e.g. '0 0 2 * * *'");
      cmd.schedule.expression = pos[1];
      auto fqn = core::FunctionFqn::Parse(pos[2]);
      if (!fqn) return Usage(fqn.error().message);
      cmd.schedule.ffqn = pos[2];
      STELE_ASSIGN_OR_RETURN(cmd.schedule.params, ParseJsonArg("PARAMS_JSON", pos[3]));
      if (!cmd.schedule.params.is_array()) {
        return Usage("PARAMS_JSON must be a JSON array, e.g. '[1, \"two\"]'");
      }
      cmd.schedule.time_zone = Flag(t, "time-zone");
      if (auto v = Flag(t, "overlap")) {
        if (*v != "skip" && *v != "allow" && *v != "buffer_one") {
          return Usage("`--overlap` expects `skip`, `allow` or `buffer_one`, got `" + *v + "`");
        }
        cmd.schedule.overlap = *v;
      }
      if (auto v = Flag(t, "catch-up")) {
        if (*v != "skip" && *v != "last" && *v != "all") {
          return Usage("`--catch-up` expects `skip`, `last` or `all`, got `" + *v + "`");
        }
        cmd.schedule.catch_up = *v;
      }
      if (auto v = Flag(t, "catch-up-limit")) {
        STELE_ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned("catch-up-limit", *v, 1, 1000));
        cmd.schedule.catch_up_limit = static_cast<uint32_t>(n);
      }
      return {};
    }
    case CommandKind::kScheduleGet:
    case CommandKind::kSchedulePause:
    case CommandKind::kScheduleResume:
    case CommandKind::kScheduleDelete:
    case CommandKind::kScheduleTrigger:
      STELE_TRY(CheckScheduleName(pos[0]));
      cmd.schedule.name = pos[0];
      return {};
    case CommandKind::kScheduleList:
    case CommandKind::kComponentList:
    case CommandKind::kHelp:
    case CommandKind::kVersion:
      return {};
  }
  return {};
}

}  // namespace

std::string TopLevelHelp() {
  std::ostringstream out;
  out << "stele: client of a Stele server, and the server itself.\n\n"
         "Usage:\n";
  for (std::string_view synopsis : kLocalCommandSynopses) out << "  " << synopsis << "\n";
  for (const CommandHelp& h : kCommandHelp) out << "  " << h.synopsis << "\n";
  out << "  stele help [COMMAND...]\n  stele --version\n\n"
      << kGlobalHelp << "\n"
      << kExitCodesHelp
      << "\nRun `stele help COMMAND` or `stele COMMAND --help` for details (docs/cli.md).\n";
  return out.str();
}

Result<Command, UsageError> ParseArgs(const std::vector<std::string>& args, const EnvLookup& env) {
  STELE_ASSIGN_OR_RETURN(Tokens t, Tokenize(args));
  Command cmd;

  // Global options first: a bad URL or token is reported whatever the command.
  if (auto url = Flag(t, "api-url")) {
    cmd.global.api_url = *url;
  } else if (auto from_env = env("STELE_API_URL"); from_env && !from_env->empty()) {
    cmd.global.api_url = *from_env;
  }
  STELE_TRY(CheckApiUrl(cmd.global.api_url));
  if (auto token = Flag(t, "token")) {
    if (!IsValidToken(*token)) return Usage("`--token` must be non-empty visible ASCII");
    cmd.global.token = *token;
  } else if (auto from_env = env("STELE_TOKEN"); from_env && !from_env->empty()) {
    if (!IsValidToken(*from_env)) return Usage("STELE_TOKEN must be visible ASCII");
    cmd.global.token = *from_env;
  }
  cmd.global.json = Flag(t, "json").has_value();

  std::vector<std::string> pos = t.positionals;
  if (!pos.empty() && pos[0] == "help") {
    t.help = true;
    pos.erase(pos.begin());
  }
  if (pos.empty()) {
    if (Flag(t, "version")) {
      cmd.kind = CommandKind::kVersion;
      return cmd;
    }
    if (t.help) {
      cmd.kind = CommandKind::kHelp;
      cmd.help_text = TopLevelHelp();
      return cmd;
    }
    return Usage("missing command; run `stele --help`");
  }
  if (Flag(t, "version")) return Usage("`--version` takes no command");
  if (pos[0] == "server" || pos[0] == "db") {
    // main.cc dispatches them when they are the first word only.
    return Usage("`" + pos[0] + "` must come first: " +
                 std::string(kLocalCommandSynopses[pos[0] == "server" ? 0 : 1]));
  }
  if (pos[0] == "help" && t.help) {  // `stele help help`
    cmd.kind = CommandKind::kHelp;
    cmd.help_text = TopLevelHelp();
    return cmd;
  }
  if (pos[0] != "execution" && pos[0] != "component" && pos[0] != "schedule") {
    return Usage("unknown command `" + pos[0] + "`; run `stele --help`");
  }
  if (pos.size() == 1) {
    if (t.help) {
      cmd.kind = CommandKind::kHelp;
      cmd.help_text = HelpFor(pos[0]);
      return cmd;
    }
    return Usage("missing subcommand of `" + pos[0] + "`; run `stele " + pos[0] + " --help`");
  }
  std::string path = pos[0] + " " + pos[1];
  if (!IsKnownPath(path)) {
    return Usage("unknown command `" + path + "`; run `stele " + pos[0] + " --help`");
  }
  if (t.help) {
    cmd.kind = CommandKind::kHelp;
    cmd.help_text = HelpFor(path);
    return cmd;
  }
  const CommandSpec* spec = nullptr;
  for (const CommandSpec& s : CommandSpecs()) {
    if (s.path == path) spec = &s;
  }
  STELE_CHECK(spec != nullptr, "every known path has a CommandSpec");
  for (const auto& [name, value] : t.flags) {
    if (name == "api-url" || name == "token" || name == "json") continue;
    bool allowed = false;
    for (std::string_view f : spec->flags) allowed = allowed || f == name;
    if (!allowed) return Usage("`stele " + path + "` has no flag `--" + name + "`");
  }
  pos.erase(pos.begin(), pos.begin() + 2);
  if (pos.size() != spec->positionals) {
    std::string synopsis;
    for (const CommandHelp& h : kCommandHelp) {
      if (h.path == path) synopsis = std::string(h.synopsis);
    }
    return Usage(std::string(pos.size() < spec->positionals ? "missing" : "too many") +
                 " arguments; usage: " + synopsis);
  }
  cmd.kind = spec->kind;
  STELE_TRY(FillCommand(*spec, t, pos, cmd));
  return cmd;
}

}  // namespace stele::cli
