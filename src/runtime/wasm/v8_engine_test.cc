// The adapter through the V8 engine, on guests compiled from testdata/*.c.

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include "runtime/wasm/wasm_engine.h"

namespace stele::wasm {
namespace {

using Kind = WasmError::Kind;
using std::chrono_literals::operator""ms;

std::vector<uint8_t> ReadGuest(const std::string& name) {
  std::ifstream in(std::string(STELE_WASM_TESTDATA) + "/" + name + ".wasm", std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const FuncType kLogType{{ValType::kI32, ValType::kI32}, {}};
const FuncType kReverseType{{ValType::kI32, ValType::kI32}, {ValType::kI64}};
const FuncType kFailType{{ValType::kI32}, {ValType::kI32}};
const FuncType kWhereType{{}, {}};

class WasmEngineTest : public ::testing::Test {
 protected:
  std::shared_ptr<WasmEngine> engine_ = CreateV8Engine();

  std::shared_ptr<const WasmModule> CompileBasic(uint32_t max_pages = 64) {
    ModuleLimits limits;
    limits.max_memory_pages = max_pages;
    auto module = engine_->Compile(ReadGuest("basic"), limits);
    EXPECT_TRUE(module.has_value()) << (module ? "" : module.error().ToString());
    return module ? *module : nullptr;
  }
  std::unique_ptr<WasmInstance> Instantiate(std::shared_ptr<const WasmModule> module,
                                            std::shared_ptr<const ImportTable> imports = nullptr) {
    auto instance = engine_->Instantiate(std::move(module), std::move(imports));
    EXPECT_TRUE(instance.has_value()) << (instance ? "" : instance.error().ToString());
    return instance ? std::move(*instance) : nullptr;
  }
};

TEST_F(WasmEngineTest, EngineIdNamesV8) {
  EXPECT_EQ(engine_->EngineId().rfind("v8 10.2.", 0), 0u) << engine_->EngineId();
}

TEST_F(WasmEngineTest, CompileDescribesTheModule) {
  auto module = CompileBasic();
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->digest().size(), 7u + 64u);
  EXPECT_EQ(module->digest().rfind("sha256:", 0), 0u);
  const ExportedFunction* add = module->FindExport("add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->type, (FuncType{{ValType::kI32, ValType::kI32}, {ValType::kI32}}));
  EXPECT_EQ(module->FindExport("add64")->type,
            (FuncType{{ValType::kI64, ValType::kI64}, {ValType::kI64}}));
  EXPECT_EQ(module->FindExport("nope"), nullptr);
  EXPECT_TRUE(module->imports().empty());
  EXPECT_EQ(module->memory_max_pages(), 64u);  // no declared maximum: the cap
  bool named_explode = false;
  for (const auto& [index, name] : module->function_names()) named_explode |= name == "explode";
  EXPECT_TRUE(named_explode);
  EXPECT_EQ(module->CustomSections("name").size(), 1u);
  EXPECT_TRUE(module->CustomSections("stele:functions").empty());
}

TEST_F(WasmEngineTest, CompilingTheSameBytesTwiceSharesTheModule) {
  auto a = CompileBasic();
  auto b = CompileBasic();
  EXPECT_EQ(a.get(), b.get());
  auto c = CompileBasic(32);  // a different cap: different engine bytes
  EXPECT_NE(a.get(), c.get());
  EXPECT_EQ(a->digest(), c->digest());
}

TEST_F(WasmEngineTest, CallsExportsWithEveryNumberType) {
  auto instance = Instantiate(CompileBasic());
  ASSERT_NE(instance, nullptr);
  std::vector<Value> args = {Value::I32(40), Value::I32(2)};
  auto r = instance->Call("add", args);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(*r, std::vector<Value>{Value::I32(42)});

  args = {Value::I32(-7), Value::I32(2)};
  EXPECT_EQ(*instance->Call("add", args), std::vector<Value>{Value::I32(-5)});

  args = {Value::I64(int64_t{1} << 40), Value::I64(-1)};
  auto r64 = instance->Call("add64", args);
  ASSERT_TRUE(r64.has_value()) << r64.error().ToString();
  EXPECT_EQ(r64->at(0).AsI64(), (int64_t{1} << 40) - 1);

  args = {Value::F64(1.5), Value::F64(-4)};
  EXPECT_EQ(instance->Call("mulf", args)->at(0).AsF64(), -6.0);
  EXPECT_FALSE(instance->poisoned());
}

TEST_F(WasmEngineTest, BadArgumentsAndMissingExportsLeaveTheInstanceUsable) {
  auto instance = Instantiate(CompileBasic());
  std::vector<Value> one = {Value::I32(1)};
  auto r = instance->Call("add", one);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kBadArguments);
  std::vector<Value> wrong = {Value::I64(1), Value::I32(2)};
  EXPECT_EQ(instance->Call("add", wrong).error().kind, Kind::kBadArguments);
  EXPECT_EQ(instance->Call("missing", {}).error().kind, Kind::kNoSuchExport);
  EXPECT_EQ(instance->Call("memory", {}).error().kind, Kind::kNoSuchExport);
  EXPECT_FALSE(instance->poisoned());
  std::vector<Value> args = {Value::I32(1), Value::I32(2)};
  EXPECT_TRUE(instance->Call("add", args).has_value());
}

TEST_F(WasmEngineTest, InvalidBytesAreAnInvalidModule) {
  for (std::vector<uint8_t> bytes : {std::vector<uint8_t>{}, std::vector<uint8_t>{1, 2, 3},
                                     std::vector<uint8_t>{0, 'a', 's', 'm', 1, 0, 0, 0, 99}}) {
    auto r = engine_->Compile(bytes, {});
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().kind, Kind::kInvalidModule) << r.error().ToString();
  }
  // Well-formed sections we parse, but a code section V8 rejects.
  std::vector<uint8_t> bytes = ReadGuest("basic");
  bytes.resize(bytes.size() - 1);
  auto r = engine_->Compile(bytes, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kInvalidModule);
}

TEST_F(WasmEngineTest, EngineValidationErrorsAreInvalidModule) {
  // A function body that returns nothing where i32 is declared: our parser
  // does not read code; V8 must reject it.
  std::vector<uint8_t> bytes = {0,  'a', 's', 'm',  1, 0,   0,    0,
                                1,  5,   1,   0x60, 0, 1,   0x7f,  // type () -> i32
                                3,  2,   1,   0,                   // one function of type 0
                                10, 4,   1,   2,    0, 0x0b};      // body: end
  auto r = engine_->Compile(bytes, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kInvalidModule);
  EXPECT_NE(r.error().message.find("Compiling function"), std::string::npos) << r.error().message;
}

TEST_F(WasmEngineTest, WasiImportIsDisallowedByName) {
  auto r = engine_->Compile(ReadGuest("wasi"), {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kDisallowedImport);
  EXPECT_NE(r.error().message.find("wasi_snapshot_preview1.fd_write"), std::string::npos)
      << r.error().message;
}

TEST_F(WasmEngineTest, AllowedImportWithTheWrongSignatureIsRejected) {
  ModuleLimits limits;
  limits.Allow("env", "log", kLogType);
  limits.Allow("env", "reverse", FuncType{{ValType::kI32, ValType::kI32}, {ValType::kI32}});
  limits.Allow("env", "fail", kFailType);
  limits.Allow("env", "where", kWhereType);
  auto r = engine_->Compile(ReadGuest("host"), limits);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kDisallowedImport);
  EXPECT_NE(r.error().message.find("env.reverse"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("(i32, i32) -> (i64)"), std::string::npos) << r.error().message;
}

// Host functions of host.c; they record what they saw.
struct HostState {
  std::string logged;
  int fail_calls = 0;
  WasmError::Kind fail_kind = WasmError::Kind::kHostError;
  std::vector<std::string> where;
};

std::shared_ptr<ImportTable> HostImports(HostState* state) {
  auto table = std::make_shared<ImportTable>();
  table->Add("env", "log", kLogType,
             [state](HostCall& call,
                     std::span<const Value> args) -> Result<std::vector<Value>, WasmError> {
               STELE_ASSIGN_OR_RETURN(state->logged,
                                      call.ReadString(static_cast<uint32_t>(args[0].AsI32()),
                                                      static_cast<uint32_t>(args[1].AsI32())));
               return std::vector<Value>{};
             });
  table->Add(
      "env", "reverse", kReverseType,
      [](HostCall& call, std::span<const Value> args) -> Result<std::vector<Value>, WasmError> {
        STELE_ASSIGN_OR_RETURN(std::string s,
                               call.ReadString(static_cast<uint32_t>(args[0].AsI32()),
                                               static_cast<uint32_t>(args[1].AsI32())));
        std::string reversed(s.rbegin(), s.rend());
        std::vector<Value> alloc_args = {Value::I32(static_cast<int32_t>(reversed.size()))};
        STELE_ASSIGN_OR_RETURN(std::vector<Value> ptr, call.CallExport("stele_alloc", alloc_args));
        const uint32_t p = static_cast<uint32_t>(ptr.at(0).AsI32());
        STELE_TRY(call.WriteString(p, reversed));
        return std::vector<Value>{
            Value::I64(static_cast<int64_t>((uint64_t{p} << 32) | reversed.size()))};
      });
  table->Add(
      "env", "fail", kFailType,
      [state](HostCall&, std::span<const Value> args) -> Result<std::vector<Value>, WasmError> {
        ++state->fail_calls;
        return Unexpected(WasmError::Make(state->fail_kind,
                                          "host says no to " + std::to_string(args[0].AsI32())));
      });
  table->Add(
      "env", "where", kWhereType,
      [state](HostCall& call, std::span<const Value>) -> Result<std::vector<Value>, WasmError> {
        state->where = call.Backtrace();
        return std::vector<Value>{};
      });
  return table;
}

TEST_F(WasmEngineTest, HostFunctionsReadAndWriteGuestMemory) {
  HostState state;
  auto imports = HostImports(&state);
  auto module = engine_->Compile(ReadGuest("host"), imports->AsLimits());
  ASSERT_TRUE(module.has_value()) << module.error().ToString();
  EXPECT_EQ((*module)->imports().size(), 4u);
  auto instance = Instantiate(*module, imports);
  ASSERT_NE(instance, nullptr);

  auto r = instance->Call("greet", {});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(state.logged, "hello from the guest");

  r = instance->Call("reverse_hello", {});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->at(0).AsI32(), 't');  // the last letter of the greeting comes first

  r = instance->Call("outer_where", {});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_GE(state.where.size(), 2u);
  EXPECT_EQ(state.where[0], "inner_where");
  EXPECT_EQ(state.where[1], "outer_where");
}

TEST_F(WasmEngineTest, HostErrorAbortsTheGuest) {
  HostState state;
  auto imports = HostImports(&state);
  auto instance = Instantiate(*engine_->Compile(ReadGuest("host"), imports->AsLimits()), imports);
  auto r = instance->Call("call_fail", {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kHostError);
  EXPECT_EQ(r.error().message, "host says no to 7");
  ASSERT_FALSE(r.error().backtrace.empty());
  EXPECT_EQ(r.error().backtrace[0], "call_fail");
  EXPECT_EQ(state.fail_calls, 1);
  EXPECT_TRUE(instance->poisoned());
  EXPECT_EQ(instance->Call("after_fail", {}).error().kind, Kind::kPoisoned);
}

// A workflow that must wait stops its guest with kHostStop: the instance
// is poisoned like after any failure, but Restore brings it back, so that
// an instance pool keeps it (a host error's instance stays discarded).
TEST_F(WasmEngineTest, AHostStopLeavesAnInstanceThatRestores) {
  HostState state;
  state.fail_kind = Kind::kHostStop;
  auto imports = HostImports(&state);
  auto module = engine_->Compile(ReadGuest("host"), imports->AsLimits());
  ASSERT_TRUE(module.has_value()) << module.error().ToString();
  auto stopped = Instantiate(*module, imports);
  ASSERT_NE(stopped, nullptr);
  ASSERT_TRUE(stopped->Checkpoint().has_value());
  auto r = stopped->Call("call_fail", {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kHostStop);
  EXPECT_EQ(r.error().message, "host says no to 7");
  EXPECT_TRUE(r.error().backtrace.empty());  // no fault to locate
  EXPECT_TRUE(stopped->poisoned());
  EXPECT_EQ(stopped->Call("after_fail", {}).error().kind, Kind::kPoisoned);
  ASSERT_TRUE(stopped->Restore());
  EXPECT_FALSE(stopped->poisoned());
  auto after = stopped->Call("after_fail", {});
  ASSERT_TRUE(after.has_value()) << after.error().ToString();
  EXPECT_EQ(after->at(0).AsI32(), 0);  // the guest never went on past the stop
  auto greeted = stopped->Call("greet", {});
  ASSERT_TRUE(greeted.has_value()) << greeted.error().ToString();
  EXPECT_EQ(state.logged, "hello from the guest");

  state.fail_kind = Kind::kHostError;
  auto failed = Instantiate(*module, imports);
  ASSERT_NE(failed, nullptr);
  ASSERT_TRUE(failed->Checkpoint().has_value());
  EXPECT_EQ(failed->Call("call_fail", {}).error().kind, Kind::kHostError);
  EXPECT_FALSE(failed->Restore());
  EXPECT_TRUE(failed->poisoned());
}

TEST_F(WasmEngineTest, AGuestFailureInsideAHostFunctionFailsTheOuterCall) {
  HostState state;
  auto imports = HostImports(&state);
  // "log" re-enters the guest: a missing export and bad arguments are
  // ordinary errors; then a nested call that fails (its host function
  // errs), which the host function swallows.
  imports->Add(
      "env", "log", kLogType,
      [](HostCall& call, std::span<const Value>) -> Result<std::vector<Value>, WasmError> {
        auto missing = call.CallExport("no_such_export", {});
        if (missing.has_value() || missing.error().kind != WasmError::Kind::kNoSuchExport) {
          return Unexpected(WasmError::Make(WasmError::Kind::kHostError, "expected kNoSuchExport"));
        }
        std::vector<Value> args;  // bad arity: kBadArguments, also ordinary
        auto bad = call.CallExport("stele_alloc", args);
        if (bad.has_value() || bad.error().kind != WasmError::Kind::kBadArguments) {
          return Unexpected(WasmError::Make(WasmError::Kind::kHostError, "expected kBadArguments"));
        }
        // Swallowing a guest trap must not let the outer call succeed.
        (void)call.CallExport("call_fail", {});
        return std::vector<Value>{};
      });
  auto instance = Instantiate(*engine_->Compile(ReadGuest("host"), imports->AsLimits()), imports);
  auto r = instance->Call("greet", {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kHostError);
  EXPECT_EQ(r.error().message, "host says no to 7");
  EXPECT_EQ(state.fail_calls, 1);
  EXPECT_TRUE(instance->poisoned());
}

TEST_F(WasmEngineTest, MissingOrMistypedHostFunctionIsALinkError) {
  HostState state;
  auto imports = HostImports(&state);
  auto module = *engine_->Compile(ReadGuest("host"), imports->AsLimits());
  auto partial = std::make_shared<ImportTable>(*imports);
  partial->functions.erase({"env", "fail"});
  auto r = engine_->Instantiate(module, partial);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kLinkError);
  EXPECT_NE(r.error().message.find("env.fail"), std::string::npos);

  auto mistyped = std::make_shared<ImportTable>(*imports);
  mistyped->functions.at({"env", "where"}).type = kFailType;
  r = engine_->Instantiate(module, mistyped);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kLinkError);
}

TEST_F(WasmEngineTest, TrapsAreReportedWithGuestFunctionNames) {
  auto module = CompileBasic();
  auto instance = Instantiate(module);
  std::vector<Value> args = {Value::I32(3)};
  auto r = instance->Call("run_explode", args);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kTrap);
  EXPECT_EQ(r.error().message, "unreachable");
  ASSERT_GE(r.error().backtrace.size(), 2u) << r.error().ToString();
  EXPECT_EQ(r.error().backtrace[0], "explode");
  EXPECT_EQ(r.error().backtrace[1], "run_explode");
  EXPECT_TRUE(instance->poisoned());

  instance = Instantiate(module);
  args = {Value::I32(1), Value::I32(0)};
  r = instance->Call("div", args);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kTrap);
  EXPECT_EQ(r.error().message, "divide by zero");
}

TEST_F(WasmEngineTest, WallClockBudgetInterruptsAnInfiniteLoop) {
  auto instance = Instantiate(CompileBasic());
  auto r = instance->Call("spin", {}, CallBudget{50ms, std::nullopt});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kInterrupted);
  EXPECT_TRUE(r.error().IsRetryable());
  EXPECT_NE(r.error().message.find("budget"), std::string::npos) << r.error().message;
  EXPECT_TRUE(instance->poisoned());
  // The isolate is usable again by the next instance on this thread.
  auto fresh = Instantiate(CompileBasic());
  std::vector<Value> args = {Value::I32(1), Value::I32(2)};
  EXPECT_TRUE(fresh->Call("add", args).has_value());
}

