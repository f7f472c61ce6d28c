#include "runtime/exec/exec_activity_worker.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>
#include <string_view>
#include <utility>

#include "base/log.h"
#include "runtime/exec/process.h"

namespace stele::runtime::exec {
namespace {

using executor::WorkerResult;

constexpr std::size_t kStderrTail = 4096;
constexpr std::size_t kStdoutExcerpt = 200;
constexpr std::chrono::microseconds kNoDeadlineBeyond = std::chrono::hours(24 * 365 * 100);
constexpr std::string_view kReserved[] = {"STELE_FFQN", "STELE_EXECUTION_ID", "STELE_ATTEMPT"};

bool IsReserved(std::string_view name) {
  for (auto r : kReserved) {
    if (name == r) return true;
  }
  return false;
}

bool IsValidEnvName(std::string_view name) {
  return !name.empty() && name.find('=') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

std::string Tail(const std::string& text, std::size_t max) {
  if (text.size() <= max) return text;
  return "..." + text.substr(text.size() - max);
}

std::string Excerpt(const std::string& text) {
  std::string shown = text.size() <= kStdoutExcerpt ? text : text.substr(0, kStdoutExcerpt) + "...";
  return core::Json(shown).dump(-1, ' ', false, core::Json::error_handler_t::replace);
}

std::optional<std::string> StderrDetail(const ProcessOutcome& outcome) {
  if (outcome.stderr_data.empty()) return std::nullopt;
  return "stderr: " + Tail(outcome.stderr_data, kStderrTail);
}

WorkerResult Trap(const executor::WorkerContext& ctx, std::string reason,
                  std::optional<std::string> detail) {
  return WorkerResult::Err(ctx.version,
                           executor::ActivityTrap{std::move(reason), std::move(detail), {}});
}

}  // namespace

Result<std::shared_ptr<ExecActivityWorker>, std::string> ExecActivityWorker::Create(
    ExecActivityConfig config, SharedClock clock) {
  if (clock == nullptr) return Unexpected(std::string("exec activity: no clock"));
  if (config.functions.empty()) return Unexpected(std::string("exec activity: no functions"));
  std::set<core::FunctionFqn> seen;
  for (const auto& fn : config.functions) {
    if (!seen.insert(fn.ffqn).second) {
      return Unexpected("exec activity: function " + fn.ffqn.ToString() + " declared twice");
    }
  }
  if (config.argv.empty() || config.argv[0].empty()) {
    return Unexpected(std::string("exec activity: argv must name a command"));
  }
  for (const auto& arg : config.argv) {
    if (arg.find('\0') != std::string::npos) {
      return Unexpected(std::string("exec activity: argv contains a NUL byte"));
    }
  }
  if (config.working_dir.find('\0') != std::string::npos) {
    return Unexpected(std::string("exec activity: working_dir contains a NUL byte"));
  }
  if (config.max_stdout_bytes == 0 || config.max_stderr_bytes == 0) {
    return Unexpected(std::string("exec activity: output caps must be positive"));
  }
  std::map<std::string, std::string> merged;
  for (const auto& name : config.env_allow_list) {
    if (!IsValidEnvName(name)) {
      return Unexpected("exec activity: invalid environment variable name `" + name + "`");
    }
    if (IsReserved(name)) continue;
    // Read once, at creation: getenv is racy against setenv, and an attempt
    // must not see the server's environment change under it.
    if (const char* value = std::getenv(name.c_str())) merged[name] = value;
  }
  for (const auto& [name, value] : config.env) {
    if (!IsValidEnvName(name)) {
      return Unexpected("exec activity: invalid environment variable name `" + name + "`");
    }
    if (IsReserved(name)) {
      return Unexpected("exec activity: environment variable " + name + " is reserved");
    }
    if (value.find('\0') != std::string::npos) {
      return Unexpected("exec activity: environment variable " + name + " contains a NUL byte");
    }
    merged[name] = value;
  }
  if (auto supervisor = FindSupervisor(); !supervisor) {
    return Unexpected("exec activity: " + supervisor.error());
  }
  std::vector<std::string> base_env;
  for (const auto& [name, value] : merged) base_env.push_back(name + "=" + value);
  return std::shared_ptr<ExecActivityWorker>(
      new ExecActivityWorker(std::move(config), std::move(base_env), std::move(clock)));
}

ExecActivityWorker::ExecActivityWorker(ExecActivityConfig config, std::vector<std::string> base_env,
                                       SharedClock clock)
    : config_(std::move(config)), base_env_(std::move(base_env)), clock_(std::move(clock)) {
  for (const auto& fn : config_.functions) ffqns_.push_back(fn.ffqn);
}

const core::FunctionSignature* ExecActivityWorker::Find(const core::FunctionFqn& ffqn) const {
  for (const auto& fn : config_.functions) {
    if (fn.ffqn == ffqn) return &fn;
  }
  return nullptr;
}

WorkerResult ExecActivityWorker::Run(executor::WorkerContext ctx) {
  const core::FunctionSignature* signature = Find(ctx.ffqn);
  if (signature == nullptr) {
    return WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kCannotInstantiate,
                               "no exec activity serves " + ctx.ffqn.ToString());
  }
  if (auto checked = core::CheckParams(*signature, ctx.params); !checked) {
    return WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kParamsParsingError,
                               checked.error());
  }
  const std::string execution_id = ctx.execution_id.ToString();
  const uint32_t attempt = ctx.intermittent_event_count + 1;

