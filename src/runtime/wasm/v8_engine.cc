// The V8 implementation of wasm_engine.h (V8 10.2 from Debian's libnode108;
// V8's own API only, no Node environment).
//
// Isolates: a few (v8_isolate.h, SharedIsolateCount) shared by every
// thread; an instance is placed on one of them in turn when it is made.
// An isolate per thread cost milliseconds and a MiB for each thread a burst
// of runs started (docs/wasm_engine.md, "Isolates and threads"). Every entry
// into an isolate takes a v8::Locker, which makes an instance usable from
// any thread (one at a time) and lets a host function call back into its
// guest (Lockers are recursive). A host function that blocks (a join waiting
// for a response, a database write, an HTTP exchange) does so inside
// HostCall::Park, behind a v8::Unlocker: the isolate serves other runs
// meanwhile, and V8 keeps the parked run's frames until it locks again.
//
// Compiled code is shared: a module is compiled once (on the first shared
// isolate) into a v8::CompiledWasmModule, which every isolate turns
// into its own WasmModuleObject (cached per isolate) without recompiling.
//
// Interrupts: Isolate::TerminateExecution, asked for by Interrupt(), by the
// watchdog for a wall-clock budget or by a CancellationToken, and raised
// only on the thread of the call it is meant for (isolates are shared: see
// InterruptState, v8_interrupt.h). The state machine in InterruptState makes sure that a
// termination only ever hits the call it was meant for, and is cancelled
// before the isolate runs anything else. Host errors also terminate (rather
// than throw) so that no guest code — e.g. a wasm catch_all — can swallow
// them.
//
// Flags: exception handling and threads are disabled (--no-experimental-wasm-
// eh/-threads) so that a guest cannot catch a JS exception (stack overflow)
// nor use shared memory; the wasm trap handler is not enabled, so bounds are
// checked explicitly and no 10 GiB guard region is reserved per memory (which
// would limit the number of live instances and conflict with ASan).

#include <libplatform/libplatform.h>
#include <v8.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "base/check.h"
#include "runtime/wasm/module_check.h"
#include "runtime/wasm/v8_interrupt.h"
#include "runtime/wasm/v8_isolate.h"
#include "runtime/wasm/v8_reset.h"
#include "runtime/wasm/wasm_engine.h"
#include "runtime/wasm/watchdog.h"

namespace stele::wasm {
namespace {

using Kind = WasmError::Kind;
using internal::ActiveInstances;
using internal::CompilingIsolate;
using internal::Entered;
using internal::InterruptState;
using internal::IsolateHolder;
using internal::kMaxFrames;
using internal::Platform;
using internal::SharedIsolate;

WasmError Error(Kind kind, std::string message) {
  return WasmError::Make(kind, std::move(message));
}

std::string ToStdString(v8::Isolate* isolate, v8::Local<v8::Value> value) {
  if (value.IsEmpty()) return {};
  v8::String::Utf8Value utf8(isolate, value);
  return *utf8 ? std::string(*utf8, static_cast<size_t>(utf8.length())) : std::string();
}

std::vector<std::string> WasmFrames(v8::Isolate* isolate, v8::Local<v8::StackTrace> trace) {
  std::vector<std::string> frames;
  if (trace.IsEmpty()) return frames;
  for (int i = 0; i < trace->GetFrameCount(); ++i) {
    v8::Local<v8::StackFrame> frame = trace->GetFrame(isolate, static_cast<uint32_t>(i));
    if (!frame->IsWasm()) continue;
    std::string name = ToStdString(isolate, frame->GetFunctionName());
    // V8 prints names from the `name` section as "$name"; without one it
    // gives "$func<index>" or nothing (then the column is the byte offset of
    // the call site in the module).
    if (!name.empty() && name[0] == '$') name.erase(0, 1);
    if (name.empty()) name = "wasm-function@" + std::to_string(frame->GetColumn());
    frames.push_back(std::move(name));
  }
  return frames;
}

class V8Module final : public WasmModule {
 public:
  V8Module(CheckedModule&& checked, const v8::CompiledWasmModule* compiled) : compiled_(compiled) {
    Describe(std::move(checked));
  }
  const v8::CompiledWasmModule* compiled() const { return compiled_; }

