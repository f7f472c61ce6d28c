#include "runtime/js/js_workflow_host.h"

#include <charconv>
#include <limits>
#include <utility>

#include "core/duration.h"
#include "runtime/workflow/child_options.h"

namespace stele::runtime::js {

namespace {

namespace wf = runtime::workflow;
using Kind = wf::Interruption::Kind;
using core::Json;

core::HistoryEventScheduleAt InMillis(uint64_t millis) {
  if (millis == 0) return core::HistoryEventScheduleAt::Now();
  return core::HistoryEventScheduleAt::In(core::Duration::FromMillis(millis));
}

LogLevel ToLogLevel(std::string_view level) {
  if (level == "trace") return LogLevel::kTrace;
  if (level == "debug") return LogLevel::kDebug;
  if (level == "warn") return LogLevel::kWarn;
  if (level == "error") return LogLevel::kError;
  return LogLevel::kInfo;
}

// Arguments as runtime.js sends them; anything else is a bug of ours or a
// guest reaching past the context, refused with a TypeError.
std::optional<std::string> Str(const Json& args, size_t i) {
  if (i >= args.size() || !args[i].is_string()) return std::nullopt;
  return args[i].get<std::string>();
}
std::optional<uint64_t> U64(const Json& args, size_t i) {
  if (i >= args.size()) return std::nullopt;
  if (args[i].is_number_unsigned()) return args[i].get<uint64_t>();
  if (args[i].is_number_integer() && args[i].get<int64_t>() >= 0) {
    return static_cast<uint64_t>(args[i].get<int64_t>());
  }
  if (args[i].is_string()) {  // u64 values travel as decimal strings
    const std::string& s = args[i].get_ref<const std::string&>();
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) return v;
  }
  return std::nullopt;
}

HostReply BadArguments(std::string_view op) {
  return HostReply::Throw("TypeError", std::string(op) + ": invalid arguments");
}

Json ResponseJson(const wf::JoinSetResponseValue& value) {
  if (const auto* child = std::get_if<wf::ChildResponse>(&value)) {
    return Json{{"kind", "child"},
                {"id", child->child_execution_id.ToString()},
                {"ffqn", child->ffqn.ToString()},
                {"result", OutcomeJson(child->result)}};
  }
  const auto& delay = std::get<wf::DelayResponse>(value);
  return Json{{"kind", "delay"}, {"id", delay.delay_id.ToString()}, {"expired", delay.ok}};
}

}  // namespace

Json OutcomeJson(const core::SupportedFunctionReturnValue& value) {
  if (const auto* ok = std::get_if<core::ReturnValueOk>(&value)) {
    return Json{{"ok", ok->ok.value_or(nullptr)}};
  }
  if (const auto* err = std::get_if<core::ReturnValueErr>(&value)) {
    return Json{{"err", err->err.value_or(nullptr)}};
  }
  const auto& failed = std::get<core::FinishedExecutionError>(value);
  Json failure{{"kind", std::string(core::ExecutionFailureKindName(failed.kind))},
               {"reason", failed.reason ? Json(*failed.reason) : Json(nullptr)},
               {"detail", failed.detail ? Json(*failed.detail) : Json(nullptr)}};
  return Json{{"failure", std::move(failure)}};
}

core::SupportedFunctionReturnValue ToReturnValue(bool ok, Json value) {
  std::optional<Json> v;
  if (!value.is_null()) v = std::move(value);
  if (ok) return core::ReturnValueOk{std::move(v)};
  return core::ReturnValueErr{std::move(v)};
}

std::optional<wf::Interruption> JsWorkflowHost::interruption() const {
  if (own_interruption_) return own_interruption_;
  return run_.interruption();
}

HostReply JsWorkflowHost::Interrupt(Kind kind, std::string reason) {
  if (!own_interruption_ && !run_.interruption()) {
    own_interruption_ = wf::Interruption{kind, std::move(reason), {}};
  }
  return Abort();
}

HostReply JsWorkflowHost::Abort() const {
  auto i = interruption();
  return HostReply::Abort("workflow interrupted: " + (i ? i->ToString() : std::string("unknown")));
}

HostReply JsWorkflowHost::Call(std::string_view op, const Json& args,
                               const std::function<std::vector<JsFrame>()>& stack) {
  ++host_calls_;
  // The lease could not be kept (GuestDeadline): the guest stops here.
  if (interruption()) return Abort();
  if (run_.IsReplaying()) return Dispatch(op, args);
  const core::Version before = run_.version();
  std::vector<JsFrame> frames = stack();
  HostReply reply = Dispatch(op, args);
  const core::Version after = run_.version();
  if (after > before) {
    core::WasmBacktrace trace;
    for (JsFrame& frame : frames) {
      std::string function = frame.function.empty() ? "<anonymous>" : frame.function;
      trace.frames.push_back(core::FrameInfo{
          component_id_.name,
          function,
          {core::FrameSymbol{function, std::move(frame.file), frame.line, frame.column}}});
    }
    backtraces_.push_back(
        core::BacktraceInfo{run_.execution_id(), component_id_, before, after, std::move(trace)});
  }
  return reply;
}

