// WasmInstance::Checkpoint/Restore in V8: memory, mutable globals and
// tables come back as they were; what cannot be put back (grown memory, a
// changed table, a failed or interrupted instance) makes Restore refuse.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "runtime/wasm/wasm_engine.h"

namespace stele::wasm {
namespace {

std::vector<uint8_t> ReadResetGuest(const std::string& name) {
  std::ifstream in(std::string(STELE_WASM_TESTDATA) + "/" + name + ".wasm", std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// (global $g (mut i32) (i32.const 7)) (memory 1) (table 2 funcref)
// (elem (i32.const 0) $get) (data (i32.const 16) "abcd")
// exports: memory, get () -> i32, set (i32) -> (), clear: table.set 0 null.
const std::vector<uint8_t> kGlobalAndTable = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x0c, 0x03, 0x60, 0x00, 0x01, 0x7f, 0x60,
    0x01, 0x7f, 0x00, 0x60, 0x00, 0x00, 0x03, 0x04, 0x03, 0x00, 0x01, 0x02, 0x04, 0x04, 0x01, 0x70,
    0x00, 0x02, 0x05, 0x03, 0x01, 0x00, 0x01, 0x06, 0x06, 0x01, 0x7f, 0x01, 0x41, 0x07, 0x0b, 0x07,
    0x1e, 0x04, 0x06, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x02, 0x00, 0x03, 0x67, 0x65, 0x74, 0x00,
    0x00, 0x03, 0x73, 0x65, 0x74, 0x00, 0x01, 0x05, 0x63, 0x6c, 0x65, 0x61, 0x72, 0x00, 0x02, 0x09,
    0x07, 0x01, 0x00, 0x41, 0x00, 0x0b, 0x01, 0x00, 0x0a, 0x16, 0x03, 0x04, 0x00, 0x23, 0x00, 0x0b,
    0x06, 0x00, 0x20, 0x00, 0x24, 0x00, 0x0b, 0x08, 0x00, 0x41, 0x00, 0xd0, 0x70, 0x26, 0x00, 0x0b,
    0x0b, 0x0a, 0x01, 0x00, 0x41, 0x10, 0x0b, 0x04, 0x61, 0x62, 0x63, 0x64};

// (memory 1) (func (export "run")) (data "hi") — a passive segment, with
// the data-count section that memory.init and data.drop need.
const std::vector<uint8_t> kPassiveData = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03,
    0x02, 0x01, 0x00, 0x05, 0x03, 0x01, 0x00, 0x01, 0x07, 0x10, 0x02, 0x06, 0x6d, 0x65, 0x6d,
    0x6f, 0x72, 0x79, 0x02, 0x00, 0x03, 0x72, 0x75, 0x6e, 0x00, 0x00, 0x0c, 0x01, 0x01, 0x0a,
    0x04, 0x01, 0x02, 0x00, 0x0b, 0x0b, 0x05, 0x01, 0x01, 0x02, 0x68, 0x69};

class WasmResetTest : public ::testing::Test {
 protected:
  std::shared_ptr<WasmEngine> engine_ = CreateV8Engine();

  std::unique_ptr<WasmInstance> Make(const std::vector<uint8_t>& bytes) {
    auto module = engine_->Compile(bytes, ModuleLimits{});
    EXPECT_TRUE(module.has_value()) << module.error().ToString();
    if (!module) return nullptr;
    auto instance = engine_->Instantiate(*module, nullptr);
    EXPECT_TRUE(instance.has_value()) << instance.error().ToString();
    return instance ? std::move(*instance) : nullptr;
  }
  static int32_t Alloc(WasmInstance& instance, int32_t size) {
    const Value args[] = {Value::I32(size)};
    return instance.Call("stele_alloc", args).value().at(0).AsI32();
  }
};

TEST_F(WasmResetTest, RestoreBringsBackStaticMemory) {
  auto instance = Make(ReadResetGuest("basic"));
  ASSERT_NE(instance, nullptr);
  ASSERT_TRUE(instance->Checkpoint().has_value());
  const int32_t first = Alloc(*instance, 16);  // moves the static heap_top
  const std::vector<uint8_t> bytes = {1, 2, 3};
  ASSERT_TRUE(instance->WriteBytes(static_cast<uint32_t>(first), bytes).has_value());
  ASSERT_TRUE(instance->Restore());
  EXPECT_EQ(instance->ReadBytes(static_cast<uint32_t>(first), 3).value(),
            (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_EQ(Alloc(*instance, 16), first);
  EXPECT_NE(Alloc(*instance, 16), first);  // without a restore: state stays
  ASSERT_TRUE(instance->Restore());        // a checkpoint serves many restores
  EXPECT_EQ(Alloc(*instance, 16), first);
}

TEST_F(WasmResetTest, RestoreBringsBackMutableGlobals) {
  auto instance = Make(kGlobalAndTable);
  ASSERT_NE(instance, nullptr);
  EXPECT_EQ(instance->module().reset_blocker(), "");
  ASSERT_TRUE(instance->Checkpoint().has_value());
  const Value args[] = {Value::I32(42)};
  ASSERT_TRUE(instance->Call("set", args).has_value());
  EXPECT_EQ(instance->Call("get", {}).value().at(0).AsI32(), 42);
  ASSERT_TRUE(instance->Restore());
  EXPECT_EQ(instance->Call("get", {}).value().at(0).AsI32(), 7);
  // The reserved exports are not callable functions of the module.
  EXPECT_EQ(instance->module().FindExport("stele:reset.global.0"), nullptr);
}

TEST_F(WasmResetTest, AChangedTableIsNotRestored) {
  auto instance = Make(kGlobalAndTable);
  ASSERT_NE(instance, nullptr);
  ASSERT_TRUE(instance->Checkpoint().has_value());
  ASSERT_TRUE(instance->Call("get", {}).has_value());
  ASSERT_TRUE(instance->Restore());  // calls alone change no table
  ASSERT_TRUE(instance->Call("clear", {}).has_value());
  EXPECT_FALSE(instance->Restore());
  EXPECT_FALSE(instance->Restore());
}

TEST_F(WasmResetTest, GrownMemoryATrapOrAnInterruptIsNotRestored) {
  auto grown = Make(ReadResetGuest("basic"));
  ASSERT_TRUE(grown->Checkpoint().has_value());
  const Value one[] = {Value::I32(1)};
  ASSERT_TRUE(grown->Call("grow", one).has_value());
  EXPECT_FALSE(grown->Restore());

  auto trapped = Make(ReadResetGuest("basic"));
  ASSERT_TRUE(trapped->Checkpoint().has_value());
  EXPECT_FALSE(trapped->Call("run_explode", one).has_value());
  EXPECT_FALSE(trapped->Restore());

  auto interrupted = Make(ReadResetGuest("basic"));
  ASSERT_TRUE(interrupted->Checkpoint().has_value());
  interrupted->Interrupt();
  EXPECT_FALSE(interrupted->Restore());

  auto unchecked = Make(ReadResetGuest("basic"));
  EXPECT_FALSE(unchecked->Restore());  // no checkpoint
}

TEST_F(WasmResetTest, PassiveSegmentsMakeAModuleNotResettable) {
  auto instance = Make(kPassiveData);
  ASSERT_NE(instance, nullptr);
  EXPECT_NE(instance->module().reset_blocker(), "");
  auto checkpoint = instance->Checkpoint();
  ASSERT_FALSE(checkpoint.has_value());
  EXPECT_EQ(checkpoint.error().kind, WasmError::Kind::kDisallowedFeature);
  EXPECT_FALSE(instance->Restore());
}

}  // namespace
}  // namespace stele::wasm
