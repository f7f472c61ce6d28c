// InstancePool: warm instances of one wasm module, reused from run to run
// so that a workflow run or activity attempt does not pay for
// instantiation and the guest's start-up (wasi-libc's `_initialize`) each
// time (docs/wasm_engine.md, "Instance pool").
//
// A pooled instance is instantiated against a forwarding import table whose
// functions call into the table of the run that holds the instance
// (Acquire binds it, the lease's end unbinds it), prepared once (`prepare`,
// e.g. `_initialize`) and checkpointed (WasmInstance::Checkpoint). When a
// lease ends, the instance is restored to that checkpoint — memory,
// mutable globals, tables — and kept; it is discarded instead when it is
// poisoned (a trap, an interrupt, a host error: any failed Call but one
// a host function stopped on purpose, kHostStop), was
// interrupted, its memory grew or a table changed
// (WasmInstance::Restore), or the pool is full. So a run sees exactly the
// state a fresh instance would have after `prepare`, and nothing of an
// earlier run. Modules that cannot be reset (WasmModule::reset_blocker)
// and pools of capacity 0 instantiate afresh for every lease.
//
// Any thread may take any idle instance (V8's isolates are shared by all
// threads, v8_engine.cc); a lease takes the most recently returned one. At
// most `capacity` instances are kept (the least recently used go first),
// and instances idle for longer than `max_idle` are dropped at the next
// Acquire or lease end.
//
// Threading: Acquire and the end of leases are thread-safe; a Lease and
// its instance are used by one thread. Ownership: the pool owns idle
// instances; a Lease owns its instance until it ends and must not outlive
// the pool.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "base/result.h"
#include "runtime/wasm/wasm_engine.h"

namespace stele::runtime::wasm_host {

class InstancePool {
 public:
  // Run once on every new instance before it serves its first lease (and
  // before its checkpoint), bound to the first lease's imports.
  using Prepare =
      std::function<Result<void, wasm::WasmError>(wasm::WasmInstance&, const wasm::CallBudget&)>;

  struct Options {
    // Keep about one per run in flight (the default activity
    // concurrency). 0: no pooling.
    size_t capacity = 64;
    std::chrono::seconds max_idle{60};
  };

  InstancePool(std::shared_ptr<wasm::WasmEngine> engine,
               std::shared_ptr<const wasm::WasmModule> module, Options options, Prepare prepare);
  ~InstancePool();
  InstancePool(const InstancePool&) = delete;
  InstancePool& operator=(const InstancePool&) = delete;

  struct Binding;  // instance_pool.cc
  struct Slot {
    std::unique_ptr<wasm::WasmInstance> instance;
    std::shared_ptr<Binding> binding;  // null: not poolable
    std::chrono::steady_clock::time_point idle_since;
  };

  class Lease {
   public:
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();
    wasm::WasmInstance& instance() const { return *slot_.instance; }
    // True when the instance served an earlier lease (tests, metrics).
    bool reused() const { return reused_; }

   private:
    friend class InstancePool;
    Lease(InstancePool* pool, Slot slot, bool reused)
        : pool_(pool), slot_(std::move(slot)), reused_(reused) {}
    InstancePool* pool_;
    Slot slot_;
    bool reused_;
  };

  // An instance bound to `imports` (which must outlive the lease), fresh or
  // restored. Errors: those of WasmEngine::Instantiate (kLinkError when
  // `imports` lacks a function of the module) and of `prepare`.
  Result<Lease, wasm::WasmError> Acquire(std::shared_ptr<const wasm::ImportTable> imports,
                                         const wasm::CallBudget& budget = {});

  // Idle instances kept (tests).
  size_t idle() const;
  // Instances discarded at the end of a lease because they could not be
  // restored (tests, metrics).
  uint64_t discarded() const;
  bool poolable() const { return poolable_; }

 private:
  void Return(Slot slot);

  std::shared_ptr<wasm::WasmEngine> engine_;
  std::shared_ptr<const wasm::WasmModule> module_;
  Options options_;
  Prepare prepare_;
  bool poolable_;
  mutable std::mutex mu_;
  std::vector<Slot> idle_;  // oldest first
  uint64_t discarded_ = 0;
};

}  // namespace stele::runtime::wasm_host
