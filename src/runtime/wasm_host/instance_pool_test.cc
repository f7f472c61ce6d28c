// InstancePool and the workers that use it, on a real wasi-libc guest
// (testdata/pool_activities.c) in real V8: a reused instance shows nothing
// of an earlier run, a failed one is never reused (one its host stopped on
// purpose is).

#include "runtime/wasm_host/instance_pool.h"

#include <gtest/gtest.h>

#include "runtime/wasm_host/guest_abi.h"
#include "runtime/wasm_host/http_host.h"
#include "runtime/wasm_host/wasi_host.h"
#include "runtime/wasm_host/wasm_activity_worker.h"
#include "runtime/wasm_host/wasm_host_test_util.h"

namespace stele::runtime::wasm_host {
namespace {

using testing::Ffqn;
using testing::LoadOrDie;

std::shared_ptr<const WasmComponent> PoolGuest() {
  return LoadOrDie(STELE_TEST_POOL_ACTIVITIES_WASM, "pool", GuestKind::kActivity);
}

InstancePool::Prepare PoolInitialize() {
  return [](wasm::WasmInstance& instance,
            const wasm::CallBudget& budget) -> Result<void, wasm::WasmError> {
    STELE_TRY(instance.Call("_initialize", {}, budget));
    return {};
  };
}

std::shared_ptr<const wasm::ImportTable> PoolImports() {
  auto table = std::make_shared<wasm::ImportTable>();
  AddWasiImports(*table, std::make_shared<WasiState>());
  AddHttpImports(*table, std::make_shared<HttpState>());
  return table;
}

// Calls `export_name` with params "[]" and returns the result JSON text, or
// the error.
Result<std::string, wasm::WasmError> CallPoolExport(wasm::WasmInstance& instance,
                                                    const std::string& export_name) {
  STELE_ASSIGN_OR_RETURN(uint32_t ptr, PlaceInGuest(instance, "[]"));
  const wasm::Value args[] = {wasm::Value::I32(static_cast<int32_t>(ptr)), wasm::Value::I32(2)};
  STELE_ASSIGN_OR_RETURN(std::vector<wasm::Value> result, instance.Call(export_name, args));
  const uint64_t packed = static_cast<uint64_t>(result.at(0).AsI64());
  STELE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                         instance.ReadBytes(PackedPtr(packed), PackedLen(packed)));
  return std::string(bytes.begin(), bytes.end());
}

std::string ExportOf(const WasmComponent& component, const std::string& ffqn) {
  const DeclaredFunction* fn = component.Find(Ffqn(ffqn));
  EXPECT_NE(fn, nullptr) << ffqn;
  return fn ? fn->export_name : "";
}

TEST(InstancePoolTest, AReusedInstanceSeesNothingOfTheRunBefore) {
  auto component = PoolGuest();
  ASSERT_EQ(component->module->reset_blocker(), "");
  InstancePool pool(component->engine, component->module, {}, PoolInitialize());
  const std::string remember = ExportOf(*component, "test:pool/api.remember");
  std::string first;
  {
    auto lease = pool.Acquire(PoolImports());
    ASSERT_TRUE(lease.has_value()) << lease.error().ToString();
    EXPECT_FALSE(lease->reused());
    auto result = CallPoolExport(lease->instance(), remember);
    ASSERT_TRUE(result.has_value()) << result.error().ToString();
    first = *result;
    EXPECT_EQ(first.rfind("{\"ok\":[1,1001,1,", 0), 0u) << first;
  }
  EXPECT_EQ(pool.idle(), 1u);
  for (int i = 0; i < 3; ++i) {
    auto lease = pool.Acquire(PoolImports());
    ASSERT_TRUE(lease.has_value()) << lease.error().ToString();
    EXPECT_TRUE(lease->reused());
    auto result = CallPoolExport(lease->instance(), remember);
    ASSERT_TRUE(result.has_value()) << result.error().ToString();
    // Static (.bss, .data), heap contents and the heap pointer as fresh.
    EXPECT_EQ(*result, first);
  }
  EXPECT_EQ(pool.discarded(), 0u);
}

TEST(InstancePoolTest, PooledRunsGiveWhatFreshInstancesGive) {
  auto component = PoolGuest();
  const std::string remember = ExportOf(*component, "test:pool/api.remember");
  InstancePool pooled(component->engine, component->module, {}, PoolInitialize());
  InstancePool fresh(component->engine, component->module, {.capacity = 0}, PoolInitialize());
  EXPECT_FALSE(fresh.poolable());
  for (int i = 0; i < 3; ++i) {
    auto a = pooled.Acquire(PoolImports());
    auto b = fresh.Acquire(PoolImports());
    ASSERT_TRUE(a.has_value() && b.has_value());
    EXPECT_EQ(a->reused(), i > 0);
    EXPECT_FALSE(b->reused());
    auto from_pool = CallPoolExport(a->instance(), remember);
    auto from_fresh = CallPoolExport(b->instance(), remember);
    ASSERT_TRUE(from_pool.has_value() && from_fresh.has_value());
    EXPECT_EQ(*from_pool, *from_fresh);
  }
  EXPECT_EQ(fresh.idle(), 0u);
}

TEST(InstancePoolTest, ATrappedInstanceIsNotReused) {
  auto component = PoolGuest();
  const std::string remember = ExportOf(*component, "test:pool/api.remember");
  InstancePool pool(component->engine, component->module, {}, PoolInitialize());
  std::string first;
  {
    auto lease = pool.Acquire(PoolImports());
    ASSERT_TRUE(lease.has_value());
    first = CallPoolExport(lease->instance(), remember).value();
  }
  {
    auto lease = pool.Acquire(PoolImports());
    ASSERT_TRUE(lease.has_value());
    EXPECT_TRUE(lease->reused());
    auto crashed = CallPoolExport(lease->instance(), ExportOf(*component, "test:pool/api.crash"));
    ASSERT_FALSE(crashed.has_value());
    EXPECT_EQ(crashed.error().kind, wasm::WasmError::Kind::kTrap);
  }
  EXPECT_EQ(pool.discarded(), 1u);
  EXPECT_EQ(pool.idle(), 0u);
  auto lease = pool.Acquire(PoolImports());
  ASSERT_TRUE(lease.has_value());
  EXPECT_FALSE(lease->reused());
  EXPECT_EQ(CallPoolExport(lease->instance(), remember).value(), first);
}

TEST(InstancePoolTest, InstancesWhoseMemoryGrewOrThatWereInterruptedAreDiscarded) {
  auto component = PoolGuest();
  InstancePool pool(component->engine, component->module, {}, PoolInitialize());
  {
    auto lease = pool.Acquire(PoolImports());
    ASSERT_TRUE(lease.has_value());
    auto grown = CallPoolExport(lease->instance(), ExportOf(*component, "test:pool/api.grow"));
    ASSERT_TRUE(grown.has_value()) << grown.error().ToString();
  }
  EXPECT_EQ(pool.discarded(), 1u);
  {
    auto lease = pool.Acquire(PoolImports());
    ASSERT_TRUE(lease.has_value());
    EXPECT_FALSE(lease->reused());
    // A watchdog that fired after the guest returned (a sticky interrupt).
    lease->instance().Interrupt();
  }
  EXPECT_EQ(pool.discarded(), 2u);
  EXPECT_EQ(pool.idle(), 0u);
}

TEST(InstancePoolTest, HostFunctionsOfTheCurrentLeaseAreCalled) {
  auto component = PoolGuest();
  InstancePool pool(component->engine, component->module, {}, PoolInitialize());
  const std::string remember = ExportOf(*component, "test:pool/api.remember");
  for (int i = 0; i < 2; ++i) {
    auto table = std::make_shared<wasm::ImportTable>();
    auto state = std::make_shared<WasiState>();
    AddWasiImports(*table, state);
    AddHttpImports(*table, std::make_shared<HttpState>());
    // Replaces fd_write: this lease's own counter must see the calls.
    int writes = 0;
    const wasm::HostFunction* real = table->Find(kWasiModule, "fd_write");
    ASSERT_NE(real, nullptr);
    wasm::HostFunction wrapped = *real;
    table->Add(std::string(kWasiModule), "fd_write", wrapped.type,
               [&writes, wrapped](wasm::HostCall& call, std::span<const wasm::Value> args) {
                 ++writes;
                 return wrapped.fn(call, args);
               });
    auto lease = pool.Acquire(table);
    ASSERT_TRUE(lease.has_value());
    EXPECT_EQ(lease->reused(), i > 0);
    ASSERT_TRUE(
        CallPoolExport(lease->instance(), ExportOf(*component, "test:pool/api.print")).has_value());
    EXPECT_GE(writes, 1) << "lease " << i;
    EXPECT_EQ(state->stdout_text, "hello from the pool\n") << "lease " << i;
  }
}

// A workflow that must wait stops its guest from a host function
// (kHostStop): the instance is restored and kept, and the next lease sees
// nothing of the stopped run (not even the output it had buffered).
TEST(InstancePoolTest, AnInstanceItsHostStoppedIsRestoredAndReused) {
  auto component = PoolGuest();
  InstancePool pool(component->engine, component->module, {}, PoolInitialize());
  const std::string print = ExportOf(*component, "test:pool/api.print");
  {
    auto table = std::make_shared<wasm::ImportTable>();
    AddWasiImports(*table, std::make_shared<WasiState>());
    AddHttpImports(*table, std::make_shared<HttpState>());
    const wasm::HostFunction* real = table->Find(kWasiModule, "fd_write");
    ASSERT_NE(real, nullptr);
    table->Add(
        std::string(kWasiModule), "fd_write", real->type,
        [](wasm::HostCall&,
           std::span<const wasm::Value>) -> Result<std::vector<wasm::Value>, wasm::WasmError> {
          return Unexpected(wasm::WasmError::Make(wasm::WasmError::Kind::kHostStop, "wait"));
        });
    auto lease = pool.Acquire(table);
    ASSERT_TRUE(lease.has_value());
    auto stopped = CallPoolExport(lease->instance(), print);
    ASSERT_FALSE(stopped.has_value());
    EXPECT_EQ(stopped.error().kind, wasm::WasmError::Kind::kHostStop);
  }
  EXPECT_EQ(pool.discarded(), 0u);
  EXPECT_EQ(pool.idle(), 1u);
  auto state = std::make_shared<WasiState>();
  auto table = std::make_shared<wasm::ImportTable>();
  AddWasiImports(*table, state);
  AddHttpImports(*table, std::make_shared<HttpState>());
  auto lease = pool.Acquire(table);
  ASSERT_TRUE(lease.has_value());
  EXPECT_TRUE(lease->reused());
  ASSERT_TRUE(CallPoolExport(lease->instance(), print).has_value());
  EXPECT_EQ(state->stdout_text, "hello from the pool\n");
}

executor::WorkerContext PoolWorkerContext(const std::string& ffqn) {
  const DateTime now = SystemClock::Instance().Now();
  core::Locked locked{core::ComponentId::DummyActivity(), core::ExecutorId::Generate(),
                      core::RunId::Generate(), now + std::chrono::seconds(30),
                      core::ComponentRetryConfig{3u, core::Duration::FromMillis(100)}};
  return executor::WorkerContext{
      .execution_id = core::ExecutionId::Generate(),
      .ffqn = Ffqn(ffqn),
      .params = core::Json::array(),
      .metadata = {},
      .event_history = {},
      .responses = {},
      .version = core::Version(2),
      .locked_event = locked,
      .parent = std::nullopt,
      .intermittent_event_count = 0,
      .can_be_retried = true,
      .execution_deadline = locked.lock_expires_at,
      .cancel = CancellationToken(),
      .run_id = locked.run_id,
      .executor_id = locked.executor_id,
  };
}

// The worker's own pool: attempts after a trap and after ordinary attempts
// all return what the first attempt in a fresh instance returned.
TEST(InstancePoolTest, ActivityWorkerAttemptsSeeAFreshInstance) {
  auto component = PoolGuest();
  WasmActivityWorker worker(component, WasmActivityOptions{});
  auto attempt = [&](const std::string& ffqn) { return worker.Run(PoolWorkerContext(ffqn)); };
  const executor::WorkerResult first = attempt("test:pool/api.remember");
  const auto* ok = std::get_if<executor::WorkerOk>(&first.value);
  ASSERT_NE(ok, nullptr);
  const auto* value = std::get_if<core::ReturnValueOk>(&ok->value);
  ASSERT_NE(value, nullptr);
  ASSERT_TRUE(value->ok.has_value());
  EXPECT_EQ((*value->ok)[0], 1);
  EXPECT_TRUE(std::holds_alternative<executor::WorkerError>(
      attempt("test:pool/api.crash").value));  // a trap: that instance is dropped
  for (int i = 0; i < 3; ++i) {
    const executor::WorkerResult again = attempt("test:pool/api.remember");
    const auto* again_ok = std::get_if<executor::WorkerOk>(&again.value);
    ASSERT_NE(again_ok, nullptr);
    EXPECT_EQ(again_ok->value, ok->value) << "attempt " << i + 2;
  }
}

}  // namespace
}  // namespace stele::runtime::wasm_host
