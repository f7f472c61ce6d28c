// Unit tests of the host side of the guest ABI: declarations, export
// results, stub values and the loader on malformed and hostile input.
#include "runtime/wasm_host/guest_abi.h"

#include <gtest/gtest.h>

#include <string>

#include "runtime/wasm_host/wasm_component.h"

namespace stele::runtime::wasm_host {
namespace {

using wasm::ValType;

std::vector<wasm::ExportedFunction> Exports(const std::string& name) {
  return {{name, ExportFuncType()}, {"stele_alloc", {{ValType::kI32}, {ValType::kI32}}}};
}

TEST(GuestAbiTest, ParsesDeclarationLines) {
  std::string payload =
      R"({"kind":"workflow","ffqn":"a:b/c.d","export":"a:b/c.d","params":"name: string, r: result<string, string>","return":"u64"})"
      "\n\0\n";
  auto parsed = ParseDeclarations({payload}, Exports("a:b/c.d"));
  ASSERT_TRUE(parsed) << parsed.error();
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0].ffqn.ToString(), "a:b/c.d");
  ASSERT_EQ((*parsed)[0].param_list.size(), 2u);
  EXPECT_EQ((*parsed)[0].param_list[1].second, "result<string, string>");
}

TEST(GuestAbiTest, RejectsMalformedDeclarations) {
  const char* bad[] = {
      "not json",
      R"([1,2])",
      R"({"kind":"daemon","ffqn":"a:b/c.d","export":"a:b/c.d","params":"","return":"u64"})",
      R"({"kind":"workflow","ffqn":"nope","export":"a:b/c.d","params":"","return":"u64"})",
      R"({"kind":"workflow","ffqn":"a:b/c.d","export":"missing","params":"","return":"u64"})",
      R"({"kind":"workflow","ffqn":"a:b/c.d","export":"a:b/c.d","params":"x","return":"u64"})",
      R"({"kind":"workflow","ffqn":"a:b/c.d","export":"a:b/c.d","params":"x: list<u8","return":"u64"})",
      R"({"kind":"workflow","ffqn":"a:b/c.d","export":"stele_alloc","params":"","return":"u64"})",
      R"({"kind":"workflow","ffqn":"a:b/c.d","export":"a:b/c.d","params":7,"return":"u64"})",
  };
  for (const char* text : bad) {
    EXPECT_FALSE(ParseDeclarations({text}, Exports("a:b/c.d"))) << text;
  }
  std::string twice =
      R"({"kind":"workflow","ffqn":"a:b/c.d","export":"a:b/c.d","params":"","return":"u64"})";
  auto parsed = ParseDeclarations({twice + "\n" + twice}, Exports("a:b/c.d"));
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().find("twice"), std::string::npos);
}

TEST(GuestAbiTest, ParsesExportResults) {
  auto ok = ParseExportResult(R"({"ok":{"a":1}})");
  ASSERT_TRUE(ok);
  EXPECT_EQ(std::get<core::ReturnValueOk>(*ok).ok, core::Json({{"a", 1}}));
  auto err = ParseExportResult(R"({"err":null})");
  ASSERT_TRUE(err);
  EXPECT_EQ(std::get<core::ReturnValueErr>(*err).err, std::nullopt);
  for (const char* bad : {"", "{", "[]", "{}", R"({"ok":1,"err":2})", R"({"value":1})", "\xff\xfe",
                          R"({"ok":1,"retryable":false})", R"({"err":1,"retryable":"no"})"}) {
    EXPECT_FALSE(ParseExportResult(bad)) << bad;
  }
}

// {"err": v, "retryable": false} is an activity's permanent failure
// (STELE_ERR_NON_RETRYABLE); "retryable": true is the plain err.
TEST(GuestAbiTest, ParsesANonRetryableErr) {
  bool non_retryable = false;
  auto permanent = ParseExportResult(R"({"retryable":false,"err":"declined"})", &non_retryable);
  ASSERT_TRUE(permanent);
  EXPECT_EQ(std::get<core::ReturnValueErr>(*permanent).err, core::Json("declined"));
  EXPECT_TRUE(non_retryable);
  non_retryable = false;
  auto plain = ParseExportResult(R"({"err":"busy","retryable":true})", &non_retryable);
  ASSERT_TRUE(plain);
  EXPECT_FALSE(non_retryable);
  EXPECT_TRUE(ParseExportResult(R"({"err":1,"retryable":false})"));  // flag not wanted
}