 private:
  const v8::CompiledWasmModule* compiled_;  // owned by V8Engine, never freed
};

void OnInterruptRequest(v8::Isolate* isolate, void* unused);

class V8Instance;

struct HostBinding {
  V8Instance* instance;
  const HostFunction* function;
  std::string qualified_name;
};

class V8Instance final : public WasmInstance {
 public:
  V8Instance(std::shared_ptr<IsolateHolder> holder, std::shared_ptr<const V8Module> module,
             std::shared_ptr<const ImportTable> imports)
      : holder_(std::move(holder)),
        module_(std::move(module)),
        imports_(std::move(imports)),
        interrupt_(std::make_shared<InterruptState>(holder_->isolate(), &OnInterruptRequest)) {}

  ~V8Instance() override {
    Entered entered(*holder_);
    reset_.reset();
    functions_.clear();
    memory_.Reset();
    exports_.Reset();
  }

  Result<void, WasmError> Init();

  Result<std::vector<Value>, WasmError> Call(std::string_view export_name,
                                             std::span<const Value> args,
                                             const CallBudget& budget) override;
  void Interrupt() override { interrupt_->InterruptAll(); }
  bool poisoned() const override { return poisoned_; }
  Result<std::vector<uint8_t>, WasmError> ReadBytes(uint32_t ptr, uint32_t len) override {
    Entered entered(*holder_);
    return ReadLocked(ptr, len);
  }
  Result<void, WasmError> WriteBytes(uint32_t ptr, std::span<const uint8_t> bytes) override {
    Entered entered(*holder_);
    return WriteLocked(ptr, bytes);
  }
  uint64_t MemorySize() override {
    Entered entered(*holder_);
    return MemoryLocked().size();
  }
  const WasmModule& module() const override { return *module_; }
  Result<void, WasmError> Checkpoint() override;
  bool Restore() override;

  // Isolate entered by the caller from here on.
  std::span<uint8_t> MemoryLocked();
  Result<std::vector<uint8_t>, WasmError> ReadLocked(uint32_t ptr, uint32_t len);
  Result<void, WasmError> WriteLocked(uint32_t ptr, std::span<const uint8_t> bytes);
  Result<std::vector<Value>, WasmError> CallLocked(std::string_view export_name,
                                                   std::span<const Value> args);
  std::vector<std::string> CurrentBacktrace();
  static void HostCallback(const v8::FunctionCallbackInfo<v8::Value>& info);
  IsolateHolder& holder() const { return *holder_; }
  InterruptState& interrupt() const { return *interrupt_; }

 private:
  WasmError Classify(v8::TryCatch& try_catch);

  std::shared_ptr<IsolateHolder> holder_;
  std::shared_ptr<const V8Module> module_;
  std::shared_ptr<const ImportTable> imports_;
  std::shared_ptr<InterruptState> interrupt_;
  std::vector<std::unique_ptr<HostBinding>> bindings_;
  v8::Global<v8::Object> exports_;
  v8::Global<v8::WasmMemoryObject> memory_;
  std::map<std::string, v8::Global<v8::Function>, std::less<>> functions_;
  std::unique_ptr<internal::ResetState> reset_;  // set by Checkpoint
  bool poisoned_ = false;
  // Poisoned by a kHostStop only: Restore may still bring the instance back.
  bool stopped_by_host_ = false;
  int depth_ = 0;
  // The first failure of a host function (or of a guest call it made) during
  // the running outermost call; it wins over the termination it caused.
  std::optional<WasmError> host_error_;
};

class V8HostCall final : public HostCall {
 public:
  explicit V8HostCall(V8Instance& instance) : instance_(instance) {}
  Result<std::vector<uint8_t>, WasmError> ReadBytes(uint32_t ptr, uint32_t len) override {
    return instance_.ReadLocked(ptr, len);
  }
  Result<void, WasmError> WriteBytes(uint32_t ptr, std::span<const uint8_t> bytes) override {
    return instance_.WriteLocked(ptr, bytes);
  }
  uint64_t MemorySize() override { return instance_.MemoryLocked().size(); }
  Result<std::vector<Value>, WasmError> CallExport(std::string_view name,
                                                   std::span<const Value> args) override {
    return instance_.CallLocked(name, args);
  }
  std::vector<std::string> Backtrace() override { return instance_.CurrentBacktrace(); }
  void Park(const std::function<void()>& blocking) override {
    InterruptState& interrupt = instance_.interrupt();
    // A call being terminated unwinds; it has no reason to wait unlocked.
    if (interrupt.terminating()) return blocking();
    {
      v8::Unlocker unlocker(instance_.holder().isolate());
      blocking();
    }
    interrupt.DeliverRequested();
  }

