// The JavaScript engine adapter on V8 (js_engine.h, docs/js.md): loading,
// running, the host boundary, isolation between runs of one realm, and the
// limits (slice, deadline, cancellation, heap, stack).
#include "runtime/js/js_engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <latch>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "runtime/js/v8_realm.h"

namespace stele::runtime::js {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using Kind = JsError::Kind;

// A host whose operations are lambdas; records every call.
class FakeHost final : public JsHost {
 public:
  using Op = std::function<HostReply(const core::Json&)>;
  std::map<std::string, Op, std::less<>> ops;
  std::vector<std::string> calls;
  std::vector<std::vector<JsFrame>> stacks;
  double now = 1'700'000'000'000.0;
  double random = 0.25;
  std::optional<std::chrono::steady_clock::time_point> deadline;

  HostReply Call(std::string_view op, const core::Json& args,
                 const std::function<std::vector<JsFrame>()>& stack) override {
    calls.push_back(std::string(op) + " " + args.dump());
    stacks.push_back(stack());
    auto it = ops.find(op);
    if (it == ops.end()) return HostReply::Value(nullptr);
    return it->second(args);
  }
  Result<double, std::string> Now() override { return now; }
  Result<double, std::string> Random() override { return random; }
  Result<void, std::string> RandomBytes(std::span<uint8_t> bytes) override {
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i + 1);
    return {};
  }
  std::optional<std::chrono::steady_clock::time_point> GuestDeadline() override { return deadline; }
};

std::string Module(const std::string& run_body, const std::string& top = "") {
  return top +
         "\nexport const functions = {\n  \"t:js/api.f\": {\n    params: [[\"x\", \"u32\"]],\n"
         "    returns: \"string\",\n    run: async (ctx, x) => {\n" +
         run_body + "\n    },\n  },\n};\n";
}

class JsEngineTest : public ::testing::Test {
 protected:
  std::shared_ptr<JsEngine> engine_ = CreateV8JsEngine();
  FakeHost host_;

  std::shared_ptr<const JsModule> MustLoad(const std::string& source,
                                           JsFlavor flavor = JsFlavor::kWorkflow,
                                           JsLimits limits = {}) {
    auto module = engine_->Load("wf.js", source, flavor, limits);
    EXPECT_TRUE(module.has_value()) << module.error().ToString();
    return module ? *module : nullptr;
  }
  Result<JsOutcome, JsError> RunF(const JsModule& module,
                                  core::Json params = core::Json::array({1}),
                                  RunBudget budget = {}) {
    return engine_->Run(module, "t:js/api.f", RunInfo{"E_1", "t:js/api.f", 1, 0, {}}, params, host_,
                        budget);
  }
};

TEST_F(JsEngineTest, LoadReadsTheDeclarations) {
  auto module = MustLoad(Module("return 'hi ' + x;"));
  ASSERT_EQ(module->functions().size(), 1u);
  const JsDeclaredFunction& f = module->functions()[0];
  EXPECT_EQ(f.ffqn, "t:js/api.f");
  ASSERT_EQ(f.params.size(), 1u);
  EXPECT_EQ(f.params[0], std::make_pair(std::string("x"), std::string("u32")));
  EXPECT_EQ(f.returns, "string");
}

TEST_F(JsEngineTest, LoadErrorsNameTheFileAndLine) {
  auto syntax =
      engine_->Load("bad.js", "export const functions = {\n  a: 1 +\n};", JsFlavor::kWorkflow, {});
  ASSERT_FALSE(syntax.has_value());
  EXPECT_EQ(syntax.error().kind, Kind::kInvalidModule);
  EXPECT_THAT(syntax.error().message, StartsWith("bad.js:3:"));
  EXPECT_THAT(syntax.error().message, HasSubstr("SyntaxError"));

  auto import = engine_->Load("imp.js", "import x from './x.js';\nexport const functions = {};",
                              JsFlavor::kWorkflow, {});
  ASSERT_FALSE(import.has_value());
  EXPECT_THAT(import.error().message, HasSubstr("a module may import only \"stele\""));

  auto missing = engine_->Load("none.js", "export const x = 1;", JsFlavor::kWorkflow, {});
  ASSERT_FALSE(missing.has_value());
  EXPECT_THAT(missing.error().message, HasSubstr("must export `functions`"));

  auto bad_params =
      engine_->Load("p.js", "export const functions = {'a:b/c.d': {params: ['x'], run() {}}};",
                    JsFlavor::kWorkflow, {});
  ASSERT_FALSE(bad_params.has_value());
  EXPECT_THAT(bad_params.error().message, HasSubstr("[name, type] string pairs"));

  auto throws = engine_->Load("t.js", "throw new Error('boom');\nexport const functions = {};",
                              JsFlavor::kWorkflow, {});
  ASSERT_FALSE(throws.has_value());
  EXPECT_THAT(throws.error().message, HasSubstr("boom"));
  EXPECT_THAT(throws.error().message, StartsWith("t.js:1:"));
}