TEST_F(WasmEngineTest, BudgetNotReachedLeavesNoTermination) {
  auto instance = Instantiate(CompileBasic());
  std::vector<Value> args = {Value::I32(1), Value::I32(2)};
  for (int i = 0; i < 100; ++i) {
    auto r = instance->Call("add", args, CallBudget{1ms, std::nullopt});
    // A 1 ms budget may or may not expire during a call under load; either
    // way the outcome must be exact and later instances unaffected.
    if (!r.has_value()) {
      EXPECT_EQ(r.error().kind, Kind::kInterrupted);
      instance = Instantiate(CompileBasic());
    }
  }
  auto fresh = Instantiate(CompileBasic());
  EXPECT_EQ(*fresh->Call("add", args), std::vector<Value>{Value::I32(3)});
}

TEST_F(WasmEngineTest, InterruptFromAnotherThreadStopsTheRunningGuest) {
  HostState state;
  auto imports = HostImports(&state);
  std::mutex mu;
  std::condition_variable cv;
  bool started = false;
  // "where" tells the other thread that the guest runs; it then spins.
  imports->Add("env", "where", kWhereType,
               [&](HostCall&, std::span<const Value>) -> Result<std::vector<Value>, WasmError> {
                 std::lock_guard lock(mu);
                 started = true;
                 cv.notify_all();
                 return std::vector<Value>{};
               });
  auto instance = Instantiate(*engine_->Compile(ReadGuest("host"), imports->AsLimits()), imports);
  WasmInstance* raw = instance.get();
  std::thread stopper([&] {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return started; });
    raw->Interrupt();
  });
  auto r = instance->Call("where_then_spin", {});
  stopper.join();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kInterrupted);
  EXPECT_TRUE(instance->poisoned());
}

