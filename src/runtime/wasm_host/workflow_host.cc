#include "runtime/wasm_host/workflow_host.h"

#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "core/duration.h"
#include "core/json.h"
#include "runtime/wasm_host/guest_abi.h"
#include "runtime/workflow/child_options.h"

namespace stele::runtime::wasm_host {

namespace {

namespace wf = runtime::workflow;
using wasm::FuncType;
using wasm::HostCall;
using wasm::ValType;
using wasm::Value;
using wasm::WasmError;
using Args = std::span<const Value>;
using HostResult = Result<std::vector<Value>, WasmError>;
using Kind = wf::Interruption::Kind;

constexpr ValType I = ValType::kI32;
constexpr ValType L = ValType::kI64;

uint32_t U32(const Value& v) { return static_cast<uint32_t>(v.AsI32()); }
uint64_t U64(const Value& v) { return static_cast<uint64_t>(v.AsI64()); }
HostResult StatusResult(Status s) {
  return std::vector<Value>{Value::I32(static_cast<int32_t>(s))};
}

core::HistoryEventScheduleAt InMillis(uint64_t millis) {
  if (millis == 0) return core::HistoryEventScheduleAt::Now();
  return core::HistoryEventScheduleAt::In(core::Duration::FromMillis(millis));
}

LogLevel ToLogLevel(int32_t level) {
  switch (level) {
    case 0:
      return LogLevel::kTrace;
    case 1:
      return LogLevel::kDebug;
    case 2:
      return LogLevel::kInfo;
    case 3:
      return LogLevel::kWarn;
    default:
      return LogLevel::kError;
  }
}

// An engine call of the run, made with the isolate released
// (HostCall::Park): any of them may wait, for the database (a lease
// extension, a flush of cached events) or for a response.
template <class EngineCall>
auto Parked(HostCall& call, EngineCall engine_call) -> decltype(engine_call()) {
  std::optional<decltype(engine_call())> out;
  call.Park([&] { out.emplace(engine_call()); });
  return std::move(*out);
}

// Every host function: entry/exit bookkeeping around `body`.
template <class Body>
wasm::HostFn Bind(WorkflowHost* host, Body body) {
  return [host, body = std::move(body)](HostCall& call, Args args) -> HostResult {
    host->Enter(call);
    HostResult result = body(*host, call, args);
    if (!Parked(call, [host] { return host->Leave(); }) && result) {
      return Unexpected(host->Abort());
    }
    return result;
  };
}

// Reads a string argument; an out-of-bounds pointer is the guest's trap.
#define STELE_READ(var, call, ptr, len) \
  STELE_ASSIGN_OR_RETURN(std::string var, (call).ReadString(U32(ptr), U32(len)))

Result<core::FunctionFqn, WasmError> ParseFfqn(WorkflowHost& host, const std::string& text) {
  auto ffqn = core::FunctionFqn::Parse(text);
  if (ffqn) return std::move(*ffqn);
  host.Interrupt(Kind::kImportedFunctionCallError,
                 "invalid ffqn `" + text + "`: " + ffqn.error().message);
  return Unexpected(host.Abort());
}

Result<core::JoinSetId, WasmError> ParseJoinSet(WorkflowHost& host, const std::string& text) {
  auto id = core::JoinSetId::Parse(text);
  if (id) return std::move(*id);
  host.Interrupt(Kind::kConstraintViolation, "invalid join set `" + text + "`");
  return Unexpected(host.Abort());
}

Result<core::Params, WasmError> ParseParams(WorkflowHost& host, const std::string& text,
                                            const std::string& ffqn) {
  core::Json params = core::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (params.is_discarded() || !params.is_array()) {
    host.Interrupt(
        Kind::kImportedFunctionCallError,
        "params of " + ffqn + " must be a JSON array, got `" + text.substr(0, 200) + "`");
    return Unexpected(host.Abort());
  }
  return params;
}

// Value of an engine call, or the abort error after an interruption.
template <class T>
Result<T, WasmError> Take(WorkflowHost& host, Result<T, wf::Interruption> result) {
  if (!result) return Unexpected(host.Abort());
  return std::move(*result);
}

// The options JSON of call_with_options / submit_with_options
// (wf::ChildOptionsFromJson); malformed options end the workflow like
// malformed params. Their values are checked by the run (ChildPolicy).
Result<wf::ChildOptions, WasmError> ParseChildOptions(WorkflowHost& host, const std::string& text,
                                                      const std::string& ffqn) {
  core::Json json = core::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto options =
      json.is_discarded()
          ? Result<wf::ChildOptions, std::string>(Unexpected(
                "child options must be a JSON object, got `" + text.substr(0, 200) + "`"))
          : wf::ChildOptionsFromJson(json);
  if (options) return std::move(*options);
  host.Interrupt(Kind::kImportedFunctionCallError,
                 "options of a child of " + ffqn + ": " + options.error());
  return Unexpected(host.Abort());
}

// call(ffqn, params, out) and call_with_options(ffqn, params, options, out).
HostResult CallWith(WorkflowHost& host, HostCall& c, Args a, bool with_options) {
  STELE_READ(ffqn_text, c, a[0], a[1]);
  STELE_READ(params_text, c, a[2], a[3]);
  STELE_ASSIGN_OR_RETURN(auto ffqn, ParseFfqn(host, ffqn_text));
  STELE_ASSIGN_OR_RETURN(auto params, ParseParams(host, params_text, ffqn_text));
  wf::ChildOptions own;
  if (with_options) {
    STELE_READ(options_text, c, a[4], a[5]);
    STELE_ASSIGN_OR_RETURN(own, ParseChildOptions(host, options_text, ffqn_text));
  }
  STELE_ASSIGN_OR_RETURN(
      auto value,
      Take(host, Parked(c, [&] { return host.run().Call(ffqn, std::move(params), own); })));
  auto [status, payload] = ResultPayload(value);
  STELE_TRY(WriteOut(c, U32(a[with_options ? 6 : 4]), payload));
  return StatusResult(status);
}

HostResult Call(WorkflowHost& host, HostCall& c, Args a) {
  return CallWith(host, c, a, /*with_options=*/false);
}

HostResult CallWithOptions(WorkflowHost& host, HostCall& c, Args a) {
  return CallWith(host, c, a, /*with_options=*/true);
}

HostResult JoinSetCreate(WorkflowHost& host, HostCall& c, Args a) {
  STELE_ASSIGN_OR_RETURN(auto id,
                         Take(host, Parked(c, [&] { return host.run().CreateJoinSet(); })));
  STELE_TRY(WriteOut(c, U32(a[0]), id.ToString()));
  return StatusResult(Status::kOk);
}

HostResult JoinSetCreateNamed(WorkflowHost& host, HostCall& c, Args a) {
  STELE_READ(name, c, a[0], a[1]);
  auto created = Parked(c, [&] { return host.run().CreateNamedJoinSet(name); });
  if (!created) return Unexpected(host.Abort());
  if (!*created) {
    std::string message =
        created->error().kind == wf::JoinSetCreateError::Kind::kInvalidName
            ? "invalid join set name `" + name + "`: use ASCII letters, digits, '-' and '/'"
            : "a join set named `" + name + "` exists already";
    STELE_TRY(WriteOut(c, U32(a[2]), message));
    return StatusResult(Status::kErr);
  }
  STELE_TRY(WriteOut(c, U32(a[2]), (**created).ToString()));
  return StatusResult(Status::kOk);
}

// submit(js, ffqn, params, out) and submit_with_options(js, ffqn, params,
// options, out).
HostResult SubmitWith(WorkflowHost& host, HostCall& c, Args a, bool with_options) {
  STELE_READ(js_text, c, a[0], a[1]);
  STELE_READ(ffqn_text, c, a[2], a[3]);
  STELE_READ(params_text, c, a[4], a[5]);
  STELE_ASSIGN_OR_RETURN(auto join_set, ParseJoinSet(host, js_text));
  STELE_ASSIGN_OR_RETURN(auto ffqn, ParseFfqn(host, ffqn_text));
  STELE_ASSIGN_OR_RETURN(auto params, ParseParams(host, params_text, ffqn_text));
  wf::ChildOptions own;
  if (with_options) {
    STELE_READ(options_text, c, a[6], a[7]);
    STELE_ASSIGN_OR_RETURN(own, ParseChildOptions(host, options_text, ffqn_text));
  }
  STELE_ASSIGN_OR_RETURN(auto child, Take(host, Parked(c, [&] {
                                            return host.run().SubmitChild(join_set, ffqn,
                                                                          std::move(params), own);
                                          })));
  STELE_TRY(WriteOut(c, U32(a[with_options ? 8 : 6]), child.ToString()));
  return StatusResult(Status::kOk);
}

HostResult Submit(WorkflowHost& host, HostCall& c, Args a) {
  return SubmitWith(host, c, a, /*with_options=*/false);
}

HostResult SubmitWithOptions(WorkflowHost& host, HostCall& c, Args a) {
  return SubmitWith(host, c, a, /*with_options=*/true);
}

HostResult SubmitDelay(WorkflowHost& host, HostCall& c, Args a) {
  STELE_READ(js_text, c, a[0], a[1]);
  STELE_ASSIGN_OR_RETURN(auto join_set, ParseJoinSet(host, js_text));
  STELE_ASSIGN_OR_RETURN(
      auto delay,
      Take(host, Parked(c, [&] { return host.run().SubmitDelay(join_set, InMillis(U64(a[2]))); })));
  STELE_TRY(WriteOut(c, U32(a[3]), delay.ToString()));
  return StatusResult(Status::kOk);
}

// join_next and join_next_try (`wait` false: kPending when nothing has
// arrived yet).
HostResult JoinNextOrTry(WorkflowHost& host, HostCall& c, Args a, bool wait) {
  STELE_READ(js_text, c, a[0], a[1]);
  STELE_ASSIGN_OR_RETURN(auto join_set, ParseJoinSet(host, js_text));
  std::optional<core::FunctionFqn> requested;
  if (U32(a[3]) != 0) {
    STELE_READ(ffqn_text, c, a[2], a[3]);
    STELE_ASSIGN_OR_RETURN(requested, ParseFfqn(host, ffqn_text));
  }
  wf::CallResult<wf::JoinSetResponseValue, wf::JoinNextError> next =
      Result<wf::JoinSetResponseValue, wf::JoinNextError>(
          Unexpected(wf::JoinNextError{wf::JoinNextError::Kind::kAllProcessed, std::nullopt}));
  if (wait) {
    next = Parked(c, [&] { return host.run().JoinNext(join_set, requested); });
  } else {
    auto tried = Parked(c, [&] { return host.run().JoinNextTry(join_set, requested); });
    if (!tried) return Unexpected(host.Abort());
    if (*tried && !**tried) {
      STELE_TRY(WriteOut(c, U32(a[5]), "\"nothing has arrived in " + js_text + " yet\""));
      return StatusResult(Status::kPending);
    }
    if (*tried) {
      next = Result<wf::JoinSetResponseValue, wf::JoinNextError>(***tried);
    } else {
      next = Result<wf::JoinSetResponseValue, wf::JoinNextError>(Unexpected(tried->error()));
    }
  }
  if (!next) return Unexpected(host.Abort());
  auto write = [&](const wf::JoinSetResponseValue& value) -> Result<Status, WasmError> {
    if (const auto* child = std::get_if<wf::ChildResponse>(&value)) {
      STELE_TRY(WriteOut(c, U32(a[4]), child->child_execution_id.ToString()));
      auto [status, payload] = ResultPayload(child->result);
      STELE_TRY(WriteOut(c, U32(a[5]), payload));
      return status;
    }
    const auto& delay = std::get<wf::DelayResponse>(value);
    STELE_TRY(WriteOut(c, U32(a[4]), delay.delay_id.ToString()));
    if (delay.ok) {
      STELE_TRY(WriteOut(c, U32(a[5]), "null"));
      return Status::kOk;
    }
    STELE_TRY(
        WriteOut(c, U32(a[5]), R"({"kind":"cancelled","reason":"delay cancelled","detail":null})"));
    return Status::kFailed;
  };
  if (*next) {
    STELE_ASSIGN_OR_RETURN(Status status, write(**next));
    return StatusResult(status);
  }
  const auto& error = next->error();
  if (error.kind == wf::JoinNextError::Kind::kAllProcessed) {
    STELE_TRY(
        WriteOut(c, U32(a[5]), "\"every submission of " + js_text + " was awaited already\""));
    return StatusResult(Status::kAllProcessed);
  }
  if (error.kind == wf::JoinNextError::Kind::kCancelled) {
    STELE_TRY(WriteOut(c, U32(a[5]), "\"the workflow is being cancelled\""));
    return StatusResult(Status::kCancelled);
  }
  if (error.actual) STELE_TRY(write(*error.actual));
  return StatusResult(Status::kMismatch);
}

HostResult JoinNext(WorkflowHost& host, HostCall& c, Args a) {
  return JoinNextOrTry(host, c, a, /*wait=*/true);
}

HostResult JoinNextTry(WorkflowHost& host, HostCall& c, Args a) {
  return JoinNextOrTry(host, c, a, /*wait=*/false);
}

HostResult JoinSetClose(WorkflowHost& host, HostCall& c, Args a) {
  STELE_READ(js_text, c, a[0], a[1]);
  STELE_ASSIGN_OR_RETURN(auto join_set, ParseJoinSet(host, js_text));
  if (!Parked(c, [&] { return host.run().CloseJoinSet(join_set); }))
    return Unexpected(host.Abort());
  return StatusResult(Status::kOk);
}

HostResult Get(WorkflowHost& host, HostCall& c, Args a) {
  STELE_READ(ffqn_text, c, a[0], a[1]);
  STELE_READ(id_text, c, a[2], a[3]);
  STELE_ASSIGN_OR_RETURN(auto ffqn, ParseFfqn(host, ffqn_text));
  auto child = core::ExecutionIdDerived::Parse(id_text);
  if (!child) {
    STELE_TRY(WriteOut(c, U32(a[4]), "\"invalid child execution id\""));
    return StatusResult(Status::kNotFound);
  }
  auto got = Parked(c, [&] { return host.run().Get(*child, ffqn); });
  if (!got) return Unexpected(host.Abort());
  const auto& result = *got;
  if (!result) {
    bool mismatch = result.error().kind == wf::GetError::Kind::kFunctionMismatch;
    core::Json message = mismatch ? "child " + id_text + " runs another function"
                                  : "child " + id_text + " is not among the processed responses";
    STELE_TRY(WriteOut(c, U32(a[4]), message.dump()));
    return StatusResult(mismatch ? Status::kMismatch : Status::kNotFound);
  }
  auto [status, payload] = ResultPayload(*result);
  STELE_TRY(WriteOut(c, U32(a[4]), payload));
  return StatusResult(status);
}

HostResult Sleep(WorkflowHost& host, HostCall& c, Args a) {
  auto slept = Parked(c, [&] { return host.run().Sleep(InMillis(U64(a[0]))); });
  if (!slept) return Unexpected(host.Abort());
  return StatusResult(slept->has_value() ? Status::kOk : Status::kFailed);
}

HostResult Schedule(WorkflowHost& host, HostCall& c, Args a) {
  STELE_READ(ffqn_text, c, a[0], a[1]);
  STELE_READ(params_text, c, a[2], a[3]);
  STELE_ASSIGN_OR_RETURN(auto ffqn, ParseFfqn(host, ffqn_text));
  STELE_ASSIGN_OR_RETURN(auto params, ParseParams(host, params_text, ffqn_text));
  STELE_ASSIGN_OR_RETURN(auto id, Take(host, Parked(c, [&] {
                                         return host.run().Schedule(InMillis(U64(a[4])), ffqn,
                                                                    std::move(params));
                                       })));
  STELE_TRY(WriteOut(c, U32(a[5]), id.ToString()));
  return StatusResult(Status::kOk);
}

HostResult Stub(WorkflowHost& host, HostCall& c, Args a) {
  STELE_READ(ffqn_text, c, a[0], a[1]);
  STELE_READ(id_text, c, a[2], a[3]);
  STELE_READ(value_text, c, a[5], a[6]);
  STELE_ASSIGN_OR_RETURN(auto ffqn, ParseFfqn(host, ffqn_text));
  auto target = core::ExecutionIdDerived::Parse(id_text);
  if (!target) {
    host.Interrupt(Kind::kImportedFunctionCallError,
                   "stub target `" + id_text + "` is not a child execution id");
    return Unexpected(host.Abort());
  }
  auto value = StubValue(a[4].AsI32(), value_text);
  if (!value) {
    host.Interrupt(Kind::kImportedFunctionCallError, value.error());
    return Unexpected(host.Abort());
  }
  auto stubbed = Parked(c, [&] { return host.run().Stub(ffqn, *target, std::move(*value)); });
  if (!stubbed) return Unexpected(host.Abort());
  return StatusResult(*stubbed ? Status::kOk : Status::kErr);
}

// --- Messages and published values (docs/guest_abi.md §3) ---------------

// A JSON value the guest passes (a body, a published value); malformed
// JSON ends the workflow like malformed params.
Result<core::Json, WasmError> ParseJsonValue(WorkflowHost& host, const std::string& text,
                                             const char* what) {
  core::Json value = core::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    host.Interrupt(Kind::kImportedFunctionCallError,
                   std::string(what) + " must be JSON, got `" + text.substr(0, 200) + "`");
    return Unexpected(host.Abort());
  }
  return value;
}

// receive(channel, timeout_millis | u64::MAX, id_out, out): STELE_OK with
// the message id and body; STELE_FAILED when the timeout came first;
// STELE_CANCELLED.
HostResult Receive(WorkflowHost& host, HostCall& c, Args a) {
  STELE_READ(channel, c, a[0], a[1]);
  std::optional<core::HistoryEventScheduleAt> timeout;
  if (U64(a[2]) != UINT64_MAX) timeout = InMillis(U64(a[2]));
  auto received = Parked(c, [&] { return host.run().Receive(channel, timeout); });
  if (!received) return Unexpected(host.Abort());
  if (!*received) {
    return StatusResult(received->error().kind == wf::ReceiveError::Kind::kCancelled
                            ? Status::kCancelled
                            : Status::kFailed);
  }
  STELE_TRY(WriteOut(c, U32(a[3]), (*received)->message_id));
  STELE_TRY(WriteOut(c, U32(a[4]), (*received)->body.dump()));
  return StatusResult(Status::kOk);
}

// receive_try(channel, id_out, out): as receive, STELE_PENDING when no
// message has arrived.
HostResult ReceiveTry(WorkflowHost& host, HostCall& c, Args a) {
  STELE_READ(channel, c, a[0], a[1]);
  auto tried = Parked(c, [&] { return host.run().TryReceive(channel); });
  if (!tried) return Unexpected(host.Abort());
  if (!*tried) return StatusResult(Status::kCancelled);
  if (!**tried) return StatusResult(Status::kPending);
  STELE_TRY(WriteOut(c, U32(a[2]), (**tried)->message_id));
  STELE_TRY(WriteOut(c, U32(a[3]), (**tried)->body.dump()));
  return StatusResult(Status::kOk);
}

HostResult Publish(WorkflowHost& host, HostCall& c, Args a) {
  STELE_READ(key, c, a[0], a[1]);
  STELE_READ(value_text, c, a[2], a[3]);
  STELE_ASSIGN_OR_RETURN(auto value, ParseJsonValue(host, value_text, "a published value"));
  if (!Parked(c, [&] { return host.run().PublishValue(key, std::move(value)); }))
    return Unexpected(host.Abort());
  return StatusResult(Status::kOk);
}

// send(execution_id, channel, body): STELE_OK, STELE_NOT_FOUND, or
// STELE_FAILED when the execution has finished.
HostResult Send(WorkflowHost& host, HostCall& c, Args a) {
  STELE_READ(target_text, c, a[0], a[1]);
  STELE_READ(channel, c, a[2], a[3]);
  STELE_READ(body_text, c, a[4], a[5]);
  auto target = core::ExecutionId::Parse(target_text);
  if (!target) return StatusResult(Status::kNotFound);
  STELE_ASSIGN_OR_RETURN(auto body, ParseJsonValue(host, body_text, "a message body"));
  auto sent = Parked(c, [&] { return host.run().SendMessage(*target, channel, std::move(body)); });
  if (!sent) return Unexpected(host.Abort());
  if (!*sent) {
    return StatusResult(sent->error().kind == wf::SendError::Kind::kNotFound ? Status::kNotFound
                                                                             : Status::kFailed);
  }
  return StatusResult(Status::kOk);
}

HostResult RandomU64(WorkflowHost& host, HostCall& c, Args a) {
  STELE_ASSIGN_OR_RETURN(
      uint64_t v,
      Take(host, Parked(c, [&] { return host.run().RandomU64(U64(a[0]), U64(a[1])); })));
  return std::vector<Value>{Value::I64(static_cast<int64_t>(v))};
}

HostResult RandomU64Inclusive(WorkflowHost& host, HostCall& c, Args a) {
  STELE_ASSIGN_OR_RETURN(
      uint64_t v,
      Take(host, Parked(c, [&] { return host.run().RandomU64Inclusive(U64(a[0]), U64(a[1])); })));
  return std::vector<Value>{Value::I64(static_cast<int64_t>(v))};
}

HostResult RandomString(WorkflowHost& host, HostCall& c, Args a) {
  STELE_ASSIGN_OR_RETURN(
      auto s, Take(host, Parked(c, [&] { return host.run().RandomString(U32(a[0]), U32(a[1])); })));
  STELE_TRY(WriteOut(c, U32(a[2]), s));
  return StatusResult(Status::kOk);
}

HostResult Log(WorkflowHost& host, HostCall& c, Args a) {
  STELE_READ(message, c, a[1], a[2]);
  if (!Parked(c, [&] { return host.run().Log(ToLogLevel(a[0].AsI32()), message); }))
    return Unexpected(host.Abort());
  return std::vector<Value>{};
}

#undef STELE_READ

}  // namespace

