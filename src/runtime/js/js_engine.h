// The JavaScript engine adapter (docs/js.md): the one interface the JS
// workers see of a JavaScript engine. Load an ES module under limits (its
// declared functions come out), then run one of its functions per
// execution run, in a fresh instance of the module, with the host answering
// the guest's operations. The implementation is V8 10.2 (CreateV8JsEngine,
// v8_js_engine.cc); nothing else in Stele includes v8.h for JavaScript.
//
//   auto engine = CreateV8JsEngine();
//   auto module = engine->Load("hello.js", source, JsFlavor::kWorkflow, JsLimits{});
//   MyHost host;                                       // implements JsHost
//   auto outcome = engine->Run(**module, "demo:hello/api.welcome", params, host, budget);
//
// The guest's view: every operation of the workflow or activity context
// (ctx.call, joinSet.next, fetch, ...) becomes one synchronous
// JsHost::Call; the host answers before the guest continues, so the promise
// the guest gets is already settled and a run needs no event loop. A run
// ends when the function's promise settles with the microtask queue
// drained; a promise nothing can settle any more is kPendingAwait.
//
// Threading: an engine and its modules are thread-safe; Run may be called
// from any thread, concurrently (each run takes a realm of its own). A
// JsHost is called only from the thread that called Run. Ownership:
// modules are shared_ptr; Run borrows the host for its duration.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/cancellation.h"
#include "base/result.h"
#include "core/json.h"

namespace stele::runtime::js {

// What runs in the realm: workflows get deterministic Date / Math.random /
// crypto bound to the host; activities get the real ones, fetch and
// AbortSignal; webhooks (js_webhook.h) get the real ones and no fetch, and
// their module exports one `webhook` function instead of `functions`
// (declared as the single function "webhook").
enum class JsFlavor { kWorkflow, kActivity, kWebhook };

struct JsLimits {
  // Heap of one realm (its isolate). Reaching it stops the run (kOutOfMemory).
  size_t max_heap_bytes = 64u << 20;
  // Native stack the guest may use from where the engine enters it;
  // deeper recursion throws RangeError (uncaught: kStackOverflow).
  size_t max_stack_bytes = 512u << 10;
  // Largest module source accepted by Load.
  size_t max_source_bytes = 16u << 20;
  // Longest the module's top-level code may run when Load evaluates it.
  std::chrono::milliseconds max_load_time{10000};
};

// One frame of a JavaScript stack, innermost first.
struct JsFrame {
  std::string function;  // "" for anonymous / top-level code
  std::string file;      // the module's name as given to Load
  uint32_t line = 0;     // 1-based
  uint32_t column = 0;   // 1-based
  friend bool operator==(const JsFrame&, const JsFrame&) = default;
};
// "fn (file:line:col)" per frame, one per line.
std::string FormatStack(const std::vector<JsFrame>& frames);

struct JsError {
  enum class Kind {
    kInvalidModule,   // Load: syntax error, import other than "stele", top-level throw,
                      // a bad `functions` export, over max_source_bytes
    kNoSuchFunction,  // Run: the module declares no such function
    kThrown,          // the function threw (or rejected with) something other than Err
    kPendingAwait,    // it awaits a promise that no Stele operation settles
    kBadResult,       // its value (or Err's value) has no JSON form
    kInterrupted,     // the budget's slice or deadline passed, or its token fired
    kOutOfMemory,     // the realm's heap limit was reached
    kStackOverflow,   // uncaught RangeError: Maximum call stack size exceeded
    kHostAbort,       // the host stopped the run (HostReply::Abort)
    kEngine,          // the engine failed (e.g. could not create a realm)
  };
  Kind kind = Kind::kEngine;
  std::string message;
  std::vector<JsFrame> stack;  // where it happened, when known

  // "<kind>: <message>" plus the stack, one frame per line.
  std::string ToString() const;
  static JsError Make(Kind kind, std::string message, std::vector<JsFrame> stack = {}) {
    return JsError{kind, std::move(message), std::move(stack)};
  }
};
std::string_view JsErrorKindName(JsError::Kind kind);

// One function of a module's `functions` export.
struct JsDeclaredFunction {
  std::string ffqn;                                         // as declared (the loader parses it)
  std::vector<std::pair<std::string, std::string>> params;  // [name, WIT-like type]
  std::optional<std::string> returns;
};

// A loaded module: its source and declarations; the engine keeps its
// realms. Immutable.
class JsModule {
 public:
  virtual ~JsModule() = default;
  virtual const std::string& name() const = 0;
  virtual JsFlavor flavor() const = 0;
  virtual const std::vector<JsDeclaredFunction>& functions() const = 0;
  const JsDeclaredFunction* Find(std::string_view ffqn) const;
  // Realms kept ready for the next runs (for tests and metrics).
  virtual size_t idle_realms() const = 0;
};

// The host's answer to one operation.
struct HostReply {
  enum class Kind { kValue, kThrow, kAbort };
  Kind kind = Kind::kValue;
  core::Json value;     // kValue: the operation's result; kThrow: the payload (Err's value, ...)
  std::string type;     // kThrow: "Err", "FunctionMismatch", "Cancelled", "TypeError", ...
  std::string message;  // kThrow: the error's message; kAbort: why the run stops