 private:
  V8Instance& instance_;
};

void OnInterruptRequest(v8::Isolate* isolate, void* /*unused*/) {
  for (void* active : ActiveInstances()) {
    auto* instance = static_cast<V8Instance*>(active);
    if (instance->holder().isolate() == isolate) instance->interrupt().DeliverRequested();
  }
}

v8::Local<v8::Value> ToV8(v8::Isolate* isolate, const Value& v) {
  switch (v.type) {
    case ValType::kI32:
      return v8::Integer::New(isolate, v.AsI32());
    case ValType::kI64:
      return v8::BigInt::New(isolate, v.AsI64());
    case ValType::kF32:
      return v8::Number::New(isolate, static_cast<double>(v.AsF32()));
    case ValType::kF64:
      return v8::Number::New(isolate, v.AsF64());
  }
  return v8::Undefined(isolate);
}

std::optional<Value> FromV8(v8::Local<v8::Context> context, ValType type, v8::Local<v8::Value> v) {
  switch (type) {
    case ValType::kI32: {
      if (!v->IsNumber()) return std::nullopt;
      int32_t i = 0;
      if (!v->Int32Value(context).To(&i)) return std::nullopt;
      return Value::I32(i);
    }
    case ValType::kI64:
      if (!v->IsBigInt()) return std::nullopt;
      return Value::I64(v.As<v8::BigInt>()->Int64Value());
    case ValType::kF32:
      if (!v->IsNumber()) return std::nullopt;
      return Value::F32(static_cast<float>(v.As<v8::Number>()->Value()));
    case ValType::kF64:
      if (!v->IsNumber()) return std::nullopt;
      return Value::F64(v.As<v8::Number>()->Value());
  }
  return std::nullopt;
}

Result<void, WasmError> CheckArgs(const FuncType& type, std::span<const Value> args,
                                  std::string_view what) {
  bool ok = args.size() == type.params.size();
  for (size_t i = 0; ok && i < args.size(); ++i) ok = args[i].type == type.params[i];
  if (ok) return {};
  std::string got = "(";
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) got += ", ";
    got += ValTypeName(args[i].type);
  }
  return Unexpected(Error(Kind::kBadArguments, std::string(what) + " expects " + type.ToString() +
                                                   ", got " + got + ")"));
}