std::shared_ptr<const wasm::ImportTable> WorkflowHost::Imports() {
  auto table = std::make_shared<wasm::ImportTable>();
  const std::string m(kImportModule);
  auto add = [&](const char* name, FuncType type, auto body) {
    table->Add(m, name, std::move(type), Bind(this, body));
  };
  add("call", {{I, I, I, I, I}, {I}}, Call);
  add("call_with_options", {{I, I, I, I, I, I, I}, {I}}, CallWithOptions);
  add("join_set_create", {{I}, {I}}, JoinSetCreate);
  add("join_set_create_named", {{I, I, I}, {I}}, JoinSetCreateNamed);
  add("submit", {{I, I, I, I, I, I, I}, {I}}, Submit);
  add("submit_with_options", {{I, I, I, I, I, I, I, I, I}, {I}}, SubmitWithOptions);
  add("submit_delay", {{I, I, L, I}, {I}}, SubmitDelay);
  add("join_next", {{I, I, I, I, I, I}, {I}}, JoinNext);
  add("join_next_try", {{I, I, I, I, I, I}, {I}}, JoinNextTry);
  add("join_set_close", {{I, I}, {I}}, JoinSetClose);
  add("get", {{I, I, I, I, I}, {I}}, Get);
  add("sleep", {{L}, {I}}, Sleep);
  add("schedule", {{I, I, I, I, L, I}, {I}}, Schedule);
  add("stub", {{I, I, I, I, I, I, I}, {I}}, Stub);
  add("receive", {{I, I, L, I, I}, {I}}, Receive);
  add("receive_try", {{I, I, I, I}, {I}}, ReceiveTry);
  add("publish", {{I, I, I, I}, {I}}, Publish);
  add("send", {{I, I, I, I, I, I}, {I}}, Send);
  add("random_u64", {{L, L}, {L}}, RandomU64);
  add("random_u64_inclusive", {{L, L}, {L}}, RandomU64Inclusive);
  add("random_string", {{I, I, I}, {I}}, RandomString);
  add("log", {{I, I, I}, {}}, Log);
  return table;
}

