// The binary reader and the limit checks on hand-built and hostile bytes.

#include "runtime/wasm/wasm_binary.h"

#include <gtest/gtest.h>

#include <random>

#include "runtime/wasm/module_check.h"

namespace stele::wasm {
namespace {

using Kind = WasmError::Kind;
using Bytes = std::vector<uint8_t>;

Bytes Header() { return {0, 'a', 's', 'm', 1, 0, 0, 0}; }

void Section(Bytes* out, uint8_t id, const Bytes& payload) {
  out->push_back(id);
  AppendLeb(out, payload.size());
  out->insert(out->end(), payload.begin(), payload.end());
}

void Name(Bytes* out, const std::string& s) {
  AppendLeb(out, s.size());
  out->insert(out->end(), s.begin(), s.end());
}

// type 0: (i32, i64) -> f64; type 1: (v128) -> ()
// import env.f : type 0; one function of type 0, exported as "g";
// memory 1..(none); custom "stele:functions" = "abc"; name section naming 1 "g_impl".
Bytes SampleModule() {
  Bytes m = Header();
  Section(&m, 1, {2, 0x60, 2, 0x7f, 0x7e, 1, 0x7c, 0x60, 1, 0x7b, 0});
  Bytes imports = {1};
  Name(&imports, "env");
  Name(&imports, "f");
  imports.push_back(0);
  imports.push_back(0);
  Section(&m, 2, imports);
  Section(&m, 3, {1, 0});
  Section(&m, 5, {1, 0, 1});
  Bytes exports = {1};
  Name(&exports, "g");
  exports.push_back(0);
  exports.push_back(1);
  Section(&m, 7, exports);
  Bytes custom;
  Name(&custom, "stele:functions");
  custom.insert(custom.end(), {'a', 'b', 'c'});
  Section(&m, 0, custom);
  Bytes names;
  Name(&names, "name");
  Bytes sub = {1, 1};  // one function name
  Name(&sub, "g_impl");
  names.push_back(1);
  AppendLeb(&names, sub.size());
  names.insert(names.end(), sub.begin(), sub.end());
  Section(&m, 0, names);
  return m;
}

TEST(WasmBinaryTest, ParsesTheSampleModule) {
  auto parsed = ParseModule(SampleModule());
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  ASSERT_EQ(parsed->types.size(), 2u);
  EXPECT_EQ(parsed->types[0].type, (FuncType{{ValType::kI32, ValType::kI64}, {ValType::kF64}}));
  EXPECT_FALSE(parsed->types[1].type.has_value());  // v128
  ASSERT_EQ(parsed->imports.size(), 1u);
  EXPECT_EQ(parsed->imports[0].module, "env");
  EXPECT_EQ(parsed->imports[0].name, "f");
  EXPECT_EQ(parsed->function_types.size(), 2u);
  ASSERT_EQ(parsed->memories.size(), 1u);
  EXPECT_EQ(parsed->memories[0].initial, 1u);
  EXPECT_FALSE(parsed->memories[0].max.has_value());
  ASSERT_EQ(parsed->exports.size(), 1u);
  EXPECT_EQ(parsed->exports[0].index, 1u);
  EXPECT_EQ(parsed->function_names.at(1), "g_impl");
  ASSERT_EQ(parsed->custom_sections.size(), 2u);
  EXPECT_EQ(parsed->custom_sections[0].first, "stele:functions");
  EXPECT_EQ(parsed->custom_sections[0].second, "abc");
}

TEST(WasmBinaryTest, CheckLowersTheMemoryMaximumToTheCap) {
  ModuleLimits limits;
  limits.Allow("env", "f", FuncType{{ValType::kI32, ValType::kI64}, {ValType::kF64}});
  limits.max_memory_pages = 10;
  auto checked = CheckModule(SampleModule(), limits);
  ASSERT_TRUE(checked.has_value()) << checked.error().ToString();
  EXPECT_EQ(checked->memory_max_pages, 10u);
  auto reparsed = ParseModule(checked->engine_bytes);
  ASSERT_TRUE(reparsed.has_value()) << reparsed.error().ToString();
  EXPECT_EQ(reparsed->memories[0].max, 10u);
  EXPECT_EQ(reparsed->custom_sections, ParseModule(SampleModule())->custom_sections);
  ASSERT_EQ(checked->exports.size(), 1u);
  EXPECT_EQ(checked->exports[0].name, "g");
  EXPECT_EQ(checked->digest, Sha256Digest(SampleModule()));
  EXPECT_NE(checked->digest, Sha256Digest(checked->engine_bytes));
}

TEST(WasmBinaryTest, Sha256OfEmptyInputIsTheKnownValue) {
  EXPECT_EQ(Sha256Digest({}),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(WasmBinaryTest, CheckRejectsAnImportNotInTheLimits) {
  auto checked = CheckModule(SampleModule(), {});
  ASSERT_FALSE(checked.has_value());
  EXPECT_EQ(checked.error().kind, Kind::kDisallowedImport);
  EXPECT_NE(checked.error().message.find("env.f"), std::string::npos);
}

TEST(WasmBinaryTest, CheckRejectsOversizedModules) {
  ModuleLimits limits;
  limits.max_module_bytes = 10;
  auto checked = CheckModule(SampleModule(), limits);
  ASSERT_FALSE(checked.has_value());
  EXPECT_EQ(checked.error().kind, Kind::kInvalidModule);
}

TEST(WasmBinaryTest, Leb128Bounds) {
  size_t pos = 0;
  Bytes max32 = {0xff, 0xff, 0xff, 0xff, 0x0f};
  EXPECT_EQ(ReadLeb(max32, &pos, 32), 0xffffffffu);
  pos = 0;
  Bytes over32 = {0xff, 0xff, 0xff, 0xff, 0x1f};  // a 33rd bit
  EXPECT_FALSE(ReadLeb(over32, &pos, 32).has_value());
  pos = 0;
  Bytes too_long = {0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  EXPECT_FALSE(ReadLeb(too_long, &pos, 32).has_value());
  pos = 0;
  Bytes truncated = {0x80};
  EXPECT_FALSE(ReadLeb(truncated, &pos, 32).has_value());
  for (uint64_t v : {uint64_t{0}, uint64_t{127}, uint64_t{128}, uint64_t{1} << 35, ~uint64_t{0}}) {
    Bytes b;
    AppendLeb(&b, v);
    pos = 0;
    EXPECT_EQ(ReadLeb(b, &pos, 64), v);
    EXPECT_EQ(pos, b.size());
  }
}

TEST(WasmBinaryTest, HostileInputsAreInvalidNotCrashes) {
  std::vector<Bytes> cases;
  cases.push_back({});
  cases.push_back({0, 'a', 's'});
  cases.push_back({0, 'a', 's', 'm', 2, 0, 0, 0});     // wrong version
  cases.push_back({0, 'a', 's', 'm', 0x0d, 0, 1, 0});  // a component
  Bytes huge_section = Header();
  huge_section.insert(huge_section.end(), {1, 0xff, 0xff, 0xff, 0xff, 0x0f});
  cases.push_back(huge_section);
  Bytes huge_count = Header();
  Section(&huge_count, 1, {0xff, 0xff, 0xff, 0xff, 0x0f});
  cases.push_back(huge_count);
  Bytes huge_name = Header();
  Section(&huge_name, 2, {1, 0xff, 0xff, 0xff, 0xff, 0x0f});
  cases.push_back(huge_name);
  Bytes bogus_id = Header();
  Section(&bogus_id, 42, {});
  cases.push_back(bogus_id);
  Bytes repeated = Header();
  Section(&repeated, 1, {0});
  Section(&repeated, 1, {0});
  cases.push_back(repeated);
  Bytes out_of_order = Header();
  Section(&out_of_order, 3, {0});
  Section(&out_of_order, 1, {0});
  cases.push_back(out_of_order);
  Bytes trailing = Header();
  Section(&trailing, 1, {0, 0});  // one byte more than the vector
  cases.push_back(trailing);
  Bytes bad_type_index = Header();
  Section(&bad_type_index, 3, {1, 5});
  cases.push_back(bad_type_index);
  Bytes bad_limits = Header();
  Section(&bad_limits, 5, {1, 0x09, 1});
  cases.push_back(bad_limits);
  Bytes custom_without_name = Header();
  Section(&custom_without_name, 0, {});
  cases.push_back(custom_without_name);
  Bytes bad_valtype = Header();
  Section(&bad_valtype, 1, {1, 0x60, 1, 0x42, 0});
  cases.push_back(bad_valtype);
  for (size_t i = 0; i < cases.size(); ++i) {
    auto parsed = ParseModule(cases[i]);
    ASSERT_FALSE(parsed.has_value()) << "case " << i;
    EXPECT_EQ(parsed.error().kind, Kind::kInvalidModule) << "case " << i;
    EXPECT_NE(parsed.error().message.find("offset"), std::string::npos) << parsed.error().message;
  }
}

TEST(WasmBinaryTest, MalformedNameSectionIsIgnored) {
  Bytes m = Header();
  Bytes names;
  Name(&names, "name");
  names.insert(names.end(), {1, 0xff, 0xff, 0x03, 1});  // subsection longer than the payload
  Section(&m, 0, names);
  auto parsed = ParseModule(m);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_TRUE(parsed->function_names.empty());
}

TEST(WasmBinaryTest, EveryTruncationAndRandomCorruptionOfAValidModuleIsHandled) {
  const Bytes sample = SampleModule();
  for (size_t n = 0; n < sample.size(); ++n) {
    Bytes cut(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(n));
    auto parsed = ParseModule(cut);
    // Cuts at a section boundary are valid modules; all others must fail.
    if (!parsed.has_value()) {
      EXPECT_EQ(parsed.error().kind, Kind::kInvalidModule);
    }
    (void)CheckModule(cut, {});
  }
  std::mt19937 rng(12345);
  for (int round = 0; round < 20000; ++round) {
    Bytes corrupt = sample;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      corrupt[8 + rng() % (corrupt.size() - 8)] = static_cast<uint8_t>(rng());
    }
    auto parsed = ParseModule(corrupt);
    if (!parsed.has_value()) {
      EXPECT_EQ(parsed.error().kind, Kind::kInvalidModule);
    }
    ModuleLimits limits;
    limits.Allow("env", "f", FuncType{{ValType::kI32, ValType::kI64}, {ValType::kF64}});
    (void)CheckModule(corrupt, limits);
  }
}

// (table 1 funcref) (global i64 (i64.const -1)) (global (mut i32) (i32.const 128))
// (func (export "run")) and one element segment: `passive` = (elem func 0),
// else (elem (i32.const 0) func 0).
Bytes ResetSample(bool passive) {
  Bytes m = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60,
             0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x04, 0x04, 0x01, 0x70, 0x00, 0x01,
             0x06, 0x0c, 0x02, 0x7e, 0x00, 0x42, 0x7f, 0x0b, 0x7f, 0x01, 0x41, 0x80,
             0x01, 0x0b, 0x07, 0x07, 0x01, 0x03, 0x72, 0x75, 0x6e, 0x00, 0x00};
  const Bytes passive_elem = {0x09, 0x05, 0x01, 0x01, 0x00, 0x01, 0x00};
  const Bytes active_elem = {0x09, 0x07, 0x01, 0x00, 0x41, 0x00, 0x0b, 0x01, 0x00};
  const Bytes& elem = passive ? passive_elem : active_elem;
  m.insert(m.end(), elem.begin(), elem.end());
  const Bytes code = {0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b};
  m.insert(m.end(), code.begin(), code.end());
  return m;
}

TEST(WasmBinaryTest, ReadsWhatAResetNeedsAndExportsIt) {
  auto parsed = ParseModule(ResetSample(/*passive=*/false));
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  ASSERT_EQ(parsed->globals.size(), 2u);
  EXPECT_FALSE(parsed->globals[0].is_mutable);
  EXPECT_TRUE(parsed->globals[1].is_mutable);
  EXPECT_EQ(parsed->tables, 1u);
  EXPECT_FALSE(parsed->has_droppable_segments);

  auto checked = CheckModule(ResetSample(false), {});
  ASSERT_TRUE(checked.has_value()) << checked.error().ToString();
  EXPECT_EQ(checked->reset_blocker, "");
  EXPECT_EQ(checked->reset_globals, std::vector<std::string>{"stele:reset.global.1"});
  EXPECT_EQ(checked->reset_tables, std::vector<std::string>{"stele:reset.table.0"});
  auto engine = ParseModule(checked->engine_bytes);
  ASSERT_TRUE(engine.has_value()) << engine.error().ToString();
  ASSERT_EQ(engine->exports.size(), 3u);
  EXPECT_EQ(engine->exports[0].name, "run");
  EXPECT_EQ(engine->exports[1].kind, ExternKind::kGlobal);
  EXPECT_EQ(engine->exports[1].index, 1u);
  EXPECT_EQ(engine->exports[2].kind, ExternKind::kTable);
  EXPECT_EQ(checked->exports.size(), 1u);  // functions only
  EXPECT_EQ(checked->digest, Sha256Digest(ResetSample(false)));
}

TEST(WasmBinaryTest, APassiveElementSegmentBlocksTheReset) {
  auto parsed = ParseModule(ResetSample(/*passive=*/true));
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  EXPECT_TRUE(parsed->has_droppable_segments);
  auto checked = CheckModule(ResetSample(true), {});
  ASSERT_TRUE(checked.has_value());
  EXPECT_NE(checked->reset_blocker, "");
  EXPECT_TRUE(checked->reset_globals.empty());
}

}  // namespace
}  // namespace stele::wasm
