// The V8 implementation of js_engine.h (V8 10.2 from Debian's libnode108,
// the same V8 as runtime/wasm, initialised once through wasm::V8Platform).
//
// Realms (v8_realm.h): an isolate with one hardened context each, pooled
// per module. A run takes an idle realm of its module (or creates one),
// instantiates the module afresh in it and returns the realm afterwards;
// a poisoned realm (interrupted, aborted, over its heap limit) is
// destroyed instead. So concurrent runs of a module each have a realm of
// their own, and a run never sees state of another (docs/js.md).
//
// Creating a realm costs milliseconds of CPU, a run in a ready one some
// microseconds: the pool keeps every realm a burst needed (up to
// kMaxIdleRealms per module, the executor's default workflow
// concurrency), and a reaper thread destroys those idle for
// kIdleRealmTtl, so memory returns after the burst.
#include <v8.h>

#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/js/js_engine.h"
#include "runtime/js/v8_realm.h"
#include "runtime/wasm/v8_platform.h"

namespace stele::runtime::js {
namespace {

using internal::Realm;

// Realms kept idle per module beyond those in use.
constexpr size_t kMaxIdleRealms = 256;
// How often the reaper looks for realms idle longer than kIdleRealmTtl.
constexpr std::chrono::seconds kReapEvery{5};

class V8JsModule final : public JsModule {
 public:
  V8JsModule(std::string name, std::string source, JsFlavor flavor, JsLimits limits)
      : name_(std::move(name)), source_(std::move(source)), flavor_(flavor), limits_(limits) {}

  const std::string& name() const override { return name_; }
  JsFlavor flavor() const override { return flavor_; }
  const std::vector<JsDeclaredFunction>& functions() const override { return functions_; }
  size_t idle_realms() const override {
    std::lock_guard lock(mu_);
    return idle_.size();
  }

  Result<std::unique_ptr<Realm>, JsError> Acquire() const {
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        std::unique_ptr<Realm> realm = std::move(idle_.back().realm);
        idle_.pop_back();
        return realm;
      }
    }
    return Realm::Create(name_, source_, flavor_, limits_);
  }
  void Release(std::unique_ptr<Realm> realm) const {
    if (realm->poisoned()) return;
    std::lock_guard lock(mu_);
    // The back is the most recently used: Acquire takes it, Trim keeps it.
    if (idle_.size() < kMaxIdleRealms) {
      idle_.push_back(IdleRealm{std::move(realm), std::chrono::steady_clock::now()});
    }
  }
  // Realms idle since before `cutoff`, but the most recently used one.
  // Destroyed by the caller, outside the lock (destroying an isolate takes
  // a while).
  std::vector<std::unique_ptr<Realm>> TakeIdleSince(
      std::chrono::steady_clock::time_point cutoff) const {
    std::vector<std::unique_ptr<Realm>> stale;
    std::lock_guard lock(mu_);
    while (idle_.size() > 1 && idle_.front().since < cutoff) {
      stale.push_back(std::move(idle_.front().realm));
      idle_.pop_front();
    }
    return stale;
  }

  std::vector<JsDeclaredFunction> functions_;

 private:
  struct IdleRealm {
    std::unique_ptr<Realm> realm;
    std::chrono::steady_clock::time_point since;
  };
  const std::string name_;
  const std::string source_;
  const JsFlavor flavor_;
  const JsLimits limits_;
  mutable std::mutex mu_;
  mutable std::deque<IdleRealm> idle_;  // oldest release first
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
    {
      std::lock_guard lock(mu_);
      modules_.push_back(module);
      if (!reaper_.joinable()) reaper_ = std::thread([this] { Reap(); });
    }
    return std::shared_ptr<const JsModule>(std::move(module));
  }

  size_t TrimIdleRealms(std::chrono::steady_clock::time_point now) override {
    std::vector<std::shared_ptr<const V8JsModule>> live;
    {
      std::lock_guard lock(mu_);
      std::erase_if(modules_, [](const auto& m) { return m.expired(); });
      for (const auto& m : modules_) {
        if (auto module = m.lock()) live.push_back(std::move(module));
      }
    }
    size_t trimmed = 0;
    for (const auto& module : live) trimmed += module->TakeIdleSince(now - kIdleRealmTtl).size();
    return trimmed;
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

 private:
  // Runs for the life of the process (the engine is never destroyed).
  void Reap() {
    for (;;) {
      std::this_thread::sleep_for(kReapEvery);
      TrimIdleRealms(std::chrono::steady_clock::now());
    }
  }

  std::mutex mu_;
  std::vector<std::weak_ptr<const V8JsModule>> modules_;  // guarded by mu_
  std::thread reaper_;                                    // guarded by mu_
};

}  // namespace

std::shared_ptr<JsEngine> CreateV8JsEngine() {
  // Leaked on purpose, like V8 itself (modules may outlive static
  // destruction on other threads).
  static auto* engine = new std::shared_ptr<JsEngine>(std::make_shared<V8JsEngine>());
  return *engine;
}

}  // namespace stele::runtime::js