TEST_F(JsEngineTest, OkErrAndTraps) {
  auto ok = MustLoad(Module("return {greeting: 'hi', n: x + 1};"));
  auto r = RunF(*ok);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_TRUE(r->ok);
  EXPECT_EQ(r->value, core::Json::parse(R"({"greeting":"hi","n":2})"));

  auto err = MustLoad(Module("throw new Err({code: 7});", "import { Err } from 'stele';"));
  r = RunF(*err);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_FALSE(r->ok);
  EXPECT_EQ(r->value, core::Json::parse(R"({"code":7})"));

  auto trap = MustLoad(Module("const o = null;\n      return o.field;"));
  r = RunF(*trap);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kThrown);
  EXPECT_THAT(r.error().message, StartsWith("TypeError: Cannot read properties of null"));
  ASSERT_FALSE(r.error().stack.empty());
  EXPECT_EQ(r.error().stack[0].file, "wf.js");
  EXPECT_EQ(r.error().stack[0].line, 8u);

  auto undefined_value = MustLoad(Module("return undefined;"));
  r = RunF(*undefined_value);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->value.is_null());

  auto bigint = MustLoad(Module("return 1n;"));
  r = RunF(*bigint);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kBadResult);
}

TEST_F(JsEngineTest, OperationsGoToTheHostInProgramOrder) {
  host_.ops["call"] = [](const core::Json& args) {
    return HostReply::Value(core::Json{{"ok", "child says " + args[1][0].get<std::string>()}});
  };
  auto module = MustLoad(Module(R"(
      const a = await ctx.call('t:js/api.child', ['one']);
      ctx.log('got', a);
      const b = await ctx.call('t:js/api.child', ['two']);
      return a + ' / ' + b;)"));
  auto r = RunF(*module);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->value, "child says one / child says two");
  ASSERT_EQ(host_.calls.size(), 3u);
  EXPECT_EQ(host_.calls[0], R"(call ["t:js/api.child",["one"]])");
  EXPECT_EQ(host_.calls[1], R"(log ["info","got child says one"])");
  // The stack at an operation is the guest's, not the runtime's.
  ASSERT_FALSE(host_.stacks[0].empty());
  EXPECT_EQ(host_.stacks[0][0].file, "wf.js");
  EXPECT_EQ(host_.stacks[0][0].line, 8u);
}

TEST_F(JsEngineTest, HostErrorsBecomeTheirClasses) {
  host_.ops["call"] = [](const core::Json&) {
    return HostReply::Value(core::Json{{"err", "nope"}});
  };
  host_.ops["submit"] = [](const core::Json&) {
    return HostReply::Throw("Error", "a join set named `x` exists already");
  };
  auto module = MustLoad(Module(R"(
      try { await ctx.call('t:js/api.child', []); } catch (e) {
        if (!(e instanceof Err) || e.value !== 'nope') return 'wrong ' + e;
      }
      try { ctx.joinSet().submit('t:js/api.child', []); } catch (e) { return e.message; }
      return 'no throw';)",
                                "import { Err } from 'stele';"));
  auto r = RunF(*module);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->value, "a join set named `x` exists already");
}

TEST_F(JsEngineTest, EveryRunGetsAFreshModuleInstance) {
  auto module = MustLoad(Module("counter += 1; seen.push(x); return counter * 100 + seen.length;",
                                "let counter = 0; const seen = [];"));
  for (int i = 0; i < 3; ++i) {
    auto r = RunF(*module);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    EXPECT_EQ(r->value, 101) << "run " << i;
  }
}

