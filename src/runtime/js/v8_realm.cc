#include "runtime/js/v8_realm.h"

#include <libplatform/libplatform.h>

#include <algorithm>
#include <mutex>
#include <string_view>
#include <utility>

#include "base/check.h"
#include "runtime/js/js_watchdog.h"
#include "runtime/wasm/v8_platform.h"

namespace stele::runtime::js {

// runtime.js, embedded at build time (runtime_js.cmake).
extern const char kRuntimeJs[];

namespace internal {
namespace {

using Kind = JsError::Kind;
constexpr int kMaxFrames = 64;

std::string ToStd(v8::Isolate* isolate, v8::Local<v8::Value> value) {
  if (value.IsEmpty()) return {};
  v8::String::Utf8Value utf8(isolate, value);
  return *utf8 ? std::string(*utf8, static_cast<size_t>(utf8.length())) : std::string();
}

v8::Local<v8::String> V8String(v8::Isolate* isolate, std::string_view text) {
  v8::Local<v8::String> s;
  if (!v8::String::NewFromUtf8(isolate, text.data(), v8::NewStringType::kNormal,
                               static_cast<int>(text.size()))
           .ToLocal(&s)) {
    return v8::String::Empty(isolate);
  }
  return s;
}

// The guest's frames of `trace` (runtime.js's are left out), innermost first.
std::vector<JsFrame> Frames(v8::Isolate* isolate, v8::Local<v8::StackTrace> trace) {
  std::vector<JsFrame> frames;
  if (trace.IsEmpty()) return frames;
  for (int i = 0; i < trace->GetFrameCount(); ++i) {
    v8::Local<v8::StackFrame> frame = trace->GetFrame(isolate, static_cast<uint32_t>(i));
    std::string file = ToStd(isolate, frame->GetScriptName());
    if (file == kRuntimeScriptName) continue;
    frames.push_back(JsFrame{ToStd(isolate, frame->GetFunctionName()), std::move(file),
                             static_cast<uint32_t>(frame->GetLineNumber()),
                             static_cast<uint32_t>(frame->GetColumn())});
  }
  return frames;
}

// Who may stop the running guest, and how: a termination only ever hits
// the run it was meant for, and is cancelled before the realm runs
// anything else (End).
class RunControl {
 public:
  explicit RunControl(v8::Isolate* isolate) : isolate_(isolate) {}
  void Interrupt(const std::string& reason) {
    std::lock_guard lock(mu_);
    if (!running_) return;
    if (reason_.empty()) reason_ = reason;
    if (!delivered_) {
      delivered_ = true;
      isolate_->TerminateExecution();
    }
  }
  void Begin() {
    std::lock_guard lock(mu_);
    running_ = true;
  }
  // Returns why the run was interrupted ("" when it was not).
  std::string End() {
    std::lock_guard lock(mu_);
    running_ = false;
    if (delivered_) isolate_->CancelTerminateExecution();
    return reason_;
  }

 private:
  std::mutex mu_;
  v8::Isolate* const isolate_;
  bool running_ = false;
  bool delivered_ = false;
  std::string reason_;
};

enum Why { kSlice = 1, kDeadline = 2 };

}  // namespace

// The run a realm is executing, as its callbacks see it.
struct ActiveRun {
  JsHost* host = nullptr;
  RunControl* control = nullptr;
  std::shared_ptr<JsWatchdog::Entry> watch;
  std::chrono::milliseconds slice{0};
  std::optional<std::string> abort_reason;

