// Runs that share isolates (v8_engine.cc): a run parked in a host function
// (HostCall::Park) leaves its isolate to the others, and an interrupt stops
// only the run it was meant for, whether that run computes or is parked.
// Instances are placed on the shared isolates in turn, so instances made
// SharedIsolateCount() apart by one thread share an isolate.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "runtime/wasm/v8_isolate.h"
#include "runtime/wasm/wasm_engine.h"

// Its own namespace: the unity build joins this file with v8_engine_test.cc.
namespace stele::wasm::park_test {
namespace {

using Kind = WasmError::Kind;
using HostResult = Result<std::vector<Value>, WasmError>;

std::vector<uint8_t> ReadGuest(const std::string& name) {
  std::ifstream in(std::string(STELE_WASM_TESTDATA) + "/" + name + ".wasm", std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A one-shot gate: Wait blocks until Open (or the timeout; then false).
class Gate {
 public:
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool Wait(std::chrono::seconds timeout = std::chrono::seconds(60)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// The host functions of testdata/host.c; `park` runs inside "log" and
// "reverse" (parked), `where` inside "where" (not parked).
struct Host {
  std::function<bool()> park = [] { return true; };
  std::function<void()> where = [] {};
};

std::shared_ptr<ImportTable> Imports(Host* host) {
  const FuncType log_type{{ValType::kI32, ValType::kI32}, {}};
  const FuncType reverse_type{{ValType::kI32, ValType::kI32}, {ValType::kI64}};
  auto table = std::make_shared<ImportTable>();
  auto parked = [host](HostCall& call) -> Result<void, WasmError> {
    bool passed = false;
    call.Park([&] { passed = host->park(); });
    if (passed) return {};
    return Unexpected(WasmError::Make(Kind::kHostError, "the parked wait timed out"));
  };
  table->Add("env", "log", log_type,
             [parked](HostCall& call, std::span<const Value>) -> HostResult {
               STELE_TRY(parked(call));
               return std::vector<Value>{};
             });
  table->Add("env", "reverse", reverse_type,
             [parked](HostCall& call, std::span<const Value> args) -> HostResult {
               const auto ptr = static_cast<uint32_t>(args[0].AsI32());
               const auto len = static_cast<uint32_t>(args[1].AsI32());
               STELE_ASSIGN_OR_RETURN(std::string before, call.ReadString(ptr, len));
               STELE_TRY(parked(call));
               // Back in the guest's own memory, whatever ran meanwhile.
               STELE_ASSIGN_OR_RETURN(std::string s, call.ReadString(ptr, len));
               if (s != before) return Unexpected(WasmError::Make(Kind::kHostError, "changed"));
               std::string reversed(s.rbegin(), s.rend());
               std::vector<Value> alloc_args = {Value::I32(static_cast<int32_t>(reversed.size()))};
               STELE_ASSIGN_OR_RETURN(std::vector<Value> at,
                                      call.CallExport("stele_alloc", alloc_args));
               const auto p = static_cast<uint32_t>(at.at(0).AsI32());
               STELE_TRY(call.WriteString(p, reversed));
               return std::vector<Value>{
                   Value::I64(static_cast<int64_t>((uint64_t{p} << 32) | reversed.size()))};
             });
  table->Add("env", "fail", FuncType{{ValType::kI32}, {ValType::kI32}},
             [](HostCall&, std::span<const Value>) -> HostResult {
               return std::vector<Value>{Value::I32(0)};
             });
  table->Add("env", "where", FuncType{{}, {}},
             [host](HostCall&, std::span<const Value>) -> HostResult {
               host->where();
               return std::vector<Value>{};
             });
  return table;
}

class ParkTest : public ::testing::Test {
 protected:
  std::unique_ptr<WasmInstance> Make(Host* host) {
    if (!module_) {
      auto compiled = engine_->Compile(ReadGuest("host"), Imports(host)->AsLimits());
      EXPECT_TRUE(compiled.has_value()) << compiled.error().ToString();
      module_ = *compiled;
    }
    auto instance = engine_->Instantiate(module_, Imports(host));
    EXPECT_TRUE(instance.has_value()) << instance.error().ToString();
    return std::move(*instance);
  }
  // Two instances on one isolate: made SharedIsolateCount() apart.
  std::pair<std::unique_ptr<WasmInstance>, std::unique_ptr<WasmInstance>> MakeNeighbours(
      Host* first, Host* second) {
    Host idle;
    auto a = Make(first);
    for (size_t i = 1; i < internal::SharedIsolateCount(); ++i) Make(&idle);
    return {std::move(a), Make(second)};
  }

  // Two runs on one isolate: one parked in reverse_hello's host call until
  // `release` opens, one spinning in where_then_spin.
  struct ParkedAndSpinning {
    Gate parked, release, spinning;
    Host parker, spinner;
    std::unique_ptr<WasmInstance> spinning_run, parked_run;
    std::optional<HostResult> parked_result, spinning_result;
    std::atomic<bool> spinning_returned{false};
    std::thread parked_thread, spinning_thread;
    ~ParkedAndSpinning() {  // after a failed assertion: let the threads end
      release.Open();
      if (spinning_thread.joinable()) {
        spinning_run->Interrupt();
        spinning_thread.join();
      }
      if (parked_thread.joinable()) parked_thread.join();
    }
  };
  // Starts both; true once the first is parked and the second spins.
  bool Start(ParkedAndSpinning& runs) {
    runs.parker.park = [&runs] {
      runs.parked.Open();
      return runs.release.Wait();
    };
    runs.spinner.where = [&runs] { runs.spinning.Open(); };
    std::tie(runs.spinning_run, runs.parked_run) = MakeNeighbours(&runs.spinner, &runs.parker);
    runs.parked_thread = std::thread(
        [&runs] { runs.parked_result.emplace(runs.parked_run->Call("reverse_hello", {})); });
    if (!runs.parked.Wait()) return false;
    runs.spinning_thread = std::thread([&runs] {
      runs.spinning_result.emplace(runs.spinning_run->Call("where_then_spin", {}));
      runs.spinning_returned = true;
    });
    return runs.spinning.Wait();
  }

  std::shared_ptr<WasmEngine> engine_ = CreateV8Engine();
  std::shared_ptr<const WasmModule> module_;
};

TEST_F(ParkTest, RunsParkedTogetherLeaveTheirIsolatesToEachOther) {
  // Every run parks until all have parked: with three runs on each isolate
  // that ends only if a parked run does not hold its isolate.
  const size_t runs = 3 * internal::SharedIsolateCount();
  std::mutex mu;
  std::condition_variable cv;
  size_t arrived = 0;
  Host host;
  host.park = [&] {
    std::unique_lock lock(mu);
    ++arrived;
    cv.notify_all();
    return cv.wait_for(lock, std::chrono::seconds(60), [&] { return arrived == runs; });
  };
  std::vector<std::unique_ptr<WasmInstance>> instances;
  for (size_t i = 0; i < runs; ++i) instances.push_back(Make(&host));
  std::vector<std::optional<HostResult>> results(runs);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < runs; ++i) {
    threads.emplace_back([&, i] { results[i] = instances[i]->Call("reverse_hello", {}); });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t i = 0; i < runs; ++i) {
    const HostResult& result = *results[i];
    ASSERT_TRUE(result.has_value()) << i << ": " << result.error().ToString();
    EXPECT_EQ(result->at(0).AsI32(), 't') << i;  // reversed in the run's own memory
  }
}

TEST_F(ParkTest, AnInterruptStopsTheComputingRunAndNotItsParkedNeighbour) {
  ParkedAndSpinning runs;
  ASSERT_TRUE(Start(runs));
  runs.spinning_run->Interrupt();
  runs.spinning_thread.join();
  runs.release.Open();
  runs.parked_thread.join();

  ASSERT_FALSE(runs.spinning_result->has_value());
  EXPECT_EQ(runs.spinning_result->error().kind, Kind::kInterrupted);
  ASSERT_TRUE(runs.parked_result->has_value()) << runs.parked_result->error().ToString();
  EXPECT_EQ((*runs.parked_result)->at(0).AsI32(), 't');
}

TEST_F(ParkTest, AnInterruptOfAParkedRunTakesEffectWhenItResumesAndSparesTheRunningOne) {
  ParkedAndSpinning runs;
  ASSERT_TRUE(Start(runs));
  // V8 runs the request on the thread computing on the isolate: the
  // spinning run, which must ignore a request that is not its own.
  runs.parked_run->Interrupt();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(runs.spinning_returned.load());
  runs.spinning_run->Interrupt();
  runs.spinning_thread.join();
  runs.release.Open();
  runs.parked_thread.join();

  ASSERT_FALSE(runs.parked_result->has_value());
  EXPECT_EQ(runs.parked_result->error().kind, Kind::kInterrupted);
  EXPECT_TRUE(runs.parked_run->poisoned());
  ASSERT_FALSE(runs.spinning_result->has_value());
  EXPECT_EQ(runs.spinning_result->error().kind, Kind::kInterrupted);
}

TEST_F(ParkTest, ABudgetEndsAParkedRunWithoutTouchingAnotherOnItsIsolate) {
  Gate parked, release;
  Host parker, other;
  parker.park = [&] {
    parked.Open();
    return release.Wait();
  };
  auto [parked_run, neighbour] = MakeNeighbours(&parker, &other);
  std::optional<HostResult> parked_result;
  std::thread parked_thread([&] {
    parked_result.emplace(
        parked_run->Call("reverse_hello", {}, CallBudget{std::chrono::milliseconds(50), {}}));
  });
  ASSERT_TRUE(parked.Wait());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the budget ends meanwhile
  // The neighbour runs many calls on the isolate after the watchdog fired.
  for (int i = 0; i < 50; ++i) {
    auto r = neighbour->Call("reverse_hello", {});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
  }
  release.Open();
  parked_thread.join();
  ASSERT_FALSE(parked_result->has_value());
  EXPECT_EQ(parked_result->error().kind, Kind::kInterrupted);
  EXPECT_NE(parked_result->error().message.find("budget"), std::string::npos)
      << parked_result->error().message;
}

}  // namespace
}  // namespace stele::wasm::park_test