TEST_F(WasmEngineTest, InterruptBeforeTheCallIsSticky) {
  auto instance = Instantiate(CompileBasic());
  instance->Interrupt();
  std::vector<Value> args = {Value::I32(1), Value::I32(2)};
  auto r = instance->Call("add", args);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kInterrupted);
  // Only that instance: another one on the same isolate runs normally.
  auto other = Instantiate(CompileBasic());
  EXPECT_TRUE(other->Call("add", args).has_value());
}

TEST_F(WasmEngineTest, CancellationTokenInterruptsTheGuest) {
  auto instance = Instantiate(CompileBasic());
  CancellationToken token;
  // Cancelled before or during the call: either way the call stops.
  std::thread canceller([token] { token.Cancel(); });
  auto r = instance->Call("spin", {}, CallBudget{std::nullopt, token});
  canceller.join();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kInterrupted);
  EXPECT_EQ(r.error().message, "cancelled");
}

TEST_F(WasmEngineTest, MemoryGrowthBeyondTheCapFailsCleanly) {
  auto module = CompileBasic(/*max_pages=*/8);
  auto instance = Instantiate(module);
  const int32_t initial = instance->Call("pages", {})->at(0).AsI32();
  ASSERT_LE(initial, 8);
  std::vector<Value> args = {Value::I32(8 - initial)};
  EXPECT_EQ(instance->Call("grow", args)->at(0).AsI32(), initial);  // old size
  args = {Value::I32(1)};
  EXPECT_EQ(instance->Call("grow", args)->at(0).AsI32(), -1);
  EXPECT_EQ(instance->Call("pages", {})->at(0).AsI32(), 8);
  EXPECT_EQ(instance->MemorySize(), 8u * 65536u);
  EXPECT_FALSE(instance->poisoned());
}