  // The guest computes from now on, until its slice or the host's deadline.
  void Arm() {
    if (!watch) return;
    auto deadline = JsWatchdog::SteadyTime::max();
    if (auto host_deadline = host->GuestDeadline()) deadline = *host_deadline;
    watch->Arm(slice, kSlice, deadline, kDeadline);
  }
  void Pause() {
    if (watch) watch->Pause();
  }
  void Abort(std::string reason) {
    if (!abort_reason) abort_reason = std::move(reason);
    control->Interrupt("aborted by the host");
  }
};

namespace {

ActiveRun* RunOf(const v8::FunctionCallbackInfo<v8::Value>& info) {
  Realm* realm = Realm::From(info.GetIsolate());
  return realm == nullptr ? nullptr : realm->active();
}

void ThrowError(v8::Isolate* isolate, std::string_view message) {
  isolate->ThrowException(v8::Exception::Error(V8String(isolate, message)));
}

// host(op, argsJson) -> replyJson (runtime.js `call`).
void HostCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  ActiveRun* run = RunOf(info);
  if (run == nullptr || run->abort_reason) return ThrowError(isolate, "no Stele run is active");
  const std::string op = ToStd(isolate, info[0]);
  const std::string text = ToStd(isolate, info[1]);
  core::Json args = core::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  core::Json reply;
  if (args.is_discarded() || !args.is_array()) {
    reply = core::Json{{"t", "TypeError"},
                       {"m", op + ": the arguments have no JSON form (a lone surrogate?)"}};
  } else {
    run->Pause();
    auto stack = [isolate] {
      return Frames(isolate, v8::StackTrace::CurrentStackTrace(isolate, kMaxFrames));
    };
    HostReply answer = run->host->Call(op, args, stack);
    switch (answer.kind) {
      case HostReply::Kind::kValue:
        reply = core::Json{{"v", std::move(answer.value)}};
        break;
      case HostReply::Kind::kThrow:
        reply =
            core::Json{{"t", answer.type}, {"m", answer.message}, {"p", std::move(answer.value)}};
        break;
      case HostReply::Kind::kAbort:
        run->Abort(std::move(answer.message));
        return;
    }
    run->Arm();
  }
  info.GetReturnValue().Set(
      V8String(isolate, reply.dump(-1, ' ', false, core::Json::error_handler_t::replace)));
}

template <class T>
bool TakeOrAbort(ActiveRun* run, Result<T, std::string>& result) {
  if (result) return true;
  run->Abort(std::move(result.error()));
  return false;
}

void NowCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  ActiveRun* run = RunOf(info);
  if (run == nullptr || run->abort_reason)
    return ThrowError(info.GetIsolate(), "no Stele run is active");
  run->Pause();
  auto now = run->host->Now();
  if (!TakeOrAbort(run, now)) return;
  run->Arm();
  info.GetReturnValue().Set(v8::Number::New(info.GetIsolate(), *now));
}

void RandomCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  ActiveRun* run = RunOf(info);
  if (run == nullptr || run->abort_reason)
    return ThrowError(info.GetIsolate(), "no Stele run is active");
  auto value = run->host->Random();
  if (!TakeOrAbort(run, value)) return;
  info.GetReturnValue().Set(v8::Number::New(info.GetIsolate(), *value));
}

void RandomBytesCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  ActiveRun* run = RunOf(info);
  if (run == nullptr || run->abort_reason)
    return ThrowError(info.GetIsolate(), "no Stele run is active");
  if (!info[0]->IsUint8Array())
    return ThrowError(info.GetIsolate(), "randomBytes: expected a Uint8Array");
  v8::Local<v8::Uint8Array> array = info[0].As<v8::Uint8Array>();
  auto* data = static_cast<uint8_t*>(array->Buffer()->Data()) + array->ByteOffset();
  Result<void, std::string> filled = run->host->RandomBytes({data, array->ByteLength()});
  if (!filled) run->Abort(std::move(filled.error()));
}

v8::MaybeLocal<v8::Module> ResolveModule(v8::Local<v8::Context> context,
                                         v8::Local<v8::String> specifier, v8::Local<v8::FixedArray>,
                                         v8::Local<v8::Module>) {
  v8::Isolate* isolate = context->GetIsolate();
  const std::string name = ToStd(isolate, specifier);
  if (name == "stele") return Realm::From(isolate)->stele_module();
  ThrowError(isolate, "cannot import `" + name +
                          "`: a module may import only \"stele\"; bundle the rest into one file "
                          "(docs/js.md)");
  return {};
}