TEST_F(JsEngineTest, TheRealmIsFrozenSoRunsShareNothing) {
  // Run 1 tries every channel it can reach; run 2 (same realm) looks.
  auto module = MustLoad(Module(R"(
      const attempts = [
        () => { globalThis.leak = 1; },
        () => { Object.prototype.leak = 1; },
        () => { Array.prototype.push = () => 0; },
        () => { Math.leak = 1; },
        () => { JSON.parse = () => 'leak'; },
        () => { Object.getPrototypeOf(async function () {}).leak = 1; },
        () => { Object.getPrototypeOf([][Symbol.iterator]()).leak = 1; },
        () => { Object.getPrototypeOf(Int8Array).leak = 1; },
        () => { Error.prepareStackTrace = () => 'leak'; },
        () => { Promise.prototype.then = () => 'leak'; },
        () => { Date.leak = 1; },
        () => { Err.leak = 1; },
        () => { Reflect.leak = 1; },
        () => { Symbol.prototype.leak = 1; },
        () => { Function.prototype.leak = 1; },
        () => { /(l)eak/.exec('leak'); },
      ];
      let blocked = 0;
      for (const a of attempts) { try { a(); } catch { blocked++; } }
      const seen = [typeof globalThis.leak, typeof ({}).leak, typeof [].push, typeof Math.leak,
        JSON.parse('1'), Object.getPrototypeOf(async function () {}).leak,
        Object.getPrototypeOf([][Symbol.iterator]()).leak, Error.prepareStackTrace,
        typeof Date.leak, Err.leak, Reflect.leak, RegExp.$1, Function.prototype.leak];
      return {blocked, seen};)",
                                "import { Err } from 'stele';"));
  auto first = RunF(*module);
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  auto second = RunF(*module);
  ASSERT_TRUE(second.has_value()) << second.error().ToString();
  // Everything but the regular expression (which mutates nothing shared)
  // was refused.
  EXPECT_EQ(first->value["blocked"], 15);
  EXPECT_EQ(first->value["seen"], second->value["seen"]);
  EXPECT_EQ(
      second->value["seen"].dump(),
      R"(["undefined","undefined","function","undefined",1,null,null,null,"undefined",null,null,null,null])");
}

TEST_F(JsEngineTest, EveryReachableObjectOfTheRealmIsFrozen) {
  for (JsFlavor flavor : {JsFlavor::kWorkflow, JsFlavor::kActivity}) {
    auto realm = internal::Realm::Create("wf.js", Module("return 1;"), flavor, JsLimits{});
    ASSERT_TRUE(realm.has_value()) << realm.error().ToString();
    auto frozen = (*realm)->CheckFrozen();
    ASSERT_TRUE(frozen.has_value()) << frozen.error().ToString();
    EXPECT_TRUE(frozen->first);
    EXPECT_GT(frozen->second, 500u);  // the intrinsics are many
  }
}

TEST_F(JsEngineTest, OverridingInheritedMethodsStillWorks) {
  auto module = MustLoad(Module(R"(
      class MyError extends Error { constructor(m) { super(m); this.name = 'MyError'; } }
      const o = {}; o.toString = () => 'mine';
      class P { constructor() { this.constructor = 1; } }
      return [new MyError('x').name, String(o), new P().constructor, String(new MyError('y'))];)"));
  auto r = RunF(*module);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->value.dump(), R"(["MyError","mine",1,"MyError: y"])");
}

TEST_F(JsEngineTest, WorkflowTimeAndRandomnessComeFromTheHost) {
  host_.now = 1'234'567.0;
  host_.random = 0.75;
  auto module = MustLoad(Module(R"(
      const bytes = crypto.getRandomValues(new Uint8Array(3));
      return [Date.now(), new Date().getTime(), typeof Date(), Math.random(), Array.from(bytes),
              new Date(5).getTime(), crypto.randomUUID().length, new Date() instanceof Date];)"));
  auto r = RunF(*module);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->value.dump(), R"([1234567,1234567,"string",0.75,[1,2,3],5,36,true])");
}

