// What isolates shared between worker threads would rest on (the next
// step of docs/wasm_engine.md, "Isolates and threads"): V8 lets a run park
// inside a host call behind a v8::Unlocker while other threads enter the
// same isolate, instantiate and run wasm and collect garbage, and the
// parked run then returns into its guest with its frames intact. Raw V8
// API on purpose: this pins down the engine's behaviour, not Stele's code.

#include <gtest/gtest.h>
#include <libplatform/libplatform.h>
#include <v8.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/wasm/v8_platform.h"

namespace stele::wasm {
namespace {

// (import "env" "block" (func $block (result i32)))
// (func (export "run") (result i32) (i32.add (call $block) (i32.const 1)))
constexpr uint8_t kCallsBlock[] = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x05, 0x01,
                                   0x60, 0x00, 0x01, 0x7f, 0x02, 0x0d, 0x01, 0x03, 0x65, 0x6e, 0x76,
                                   0x05, 0x62, 0x6c, 0x6f, 0x63, 0x6b, 0x00, 0x00, 0x03, 0x02, 0x01,
                                   0x00, 0x07, 0x07, 0x01, 0x03, 0x72, 0x75, 0x6e, 0x00, 0x01, 0x0a,
                                   0x09, 0x01, 0x07, 0x00, 0x10, 0x00, 0x41, 0x01, 0x6a, 0x0b};

struct SharedIsolate {
  SharedIsolate() {
    V8Platform();
    allocator.reset(v8::ArrayBuffer::Allocator::NewDefaultAllocator());
    v8::Isolate::CreateParams params;
    params.array_buffer_allocator = allocator.get();
    isolate = v8::Isolate::New(params);
    v8::Locker locker(isolate);
    v8::Isolate::Scope isolate_scope(isolate);
    v8::HandleScope handles(isolate);
    v8::Local<v8::Context> local = v8::Context::New(isolate);
    v8::Context::Scope context_scope(local);
    context.Reset(isolate, local);
    module.Reset(isolate,
                 v8::WasmModuleObject::Compile(
                     isolate, v8::MemorySpan<const uint8_t>(kCallsBlock, sizeof kCallsBlock))
                     .ToLocalChecked());
  }
  ~SharedIsolate() {
    {
      v8::Locker locker(isolate);
      v8::Isolate::Scope isolate_scope(isolate);
      module.Reset();
      context.Reset();
    }
    isolate->Dispose();
  }

  std::unique_ptr<v8::ArrayBuffer::Allocator> allocator;
  v8::Isolate* isolate = nullptr;
  v8::Global<v8::Context> context;
  v8::Global<v8::WasmModuleObject> module;
  std::atomic<int> full_collections{0};
};

SharedIsolate* shared = nullptr;

// The host call: parks unlocked for a few hundred microseconds, then makes
// garbage, and now and then a full collection, while other runs are parked.
void Block(const v8::FunctionCallbackInfo<v8::Value>& info) {
  const int32_t value = info.Data().As<v8::Int32>()->Value();
  {
    v8::Unlocker unlocker(info.GetIsolate());
    std::this_thread::sleep_for(std::chrono::microseconds(50 + (value * 37) % 400));
  }
  for (int i = 0; i < 1000; ++i) v8::Object::New(info.GetIsolate());
  if (value % 29 == 0) {
    info.GetIsolate()->LowMemoryNotification();
    ++shared->full_collections;
  }
  info.GetReturnValue().Set(value);
}

// Instantiates the module with a `block` of its own and calls `run`.
int32_t RunOnce(int32_t value) {
  v8::Isolate* isolate = shared->isolate;
  v8::Locker locker(isolate);
  v8::Isolate::Scope isolate_scope(isolate);
  v8::HandleScope handles(isolate);
  v8::Local<v8::Context> context = shared->context.Get(isolate);
  v8::Context::Scope context_scope(context);
  auto name = [&](const char* text) {
    return v8::String::NewFromUtf8(isolate, text).ToLocalChecked();
  };
  v8::Local<v8::Object> env = v8::Object::New(isolate);
  env->Set(context, name("block"),
           v8::Function::New(context, Block, v8::Int32::New(isolate, value)).ToLocalChecked())
      .Check();
  v8::Local<v8::Object> imports = v8::Object::New(isolate);
  imports->Set(context, name("env"), env).Check();
  v8::Local<v8::Function> instance_ctor = context->Global()
                                              ->Get(context, name("WebAssembly"))
                                              .ToLocalChecked()
                                              .As<v8::Object>()
                                              ->Get(context, name("Instance"))
                                              .ToLocalChecked()
                                              .As<v8::Function>();
  v8::Local<v8::Value> args[] = {shared->module.Get(isolate), imports};
  v8::Local<v8::Object> instance = instance_ctor->NewInstance(context, 2, args).ToLocalChecked();
  v8::Local<v8::Function> run = instance->Get(context, name("exports"))
                                    .ToLocalChecked()
                                    .As<v8::Object>()
                                    ->Get(context, name("run"))
                                    .ToLocalChecked()
                                    .As<v8::Function>();
  return run->Call(context, context->Global(), 0, nullptr)
      .ToLocalChecked()
      ->Int32Value(context)
      .FromJust();
}

TEST(V8SharedIsolateTest, RunsParkedInHostCallsShareOneIsolateThroughCollections) {
  SharedIsolate isolate;
  shared = &isolate;
  constexpr int kThreads = 8;
  constexpr int kCalls = 60;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &wrong] {
      for (int c = 0; c < kCalls; ++c) {
        const int32_t value = t * 1000 + c;
        if (RunOnce(value) != value + 1) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(isolate.full_collections.load(), 0);
  shared = nullptr;
}

}  // namespace
}  // namespace stele::wasm