v8::MaybeLocal<v8::Value> EvaluateSteleModule(v8::Local<v8::Context> context,
                                              v8::Local<v8::Module> module) {
  v8::Isolate* isolate = context->GetIsolate();
  v8::Local<v8::Value> exports_value;
  if (!Realm::From(isolate)
           ->internals()
           ->Get(context, V8String(isolate, "steleExports"))
           .ToLocal(&exports_value)) {
    return {};
  }
  v8::Local<v8::Object> exports = exports_value.As<v8::Object>();
  for (const char* name : {"Err", "ExecutionFailure", "FunctionMismatch", "Cancelled", "unwrap"}) {
    v8::Local<v8::Value> value;
    if (!exports->Get(context, V8String(isolate, name)).ToLocal(&value)) return {};
    if (module->SetSyntheticModuleExport(isolate, V8String(isolate, name), value).IsNothing()) {
      return {};
    }
  }
  v8::Local<v8::Promise::Resolver> resolver;
  if (!v8::Promise::Resolver::New(context).ToLocal(&resolver)) return {};
  if (resolver->Resolve(context, v8::Undefined(isolate)).IsNothing()) return {};
  return resolver->GetPromise();
}

v8::MaybeLocal<v8::Promise> RefuseDynamicImport(v8::Local<v8::Context> context, v8::Local<v8::Data>,
                                                v8::Local<v8::Value>, v8::Local<v8::String>,
                                                v8::Local<v8::FixedArray>) {
  v8::Local<v8::Promise::Resolver> resolver;
  if (!v8::Promise::Resolver::New(context).ToLocal(&resolver)) return {};
  v8::Isolate* isolate = context->GetIsolate();
  if (resolver
          ->Reject(context,
                   v8::Exception::Error(V8String(
                       isolate, "import() is not supported: bundle the module (docs/js.md)")))
          .IsNothing()) {
    return {};
  }
  return resolver->GetPromise();
}

bool RefuseWasmCodeGeneration(v8::Local<v8::Context>, v8::Local<v8::String>) { return false; }

size_t NearHeapLimit(void* data, size_t current_heap_limit, size_t) {
  static_cast<Realm*>(data)->HeapLimitReached();
  // Room to unwind the terminated guest; the realm is destroyed after.
  return current_heap_limit + (32u << 20);
}

// The host while a module is only loaded: there is no run.
class LoadHost final : public JsHost {
 public:
  HostReply Call(std::string_view op, const core::Json&,
                 const std::function<std::vector<JsFrame>()>&) override {
    return HostReply::Throw("Error", std::string(op) +
                                         ": Stele operations are available only inside a "
                                         "function's run, not in top-level code");
  }
  Result<double, std::string> Now() override { return 0.0; }
  Result<double, std::string> Random() override { return 0.5; }
  Result<void, std::string> RandomBytes(std::span<uint8_t> bytes) override {
    std::fill(bytes.begin(), bytes.end(), 0);
    return {};
  }
};

std::string Describe(int why, std::chrono::milliseconds slice) {
  if (why == kDeadline) {
    return "the guest computed until its deadline (the end of its lease) without a Stele "
           "operation";
  }
  return "the guest computed for " + std::to_string(slice.count()) +
         " ms of CPU time without a Stele operation (an endless loop?)";
}

}  // namespace

Realm::Realm(std::string name, JsFlavor flavor, JsLimits limits)
    : name_(std::move(name)), flavor_(flavor), limits_(limits) {}

Result<std::unique_ptr<Realm>, JsError> Realm::Create(const std::string& name,
                                                      const std::string& source, JsFlavor flavor,
                                                      const JsLimits& limits) {
  std::unique_ptr<Realm> realm(new Realm(name, flavor, limits));
  STELE_TRY(realm->Init(source));
  return realm;
}