TEST(GuestAbiTest, ResultPayloadsAndStubValues) {
  EXPECT_EQ(ResultPayload(core::ReturnValueOk{core::Json(3)}),
            std::make_pair(Status::kOk, std::string("3")));
  EXPECT_EQ(ResultPayload(core::ReturnValueErr{}),
            std::make_pair(Status::kErr, std::string("null")));
  auto failed = ResultPayload(
      core::FinishedExecutionError{core::ExecutionFailureKind::kTimedOut, "late", {}});
  EXPECT_EQ(failed.first, Status::kFailed);
  EXPECT_EQ(core::Json::parse(failed.second)["kind"], "timed_out");
  EXPECT_TRUE(StubValue(0, "true"));
  EXPECT_TRUE(StubValue(1, ""));
  EXPECT_FALSE(StubValue(2, "true"));
  EXPECT_FALSE(StubValue(0, "{"));
}

TEST(GuestAbiTest, PackRoundTrips) {
  uint64_t packed = Pack(0xdeadbeef, 17);
  EXPECT_EQ(PackedPtr(packed), 0xdeadbeefu);
  EXPECT_EQ(PackedLen(packed), 17u);
}

TEST(LoaderTest, RejectsGarbageAndBadNames) {
  auto engine = wasm::CreateV8Engine();
  std::vector<uint8_t> garbage = {0, 'a', 's', 'm', 1, 0, 0, 0, 0xff, 0xff};
  auto loaded = LoadWasmComponent(engine, garbage, "x", GuestKind::kWorkflow);
  EXPECT_FALSE(loaded);
  std::vector<uint8_t> empty;
  EXPECT_FALSE(LoadWasmComponent(engine, empty, "x", GuestKind::kWorkflow));
  // A valid module without the SDK: no stele_alloc.
  std::vector<uint8_t> minimal = {0, 'a', 's', 'm', 1, 0, 0, 0};
  auto no_sdk = LoadWasmComponent(engine, minimal, "x", GuestKind::kWorkflow);
  ASSERT_FALSE(no_sdk);
  EXPECT_NE(no_sdk.error().find("stele_alloc"), std::string::npos) << no_sdk.error();
  auto bad_name =
      LoadWasmComponentFile(engine, STELE_TEST_WORKFLOWS_WASM, "bad name!", GuestKind::kWorkflow);
  EXPECT_FALSE(bad_name);
  EXPECT_FALSE(LoadWasmComponentFile(engine, "/nonexistent/file.wasm", "x", GuestKind::kWorkflow));
}

TEST(LoaderTest, KindsMustMatch) {
  auto engine = wasm::CreateV8Engine();
  // An activity module imports WASI: rejected as a workflow.
  auto as_workflow =
      LoadWasmComponentFile(engine, STELE_TEST_ACTIVITIES_WASM, "a", GuestKind::kWorkflow);
  ASSERT_FALSE(as_workflow);
  EXPECT_NE(as_workflow.error().find("no WASI"), std::string::npos) << as_workflow.error();
  // A workflow module imports "stele": rejected as an activity.
  auto as_activity =
      LoadWasmComponentFile(engine, STELE_TEST_WORKFLOWS_WASM, "w", GuestKind::kActivity);
  ASSERT_FALSE(as_activity);
  EXPECT_NE(as_activity.error().find("stele."), std::string::npos) << as_activity.error();
}

TEST(LoaderTest, LoadsDeclarationsAndDigest) {
  auto loaded = LoadWasmComponentFile(wasm::CreateV8Engine(), STELE_TEST_WORKFLOWS_WASM,
                                      "test_workflows", GuestKind::kWorkflow);
  ASSERT_TRUE(loaded) << loaded.error();
  const auto& component = **loaded;
  EXPECT_EQ(component.component_id.component_type, core::ComponentType::kWorkflow);
  EXPECT_EQ(component.component_id.input_digest.ToString(), component.module->digest());
  const DeclaredFunction* hello =
      component.Find(core::FunctionFqn::Parse("testing:wasm/wf.hello").value());
  ASSERT_NE(hello, nullptr);
  EXPECT_EQ(hello->params, "name: string");
  EXPECT_EQ(hello->return_type, "string");
}

}  // namespace
}  // namespace stele::runtime::wasm_host
