// Isolates of the V8 engine (v8_engine.cc): the process-wide platform, a
// small set of isolates shared by every thread, and the scope that enters
// one. See v8_engine.cc's header comment for why isolates are shared and how
// a run leaves its isolate while it blocks.
//
// Threading: IsolateHolder methods other than the constructor and
// destructor run with the isolate locked (inside an Entered); any thread may
// lock any isolate, one at a time. Ownership: SharedIsolate() hands out
// shared ownership of isolates that live as long as the process.
// Internal to src/runtime/wasm.
#pragma once

#include <libplatform/libplatform.h>
#include <v8.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace stele::wasm::internal {

// Most guest frames captured for a backtrace or a trap.
constexpr int kMaxFrames = 64;

// V8's platform (v8_platform.h), initialised on first use.
v8::Platform* Platform();

// One isolate with one context, for the instances placed on it.
class IsolateHolder {
 public:
  IsolateHolder();
  ~IsolateHolder();

  IsolateHolder(const IsolateHolder&) = delete;
  IsolateHolder& operator=(const IsolateHolder&) = delete;

  v8::Isolate* isolate() const { return isolate_; }
  v8::Local<v8::Context> context() const { return context_.Get(isolate_); }

  // The function that stands for import number `index` of whichever instance
  // is innermost in ActiveInstances() on the calling thread. Made once per
  // isolate: creating functions per instance costs far more than the rest of
  // an instantiation.
  v8::MaybeLocal<v8::Function> HostFunction(uint32_t index, v8::FunctionCallback callback);
  static IsolateHolder* From(v8::Isolate* isolate) {
    return static_cast<IsolateHolder*>(isolate->GetData(0));
  }
  v8::Local<v8::Function> instance_ctor() const { return instance_ctor_.Get(isolate_); }

  // Runs pending foreground tasks (V8 posts some, e.g. for tier-up and GC)
  // so that they do not pile up. Called with the isolate locked.
  void PumpTasks();

  // The isolate's module object for a compiled module (cached: compiled
  // modules live as long as the process, see V8Engine). Called with the
  // isolate locked and a HandleScope open.
  v8::MaybeLocal<v8::WasmModuleObject> ModuleObject(const v8::CompiledWasmModule* compiled);

 private:
  std::unique_ptr<v8::ArrayBuffer::Allocator> allocator_;
  v8::Isolate* isolate_ = nullptr;
  v8::Global<v8::Context> context_;
  v8::Global<v8::Function> instance_ctor_;
  std::unordered_map<const v8::CompiledWasmModule*, v8::Global<v8::WasmModuleObject>> modules_;
  std::vector<v8::Global<v8::Function>> host_functions_;
};

// How many isolates the process shares: twice the core count, at least 4
// and at most 32 (docs/wasm_engine.md, "Isolates and threads").
size_t SharedIsolateCount();

// One of the shared isolates, in turn (round robin), created on first use:
// where a new instance goes.
std::shared_ptr<IsolateHolder> SharedIsolate();
// The first shared isolate, where modules are compiled: compiling does not
// take a turn, so that a process with a few instances makes few isolates.
std::shared_ptr<IsolateHolder> CompilingIsolate();

// The instances running guest code on the calling thread, innermost last
// (V8Instance pointers; on any isolate).
std::vector<void*>& ActiveInstances();

// Enters an isolate for the scope: lock, isolate, handles, context.
class Entered {
 public:
  explicit Entered(IsolateHolder& holder)
      : locker_(holder.isolate()),
        isolate_scope_(holder.isolate()),
        handles_(holder.isolate()),
        context_(holder.context()),
        context_scope_(context_) {}
  v8::Local<v8::Context> context() const { return context_; }

 private:
  v8::Locker locker_;
  v8::Isolate::Scope isolate_scope_;
  v8::HandleScope handles_;
  v8::Local<v8::Context> context_;
  v8::Context::Scope context_scope_;
};

}  // namespace stele::wasm::internal
