// Command-line parsing of the `stele` client: argv in, a validated Command out.
//
// Parsing is strict and complete before anything is sent: an unknown
// subcommand or flag, a missing or surplus argument, params that are not a
// JSON array, a stub result that is not {"ok": v} / {"err": v}, or an id that
// does not parse as an execution / delay id is a UsageError (exit code 2),
// so a typo never reaches the server. Global flags (--api-url, --token,
// --json, --help) are accepted at any position; `--flag=value` and
// `--flag value` are equivalent; `--` ends the flags.
//
// Threading: pure functions over values; thread-compatible.
// Ownership: a Command owns all its strings and JSON values. JSON is
// core::Json (ordered): the keys of params and results keep their order.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "core/json.h"

namespace stele::cli {

// Exit codes scripts can rely on (docs/cli.md). Stable: never renumber.
enum class ExitCode : int {
  kOk = 0,
  kExecutionFailed = 1,  // finished with err / execution_error (result, --follow)
  kUsage = 2,            // bad command line, or the server rejected the request as malformed
  kNotFound = 3,         // execution / delay / route not found
  kServerError = 4,      // connection failure, 5xx/503, unexpected response
  kConflict = 5,         // 409: conflicting resubmit, already finished, ...
  kUnauthorized = 6,     // 401: missing or wrong bearer token
  kTimedOut = 7,         // 408: the execution did not finish within --timeout
};

inline constexpr std::string_view kDefaultApiUrl = "http://127.0.0.1:5005";

struct GlobalOptions {
  std::string api_url{kDefaultApiUrl};
  std::optional<std::string> token;
  bool json = false;
};

enum class CommandKind {
  kHelp,  // print `help_text` to stdout, exit 0
  kVersion,
  kExecutionSubmit,
  kExecutionGet,
  kExecutionResult,
  kExecutionList,
  kExecutionEvents,
  kExecutionResponses,
  kExecutionCancel,
  kExecutionTerminate,
  kExecutionPause,
  kExecutionResume,
  kExecutionStub,
  kExecutionUpgrade,
  kExecutionSend,
  kExecutionValues,
  kExecutionValue,
  kComponentList,
  kScheduleList,
  kScheduleGet,
  kScheduleCreate,
  kSchedulePause,
  kScheduleResume,
  kScheduleDelete,
  kScheduleTrigger,
};

// `schedule create` (docs/cli.md): the server validates the expression,
// zone and function; the client checks the shape.
struct ScheduleArgs {
  std::string name;  // every schedule command: [A-Za-z0-9_-], 1..128
  std::string expression;
  std::string ffqn;
  core::Json params = core::Json::array();
  std::optional<std::string> time_zone;
  std::optional<std::string> overlap;
  std::optional<std::string> catch_up;
  std::optional<uint32_t> catch_up_limit;
};

struct ListFilters {
  std::optional<std::string> ffqn_prefix;
  std::optional<std::string> execution_id_prefix;
  bool show_derived = false;
  bool hide_finished = false;
  std::optional<std::string> status;  // pending_at, ..., paused, cancelling
  std::optional<std::string> cursor;
  std::optional<std::string> direction;  // "older" | "newer"
  std::optional<uint32_t> length;
};

struct Command {
  CommandKind kind = CommandKind::kHelp;
  GlobalOptions global;
  std::string help_text;  // kHelp

  // submit
  std::string ffqn;
  core::Json params = core::Json::array();  // ordered: record fields keep their order
  std::optional<std::string> scheduled_at;
  // submit --timeout (a duration string) / --deadline (RFC 3339) /
  // --max-retries, passed on to the server.
  std::optional<std::string> submit_timeout;
  std::optional<std::string> deadline;
  std::optional<uint32_t> max_retries;
  // submit --id, and the subject of get/result/events/responses/cancel/stub.
  std::optional<std::string> execution_id;
  bool follow = false;           // submit, get
  bool cancel_is_delay = false;  // cancel: the id is a DelayId
  // cancel / terminate of a workflow: the body's "grace" ("30s") and "reason"
  // (the reason also of pause / resume).
  std::optional<std::string> cancel_grace;
  std::optional<std::string> cancel_reason;
  std::optional<uint32_t> timeout_seconds;  // result
  std::optional<uint64_t> since_version;    // events
  std::optional<std::string> cursor;        // responses
  std::optional<uint32_t> length;           // events, responses
  core::Json stub_result;                   // {"ok": v} | {"err": v}
  // send: the channel, the message body and --message-id; value: the key
  // and --after-version (the wait is timeout_seconds).
  std::string channel;
  core::Json message_body;
  std::optional<std::string> message_id;
  std::string value_key;
  std::optional<uint64_t> after_version;
  // upgrade: the digest to move to; the one it must run now (--from; when
  // absent the client reads it first); --force for a digest no component
  // of the server serves.
  std::string upgrade_digest;
  std::optional<std::string> upgrade_from;
  bool force = false;
  ListFilters list;
  ScheduleArgs schedule;
};

struct UsageError {
  std::string message;
};

// Looks up an environment variable (STELE_API_URL, STELE_TOKEN); injected so
// that tests control the environment.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// `args` excludes argv[0]. Reads `@FILE` arguments for params / stub results
// from the file system.
Result<Command, UsageError> ParseArgs(const std::vector<std::string>& args, const EnvLookup& env);

// Top-level usage text (also printed after a usage error hint).
std::string TopLevelHelp();

}  // namespace stele::cli
