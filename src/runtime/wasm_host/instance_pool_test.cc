// InstancePool and the workers that use it, on a real wasi-libc guest
// (testdata/pool_activities.c) in real V8: a reused instance shows nothing
// of an earlier run, a failed one is never reused.

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

}  // namespace
}  // namespace stele::runtime::wasm_host
