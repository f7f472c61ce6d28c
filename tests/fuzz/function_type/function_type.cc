// Fuzzes the function type model (core/function_type.h), which sees hostile
// type strings (configs, wasm exports) and hostile values (API callers).
// Input: a type string, a newline, then a JSON value. The type string must
// parse or be rejected; a parsed type must print canonically
// (Parse(ToString()) == type); the value is then type-checked as a single
// parameter (CheckParams) and as a return value, and the signature goes
// through its JSON mapping and back.
#include "core/function_type.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/json_codec.h"
#include "fuzz_check.h"

namespace {

using namespace stele::core;  // NOLINT(google-build-using-namespace): fuzz target

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string_view type_text = input.substr(0, newline);
  const std::string_view value_text =
      newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);

  auto type = TypeDesc::Parse(type_text);
  if (!type) {
    FUZZ_CHECK(!type.error().empty());
    return 0;
  }
  const std::string canonical = type->ToString();
  auto again = TypeDesc::Parse(canonical);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(*again == *type);
  FUZZ_CHECK(again->ToString() == canonical);

  auto ffqn = FunctionFqn::Parse("fuzz:pkg/ifc.fn");
  FUZZ_CHECK(ffqn.has_value());
  FunctionSignature signature{*ffqn, {ParamSpec{"value", *type}}, *type};
  auto from_json = FunctionSignatureFromJson(FunctionSignatureToJson(signature));
  FUZZ_CHECK(from_json.has_value());
  FUZZ_CHECK(*from_json == signature);

  auto value = ParseJson(value_text);
  if (!value) return 0;
  (void)type->Check(*value);
  Json params = Json::array();
  params.push_back(*value);
  (void)CheckParams(signature, params);
  (void)CheckParams(signature, *value);  // usually not an array of one
  (void)CheckReturnValue(signature, ReturnValueOk{*value});
  (void)CheckReturnValue(signature, ReturnValueErr{*value});
  return 0;
}