std::optional<wf::Interruption> WorkflowHost::interruption() const {
  if (own_interruption_) return own_interruption_;
  if (run_ != nullptr) return run_->interruption();
  return std::nullopt;
}

void WorkflowHost::Interrupt(Kind kind, std::string reason) {
  if (!own_interruption_ && !(run_ && run_->interruption())) {
    own_interruption_ = wf::Interruption{kind, std::move(reason), {}};
  }
}

WasmError WorkflowHost::Abort() const {
  auto i = interruption();
  return WasmError::Make(WasmError::Kind::kHostStop,
                         "workflow interrupted: " + (i ? i->ToString() : std::string("unknown")));
}

void WorkflowHost::Enter(HostCall& call) {
  ++host_calls_;
  if (watchdog_ != nullptr) watchdog_->Pause(watch_handle_);
  pending_backtrace_.reset();
  if (run_ == nullptr || run_->IsReplaying()) return;
  core::WasmBacktrace trace;
  for (auto& name : call.Backtrace()) {
    trace.frames.push_back(core::FrameInfo{component_id_.name, std::move(name), {}});
  }
  pending_backtrace_.emplace(run_->version(), std::move(trace));
}

bool WorkflowHost::Leave() {
  if (pending_backtrace_ && run_ != nullptr) {
    auto [before, trace] = std::move(*pending_backtrace_);
    pending_backtrace_.reset();
    core::Version after = run_->version();
    if (after > before) {
      backtraces_.push_back(core::BacktraceInfo{run_->execution_id(), component_id_, before, after,
                                                std::move(trace)});
    }
  }
  // An interrupted run aborts the guest anyway: no slice for it.
  if (interruption()) return true;
  return StartSlice();
}