Result<void, JsError> Realm::Init(const std::string& source) {
  wasm::V8Platform();
  allocator_.reset(v8::ArrayBuffer::Allocator::NewDefaultAllocator());
  v8::Isolate::CreateParams params;
  params.array_buffer_allocator = allocator_.get();
  params.constraints.ConfigureDefaultsFromHeapSize(0, limits_.max_heap_bytes);
  isolate_ = v8::Isolate::New(params);
  isolate_->SetData(0, this);
  isolate_->SetMicrotasksPolicy(v8::MicrotasksPolicy::kExplicit);
  isolate_->SetCaptureStackTraceForUncaughtExceptions(true, kMaxFrames);
  isolate_->SetHostImportModuleDynamicallyCallback(&RefuseDynamicImport);
  isolate_->SetAllowWasmCodeGenerationCallback(&RefuseWasmCodeGeneration);
  isolate_->AddNearHeapLimitCallback(&NearHeapLimit, this);

  v8::Locker locker(isolate_);
  v8::Isolate::Scope isolate_scope(isolate_);
  v8::HandleScope handles(isolate_);
  v8::Local<v8::Context> context = v8::Context::New(isolate_);
  v8::Context::Scope context_scope(context);
  // No eval, no new Function: guests run the code they were loaded with.
  context->AllowCodeGenerationFromStrings(false);
  context_.Reset(isolate_, context);
  source_.Reset(isolate_, V8String(isolate_, source));

  v8::TryCatch try_catch(isolate_);
  auto fail = [&](const std::string& what) {
    return Unexpected(
        JsError::Make(Kind::kEngine, what + ": " + ToStd(isolate_, try_catch.Exception())));
  };
  v8::Local<v8::Object> natives = v8::Object::New(isolate_);
  const std::pair<const char*, v8::FunctionCallback> callbacks[] = {
      {"host", &HostCallback},
      {"now", &NowCallback},
      {"random", &RandomCallback},
      {"randomBytes", &RandomBytesCallback}};
  for (const auto& [name, callback] : callbacks) {
    v8::Local<v8::Function> fn;
    if (!v8::Function::New(context, callback).ToLocal(&fn) ||
        natives->Set(context, V8String(isolate_, name), fn).IsNothing()) {
      return fail("creating the runtime's natives");
    }
  }
  v8::ScriptOrigin origin(isolate_, V8String(isolate_, kRuntimeScriptName));
  v8::ScriptCompiler::Source runtime_source(V8String(isolate_, kRuntimeJs), origin);
  v8::Local<v8::Script> script;
  v8::Local<v8::Value> factory;
  if (!v8::ScriptCompiler::Compile(context, &runtime_source).ToLocal(&script) ||
      !script->Run(context).ToLocal(&factory) || !factory->IsFunction()) {
    return fail("compiling the runtime");
  }
  v8::Local<v8::Value> args[] = {natives,
                                 V8String(isolate_, flavor_ == JsFlavor::kWorkflow   ? "workflow"
                                                    : flavor_ == JsFlavor::kActivity ? "activity"
                                                                                     : "webhook")};
  v8::Local<v8::Value> internals;
  if (!factory.As<v8::Function>()
           ->Call(context, v8::Undefined(isolate_), 2, args)
           .ToLocal(&internals) ||
      !internals->IsObject()) {
    return fail("hardening the realm");
  }
  internals_.Reset(isolate_, internals.As<v8::Object>());
  std::vector<v8::Local<v8::String>> names;
  for (const char* name : {"Err", "ExecutionFailure", "FunctionMismatch", "Cancelled", "unwrap"}) {
    names.push_back(V8String(isolate_, name));
  }
  v8::Local<v8::Module> stele = v8::Module::CreateSyntheticModule(
      isolate_, V8String(isolate_, "stele"), names, &EvaluateSteleModule);
  stele_module_.Reset(isolate_, stele);
  return {};
}

Realm::~Realm() {
  if (isolate_ == nullptr) return;
  {
    v8::Locker locker(isolate_);
    v8::Isolate::Scope isolate_scope(isolate_);
    stele_module_.Reset();
    internals_.Reset();
    source_.Reset();
    context_.Reset();
  }
  v8::platform::NotifyIsolateShutdown(wasm::V8Platform(), isolate_);
  isolate_->Dispose();
}

void Realm::HeapLimitReached() {
  heap_limit_reached_ = true;
  poisoned_ = true;
  if (active_ != nullptr) {
    active_->control->Interrupt("heap limit reached");
  } else {
    isolate_->TerminateExecution();
  }
}

void Realm::PumpTasks() {
  for (int i = 0; i < 8 && v8::platform::PumpMessageLoop(wasm::V8Platform(), isolate_); ++i) {
  }
}

