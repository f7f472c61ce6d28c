#include "runtime/wasm_host/instance_pool.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

namespace stele::runtime::wasm_host {

using wasm::WasmError;

// The functions of the lease holding the instance, by import index of the
// module; empty between leases (a call then is a host error).
struct InstancePool::Binding {
  std::vector<const wasm::HostFunction*> functions;
  std::shared_ptr<const wasm::ImportTable> table;  // keeps `functions` alive

  Result<void, WasmError> Bind(const wasm::WasmModule& module,
                               std::shared_ptr<const wasm::ImportTable> imports) {
    std::vector<const wasm::HostFunction*> found;
    found.reserve(module.imports().size());
    for (const wasm::ImportSignature& imp : module.imports()) {
      const wasm::HostFunction* fn = imports ? imports->Find(imp.module, imp.name) : nullptr;
      if (fn == nullptr) {
        return Unexpected(
            WasmError::Make(WasmError::Kind::kLinkError,
                            "no host function for import " + imp.module + "." + imp.name));
      }
      if (fn->type != imp.type) {
        return Unexpected(WasmError::Make(WasmError::Kind::kLinkError,
                                          "host function " + imp.module + "." + imp.name +
                                              " has type " + fn->type.ToString() +
                                              ", the module imports " + imp.type.ToString()));
      }
      found.push_back(fn);
    }
    functions = std::move(found);
    table = std::move(imports);
    return {};
  }
  void Unbind() {
    functions.clear();
    table.reset();
  }
};

namespace {

// Forwards import i to the function bound in `binding`.
std::shared_ptr<const wasm::ImportTable> ForwardingImports(
    const wasm::WasmModule& module, const std::shared_ptr<InstancePool::Binding>& binding) {
  auto table = std::make_shared<wasm::ImportTable>();
  const auto& imports = module.imports();
  for (size_t i = 0; i < imports.size(); ++i) {
    table->Add(imports[i].module, imports[i].name, imports[i].type,
               [b = binding, i](wasm::HostCall& call, std::span<const wasm::Value> args)
                   -> Result<std::vector<wasm::Value>, WasmError> {
                 if (i >= b->functions.size()) {
                   return Unexpected(WasmError::Make(WasmError::Kind::kHostError,
                                                     "host function called outside a run"));
                 }
                 return b->functions[i]->fn(call, args);
               });
  }
  return table;
}

}  // namespace

InstancePool::InstancePool(std::shared_ptr<wasm::WasmEngine> engine,
                           std::shared_ptr<const wasm::WasmModule> module, Options options,
                           Prepare prepare)
    : engine_(std::move(engine)),
      module_(std::move(module)),
      options_(options),
      prepare_(std::move(prepare)),
      poolable_(options_.capacity > 0 && module_->reset_blocker().empty()) {}

InstancePool::~InstancePool() = default;

InstancePool::Lease::~Lease() {
  if (pool_ != nullptr && slot_.instance != nullptr) pool_->Return(std::move(slot_));
}

Result<InstancePool::Lease, WasmError> InstancePool::Acquire(
    std::shared_ptr<const wasm::ImportTable> imports, const wasm::CallBudget& budget) {
  std::vector<Slot> expired;  // destroyed outside the lock
  std::optional<Slot> reused;
  if (poolable_) {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = idle_.begin(); it != idle_.end();) {
      if (now - it->idle_since > options_.max_idle) {
        expired.push_back(std::move(*it));
        it = idle_.erase(it);
      } else {
        ++it;
      }
    }
    // The most recently returned instance: the warmest.
    if (!idle_.empty()) {
      reused = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (reused) {
    STELE_TRY(reused->binding->Bind(*module_, std::move(imports)));
    return Lease(this, std::move(*reused), /*reused=*/true);
  }
  Slot slot;
  if (!poolable_) {
    STELE_ASSIGN_OR_RETURN(slot.instance, engine_->Instantiate(module_, std::move(imports)));
    if (prepare_) STELE_TRY(prepare_(*slot.instance, budget));
    return Lease(nullptr, std::move(slot), /*reused=*/false);
  }
  slot.binding = std::make_shared<Binding>();
  STELE_TRY(slot.binding->Bind(*module_, std::move(imports)));
  STELE_ASSIGN_OR_RETURN(slot.instance,
                         engine_->Instantiate(module_, ForwardingImports(*module_, slot.binding)));
  if (prepare_) STELE_TRY(prepare_(*slot.instance, budget));
  // A checkpoint that fails (V8 out of memory) leaves an instance that is
  // fine for this lease and discarded at its end.
  (void)slot.instance->Checkpoint();
  return Lease(this, std::move(slot), /*reused=*/false);
}

void InstancePool::Return(Slot slot) {
  slot.binding->Unbind();
  if (!slot.instance->Restore()) {
    std::lock_guard lock(mu_);
    ++discarded_;
    return;  // the slot dies here, outside the lock
  }
  slot.idle_since = std::chrono::steady_clock::now();
  std::optional<Slot> evicted;
  std::lock_guard lock(mu_);
  if (idle_.size() >= options_.capacity) {
    evicted = std::move(idle_.front());
    idle_.erase(idle_.begin());
  }
  idle_.push_back(std::move(slot));
  // `evicted` is destroyed after the lock is released (declared before it).
}

size_t InstancePool::idle() const {
  std::lock_guard lock(mu_);
  return idle_.size();
}

uint64_t InstancePool::discarded() const {
  std::lock_guard lock(mu_);
  return discarded_;
}

}  // namespace stele::runtime::wasm_host
