#include "runtime/wasm/v8_isolate.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "base/check.h"
#include "runtime/wasm/v8_platform.h"

namespace stele::wasm::internal {

v8::Platform* Platform() { return V8Platform(); }

IsolateHolder::IsolateHolder() {
  allocator_.reset(v8::ArrayBuffer::Allocator::NewDefaultAllocator());
  v8::Isolate::CreateParams params;
  params.array_buffer_allocator = allocator_.get();
  isolate_ = v8::Isolate::New(params);
  isolate_->SetData(0, this);
  v8::Locker locker(isolate_);
  v8::Isolate::Scope isolate_scope(isolate_);
  v8::HandleScope handles(isolate_);
  isolate_->SetCaptureStackTraceForUncaughtExceptions(true, kMaxFrames);
  v8::Local<v8::Context> context = v8::Context::New(isolate_);
  v8::Context::Scope context_scope(context);
  v8::Local<v8::Object> wasm =
      context->Global()
          ->Get(context, v8::String::NewFromUtf8Literal(isolate_, "WebAssembly"))
          .ToLocalChecked()
          .As<v8::Object>();
  v8::Local<v8::Function> ctor =
      wasm->Get(context, v8::String::NewFromUtf8Literal(isolate_, "Instance"))
          .ToLocalChecked()
          .As<v8::Function>();
  context_.Reset(isolate_, context);
  instance_ctor_.Reset(isolate_, ctor);
}

IsolateHolder::~IsolateHolder() {
  {
    v8::Locker locker(isolate_);
    v8::Isolate::Scope isolate_scope(isolate_);
    modules_.clear();
    host_functions_.clear();
    instance_ctor_.Reset();
    context_.Reset();
  }
  v8::platform::NotifyIsolateShutdown(Platform(), isolate_);
  isolate_->Dispose();
}

v8::MaybeLocal<v8::Function> IsolateHolder::HostFunction(uint32_t index,
                                                         v8::FunctionCallback callback) {
  while (host_functions_.size() <= index) {
    v8::Local<v8::Function> fn;
    const uint32_t i = static_cast<uint32_t>(host_functions_.size());
    if (!v8::Function::New(context(), callback, v8::Integer::NewFromUnsigned(isolate_, i))
             .ToLocal(&fn)) {
      return {};
    }
    host_functions_.emplace_back(isolate_, fn);
  }
  return host_functions_[index].Get(isolate_);
}

void IsolateHolder::PumpTasks() {
  for (int i = 0; i < 8 && v8::platform::PumpMessageLoop(Platform(), isolate_); ++i) {
  }
}

v8::MaybeLocal<v8::WasmModuleObject> IsolateHolder::ModuleObject(
    const v8::CompiledWasmModule* compiled) {
  auto it = modules_.find(compiled);
  if (it != modules_.end()) return it->second.Get(isolate_);
  v8::Local<v8::WasmModuleObject> object;
  if (!v8::WasmModuleObject::FromCompiledModule(isolate_, *compiled).ToLocal(&object)) return {};
  modules_.emplace(compiled, v8::Global<v8::WasmModuleObject>(isolate_, object));
  return object;
}

size_t SharedIsolateCount() {
  static const size_t count = [] {
    const size_t cores = std::max(1u, std::thread::hardware_concurrency());
    return std::clamp<size_t>(2 * cores, 4, 32);
  }();
  return count;
}

namespace {

// The shared isolates, each made on first use.
std::shared_ptr<IsolateHolder> IsolateAt(size_t i) {
  struct Set {
    std::mutex mu;
    std::vector<std::shared_ptr<IsolateHolder>> holders;
  };
  // Leaked on purpose, like V8 itself: instances may outlive every static.
  static Set* set = [] {
    Platform();
    auto* s = new Set;
    s->holders.resize(SharedIsolateCount());
    return s;
  }();
  // At exit, the isolates no instance holds any more are disposed (so that
  // leak checkers see V8's memory returned); the others stay with their
  // instances. A later call makes a new isolate.
  struct Disposer {
    ~Disposer() {
      std::lock_guard lock(set->mu);
      for (auto& holder : set->holders) {
        if (holder.use_count() == 1) holder.reset();
      }
    }
  };
  static Disposer disposer;
  std::lock_guard lock(set->mu);
  // Created lazily: each costs milliseconds (docs/wasm_engine.md).
  if (!set->holders[i]) set->holders[i] = std::make_shared<IsolateHolder>();
  return set->holders[i];
}

}  // namespace

std::shared_ptr<IsolateHolder> SharedIsolate() {
  static std::atomic<size_t> next{0};
  return IsolateAt(next.fetch_add(1, std::memory_order_relaxed) % SharedIsolateCount());
}

std::shared_ptr<IsolateHolder> CompilingIsolate() { return IsolateAt(0); }

std::vector<void*>& ActiveInstances() {
  thread_local std::vector<void*> active;
  return active;
}

}  // namespace stele::wasm::internal