namespace {

// The error for an exception `value`: its stack (where it was created)
// or, for a value without one, where it was thrown; the message starts
// with "file:line:column: ".
JsError ErrorOf(v8::Isolate* isolate, JsError::Kind kind, const std::string& what,
                v8::Local<v8::Value> value, v8::Local<v8::Message> message) {
  std::vector<JsFrame> frames = Frames(isolate, v8::Exception::GetStackTrace(value));
  if (message.IsEmpty()) message = v8::Exception::CreateMessage(isolate, value);
  if (frames.empty() && !message.IsEmpty()) {
    v8::Local<v8::Context> context = isolate->GetCurrentContext();
    frames.push_back(
        JsFrame{"", ToStd(isolate, message->GetScriptResourceName()),
                static_cast<uint32_t>(message->GetLineNumber(context).FromMaybe(0)),
                static_cast<uint32_t>(message->GetStartColumn(context).FromMaybe(0) + 1)});
  }
  std::string where;
  if (!frames.empty()) {
    where = frames[0].file + ":" + std::to_string(frames[0].line) + ":" +
            std::to_string(frames[0].column) + ": ";
  }
  return JsError::Make(kind, where + (what.empty() ? "" : what + ": ") + ToStd(isolate, value),
                       std::move(frames));
}

}  // namespace

JsError Realm::Failure(v8::TryCatch& try_catch, JsError::Kind kind, const std::string& what) {
  if (try_catch.HasTerminated() || isolate_->IsExecutionTerminating()) {
    return JsError::Make(Kind::kInterrupted, "interrupted");  // refined by the caller
  }
  return ErrorOf(isolate_, kind, what, try_catch.Exception(), try_catch.Message());
}

Result<v8::Local<v8::Object>, JsError> Realm::Instantiate(v8::Local<v8::Context> context,
                                                          v8::TryCatch& try_catch, bool loading) {
  const Kind kind = loading ? Kind::kInvalidModule : Kind::kThrown;
  v8::ScriptOrigin origin(isolate_, V8String(isolate_, name_), 0, 0, false, -1,
                          v8::Local<v8::Value>(), false, false, /*is_module=*/true);
  v8::ScriptCompiler::Source source(source_.Get(isolate_), origin);
  v8::Local<v8::Module> module;
  if (!v8::ScriptCompiler::CompileModule(isolate_, &source).ToLocal(&module)) {
    return Unexpected(Failure(try_catch, kind, ""));
  }
  if (!module->InstantiateModule(context, &ResolveModule).FromMaybe(false)) {
    return Unexpected(Failure(try_catch, kind, ""));
  }
  v8::Local<v8::Value> evaluated;
  if (!module->Evaluate(context).ToLocal(&evaluated)) {
    return Unexpected(Failure(try_catch, kind, "top-level code threw"));
  }
  isolate_->PerformMicrotaskCheckpoint();
  if (try_catch.HasTerminated() || isolate_->IsExecutionTerminating()) {
    return Unexpected(JsError::Make(Kind::kInterrupted, "interrupted"));
  }
  if (evaluated->IsPromise()) {
    v8::Local<v8::Promise> promise = evaluated.As<v8::Promise>();
    if (promise->State() == v8::Promise::kRejected) {
      return Unexpected(ErrorOf(isolate_, kind, "top-level code threw", promise->Result(), {}));
    }
    if (promise->State() == v8::Promise::kPending) {
      return Unexpected(
          JsError::Make(kind, name_ + ": top-level code awaits a promise that nothing settles"));
    }
  }
  // A webhook module exports its handler; the others their declarations.
  const bool webhook = flavor_ == JsFlavor::kWebhook;
  const char* export_name = webhook ? "webhook" : "functions";
  v8::Local<v8::Value> functions;
  if (!module->GetModuleNamespace()
           .As<v8::Object>()
           ->Get(context, V8String(isolate_, export_name))
           .ToLocal(&functions)) {
    return Unexpected(Failure(try_catch, kind, std::string("reading `") + export_name + "`"));
  }
  if (webhook && !functions->IsFunction()) {
    return Unexpected(
        JsError::Make(kind, name_ + ": the module must export `webhook`, a function (ctx, request) "
                                    "=> response (docs/js.md, \"Webhooks\")"));
  }
  if (!functions->IsObject()) {
    return Unexpected(JsError::Make(
        kind,
        name_ + ": the module must export `functions`, an object keyed by ffqn (docs/js.md)"));
  }
  return functions.As<v8::Object>();
}

