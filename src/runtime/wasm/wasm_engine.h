// The engine-neutral WebAssembly adapter: compile a module under limits,
// instantiate it against host functions, call its exports under a budget.
//
// Only this header is seen by the rest of Stele; the V8 implementation lives in
// v8_engine.cc (CreateV8Engine). Everything a durable engine must decide about
// a guest — which imports it may use, how much memory it may take — is checked
// here, engine-neutrally, on the module bytes (wasm_binary.h), before the
// engine sees them.
//
// Threading:
//   - WasmEngine and WasmModule are immutable after creation and may be used
//     from any number of threads at once (a module compiled on one thread is
//     instantiated on others).
//   - A WasmInstance is used by one thread at a time (any thread; calls from
//     two threads at once are serialised). Instantiate runs on the calling
//     thread's own engine context (V8: one isolate per thread).
//   - WasmInstance::Interrupt is the one call that is safe from any thread at
//     any time; so is cancelling the CancellationToken of a CallBudget.
//   - Host functions run on the thread that called WasmInstance::Call.
// Ownership: modules are shared (shared_ptr<const WasmModule>); an instance is
// owned by its caller (unique_ptr) and keeps its module alive. A HostCall is
// borrowed for the duration of one host function invocation only.
//
// Failure model: after any error of a Call (trap, interrupt, stack overflow,
// host error) the instance is poisoned: further Calls return kPoisoned.
// Discard it and replay on a fresh instance. One failure is not the guest's:
// a host function that stops the guest on purpose (kHostStop, e.g. a
// workflow that must wait) leaves an instance that Restore may bring back
// to its checkpoint, as after a Call that returned.

#ifndef STELE_RUNTIME_WASM_WASM_ENGINE_H_
#define STELE_RUNTIME_WASM_WASM_ENGINE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/cancellation.h"
#include "base/result.h"

namespace stele::wasm {

// The MVP number types. An import whose signature uses reference or vector
// types is rejected; an export using them is left out of exports() (it
// cannot be called); a module may use them internally.
enum class ValType : uint8_t { kI32, kI64, kF32, kF64 };

std::string_view ValTypeName(ValType type);

struct FuncType {
  std::vector<ValType> params;
  std::vector<ValType> results;

  bool operator==(const FuncType&) const = default;
  // "(i32, i32) -> (i32)".
  std::string ToString() const;
};

// One wasm value: its type and its bits (floats by bit pattern, so that NaN
// payloads survive a round trip through the journal).
struct Value {
  ValType type = ValType::kI32;
  uint64_t bits = 0;

  static Value I32(int32_t v);
  static Value I64(int64_t v);
  static Value F32(float v);
  static Value F64(double v);

  // REQUIRES: type matches; aborts otherwise (a programmer error).
  int32_t AsI32() const;
  int64_t AsI64() const;
  float AsF32() const;
  double AsF64() const;

  bool operator==(const Value&) const = default;
  std::string ToString() const;  // "i32:42"
};

struct WasmError {
  enum class Kind {
    kInvalidModule,      // not a valid wasm binary (our parser or the engine)
    kDisallowedImport,   // an import outside ModuleLimits (or wrong signature)
    kDisallowedFeature,  // shared memory (threads), memory64, several memories
    kLinkError,          // instantiation: missing/mismatched host function, start trap
    kMemoryLimit,        // the module needs more memory than ModuleLimits allow
    kTrap,               // deterministic guest fault: unreachable, div by zero, OOB ...
    kInterrupted,        // Interrupt(), budget or cancellation: retry, never an outcome
    kStackOverflow,      // depends on the JIT tier: retryable, never deterministic
    kHostError,          // a host function returned an error; message is the host's
    kHostStop,           // a host function stopped the guest on purpose (see Restore)
    kOutOfResources,     // the engine could not allocate (memory, isolate ...)
    kNoSuchExport,       // Call of a missing export or a non-function export
    kBadArguments,       // Call with arguments not matching the export's FuncType
    kPoisoned,           // Call on an instance that already failed once
  };

  Kind kind = Kind::kTrap;
  std::string message;
  // Guest frames at the failure, innermost first (at most 64): function
  // names from the module's `name` section ("func<index>" without one).
  // Empty when unknown.
  std::vector<std::string> backtrace;