  static HostReply Value(core::Json v) { return HostReply{Kind::kValue, std::move(v), {}, {}}; }
  static HostReply Throw(std::string type, std::string message, core::Json payload = nullptr) {
    return HostReply{Kind::kThrow, std::move(payload), std::move(type), std::move(message)};
  }
  // The guest is terminated: no guest code runs any more, nothing can catch
  // it; Run returns kHostAbort with `reason`.
  static HostReply Abort(std::string reason) {
    return HostReply{Kind::kAbort, nullptr, {}, std::move(reason)};
  }
};

// What the guest asks of its host. Every call comes from the thread running
// the guest, while the guest waits.
class JsHost {
 public:
  virtual ~JsHost() = default;
  // One operation: `op` ("call", "submit", "fetch", "log", ...; docs/js.md)
  // with its arguments as a JSON array. `stack` gives the guest's stack at
  // the call (computed only when asked).
  virtual HostReply Call(std::string_view op, const core::Json& args,
                         const std::function<std::vector<JsFrame>()>& stack) = 0;
  // Date.now() / new Date(): milliseconds since the epoch, or an abort
  // reason.
  virtual Result<double, std::string> Now() = 0;
  // Math.random(): in [0, 1), or an abort reason.
  virtual Result<double, std::string> Random() = 0;
  // crypto.getRandomValues: fills `bytes`, or an abort reason.
  virtual Result<void, std::string> RandomBytes(std::span<uint8_t> bytes) = 0;
  // The latest steady time the guest may compute until without calling
  // the host (e.g. a workflow's lock expiry); asked after every call.
  virtual std::optional<std::chrono::steady_clock::time_point> GuestDeadline() {
    return std::nullopt;
  }
};

// A JsHost for guests outside a workflow's log (activities, webhooks): the
// real clock and the OS random source, since nothing replays them.
class NonDeterministicJsHost : public JsHost {
 public:
  Result<double, std::string> Now() override;
  Result<double, std::string> Random() override;
  Result<void, std::string> RandomBytes(std::span<uint8_t> bytes) override;

 private:
  std::mt19937_64 rng_{std::random_device{}()};
};

// Limits of one run.
struct RunBudget {
  // Longest the guest may compute between two host calls (an infinite loop
  // ends here); the host's GuestDeadline may cut it shorter.
  std::chrono::milliseconds slice{1000};
  // Fired: the run is interrupted (kInterrupted).
  std::optional<CancellationToken> cancel;
};

// Facts the function's context carries (docs/js.md).
struct RunInfo {
  std::string execution_id;
  std::string ffqn;
  // Activities only.
  uint32_t attempt = 1;
  int64_t deadline_ms = 0;
  std::vector<std::pair<std::string, std::string>> env;
};

// How a function ended on its own.
struct JsOutcome {
  bool ok = true;    // false: it threw (or rejected with) an Err
  core::Json value;  // the value, or Err's value
  // The Err was made with { retryable: false }: a permanent failure.
  bool non_retryable = false;
};

class JsEngine {
 public:
  virtual ~JsEngine() = default;
  // Compiles `source` as an ES module named `name` (the file name its stack
  // frames carry), evaluates it once in a fresh realm of `flavor` and reads
  // its `functions` export. Errors are kInvalidModule with the position
  // ("hello.js:3:7: SyntaxError: ...").
  virtual Result<std::shared_ptr<const JsModule>, JsError> Load(std::string name,
                                                                std::string source, JsFlavor flavor,
                                                                const JsLimits& limits) = 0;
  // Runs function `ffqn` of `module` with `params` (a JSON array: the
  // arguments after the context) in a fresh instance of the module.
  virtual Result<JsOutcome, JsError> Run(const JsModule& module, std::string_view ffqn,
                                         const RunInfo& info, const core::Json& params,
                                         JsHost& host, const RunBudget& budget) = 0;
  // "v8 10.2.154.26-node.36".
  virtual std::string EngineId() const = 0;
  // Destroys the realms of every module that have been idle since before
  // `now` - kIdleRealmTtl, keeping the most recently used one per module;
  // returns how many. The engine calls it every few seconds on its own, so
  // that a burst's realms do not stay after it; tests call it with a
  // later `now`.
  virtual size_t TrimIdleRealms(std::chrono::steady_clock::time_point now) = 0;
};

// How long an idle realm is kept for the next run of its module.
inline constexpr std::chrono::seconds kIdleRealmTtl{30};

// The process's V8 engine (created on first use, shared).
std::shared_ptr<JsEngine> CreateV8JsEngine();

}  // namespace stele::runtime::js