Result<std::vector<JsDeclaredFunction>, JsError> Realm::Declarations() {
  v8::Locker locker(isolate_);
  v8::Isolate::Scope isolate_scope(isolate_);
  v8::HandleScope handles(isolate_);
  v8::Local<v8::Context> context = context_.Get(isolate_);
  v8::Context::Scope context_scope(context);
  LoadHost host;
  RunControl control(isolate_);
  ActiveRun run;
  run.host = &host;
  run.control = &control;
  run.slice = limits_.max_load_time;
  run.watch = std::make_shared<JsWatchdog::Entry>(
      [&control](const std::string& reason) { control.Interrupt(reason); });
  const uint64_t watch_id = JsWatchdog::Process().Watch(run.watch, [this](int) {
    return "top-level code ran for " + std::to_string(limits_.max_load_time.count()) + " ms";
  });
  active_ = &run;
  control.Begin();
  run.Arm();
  v8::TryCatch try_catch(isolate_);
  auto result = [&]() -> Result<std::vector<JsDeclaredFunction>, JsError> {
    STELE_ASSIGN_OR_RETURN(v8::Local<v8::Object> functions, Instantiate(context, try_catch, true));
    v8::Local<v8::Value> declare;
    v8::Local<v8::Value> json;
    v8::Local<v8::Value> args[] = {functions};
    if (!internals()->Get(context, V8String(isolate_, "declarations")).ToLocal(&declare) ||
        !declare.As<v8::Function>()
             ->Call(context, v8::Undefined(isolate_), 1, args)
             .ToLocal(&json)) {
      JsError error = Failure(try_catch, Kind::kInvalidModule, "");
      error.message = name_ + ": " + error.message;
      return Unexpected(std::move(error));
    }
    core::Json parsed = core::Json::parse(ToStd(isolate_, json), nullptr, false);
    std::vector<JsDeclaredFunction> out;
    for (const auto& entry : parsed) {
      JsDeclaredFunction f;
      f.ffqn = entry["ffqn"].get<std::string>();
      for (const auto& p : entry["params"]) {
        f.params.emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
      }
      if (entry["returns"].is_string()) f.returns = entry["returns"].get<std::string>();
      out.push_back(std::move(f));
    }
    if (out.empty()) {
      return Unexpected(
          JsError::Make(Kind::kInvalidModule, name_ + ": `functions` declares no function"));
    }
    return out;
  }();
  JsWatchdog::Process().Unwatch(watch_id);
  active_ = nullptr;
  const std::string reason = control.End();
  if (!reason.empty() || heap_limit_reached_) {
    poisoned_ = true;
    return Unexpected(JsError::Make(heap_limit_reached_ ? Kind::kOutOfMemory : Kind::kInvalidModule,
                                    name_ + ": loading was interrupted: " + reason));
  }
  PumpTasks();
  return result;
}