  static WasmError Make(Kind kind, std::string message) {
    return WasmError{kind, std::move(message), {}};
  }
  // Retryable kinds: the same call on a fresh instance may succeed.
  bool IsRetryable() const {
    return kind == Kind::kInterrupted || kind == Kind::kStackOverflow ||
           kind == Kind::kOutOfResources;
  }
  // "trap: divide by zero\n  at div_by\n  at run".
  std::string ToString() const;
};

std::string_view WasmErrorKindName(WasmError::Kind kind);

// An import a module may declare, with its exact signature.
struct ImportSignature {
  std::string module;
  std::string name;
  FuncType type;
};

// What a module may ask for; checked at Compile, on the bytes.
struct ModuleLimits {
  // Function imports allowed (exact module, name and signature). Any other
  // import — including any memory, table or global import, and any WASI —
  // is rejected with kDisallowedImport naming "module.name".
  std::vector<ImportSignature> allowed_imports;
  // Cap on linear memory, in 64 KiB pages. A module whose initial size is
  // above it is rejected (kMemoryLimit); a declared maximum above it, or no
  // maximum, is lowered to it, so memory.grow beyond the cap returns -1.
  uint32_t max_memory_pages = 16384;  // 1 GiB
  // Cap on the size of the module bytes.
  size_t max_module_bytes = 64u << 20;

  void Allow(std::string module, std::string name, FuncType type) {
    allowed_imports.push_back({std::move(module), std::move(name), std::move(type)});
  }
};

// A named export of the module (functions only).
struct ExportedFunction {
  std::string name;
  FuncType type;
};

struct CheckedModule;  // module_check.h

// A compiled, validated module. Immutable, shareable across threads.
class WasmModule {
 public:
  virtual ~WasmModule() = default;

  // "sha256:<64 hex>" of the bytes given to Compile.
  const std::string& digest() const { return digest_; }
  const std::vector<ExportedFunction>& exports() const { return exports_; }
  const ExportedFunction* FindExport(std::string_view name) const;
  // Function imports in declaration order.
  const std::vector<ImportSignature>& imports() const { return imports_; }
  // The payload of every custom section with this name, in module order
  // (e.g. "stele:functions"). Empty when none.
  std::vector<std::string_view> CustomSections(std::string_view name) const;
  // Function index -> name from the `name` section (may be empty).
  const std::map<uint32_t, std::string>& function_names() const { return function_names_; }
  // The memory limits in effect after the cap (pages); nullopt without memory.
  std::optional<uint32_t> memory_initial_pages() const { return memory_initial_pages_; }
  std::optional<uint32_t> memory_max_pages() const { return memory_max_pages_; }
  // Why an instance of this module cannot be reset (WasmInstance::Checkpoint),
  // empty when it can.
  const std::string& reset_blocker() const { return reset_blocker_; }
  // The reserved exports of the mutable globals and tables (module_check.h).
  const std::vector<std::string>& reset_globals() const { return reset_globals_; }
  const std::vector<std::string>& reset_tables() const { return reset_tables_; }

 protected:
  WasmModule() = default;
  // Takes the description found by CheckModule (module_check.cc).
  void Describe(CheckedModule&& checked);

  std::string digest_;
  std::vector<ExportedFunction> exports_;
  std::vector<ImportSignature> imports_;
  std::vector<std::pair<std::string, std::string>> custom_sections_;  // name, payload
  std::map<uint32_t, std::string> function_names_;
  std::optional<uint32_t> memory_initial_pages_;
  std::optional<uint32_t> memory_max_pages_;
  std::string reset_blocker_;
  std::vector<std::string> reset_globals_;
  std::vector<std::string> reset_tables_;
};

// What a host function sees of its caller. Valid only during the host call.
class HostCall {
 public:
  virtual ~HostCall() = default;

  // Bounds-checked access to the caller's exported linear memory ("memory").
  // kTrap-kind errors when out of bounds or when the module exports no memory;
  // a host function usually returns such an error as is.
  virtual Result<std::vector<uint8_t>, WasmError> ReadBytes(uint32_t ptr, uint32_t len) = 0;
  virtual Result<void, WasmError> WriteBytes(uint32_t ptr, std::span<const uint8_t> bytes) = 0;
  virtual uint64_t MemorySize() = 0;  // bytes
  Result<std::string, WasmError> ReadString(uint32_t ptr, uint32_t len);
  Result<void, WasmError> WriteString(uint32_t ptr, std::string_view s);

  // Calls an export of the caller instance re-entrantly (e.g. "stele_alloc"
  // to place a result in guest memory). An error here poisons the instance;
  // the host function should return it.
  virtual Result<std::vector<Value>, WasmError> CallExport(std::string_view name,
                                                           std::span<const Value> args) = 0;

  // The guest stack at this host call, innermost first (function names).
  virtual std::vector<std::string> Backtrace() = 0;