Result<void, WasmError> V8Instance::Init() {
  Entered entered(*holder_);
  v8::Isolate* isolate = holder_->isolate();
  v8::Local<v8::Context> context = entered.context();

  v8::Local<v8::Object> import_object = v8::Object::New(isolate);
  for (const ImportSignature& imp : module_->imports()) {
    std::string qualified = imp.module + "." + imp.name;
    const HostFunction* fn = imports_ ? imports_->Find(imp.module, imp.name) : nullptr;
    if (fn == nullptr) {
      return Unexpected(Error(Kind::kLinkError, "no host function for import " + qualified));
    }
    if (fn->type != imp.type) {
      return Unexpected(Error(Kind::kLinkError, "host function " + qualified + " has type " +
                                                    fn->type.ToString() + ", the module imports " +
                                                    imp.type.ToString()));
    }
    bindings_.push_back(std::make_unique<HostBinding>(HostBinding{this, fn, qualified}));
    v8::Local<v8::String> module_name =
        v8::String::NewFromUtf8(isolate, imp.module.data(), v8::NewStringType::kNormal,
                                static_cast<int>(imp.module.size()))
            .ToLocalChecked();
    v8::Local<v8::Value> existing;
    v8::Local<v8::Object> namespace_object;
    if (import_object->Get(context, module_name).ToLocal(&existing) && existing->IsObject()) {
      namespace_object = existing.As<v8::Object>();
    } else {
      namespace_object = v8::Object::New(isolate);
      if (!import_object->Set(context, module_name, namespace_object).FromMaybe(false)) {
        return Unexpected(Error(Kind::kOutOfResources, "cannot build the import object"));
      }
    }
    v8::Local<v8::Function> function;
    if (!holder_
             ->HostFunction(static_cast<uint32_t>(bindings_.size() - 1), &V8Instance::HostCallback)
             .ToLocal(&function)) {
      return Unexpected(Error(Kind::kOutOfResources, "cannot create host function " + qualified));
    }
    if (!namespace_object
             ->Set(context,
                   v8::String::NewFromUtf8(isolate, imp.name.data(), v8::NewStringType::kNormal,
                                           static_cast<int>(imp.name.size()))
                       .ToLocalChecked(),
                   function)
             .FromMaybe(false)) {
      return Unexpected(Error(Kind::kOutOfResources, "cannot build the import object"));
    }
  }

  v8::TryCatch try_catch(isolate);
  v8::Local<v8::WasmModuleObject> module_object;
  if (!holder_->ModuleObject(module_->compiled()).ToLocal(&module_object)) {
    return Unexpected(Error(Kind::kOutOfResources, "cannot load the compiled module"));
  }
  v8::Local<v8::Value> argv[] = {module_object, import_object};
  std::optional<uint64_t> generation = interrupt_->Begin();  // the start function may run
  STELE_CHECK(generation.has_value(), "new instance interrupted");
  ActiveInstances().push_back(this);
  v8::MaybeLocal<v8::Object> maybe_instance =
      holder_->instance_ctor()->NewInstance(context, 2, argv);
  ActiveInstances().pop_back();
  std::string reason = interrupt_->End();
  v8::Local<v8::Object> instance;
  if (!maybe_instance.ToLocal(&instance)) {
    if (host_error_) return Unexpected(std::move(*host_error_));
    WasmError error = Classify(try_catch);
    if (error.kind == Kind::kTrap) {
      // A trap of the start function, or a link failure V8 found.
      std::string message = ToStdString(isolate, try_catch.Exception());
      if (message.rfind("LinkError", 0) == 0) error.kind = Kind::kLinkError;
      if (message.find("Out of memory") != std::string::npos) error.kind = Kind::kOutOfResources;
    }
    return Unexpected(std::move(error));
  }
  v8::Local<v8::Value> exports;
  if (!instance->Get(context, v8::String::NewFromUtf8Literal(isolate, "exports"))
           .ToLocal(&exports) ||
      !exports->IsObject()) {
    return Unexpected(Error(Kind::kLinkError, "instance without exports"));
  }
  exports_.Reset(isolate, exports.As<v8::Object>());
  v8::Local<v8::Value> memory;
  if (exports.As<v8::Object>()
          ->Get(context, v8::String::NewFromUtf8Literal(isolate, "memory"))
          .ToLocal(&memory) &&
      memory->IsWasmMemoryObject()) {
    memory_.Reset(isolate, memory.As<v8::WasmMemoryObject>());
  }
  return {};
}

std::span<uint8_t> V8Instance::MemoryLocked() {
  if (memory_.IsEmpty()) return {};
  v8::Local<v8::ArrayBuffer> buffer = memory_.Get(holder_->isolate())->Buffer();
  return {static_cast<uint8_t*>(buffer->Data()), buffer->ByteLength()};
}

Result<std::vector<uint8_t>, WasmError> V8Instance::ReadLocked(uint32_t ptr, uint32_t len) {
  std::span<uint8_t> memory = MemoryLocked();
  if (memory.empty() && memory_.IsEmpty()) {
    return Unexpected(Error(Kind::kTrap, "the module exports no memory"));
  }
  if (uint64_t{ptr} + len > memory.size()) {
    return Unexpected(Error(Kind::kTrap, "memory read [" + std::to_string(ptr) + ", +" +
                                             std::to_string(len) + ") out of bounds (" +
                                             std::to_string(memory.size()) + " bytes)"));
  }
  return std::vector<uint8_t>(memory.begin() + ptr, memory.begin() + ptr + len);
}