HostReply JsWorkflowHost::Dispatch(std::string_view op, const Json& args) {
  auto ffqn_at = [&](size_t i) -> Result<core::FunctionFqn, HostReply> {
    auto text = Str(args, i);
    if (!text) return Unexpected(BadArguments(op));
    auto ffqn = core::FunctionFqn::Parse(*text);
    if (!ffqn) {
      return Unexpected(Interrupt(Kind::kImportedFunctionCallError,
                                  "invalid ffqn `" + *text + "`: " + ffqn.error().message));
    }
    return *std::move(ffqn);
  };
  auto join_set_at = [&](size_t i) -> Result<core::JoinSetId, HostReply> {
    auto text = Str(args, i);
    if (!text) return Unexpected(BadArguments(op));
    auto id = core::JoinSetId::Parse(*text);
    if (!id)
      return Unexpected(Interrupt(Kind::kConstraintViolation, "invalid join set `" + *text + "`"));
    return *std::move(id);
  };
  auto params_at = [&](size_t i) -> Result<core::Params, HostReply> {
    if (i >= args.size() || !args[i].is_array()) return Unexpected(BadArguments(op));
    return args[i];
  };
  // A child's options (runtime.js: null or an object of the host's keys);
  // their values are the run's to check (WorkflowRun::ChildPolicy).
  auto child_options_at = [&](size_t i) -> Result<wf::ChildOptions, HostReply> {
    if (i >= args.size() || args[i].is_null()) return wf::ChildOptions{};
    auto options = wf::ChildOptionsFromJson(args[i]);
    if (!options)
      return Unexpected(HostReply::Throw("TypeError", std::string(op) + ": " + options.error()));
    return *std::move(options);
  };
#define JS_TRY(var, expr)                          \
  auto var##_r = (expr);                           \
  if (!var##_r) return std::move(var##_r).error(); \
  auto var = *std::move(var##_r)
  auto value = [&](auto result, auto convert) -> HostReply {
    if (!result) return Abort();
    return HostReply::Value(convert(*result));
  };
  auto text = [](const auto& v) { return Json(v.ToString()); };

  if (op == "call") {
    JS_TRY(ffqn, ffqn_at(0));
    JS_TRY(params, params_at(1));
    JS_TRY(own, child_options_at(2));
    return value(run_.Call(ffqn, std::move(params), own),
                 [](const auto& v) { return OutcomeJson(v); });
  }
  if (op == "joinSet") {
    if (args.empty()) return value(run_.CreateJoinSet(), text);
    auto name = Str(args, 0);
    if (!name) return BadArguments(op);
    auto created = run_.CreateNamedJoinSet(*name);
    if (!created) return Abort();
    if (!*created) {
      return HostReply::Throw(
          "Error",
          created->error().kind == wf::JoinSetCreateError::Kind::kInvalidName
              ? "invalid join set name `" + *name + "`: use ASCII letters, digits, '-' and '/'"
              : "a join set named `" + *name + "` exists already");
    }
    return HostReply::Value((**created).ToString());
  }
  if (op == "submit") {
    JS_TRY(join_set, join_set_at(0));
    JS_TRY(ffqn, ffqn_at(1));
    JS_TRY(params, params_at(2));
    JS_TRY(own, child_options_at(3));
    return value(run_.SubmitChild(join_set, ffqn, std::move(params), own), text);
  }
  if (op == "submitDelay") {
    JS_TRY(join_set, join_set_at(0));
    auto ms = U64(args, 1);
    if (!ms) return BadArguments(op);
    return value(run_.SubmitDelay(join_set, InMillis(*ms)), text);
  }
  if (op == "next") {
    JS_TRY(join_set, join_set_at(0));
    std::optional<core::FunctionFqn> requested;
    if (args.size() > 1 && !args[1].is_null()) {
      JS_TRY(ffqn, ffqn_at(1));
      requested = std::move(ffqn);
    }
    auto next = run_.JoinNext(join_set, requested);
    if (!next) return Abort();
    if (*next) return HostReply::Value(ResponseJson(**next));
    const auto& error = next->error();
    if (error.kind == wf::JoinNextError::Kind::kAllProcessed) return HostReply::Value(nullptr);
    if (error.kind == wf::JoinNextError::Kind::kCancelled) {
      return HostReply::Throw("Cancelled", "the workflow is being cancelled", Json());
    }
    return HostReply::Throw("FunctionMismatch", "",
                            error.actual ? ResponseJson(*error.actual) : Json());
  }
  if (op == "tryNext") {
    JS_TRY(join_set, join_set_at(0));
    std::optional<core::FunctionFqn> requested;
    if (args.size() > 1 && !args[1].is_null()) {
      JS_TRY(ffqn, ffqn_at(1));
      requested = std::move(ffqn);
    }
    auto next = run_.JoinNextTry(join_set, requested);
    if (!next) return Abort();
    if (*next) {
      if (!**next) return HostReply::Value(core::Json{{"state", "pending"}});
      return HostReply::Value(
          core::Json{{"state", "response"}, {"response", ResponseJson(***next)}});
    }
    const auto& error = next->error();
    if (error.kind == wf::JoinNextError::Kind::kAllProcessed) {
      return HostReply::Value(core::Json{{"state", "done"}});
    }
    if (error.kind == wf::JoinNextError::Kind::kCancelled) {
      return HostReply::Throw("Cancelled", "the workflow is being cancelled", core::Json());
    }
    return HostReply::Throw("FunctionMismatch", "",
                            error.actual ? ResponseJson(*error.actual) : core::Json());
  }
  if (op == "close") {
    JS_TRY(join_set, join_set_at(0));
    if (!run_.CloseJoinSet(join_set)) return Abort();
    return HostReply::Value(nullptr);
  }
  if (op == "get") {
    JS_TRY(ffqn, ffqn_at(0));
    auto id_text = Str(args, 1);
    if (!id_text) return BadArguments(op);
    auto child = core::ExecutionIdDerived::Parse(*id_text);
    if (!child) return HostReply::Throw("Error", "`" + *id_text + "` is not a child execution id");
    auto got = run_.Get(*child, ffqn);
    if (!got) return Abort();
    if (!*got) {
      return HostReply::Throw("Error",
                              got->error().kind == wf::GetError::Kind::kFunctionMismatch
                                  ? "child " + *id_text + " runs another function"
                                  : "child " + *id_text + " is not among the processed responses");
    }
    return HostReply::Value(OutcomeJson(**got));
  }
  if (op == "sleep") {
    auto ms = U64(args, 0);
    if (!ms) return BadArguments(op);
    auto slept = run_.Sleep(InMillis(*ms));
    if (!slept) return Abort();
    return HostReply::Value(slept->has_value());
  }
  if (op == "schedule") {
    JS_TRY(ffqn, ffqn_at(0));
    JS_TRY(params, params_at(1));
    auto ms = U64(args, 2);
    if (!ms) return BadArguments(op);
    return value(run_.Schedule(InMillis(*ms), ffqn, std::move(params)), text);
  }
  if (op == "stub") {
    JS_TRY(ffqn, ffqn_at(0));
    auto id_text = Str(args, 1);
    if (!id_text || args.size() < 3 || !args[2].is_object()) return BadArguments(op);
    auto target = core::ExecutionIdDerived::Parse(*id_text);
    if (!target) {
      return Interrupt(Kind::kImportedFunctionCallError,
                       "stub target `" + *id_text + "` is not a child execution id");
    }
    const Json& outcome = args[2];
    const bool ok = outcome.contains("ok");
    auto stubbed = run_.Stub(ffqn, *target,
                             ToReturnValue(ok, ok ? outcome["ok"] : outcome.value("err", Json())));
    if (!stubbed) return Abort();
    return HostReply::Value(stubbed->has_value());
  }
  // Messages and published values (docs/js.md, "Messages").
  if (op == "receive" || op == "tryReceive") {
    auto channel = Str(args, 0);
    if (!channel) return BadArguments(op);
    auto message_json = [](const wf::Message& m) {
      return Json{{"id", m.message_id}, {"channel", m.channel}, {"body", m.body}};
    };
    if (op == "tryReceive") {
      auto tried = run_.TryReceive(*channel);
      if (!tried) return Abort();
      if (!*tried) return HostReply::Throw("Cancelled", "the workflow is being cancelled", Json());
      if (!**tried) return HostReply::Value(nullptr);
      return HostReply::Value(message_json(***tried));
    }
    std::optional<core::HistoryEventScheduleAt> timeout;
    if (args.size() > 1 && !args[1].is_null()) {
      auto ms = U64(args, 1);
      if (!ms) return BadArguments(op);
      timeout = InMillis(*ms);
    }
    auto received = run_.Receive(*channel, timeout);
    if (!received) return Abort();
    if (!*received) {
      if (received->error().kind == wf::ReceiveError::Kind::kCancelled) {
        return HostReply::Throw("Cancelled", "the workflow is being cancelled", Json());
      }
      return HostReply::Value(nullptr);  // timed out
    }
    return HostReply::Value(message_json(**received));
  }
  if (op == "publish") {
    auto key = Str(args, 0);
    if (!key || args.size() < 2) return BadArguments(op);
    if (!run_.PublishValue(*key, args[1])) return Abort();
    return HostReply::Value(nullptr);
  }
  if (op == "send") {
    auto target_text = Str(args, 0);
    auto channel = Str(args, 1);
    if (!target_text || !channel || args.size() < 3) return BadArguments(op);
    auto target = core::ExecutionId::Parse(*target_text);
    if (!target)
      return HostReply::Throw("TypeError", "send: `" + *target_text + "` is not an execution id");
    auto sent = run_.SendMessage(*target, *channel, args[2]);
    if (!sent) return Abort();
    if (!*sent) {
      return HostReply::Throw(
          "Error", "send: execution " + *target_text +
                       (sent->error().kind == wf::SendError::Kind::kNotFound ? " not found"
                                                                             : " has finished"));
    }
    return HostReply::Value(nullptr);
  }
  if (op == "randomU64" || op == "randomU64Inclusive") {
    auto min = U64(args, 0);
    auto max = U64(args, 1);
    if (!min || !max) return BadArguments(op);
    auto drawn =
        op == "randomU64" ? run_.RandomU64(*min, *max) : run_.RandomU64Inclusive(*min, *max);
    return value(drawn, [](uint64_t v) { return Json(std::to_string(v)); });
  }
  if (op == "randomString") {
    auto min = U64(args, 0);
    auto max = U64(args, 1);
    if (!min || !max) return BadArguments(op);
    return value(run_.RandomString(*min, *max), [](const std::string& s) { return Json(s); });
  }
  if (op == "log") {
    auto level = Str(args, 0);
    auto message = Str(args, 1);
    if (!level || !message) return BadArguments(op);
    if (!run_.Log(ToLogLevel(*level), *message)) return Abort();
    return HostReply::Value(nullptr);
  }
#undef JS_TRY
  return HostReply::Throw("TypeError",
                          "unknown operation `" + std::string(op) + "` for a workflow");
}

Result<double, std::string> JsWorkflowHost::Now() {
  auto now = run_.Now();
  if (!now) return Unexpected(Abort().message);
  return static_cast<double>(ToMicros(*now) / 1000);
}

Result<workflow::WorkflowPrng*, std::string> JsWorkflowHost::Prng() {
  if (!prng_) {
    // One recorded value seeds Math.random and crypto for the run; a
    // replay draws it again at the same point and so gets the same
    // sequence.
    auto seed = run_.RandomU64Inclusive(0, std::numeric_limits<uint64_t>::max());
    if (!seed) return Unexpected(Abort().message);
    prng_.emplace(*seed);
  }
  return &*prng_;
}

Result<double, std::string> JsWorkflowHost::Random() {
  STELE_ASSIGN_OR_RETURN(workflow::WorkflowPrng * prng, Prng());
  return static_cast<double>(prng->NextU64() >> 11) * 0x1.0p-53;
}

Result<void, std::string> JsWorkflowHost::RandomBytes(std::span<uint8_t> bytes) {
  STELE_ASSIGN_OR_RETURN(workflow::WorkflowPrng * prng, Prng());
  for (size_t i = 0; i < bytes.size(); i += 8) {
    const uint64_t v = prng->NextU64();
    for (size_t j = 0; j < 8 && i + j < bytes.size(); ++j)
      bytes[i + j] = static_cast<uint8_t>(v >> (8 * j));
  }
  return {};
}

std::optional<std::chrono::steady_clock::time_point> JsWorkflowHost::GuestDeadline() {
  if (clock_ == nullptr) return std::nullopt;
  const auto now = std::chrono::steady_clock::now();
  if (interruption()) return now;
  // The slice counts CPU time, the lease wall time: twice the slice leaves
  // a run that waits for a core (under load) room to use its slice before
  // the lease's end stops it.
  auto lease_end = run_.EnsureLease(2 * policy_.slice + policy_.margin);
  if (!lease_end) return now;  // recorded in the run
  const auto left = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      *lease_end - clock_->Now() -
      std::chrono::duration_cast<std::chrono::microseconds>(policy_.margin));
  if (left <= std::chrono::steady_clock::duration::zero()) {
    // Only without lock extension: the lease cannot outlast a slice.
    Interrupt(workflow::Interruption::Kind::kLeaseExpired,
              "the lease ends within " + std::to_string(policy_.margin.count()) +
                  " ms, before the guest could compute");
    return now;
  }
  return now + left;
}

}  // namespace stele::runtime::js