Result<JsOutcome, JsError> Realm::Run(const std::string& ffqn, const RunInfo& info,
                                      const core::Json& params, JsHost& host,
                                      const RunBudget& budget) {
  STELE_CHECK(!poisoned_, "a poisoned realm was reused");
  v8::Locker locker(isolate_);
  v8::Isolate::Scope isolate_scope(isolate_);
  // The guest's stack is counted from here, on whichever thread runs it.
  // The frame address, not a local's: with ASan's fake stacks a local may
  // live on the heap.
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  isolate_->SetStackLimit(here - limits_.max_stack_bytes);
  v8::HandleScope handles(isolate_);
  v8::Local<v8::Context> context = context_.Get(isolate_);
  v8::Context::Scope context_scope(context);

  RunControl control(isolate_);
  ActiveRun run;
  run.host = &host;
  run.control = &control;
  run.slice = budget.slice;
  run.watch = std::make_shared<JsWatchdog::Entry>(
      [&control](const std::string& reason) { control.Interrupt(reason); });
  const std::chrono::milliseconds slice = budget.slice;
  const uint64_t watch_id =
      JsWatchdog::Process().Watch(run.watch, [slice](int why) { return Describe(why, slice); });
  uint64_t cancel_id = 0;
  active_ = &run;
  control.Begin();
  if (budget.cancel) {
    cancel_id = budget.cancel->OnCancel([&control] { control.Interrupt("cancelled"); });
  }
  run.Arm();

  v8::TryCatch try_catch(isolate_);
  auto result = [&]() -> Result<JsOutcome, JsError> {
    STELE_ASSIGN_OR_RETURN(v8::Local<v8::Object> functions, Instantiate(context, try_catch, false));
    v8::Local<v8::Object> ctx_info = v8::Object::New(isolate_);
    auto set = [&](const char* key, v8::Local<v8::Value> value) {
      return ctx_info->Set(context, V8String(isolate_, key), value).FromMaybe(false);
    };
    v8::Local<v8::Object> env = v8::Object::New(isolate_);
    for (const auto& [key, value] : info.env) {
      if (env->Set(context, V8String(isolate_, key), V8String(isolate_, value)).IsNothing()) {
        return Unexpected(Failure(try_catch, Kind::kEngine, "building the context"));
      }
    }
    if (!set("executionId", V8String(isolate_, info.execution_id)) ||
        !set("ffqn", V8String(isolate_, info.ffqn)) ||
        !set("attempt", v8::Integer::NewFromUnsigned(isolate_, info.attempt)) ||
        !set("deadlineMs", v8::Number::New(isolate_, static_cast<double>(info.deadline_ms))) ||
        !set("env", env)) {
      return Unexpected(Failure(try_catch, Kind::kEngine, "building the context"));
    }
    v8::Local<v8::Value> start;
    v8::Local<v8::Value> started;
    v8::Local<v8::Value> args[] = {
        functions, V8String(isolate_, ffqn), ctx_info,
        V8String(isolate_, params.dump(-1, ' ', false, core::Json::error_handler_t::replace))};
    if (!internals()->Get(context, V8String(isolate_, "start")).ToLocal(&start) ||
        !start.As<v8::Function>()
             ->Call(context, v8::Undefined(isolate_), 4, args)
             .ToLocal(&started) ||
        !started->IsPromise()) {
      return Unexpected(Failure(try_catch, Kind::kThrown, ""));
    }
    isolate_->PerformMicrotaskCheckpoint();
    if (try_catch.HasTerminated() || isolate_->IsExecutionTerminating()) {
      return Unexpected(JsError::Make(Kind::kInterrupted, "interrupted"));
    }
    v8::Local<v8::Promise> promise = started.As<v8::Promise>();
    auto encode = [&](const char* fn, v8::Local<v8::Value> value) -> Result<core::Json, JsError> {
      v8::Local<v8::Value> encoder;
      v8::Local<v8::Value> encoded;
      v8::Local<v8::Value> argv[] = {value};
      if (!internals()->Get(context, V8String(isolate_, fn)).ToLocal(&encoder) ||
          !encoder.As<v8::Function>()
               ->Call(context, v8::Undefined(isolate_), 1, argv)
               .ToLocal(&encoded)) {
        return Unexpected(Failure(try_catch, Kind::kBadResult, ""));
      }
      if (encoded->IsNull()) return core::Json(nullptr);
      return core::Json::parse(ToStd(isolate_, encoded), nullptr, false);
    };
    switch (promise->State()) {
      case v8::Promise::kPending:
        return Unexpected(JsError::Make(
            Kind::kPendingAwait,
            ffqn + " awaits a promise that no Stele operation settles: a workflow may await only "
                   "ctx operations and promises they settle (docs/js.md, \"Promises\")"));
      case v8::Promise::kFulfilled: {
        STELE_ASSIGN_OR_RETURN(core::Json encoded, encode("encodeOk", promise->Result()));
        if (encoded.contains("bad")) {
          return Unexpected(JsError::Make(Kind::kBadResult, encoded["bad"].get<std::string>()));
        }
        return JsOutcome{true, encoded["ok"]};
      }
      case v8::Promise::kRejected: {
        v8::Local<v8::Value> reason = promise->Result();
        STELE_ASSIGN_OR_RETURN(core::Json encoded, encode("encodeRejection", reason));
        if (encoded.is_object() && encoded.contains("bad")) {
          return Unexpected(JsError::Make(Kind::kBadResult, encoded["bad"].get<std::string>()));
        }
        if (encoded.is_object() && encoded.contains("err")) {
          const bool permanent = encoded.contains("retryable") && encoded["retryable"] == false;
          return JsOutcome{false, encoded["err"], permanent};
        }
        v8::Local<v8::Value> text_fn;
        v8::Local<v8::Value> text;
        v8::Local<v8::Value> argv[] = {reason};
        std::string message = "uncaught exception";
        if (internals()->Get(context, V8String(isolate_, "errorText")).ToLocal(&text_fn) &&
            text_fn.As<v8::Function>()
                ->Call(context, v8::Undefined(isolate_), 1, argv)
                .ToLocal(&text)) {
          message = ToStd(isolate_, text);
        }
        const Kind kind = message.starts_with("RangeError: Maximum call stack size exceeded")
                              ? Kind::kStackOverflow
                              : Kind::kThrown;
        return Unexpected(
            JsError::Make(kind, message, Frames(isolate_, v8::Exception::GetStackTrace(reason))));
      }
    }
    return Unexpected(JsError::Make(Kind::kEngine, "unknown promise state"));
  }();

  if (cancel_id != 0) budget.cancel->Unregister(cancel_id);
  JsWatchdog::Process().Unwatch(watch_id);
  active_ = nullptr;
  const std::string reason = control.End();
  if (run.abort_reason) {
    poisoned_ = true;
    return Unexpected(JsError::Make(Kind::kHostAbort, *run.abort_reason));
  }
  if (heap_limit_reached_) {
    poisoned_ = true;
    return Unexpected(JsError::Make(
        Kind::kOutOfMemory, "the realm's heap limit of " +
                                std::to_string(limits_.max_heap_bytes >> 20) + " MiB was reached"));
  }
  if (!reason.empty()) {
    poisoned_ = true;
    return Unexpected(JsError::Make(Kind::kInterrupted, reason));
  }
  if (!result && result.error().kind == Kind::kInterrupted) poisoned_ = true;
  PumpTasks();
  return result;
}