Result<void, WasmError> V8Instance::WriteLocked(uint32_t ptr, std::span<const uint8_t> bytes) {
  std::span<uint8_t> memory = MemoryLocked();
  if (memory.empty() && memory_.IsEmpty()) {
    return Unexpected(Error(Kind::kTrap, "the module exports no memory"));
  }
  if (uint64_t{ptr} + bytes.size() > memory.size()) {
    return Unexpected(Error(Kind::kTrap, "memory write [" + std::to_string(ptr) + ", +" +
                                             std::to_string(bytes.size()) + ") out of bounds (" +
                                             std::to_string(memory.size()) + " bytes)"));
  }
  std::copy(bytes.begin(), bytes.end(), memory.begin() + ptr);
  return {};
}

Result<void, WasmError> V8Instance::Checkpoint() {
  if (!module_->reset_blocker().empty()) {
    return Unexpected(Error(Kind::kDisallowedFeature, "instances of this module cannot be reset: " +
                                                          module_->reset_blocker()));
  }
  if (poisoned_ || interrupt_->sticky()) {
    return Unexpected(Error(Kind::kPoisoned, "the instance failed before and must be discarded"));
  }
  Entered entered(*holder_);
  v8::Isolate* isolate = holder_->isolate();
  auto state = std::make_unique<internal::ResetState>();
  std::string error;
  v8::Local<v8::WasmMemoryObject> memory;
  if (!memory_.IsEmpty()) memory = memory_.Get(isolate);
  if (!state->Capture(isolate, entered.context(), exports_.Get(isolate), memory,
                      module_->reset_globals(), module_->reset_tables(), &error)) {
    return Unexpected(Error(Kind::kOutOfResources, error));
  }
  reset_ = std::move(state);
  return {};
}

bool V8Instance::Restore() {
  if (reset_ == nullptr || (poisoned_ && !stopped_by_host_) || depth_ > 0 || interrupt_->sticky()) {
    return false;
  }
  Entered entered(*holder_);
  v8::Isolate* isolate = holder_->isolate();
  v8::Local<v8::WasmMemoryObject> memory;
  if (!memory_.IsEmpty()) memory = memory_.Get(isolate);
  if (reset_->Restore(isolate, entered.context(), memory)) {
    poisoned_ = false;
    stopped_by_host_ = false;
    return true;
  }
  poisoned_ = true;  // half restored: never use again
  stopped_by_host_ = false;
  return false;
}

std::vector<std::string> V8Instance::CurrentBacktrace() {
  v8::Isolate* isolate = holder_->isolate();
  v8::HandleScope handles(isolate);
  return WasmFrames(isolate, v8::StackTrace::CurrentStackTrace(isolate, kMaxFrames));
}

WasmError V8Instance::Classify(v8::TryCatch& try_catch) {
  v8::Isolate* isolate = holder_->isolate();
  if (try_catch.HasTerminated()) return Error(Kind::kInterrupted, "interrupted");
  v8::Local<v8::Value> exception = try_catch.Exception();
  std::string text = ToStdString(isolate, exception);
  WasmError error = Error(Kind::kTrap, text);
  if (exception->IsNativeError() &&
      text.rfind("RangeError: Maximum call stack size exceeded", 0) == 0) {
    error.kind = Kind::kStackOverflow;
  }
  // "RuntimeError: divide by zero" -> "divide by zero".
  const std::string prefix = "RuntimeError: ";
  if (error.message.rfind(prefix, 0) == 0) error.message = error.message.substr(prefix.size());
  v8::Local<v8::Message> message = try_catch.Message();
  if (!message.IsEmpty()) error.backtrace = WasmFrames(isolate, message->GetStackTrace());
  return error;
}