bool WorkflowHost::StartSlice() {
  if (watchdog_ == nullptr || run_ == nullptr || clock_ == nullptr) return true;
  // The slice counts CPU time, the lease wall time: twice the slice leaves
  // a run that waits for a core (under load) room to use its slice before
  // the lease's end stops it.
  auto lease_end = run_->EnsureLease(2 * policy_.slice + policy_.margin);
  if (!lease_end) return false;  // recorded in the run
  const auto left = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      *lease_end - clock_->Now() -
      std::chrono::duration_cast<std::chrono::microseconds>(policy_.margin));
  if (left <= std::chrono::steady_clock::duration::zero()) {
    // Only without lock extension: the lease cannot outlast a slice.
    Interrupt(Kind::kLeaseExpired, "the lease ends within " +
                                       std::to_string(policy_.margin.count()) +
                                       " ms, before the guest could compute");
    return false;
  }
  watchdog_->Resume(watch_handle_, policy_.slice, std::chrono::steady_clock::now() + left);
  return true;
}

wasm::ModuleLimits WorkflowModuleLimits(uint32_t max_memory_pages) {
  WorkflowHost signatures(nullptr, core::ComponentId::DummyWorkflow());
  return signatures.Imports()->AsLimits(max_memory_pages);
}

}  // namespace stele::runtime::wasm_host