Result<std::pair<bool, size_t>, JsError> Realm::CheckFrozen() {
  v8::Locker locker(isolate_);
  v8::Isolate::Scope isolate_scope(isolate_);
  v8::HandleScope handles(isolate_);
  v8::Local<v8::Context> context = context_.Get(isolate_);
  v8::Context::Scope context_scope(context);
  v8::TryCatch try_catch(isolate_);
  v8::Local<v8::Value> reachable_fn;
  v8::Local<v8::Value> list;
  if (!internals()->Get(context, V8String(isolate_, "reachable")).ToLocal(&reachable_fn) ||
      !reachable_fn.As<v8::Function>()
           ->Call(context, v8::Undefined(isolate_), 0, nullptr)
           .ToLocal(&list) ||
      !list->IsArray()) {
    return Unexpected(Failure(try_catch, Kind::kEngine, "walking the realm"));
  }
  v8::Local<v8::Array> objects = list.As<v8::Array>();
  v8::Local<v8::Value> is_frozen_fn;
  v8::Local<v8::Value> object_ctor;
  if (!context->Global()->Get(context, V8String(isolate_, "Object")).ToLocal(&object_ctor) ||
      !object_ctor.As<v8::Object>()
           ->Get(context, V8String(isolate_, "isFrozen"))
           .ToLocal(&is_frozen_fn)) {
    return Unexpected(Failure(try_catch, Kind::kEngine, "Object.isFrozen"));
  }
  bool all = true;
  for (uint32_t i = 0; i < objects->Length(); ++i) {
    v8::Local<v8::Value> object;
    v8::Local<v8::Value> frozen;
    if (!objects->Get(context, i).ToLocal(&object))
      return Unexpected(Failure(try_catch, Kind::kEngine, ""));
    v8::Local<v8::Value> argv[] = {object};
    if (!is_frozen_fn.As<v8::Function>()
             ->Call(context, v8::Undefined(isolate_), 1, argv)
             .ToLocal(&frozen)) {
      return Unexpected(Failure(try_catch, Kind::kEngine, ""));
    }
    if (!frozen->BooleanValue(isolate_)) all = false;
  }
  return std::make_pair(all, static_cast<size_t>(objects->Length()));
}

}  // namespace internal
}  // namespace stele::runtime::js
