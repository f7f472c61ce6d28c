// A realm of the V8 JavaScript engine (v8_js_engine.cc): one isolate with
// one hardened context (runtime.js), reused run after run for one module.
// Each run gets a fresh instance of the module; everything else the guest
// can reach is frozen, so runs share no state (docs/js.md, "Isolation
// between runs"). A realm that was interrupted, aborted or hit its heap
// limit is poisoned: its owner destroys it instead of reusing it.
//
// Why not a fresh V8 context per run, or a startup snapshot per module:
// docs/js.md ("Instantiation cost") — deserialising a context costs
// ~350-650 µs, a fresh module instance in a reused realm ~15 µs.
//
// Threading: a realm is used by one thread at a time (Run takes a
// v8::Locker, so it may move between threads). Ownership: owned by its
// module's pool; it owns its isolate.
#pragma once

#include <v8.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/js/js_engine.h"

namespace stele::runtime::js::internal {

// The resource name of runtime.js: its frames are not the guest's.
inline constexpr const char* kRuntimeScriptName = "stele:runtime";

struct ActiveRun;

class Realm {
 public:
  // A new isolate and context for module `name` with `source`, hardened
  // for `flavor`. Errors are kEngine.
  static Result<std::unique_ptr<Realm>, JsError> Create(const std::string& name,
                                                        const std::string& source, JsFlavor flavor,
                                                        const JsLimits& limits);
  ~Realm();
  Realm(const Realm&) = delete;
  Realm& operator=(const Realm&) = delete;

  // Evaluates the module once (with no run: operations throw) and returns
  // its declarations. kInvalidModule on any failure.
  Result<std::vector<JsDeclaredFunction>, JsError> Declarations();
  // One run of function `ffqn` (declared) in a fresh module instance.
  Result<JsOutcome, JsError> Run(const std::string& ffqn, const RunInfo& info,
                                 const core::Json& params, JsHost& host, const RunBudget& budget);

  bool poisoned() const { return poisoned_; }
  // Tests: whether every object reachable from the realm's roots (the
  // global object, the hidden intrinsics, the "stele" module) is frozen,
  // and how many there are; the same walk the hardening froze.
  Result<std::pair<bool, size_t>, JsError> CheckFrozen();

  // --- used by the V8 callbacks (v8_realm.cc) ---
  static Realm* From(v8::Isolate* isolate) { return static_cast<Realm*>(isolate->GetData(0)); }
  ActiveRun* active() const { return active_; }
  v8::Local<v8::Module> stele_module() const { return stele_module_.Get(isolate_); }
  v8::Local<v8::Object> internals() const { return internals_.Get(isolate_); }
  void HeapLimitReached();

 private:
  Realm(std::string name, JsFlavor flavor, JsLimits limits);
  Result<void, JsError> Init(const std::string& source);
  // Compiles, links and evaluates a fresh module instance; returns its
  // `functions` export.
  Result<v8::Local<v8::Object>, JsError> Instantiate(v8::Local<v8::Context> context,
                                                     v8::TryCatch& try_catch, bool loading);
  // The error of a failed step: termination (interrupt, abort, heap),
  // else the caught exception as `kind`.
  JsError Failure(v8::TryCatch& try_catch, JsError::Kind kind, const std::string& what);
  void PumpTasks();

  const std::string name_;
  const JsFlavor flavor_;
  const JsLimits limits_;
  std::unique_ptr<v8::ArrayBuffer::Allocator> allocator_;
  v8::Isolate* isolate_ = nullptr;
  v8::Global<v8::Context> context_;
  v8::Global<v8::String> source_;
  v8::Global<v8::Object> internals_;
  v8::Global<v8::Module> stele_module_;
  ActiveRun* active_ = nullptr;
  bool poisoned_ = false;
  bool heap_limit_reached_ = false;
};

}  // namespace stele::runtime::js::internal