TEST_F(WasmEngineTest, InitialMemoryAboveTheCapIsRejected) {
  ModuleLimits limits;
  limits.max_memory_pages = 1;
  auto r = engine_->Compile(ReadGuest("basic"), limits);  // needs 2+ pages
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kMemoryLimit);
}

TEST_F(WasmEngineTest, SharedAndMultipleMemoriesAreRejected) {
  // memory section: one memory, flags 3 (shared, with max), min 1, max 2.
  std::vector<uint8_t> shared = {0, 'a', 's', 'm', 1, 0, 0, 0, 5, 4, 1, 3, 1, 2};
  auto r = engine_->Compile(shared, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kDisallowedFeature);
  EXPECT_NE(r.error().message.find("shared"), std::string::npos);
  std::vector<uint8_t> two = {0, 'a', 's', 'm', 1, 0, 0, 0, 5, 5, 2, 0, 1, 0, 1};
  r = engine_->Compile(two, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kDisallowedFeature);
  // An imported memory is an import like any other: disallowed.
  std::vector<uint8_t> imported = {0, 'a', 's', 'm', 1, 0,   0,   0,   2, 12, 1,
                                   3, 'e', 'n', 'v', 3, 'm', 'e', 'm', 2, 0,  1};
  r = engine_->Compile(imported, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kDisallowedImport);
  EXPECT_NE(r.error().message.find("env.mem"), std::string::npos);
}

