// The V8 implementation of js_engine.h (V8 10.2 from Debian's libnode108,
// the same V8 as runtime/wasm, initialised once through wasm::V8Platform).
//
// Realms (v8_realm.h): an isolate with one hardened context each, pooled
// per module. A run takes an idle realm of its module (or creates one),
// instantiates the module afresh in it and returns the realm afterwards;
// a poisoned realm (interrupted, aborted, over its heap limit) is
// destroyed instead. So concurrent runs of a module each have a realm of
// their own, and a run never sees state of another (docs/js.md).
#include <v8.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/js/js_engine.h"
#include "runtime/js/v8_realm.h"
#include "runtime/wasm/v8_platform.h"

namespace stele::runtime::js {
namespace {

using internal::Realm;

// Realms kept idle per module beyond those in use.
constexpr size_t kMaxIdleRealms = 16;

class V8JsModule final : public JsModule {
 public:
  V8JsModule(std::string name, std::string source, JsFlavor flavor, JsLimits limits)
      : name_(std::move(name)), source_(std::move(source)), flavor_(flavor), limits_(limits) {}

  const std::string& name() const override { return name_; }
  JsFlavor flavor() const override { return flavor_; }
  const std::vector<JsDeclaredFunction>& functions() const override { return functions_; }

  Result<std::unique_ptr<Realm>, JsError> Acquire() const {
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        std::unique_ptr<Realm> realm = std::move(idle_.back());
        idle_.pop_back();
        return realm;
      }
    }
    return Realm::Create(name_, source_, flavor_, limits_);
  }
  void Release(std::unique_ptr<Realm> realm) const {
    if (realm->poisoned()) return;
    std::lock_guard lock(mu_);
    if (idle_.size() < kMaxIdleRealms) idle_.push_back(std::move(realm));
  }

  std::vector<JsDeclaredFunction> functions_;

 private:
  const std::string name_;
  const std::string source_;
  const JsFlavor flavor_;
  const JsLimits limits_;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Realm>> idle_;
};

class V8JsEngine final : public JsEngine {
 public:
  Result<std::shared_ptr<const JsModule>, JsError> Load(std::string name, std::string source,
                                                        JsFlavor flavor,
                                                        const JsLimits& limits) override {
    if (source.size() > limits.max_source_bytes) {
      return Unexpected(JsError::Make(
          JsError::Kind::kInvalidModule,
          name + ": the module is over " + std::to_string(limits.max_source_bytes) + " bytes"));
    }
    auto module = std::make_shared<V8JsModule>(name, std::move(source), flavor, limits);
    STELE_ASSIGN_OR_RETURN(std::unique_ptr<Realm> realm, module->Acquire());
    STELE_ASSIGN_OR_RETURN(module->functions_, realm->Declarations());
    module->Release(std::move(realm));
    return std::shared_ptr<const JsModule>(std::move(module));
  }

  Result<JsOutcome, JsError> Run(const JsModule& module, std::string_view ffqn, const RunInfo& info,
                                 const core::Json& params, JsHost& host,
                                 const RunBudget& budget) override {
    const auto& v8_module = dynamic_cast<const V8JsModule&>(module);
    if (module.Find(ffqn) == nullptr) {
      return Unexpected(
          JsError::Make(JsError::Kind::kNoSuchFunction,
                        module.name() + " declares no function " + std::string(ffqn)));
    }
    if (!params.is_array()) {
      return Unexpected(JsError::Make(JsError::Kind::kThrown, "params must be a JSON array"));
    }
    STELE_ASSIGN_OR_RETURN(std::unique_ptr<Realm> realm, v8_module.Acquire());
    auto outcome = realm->Run(std::string(ffqn), info, params, host, budget);
    v8_module.Release(std::move(realm));
    return outcome;
  }

  std::string EngineId() const override {
    wasm::V8Platform();
    return std::string("v8 ") + v8::V8::GetVersion();
  }
};

}  // namespace

std::shared_ptr<JsEngine> CreateV8JsEngine() {
  // Leaked on purpose, like V8 itself (modules may outlive static
  // destruction on other threads).
  static auto* engine = new std::shared_ptr<JsEngine>(std::make_shared<V8JsEngine>());
  return *engine;
}

}  // namespace stele::runtime::js