Result<std::vector<Value>, WasmError> V8Instance::CallLocked(std::string_view export_name,
                                                             std::span<const Value> args) {
  const ExportedFunction* exported = module_->FindExport(export_name);
  if (exported == nullptr) {
    return Unexpected(
        Error(Kind::kNoSuchExport, "no exported function " + std::string(export_name)));
  }
  STELE_TRY(CheckArgs(exported->type, args, "export " + exported->name));
  v8::Isolate* isolate = holder_->isolate();
  v8::HandleScope handles(isolate);
  v8::Local<v8::Context> context = holder_->context();

  auto found = functions_.find(export_name);
  if (found == functions_.end()) {
    v8::Local<v8::Value> fn;
    if (!exports_.Get(isolate)
             ->Get(context, v8::String::NewFromUtf8(isolate, exported->name.data(),
                                                    v8::NewStringType::kNormal,
                                                    static_cast<int>(exported->name.size()))
                                .ToLocalChecked())
             .ToLocal(&fn) ||
        !fn->IsFunction()) {
      return Unexpected(
          Error(Kind::kNoSuchExport, "export " + exported->name + " is not a function"));
    }
    found =
        functions_.emplace(exported->name, v8::Global<v8::Function>(isolate, fn.As<v8::Function>()))
            .first;
  }
  std::vector<v8::Local<v8::Value>> argv;
  argv.reserve(args.size());
  for (const Value& a : args) argv.push_back(ToV8(isolate, a));

  v8::TryCatch try_catch(isolate);
  ++depth_;
  ActiveInstances().push_back(this);
  v8::MaybeLocal<v8::Value> maybe_result = found->second.Get(isolate)->Call(
      context, v8::Undefined(isolate), static_cast<int>(argv.size()), argv.data());
  ActiveInstances().pop_back();
  --depth_;
  v8::Local<v8::Value> result;
  if (!maybe_result.ToLocal(&result)) {
    WasmError error = Classify(try_catch);
    // A nested call (from a host function) must unwind its caller too.
    if (depth_ > 0 && try_catch.HasTerminated()) try_catch.ReThrow();
    if (!host_error_) host_error_ = error;
    return Unexpected(std::move(error));
  }
  std::vector<Value> results;
  const std::vector<ValType>& types = exported->type.results;
  if (types.size() == 1) {
    std::optional<Value> v = FromV8(context, types[0], result);
    if (!v) return Unexpected(Error(Kind::kTrap, "unexpected result of " + exported->name));
    results.push_back(*v);
  } else if (types.size() > 1) {
    if (!result->IsArray())
      return Unexpected(Error(Kind::kTrap, "unexpected results of " + exported->name));
    v8::Local<v8::Array> array = result.As<v8::Array>();
    for (uint32_t i = 0; i < types.size(); ++i) {
      v8::Local<v8::Value> element;
      std::optional<Value> v;
      if (array->Get(context, i).ToLocal(&element)) v = FromV8(context, types[i], element);
      if (!v) return Unexpected(Error(Kind::kTrap, "unexpected results of " + exported->name));
      results.push_back(*v);
    }
  }
  return results;
}