TEST_F(WasmEngineTest, MemoryAccessIsBoundsChecked) {
  auto instance = Instantiate(CompileBasic());
  const uint64_t size = instance->MemorySize();
  ASSERT_GT(size, 0u);
  std::vector<uint8_t> data = {1, 2, 3};
  ASSERT_TRUE(instance->WriteBytes(static_cast<uint32_t>(size - 3), data).has_value());
  EXPECT_EQ(*instance->ReadBytes(static_cast<uint32_t>(size - 3), 3), data);
  EXPECT_FALSE(instance->ReadBytes(static_cast<uint32_t>(size - 2), 3).has_value());
  EXPECT_FALSE(instance->ReadBytes(0xffffffffu, 0xffffffffu).has_value());
  EXPECT_FALSE(instance->WriteBytes(static_cast<uint32_t>(size), data).has_value());
  EXPECT_TRUE(instance->ReadBytes(static_cast<uint32_t>(size), 0).has_value());
}

TEST_F(WasmEngineTest, DeepRecursionIsAStackOverflow) {
  auto instance = Instantiate(CompileBasic());
  std::vector<Value> args = {Value::I32(100000000)};
  auto r = instance->Call("recurse", args);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kStackOverflow) << r.error().message;
  EXPECT_LE(r.error().backtrace.size(), 64u);
  EXPECT_TRUE(r.error().IsRetryable());
}