TEST_F(JsEngineTest, NoEvalNoWasmNoWeakRefsNoConsoleOfV8) {
  auto module = MustLoad(Module(R"(
      const out = [];
      try { eval('1'); out.push('eval ran'); } catch (e) { out.push(e.name); }
      try { new Function('return 1'); out.push('Function ran'); } catch (e) { out.push(e.name); }
      out.push(typeof WebAssembly, typeof WeakRef, typeof FinalizationRegistry,
               typeof SharedArrayBuffer, typeof Atomics);
      try { await import('stele'); out.push('import ran'); } catch (e) { out.push('import refused'); }
      console.log('hello', {a: 1});
      return out;)"));
  auto r = RunF(*module);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(
      r->value.dump(),
      R"(["EvalError","EvalError","undefined","undefined","undefined","undefined","undefined","import refused"])");
  EXPECT_EQ(host_.calls.back(), R"(log ["info","hello {\"a\":1}"])");
}

TEST_F(JsEngineTest, AwaitingWhatNothingSettlesIsAnError) {
  auto module = MustLoad(Module("await new Promise(() => {}); return 1;"));
  auto r = RunF(*module);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kPendingAwait);
  EXPECT_THAT(r.error().message, HasSubstr("awaits a promise that no Stele operation settles"));
  // A promise that settles without the host is fine.
  auto fine = MustLoad(Module("return await new Promise((r) => r(x + 1));"));
  auto ok = RunF(*fine);
  ASSERT_TRUE(ok.has_value()) << ok.error().ToString();
  EXPECT_EQ(ok->value, 2);
}