  // Runs `blocking` with the caller's isolate released, so that other runs
  // placed on it go on while this one waits; V8 keeps this run's frames.
  // A host function that may block — waits for a response, writes to the
  // database, talks to the network — does that inside Park, or it stalls
  // every run on its isolate (and deadlocks when what it waits for runs
  // there). `blocking` must not touch the guest: no ReadBytes, WriteBytes,
  // MemorySize, CallExport or Backtrace. An interrupt that came meanwhile
  // takes effect when Park returns (the guest unwinds at its next step).
  virtual void Park(const std::function<void()>& blocking) { blocking(); }
};

using HostFn =
    std::function<Result<std::vector<Value>, WasmError>(HostCall&, std::span<const Value>)>;

struct HostFunction {
  FuncType type;
  HostFn fn;
};

// Host functions by (module, name). An instance keeps a shared_ptr to the
// table it was instantiated with, so state captured by the functions lives
// as long as the instance. The table must not change while instances use it.
struct ImportTable {
  std::map<std::pair<std::string, std::string>, HostFunction, std::less<>> functions;

  void Add(std::string module, std::string name, FuncType type, HostFn fn) {
    functions[{std::move(module), std::move(name)}] = HostFunction{std::move(type), std::move(fn)};
  }
  const HostFunction* Find(std::string_view module, std::string_view name) const;
  // The limits that allow exactly these functions.
  ModuleLimits AsLimits(uint32_t max_memory_pages = ModuleLimits{}.max_memory_pages) const;
};

struct CallBudget {
  // Wall-clock time for this Call (host functions included). Exceeding it
  // interrupts the guest: kInterrupted.
  std::optional<std::chrono::milliseconds> wall_clock;
  // Cancelling it interrupts the guest: kInterrupted.
  std::optional<CancellationToken> cancel;
};

class WasmInstance {
 public:
  virtual ~WasmInstance() = default;

  // Calls an exported function. Errors: kNoSuchExport, kBadArguments (the
  // instance stays usable), kTrap, kInterrupted, kStackOverflow,
  // kOutOfResources, or the error a host function returned, as is (the
  // instance is poisoned), kPoisoned. Not from inside a host function of
  // this instance (use HostCall::CallExport).
  virtual Result<std::vector<Value>, WasmError> Call(std::string_view export_name,
                                                     std::span<const Value> args,
                                                     const CallBudget& budget = {}) = 0;

  // Stops the running (or the next) Call with kInterrupted. Thread-safe.
  virtual void Interrupt() = 0;

  // True once a Call failed (see Call); the instance must then be dropped.
  virtual bool poisoned() const = 0;

  // The exported memory, bounds-checked, between calls (same errors as HostCall).
  virtual Result<std::vector<uint8_t>, WasmError> ReadBytes(uint32_t ptr, uint32_t len) = 0;
  virtual Result<void, WasmError> WriteBytes(uint32_t ptr, std::span<const uint8_t> bytes) = 0;
  virtual uint64_t MemorySize() = 0;

  virtual const WasmModule& module() const = 0;

  // Resetting, so that one instance can serve many runs (an instance pool)
  // with no state passed from one run to the next: Checkpoint saves the
  // instance's whole mutable state — linear memory (contents and size),
  // mutable globals, tables — and Restore puts it back. Errors of
  // Checkpoint: kDisallowedFeature when the module cannot be reset
  // (WasmModule::reset_blocker), kPoisoned. Restore returns false — the
  // instance must then be discarded — when there is no checkpoint, the
  // instance is poisoned (unless by a kHostStop: the termination that
  // stopped the guest unwound it, and the reset undoes whatever it left
  // half done) or was interrupted (Interrupt), its memory grew or a table
  // changed since the checkpoint. A successful Restore makes the instance
  // callable again. Not during a Call.
  virtual Result<void, WasmError> Checkpoint() = 0;
  virtual bool Restore() = 0;
};

class WasmEngine {
 public:
  virtual ~WasmEngine() = default;

  // Parses and checks the bytes against the limits, then compiles them.
  // kInvalidModule, kDisallowedImport, kDisallowedFeature, kMemoryLimit,
  // kOutOfResources.
  virtual Result<std::shared_ptr<const WasmModule>, WasmError> Compile(
      std::span<const uint8_t> bytes, const ModuleLimits& limits) = 0;

  // Instantiates on the calling thread (runs the start function, if any).
  // Every import of the module must be in `imports` with the same FuncType
  // (kLinkError otherwise). kOutOfResources when memory cannot be allocated.
  virtual Result<std::unique_ptr<WasmInstance>, WasmError> Instantiate(
      std::shared_ptr<const WasmModule> module, std::shared_ptr<const ImportTable> imports) = 0;

  // "v8 10.2.154.26-node.36": engine and version. The wasm workers record it
  // with each run (WorkerResult::engine, WasmBacktrace::engine;
  // docs/wasm_engine.md).
  virtual std::string EngineId() const = 0;
};

// The process-wide V8 engine (initialises V8 on first use; the same object on
// every call). Never fails: V8 initialisation failure aborts.
std::shared_ptr<WasmEngine> CreateV8Engine();

}  // namespace stele::wasm

#endif  // STELE_RUNTIME_WASM_WASM_ENGINE_H_