Result<std::vector<Value>, WasmError> V8Instance::Call(std::string_view export_name,
                                                       std::span<const Value> args,
                                                       const CallBudget& budget) {
  if (poisoned_) {
    return Unexpected(Error(Kind::kPoisoned, "the instance failed before and must be discarded"));
  }
  if (depth_ > 0) {
    return Unexpected(
        Error(Kind::kBadArguments, "Call from inside a host function: use HostCall::CallExport"));
  }
  Entered entered(*holder_);
  // Argument errors leave the instance usable: check before starting.
  const ExportedFunction* exported = module_->FindExport(export_name);
  if (exported == nullptr) {
    return Unexpected(
        Error(Kind::kNoSuchExport, "no exported function " + std::string(export_name)));
  }
  STELE_TRY(CheckArgs(exported->type, args, "export " + exported->name));

  std::optional<uint64_t> generation = interrupt_->Begin();
  if (!generation) {
    interrupt_->End();
    poisoned_ = true;
    return Unexpected(Error(Kind::kInterrupted, "interrupted"));
  }
  std::weak_ptr<InterruptState> weak = interrupt_;
  uint64_t watchdog_id = 0;
  if (budget.wall_clock) {
    std::string reason =
        "wall-clock budget of " + std::to_string(budget.wall_clock->count()) + " ms exceeded";
    watchdog_id = Watchdog::Process().Arm(Watchdog::Clock::now() + *budget.wall_clock,
                                          [weak, gen = *generation, reason] {
                                            if (auto state = weak.lock())
                                              state->InterruptCall(gen, reason.c_str());
                                          });
  }
  uint64_t cancel_id = 0;
  if (budget.cancel) {
    cancel_id = budget.cancel->OnCancel([weak, gen = *generation] {
      if (auto state = weak.lock()) state->InterruptCall(gen, "cancelled");
    });
  }

  host_error_.reset();
  Result<std::vector<Value>, WasmError> result = CallLocked(export_name, args);

  if (cancel_id != 0) budget.cancel->Unregister(cancel_id);
  if (watchdog_id != 0) Watchdog::Process().Disarm(watchdog_id);
  std::string reason = interrupt_->End();
  // Not from inside another instance's host function: tasks must not run
  // while guest code is on the stack.
  if (ActiveInstances().empty()) holder_->PumpTasks();

  // A host error terminates the guest, but a guest that returns before
  // V8's next termination check still returns a value: the error wins.
  if (result && !host_error_) return result;
  poisoned_ = true;
  WasmError error = result ? *host_error_ : std::move(result.error());
  if (host_error_ && host_error_->kind != Kind::kInterrupted) {
    error = std::move(*host_error_);
  } else if (error.kind == Kind::kInterrupted || !reason.empty()) {
    error.kind = Kind::kInterrupted;
    error.message = reason.empty() ? "interrupted" : reason;
  }
  stopped_by_host_ = error.kind == Kind::kHostStop;
  host_error_.reset();
  return Unexpected(std::move(error));
}

void V8Instance::HostCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  STELE_CHECK(!ActiveInstances().empty(), "host function called with no active instance");
  V8Instance& self = *static_cast<V8Instance*>(ActiveInstances().back());
  const uint32_t index = info.Data().As<v8::Uint32>()->Value();
  STELE_CHECK(index < self.bindings_.size(), "host function index out of range");
  HostBinding* binding = self.bindings_[index].get();
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  const FuncType& type = binding->function->type;

  // After a host error the guest runs on only until V8's next termination
  // check: it may not reach the host again.
  if (self.host_error_) {
    self.interrupt_->TerminateForHostError();
    return;
  }
  auto fail = [&](WasmError error) {
    // A stop on purpose is no fault to locate: skip the stack walk.
    if (error.backtrace.empty() && error.kind != Kind::kHostStop) {
      error.backtrace = self.CurrentBacktrace();
    }
    if (!self.host_error_) self.host_error_ = std::move(error);
    // Terminate rather than throw: guest code cannot catch a termination.
    self.interrupt_->TerminateForHostError();
  };

  std::vector<Value> args;
  args.reserve(type.params.size());
  for (size_t i = 0; i < type.params.size(); ++i) {
    std::optional<Value> v = FromV8(context, type.params[i], info[static_cast<int>(i)]);
    if (!v)
      return fail(Error(Kind::kHostError,
                        "bad argument " + std::to_string(i) + " to " + binding->qualified_name));
    args.push_back(*v);
  }
  V8HostCall call(self);
  Result<std::vector<Value>, WasmError> result = binding->function->fn(call, args);
  if (!result) return fail(std::move(result.error()));
  // A failed guest call inside the host function poisons the whole call even
  // when the host function ignored it.
  if (self.host_error_) return fail(*self.host_error_);
  const std::vector<Value>& values = *result;
  bool ok = values.size() == type.results.size();
  for (size_t i = 0; ok && i < values.size(); ++i) ok = values[i].type == type.results[i];
  if (!ok) {
    return fail(Error(Kind::kHostError, "host function " + binding->qualified_name +
                                            " returned values not matching " + type.ToString()));
  }
  if (values.size() == 1) {
    info.GetReturnValue().Set(ToV8(isolate, values[0]));
  } else if (values.size() > 1) {
    std::vector<v8::Local<v8::Value>> elements;
    for (const Value& v : values) elements.push_back(ToV8(isolate, v));
    info.GetReturnValue().Set(v8::Array::New(isolate, elements.data(), elements.size()));
  }
}