TEST_F(WasmEngineTest, ShadowStackOverflowIsADeterministicTrap) {
  auto instance = Instantiate(CompileBasic());
  std::vector<Value> args = {Value::I32(100000000)};
  auto r = instance->Call("recurse_mem", args);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, Kind::kTrap) << r.error().message;
  EXPECT_EQ(r.error().message, "memory access out of bounds");
}

TEST_F(WasmEngineTest, OneModuleOnManyThreads) {
  auto module = CompileBasic(16);
  constexpr int kThreads = 4;
  constexpr int kInstances = 200;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kInstances; ++i) {
        auto instance = engine_->Instantiate(module, nullptr);
        if (!instance) continue;
        std::vector<Value> args = {Value::I32(t), Value::I32(i)};
        auto r = (*instance)->Call("add", args);
        if (r && r->at(0).AsI32() == t + i) ok.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads * kInstances);
}

TEST_F(WasmEngineTest, AnInstanceMayMoveBetweenThreads) {
  auto instance = Instantiate(CompileBasic());
  std::vector<Value> args = {Value::I32(2), Value::I32(3)};
  std::thread other(
      [&] { EXPECT_EQ(*instance->Call("add", args), std::vector<Value>{Value::I32(5)}); });
  other.join();
  EXPECT_EQ(*instance->Call("add", args), std::vector<Value>{Value::I32(5)});
  std::thread destroyer([&] { instance.reset(); });
  destroyer.join();
}

TEST_F(WasmEngineTest, TenThousandLiveInstancesOnOneThread) {
  auto module = CompileBasic(4);
  std::vector<std::unique_ptr<WasmInstance>> instances;
  instances.reserve(10000);
  for (int i = 0; i < 10000; ++i) {
    auto instance = engine_->Instantiate(module, nullptr);
    ASSERT_TRUE(instance.has_value()) << i << ": " << instance.error().ToString();
    instances.push_back(std::move(*instance));
  }
  std::vector<Value> args = {Value::I32(1), Value::I32(1)};
  for (size_t i = 0; i < instances.size(); i += 997) {
    EXPECT_EQ(*instances[i]->Call("add", args), std::vector<Value>{Value::I32(2)});
  }
}

}  // namespace
}  // namespace stele::wasm