TEST_F(JsEngineTest, AnEndlessLoopIsInterruptedAndTheRealmReplaced) {
  auto module = MustLoad(Module("if (x === 1) { for (;;) {} } return 'done';"));
  auto r = RunF(*module, core::Json::array({1}), RunBudget{std::chrono::milliseconds(50), {}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kInterrupted);
  EXPECT_THAT(r.error().message, HasSubstr("without a Stele operation"));
  auto next = RunF(*module, core::Json::array({2}));
  ASSERT_TRUE(next.has_value()) << next.error().ToString();
  EXPECT_EQ(next->value, "done");
}

// A burst of concurrent runs needs a realm each (creating one costs
// milliseconds); all of them stay ready for the next burst, until they have
// been idle for kIdleRealmTtl.
TEST_F(JsEngineTest, ABurstsRealmsStayReadyUntilTheyIdleOut) {
  auto module = MustLoad(Module("await ctx.call('t:js/api.child', []); return 'done';"));
  ASSERT_EQ(module->idle_realms(), 1u);  // the one Load evaluated the module in
  constexpr int kRuns = 24;              // more than the 16 realms kept before
  std::latch all_inside(kRuns);
  std::vector<std::thread> runs;
  std::vector<std::string> values(kRuns);
  for (int i = 0; i < kRuns; ++i) {
    runs.emplace_back([&, i] {
      FakeHost host;
      host.ops["call"] = [&](const core::Json&) {
        all_inside.arrive_and_wait();  // every run holds its realm at once
        return HostReply::Value(core::Json{{"ok", nullptr}});
      };
      auto r = engine_->Run(*module, "t:js/api.f", RunInfo{"E_1", "t:js/api.f", 1, 0, {}},
                            core::Json::array({1}), host, RunBudget{});
      values[i] = r ? r->value.get<std::string>() : r.error().ToString();
    });
  }
  for (auto& t : runs) t.join();
  EXPECT_EQ(values, std::vector<std::string>(kRuns, "done"));
  EXPECT_EQ(module->idle_realms(), static_cast<size_t>(kRuns));

  EXPECT_EQ(engine_->TrimIdleRealms(std::chrono::steady_clock::now()), 0u);
  const auto later = std::chrono::steady_clock::now() + kIdleRealmTtl + std::chrono::seconds(1);
  EXPECT_GE(engine_->TrimIdleRealms(later), static_cast<size_t>(kRuns - 1));
  EXPECT_EQ(module->idle_realms(), 1u);  // the most recently used one stays
  host_.ops["call"] = [](const core::Json&) {
    return HostReply::Value(core::Json{{"ok", nullptr}});
  };
  auto again = RunF(*module);
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  EXPECT_EQ(again->value, "done");
}

TEST_F(JsEngineTest, TheHostDeadlineCutsTheSlice) {
  host_.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
  auto module = MustLoad(Module("for (;;) {}"));
  auto r = RunF(*module, core::Json::array({1}), RunBudget{std::chrono::hours(1), {}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kInterrupted);
  EXPECT_THAT(r.error().message, HasSubstr("deadline"));
}

TEST_F(JsEngineTest, CancellationInterrupts) {
  CancellationToken token;
  std::thread canceller([token]() mutable {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    token.Cancel();
  });
  auto module = MustLoad(Module("for (;;) {}"));
  auto r = RunF(*module, core::Json::array({1}), RunBudget{std::chrono::hours(1), token});
  canceller.join();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kInterrupted);
  EXPECT_EQ(r.error().message, "cancelled");
}

TEST_F(JsEngineTest, AHostAbortStopsTheGuestUncatchably) {
  host_.ops["sleep"] = [](const core::Json&) { return HostReply::Abort("blocked"); };
  host_.ops["log"] = [](const core::Json&) { return HostReply::Value(nullptr); };
  auto module = MustLoad(Module(R"(
      try { await ctx.sleep(10); } catch (e) { ctx.log('caught'); }
      ctx.log('continued');
      return 1;)"));
  auto r = RunF(*module);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kHostAbort);
  EXPECT_EQ(r.error().message, "blocked");
  for (const auto& call : host_.calls) EXPECT_THAT(call, ::testing::Not(StartsWith("log")));
}

TEST_F(JsEngineTest, HeapAndStackLimits) {
  JsLimits limits;
  limits.max_heap_bytes = 24u << 20;
  auto hog = MustLoad(Module("const a = []; for (;;) a.push(new Array(10000).fill(x));"),
                      JsFlavor::kWorkflow, limits);
  auto r = RunF(*hog, core::Json::array({1}), RunBudget{std::chrono::hours(1), {}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kOutOfMemory) << r.error().ToString();
  auto again = RunF(*MustLoad(Module("return 1;"), JsFlavor::kWorkflow, limits));
  EXPECT_TRUE(again.has_value());

  auto deep = MustLoad(Module("const f = (n) => f(n + 1) + 1; return f(0);"));
  r = RunF(*deep);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kStackOverflow) << r.error().ToString();
}

TEST_F(JsEngineTest, ActivitiesSeeEnvAttemptAndTheRealClock) {
  auto module = MustLoad(Module(R"(
      return [ctx.env.GREETING, ctx.attempt, Date.now() > 1600000000000, typeof fetch,
              typeof ctx.signal.aborted, ctx.executionId];)"),
                         JsFlavor::kActivity);
  host_.ops["aborted"] = [](const core::Json&) { return HostReply::Value(false); };
  auto r = engine_->Run(*module, "t:js/api.f",
                        RunInfo{"E_2", "t:js/api.f", 3, 0, {{"GREETING", "hello"}}},
                        core::Json::array({1}), host_, {});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->value.dump(), R"(["hello",3,true,"function","boolean","E_2"])");
}

TEST_F(JsEngineTest, TopLevelCodeIsBounded) {
  // Awaiting what settles, and reading the clock (a placeholder at load),
  // are fine at the top level.
  auto module = engine_->Load("top.js",
                              "export const functions = {'a:b/c.d': {run() {}}};\n"
                              "await Promise.resolve();\n"
                              "const when = Date.now();",
                              JsFlavor::kWorkflow, {});
  ASSERT_TRUE(module.has_value()) << module.error().ToString();
  JsLimits limits;
  limits.max_load_time = std::chrono::milliseconds(50);
  auto loop = engine_->Load("loop.js", "for (;;) {}\nexport const functions = {};",
                            JsFlavor::kWorkflow, limits);
  ASSERT_FALSE(loop.has_value());
  EXPECT_THAT(loop.error().message, HasSubstr("top-level code ran for 50 ms"));
}

}  // namespace
}  // namespace stele::runtime::js