class V8Engine final : public WasmEngine {
 public:
  Result<std::shared_ptr<const WasmModule>, WasmError> Compile(std::span<const uint8_t> bytes,
                                                               const ModuleLimits& limits) override;
  Result<std::unique_ptr<WasmInstance>, WasmError> Instantiate(
      std::shared_ptr<const WasmModule> module,
      std::shared_ptr<const ImportTable> imports) override;
  std::string EngineId() const override {
    Platform();
    return std::string("v8 ") + v8::V8::GetVersion();
  }

 private:
  struct Compiled {
    // Never freed: compiled code is per distinct module bytes (a component
    // version) and is wanted for the life of the process; the isolates'
    // module objects are keyed by this pointer, which is never reused.
    const v8::CompiledWasmModule* compiled = nullptr;
    std::weak_ptr<const V8Module> module;  // the description, while held
  };

  // Compiling holds the lock: compilations are rare, and two threads must
  // not compile the same bytes twice (one copy would have to be destroyed).
  std::mutex mu_;
  std::map<std::string, Compiled> cache_;  // by digest and memory cap
};

Result<std::shared_ptr<const WasmModule>, WasmError> V8Engine::Compile(
    std::span<const uint8_t> bytes, const ModuleLimits& limits) {
  STELE_ASSIGN_OR_RETURN(CheckedModule checked, CheckModule(bytes, limits));
  const std::string key =
      checked.digest + "/" + std::to_string(checked.memory_max_pages.value_or(0));
  std::lock_guard lock(mu_);
  Compiled& entry = cache_[key];
  if (std::shared_ptr<const V8Module> cached = entry.module.lock()) return cached;
  if (entry.compiled == nullptr) {
    std::shared_ptr<IsolateHolder> holder = CompilingIsolate();
    Entered entered(*holder);
    v8::Isolate* isolate = holder->isolate();
    v8::TryCatch try_catch(isolate);
    v8::Local<v8::WasmModuleObject> object;
    if (!v8::WasmModuleObject::Compile(isolate,
                                       v8::MemorySpan<const uint8_t>(checked.engine_bytes.data(),
                                                                     checked.engine_bytes.size()))
             .ToLocal(&object)) {
      cache_.erase(key);
      std::string message = ToStdString(isolate, try_catch.Exception());
      const std::string prefix = "CompileError: ";
      if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
      return Unexpected(Error(Kind::kInvalidModule, message));
    }
    // Constructed in place from the returned prvalue: no copy of the
    // shared_ptr happens in our code.
    entry.compiled = new v8::CompiledWasmModule(object->GetCompiledModule());
  }
  checked.engine_bytes.clear();
  checked.engine_bytes.shrink_to_fit();
  auto module = std::make_shared<const V8Module>(std::move(checked), entry.compiled);
  entry.module = module;
  return std::shared_ptr<const WasmModule>(module);
}

Result<std::unique_ptr<WasmInstance>, WasmError> V8Engine::Instantiate(
    std::shared_ptr<const WasmModule> module, std::shared_ptr<const ImportTable> imports) {
  auto v8_module = std::dynamic_pointer_cast<const V8Module>(module);
  STELE_CHECK(v8_module != nullptr, "Instantiate: module compiled by another engine");
  auto instance = std::make_unique<V8Instance>(SharedIsolate(), v8_module, std::move(imports));
  STELE_TRY(instance->Init());
  return std::unique_ptr<WasmInstance>(std::move(instance));
}

}  // namespace

std::shared_ptr<WasmEngine> CreateV8Engine() {
  // Leaked on purpose, like V8 itself: it owns the compiled modules, which
  // instances on other threads may still use during static destruction.
  static auto* engine = new std::shared_ptr<WasmEngine>(std::make_shared<V8Engine>());
  return *engine;
}

}  // namespace stele::wasm