  ProcessSpec spec;
  spec.argv = config_.argv;
  spec.working_dir = config_.working_dir;
  spec.env = base_env_;
  spec.env.push_back("STELE_FFQN=" + ctx.ffqn.ToString());
  spec.env.push_back("STELE_EXECUTION_ID=" + execution_id);
  spec.env.push_back("STELE_ATTEMPT=" + std::to_string(attempt));
  spec.stdin_data = ctx.params.dump(-1, ' ', false, core::Json::error_handler_t::replace);
  spec.max_stdout_bytes = config_.max_stdout_bytes;
  spec.max_stderr_bytes = config_.max_stderr_bytes;
  // The lock deadline on the executor's Clock, as an instant on the steady
  // clock the supervisor enforces it on (one beyond any real lease, which
  // the nanoseconds could not hold, is left to ctx.cancel).
  const std::chrono::microseconds remaining = ctx.execution_deadline - clock_->Now();
  if (remaining < kNoDeadlineBeyond) {
    spec.deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(remaining);
  }

  ProcessOutcome outcome = RunProcess(spec, ctx.cancel, [&](std::string_view line) {
    STELE_LOG(kInfo,
              "exec activity " << execution_id << " attempt " << attempt << " stderr: " << line);
  });

  using End = ProcessOutcome::End;
  switch (outcome.end) {
    case End::kSpawnFailed:
      return Trap(ctx, outcome.spawn_error, std::nullopt);
    case End::kCancelled:
      return WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kCancelled,
                                 "exec activity stopped: process group killed",
                                 StderrDetail(outcome));
    case End::kDeadline:
      return WorkerResult::Err(ctx.version, executor::TemporaryTimeout{});
    case End::kSupervisorLost:
      return Trap(ctx, outcome.spawn_error, StderrDetail(outcome));
    case End::kStdoutOverflow:
      return Trap(ctx,
                  "stdout exceeded " + std::to_string(config_.max_stdout_bytes) +
                      " bytes; process group killed",
                  StderrDetail(outcome));
    case End::kStderrOverflow:
      return Trap(ctx,
                  "stderr exceeded " + std::to_string(config_.max_stderr_bytes) +
                      " bytes; process group killed",
                  StderrDetail(outcome));
    case End::kSignaled:
      return Trap(ctx, "killed by signal " + std::to_string(outcome.term_signal),
                  StderrDetail(outcome));
    case End::kExited:
      if (outcome.exit_status != 0) {
        WorkerResult trap =
            Trap(ctx, "exit status " + std::to_string(outcome.exit_status), StderrDetail(outcome));
        const auto& permanent = config_.non_retryable_exit_codes;
        if (std::find(permanent.begin(), permanent.end(), outcome.exit_status) != permanent.end()) {
          auto& error = std::get<executor::WorkerError>(trap.value);
          std::get<executor::ActivityTrap>(error.error).non_retryable = true;
        }
        return trap;
      }
      break;
  }

  // Exit 0: the result is the JSON on stdout.
  core::Json parsed = core::Json::parse(outcome.stdout_data, nullptr, /*allow_exceptions=*/false);
  // {"err": v, "retryable": false}: a permanent failure, final at once.
  bool non_retryable = false;
  if (parsed.is_object() && parsed.size() == 2 && parsed.contains("err") &&
      parsed.contains("retryable") && parsed["retryable"].is_boolean()) {
    non_retryable = !parsed["retryable"].get<bool>();
    parsed.erase("retryable");
  }
  const bool shaped =
      parsed.is_object() && parsed.size() == 1 && (parsed.contains("ok") || parsed.contains("err"));
  if (!shaped) {
    return Trap(ctx, "stdout is not {\"ok\"}/{\"err\"} JSON: " + Excerpt(outcome.stdout_data),
                StderrDetail(outcome));
  }
  const bool is_ok = parsed.contains("ok");
  core::Json value = parsed.begin().value();
  // A null value is "no value" unless the declared side has a type (where
  // null may be a legitimate value, e.g. option none).
  const core::TypeDesc* side = nullptr;
  if (signature->return_type && signature->return_type->kind() == core::TypeDesc::Kind::kResult) {
    side = is_ok ? signature->return_type->ok() : signature->return_type->err();
  } else if (signature->return_type && is_ok) {
    side = &*signature->return_type;
  }
  std::optional<core::Json> payload;
  if (!value.is_null() || side != nullptr) payload = std::move(value);

  if (is_ok) {
    core::ReturnValueOk ok{std::move(payload)};
    if (auto checked = core::CheckReturnValue(*signature, ok); !checked) {
      return Trap(ctx,
                  "return value does not match " + signature->return_type->ToString() + ": " +
                      checked.error(),
                  StderrDetail(outcome));
    }
    return WorkerResult::Ok(std::move(ok), ctx.version);
  }
  core::ReturnValueErr err{std::move(payload)};
  if (auto checked = core::CheckReturnValue(*signature, err); !checked) {
    return Trap(
        ctx,
        "error value does not match " + signature->return_type->ToString() + ": " + checked.error(),
        StderrDetail(outcome));
  }
  if (config_.retry_on_err && ctx.can_be_retried && !non_retryable) {
    return WorkerResult::Err(ctx.version,
                             executor::ActivityReturnedError{std::move(err), std::nullopt, {}});
  }
  return WorkerResult::Ok(std::move(err), ctx.version);
}

}  // namespace stele::runtime::exec
