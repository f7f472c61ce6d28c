#include "core/function_type.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stele::core {
namespace {

TypeDesc P(std::string_view text) {
  auto t = TypeDesc::Parse(text);
  EXPECT_TRUE(t.has_value()) << text << ": " << (t ? "" : t.error());
  return t ? *t : TypeDesc();
}

std::string ParseError(std::string_view text) {
  auto t = TypeDesc::Parse(text);
  EXPECT_FALSE(t.has_value()) << text << " parsed as " << (t ? t->ToString() : "");
  return t ? std::string() : t.error();
}

std::string CheckError(std::string_view type, const Json& value) {
  auto r = P(type).Check(value);
  EXPECT_FALSE(r.has_value()) << type << " accepted " << value.dump();
  return r ? std::string() : r.error();
}

void ExpectAccepts(std::string_view type, const Json& value) {
  auto r = P(type).Check(value);
  EXPECT_TRUE(r.has_value()) << type << " rejected " << value.dump() << ": " << r.error();
}

TEST(FunctionTypeTest, CanonicalFormsRoundTrip) {
  for (std::string_view text : {
           "bool",
           "s8",
           "s16",
           "s32",
           "s64",
           "u8",
           "u16",
           "u32",
           "u64",
           "f32",
           "f64",
           "char",
           "string",
           "json",
           "list<u8>",
           "option<string>",
           "result",
           "result<u32>",
           "result<_, string>",
           "result<u32, string>",
           "tuple<u8>",
           "tuple<u8, string, bool>",
           "record { a: u8 }",
           "record { first-name: string, age: option<u8> }",
           "enum { a }",
           "enum { red, green, blue }",
           "variant { a(u8), b }",
           "variant { none, some(list<u8>) }",
           "flags { read }",
           "flags { read, write, HTTP-get }",
           "list<record { items: list<tuple<u8, option<result<_, variant { e(string) }>>>> }>",
       }) {
    TypeDesc t = P(text);
    EXPECT_EQ(t.ToString(), text);
    EXPECT_EQ(P(t.ToString()), t) << text;
  }
}

TEST(FunctionTypeTest, WhitespaceTrailingCommasAndEscapesNormalise) {
  EXPECT_EQ(P("  list < u8 >  ").ToString(), "list<u8>");
  EXPECT_EQ(P("result<\n_ ,\tstring>").ToString(), "result<_, string>");
  EXPECT_EQ(P("record{a:u8,b:string,}").ToString(), "record { a: u8, b: string }");
  EXPECT_EQ(P("enum{a,b,}").ToString(), "enum { a, b }");
  EXPECT_EQ(P("variant{a(u8),b,}").ToString(), "variant { a(u8), b }");
  EXPECT_EQ(P("flags{x,}").ToString(), "flags { x }");
  // Keywords may be names, escaped WIT-style or not.
  EXPECT_EQ(P("record { %type: string, list: u8 }").ToString(),
            "record { type: string, list: u8 }");
}

TEST(FunctionTypeTest, AccessorsExposeTheTree) {
  TypeDesc t = P("result<_, record { a: list<u8>, b: variant { x(bool), y } }>");
  ASSERT_EQ(t.kind(), TypeDesc::Kind::kResult);
  EXPECT_EQ(t.ok(), nullptr);
  ASSERT_NE(t.err(), nullptr);
  const auto& fields = t.err()->fields();
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields[0].name, "a");
  EXPECT_EQ(fields[0].type.element().kind(), TypeDesc::Kind::kU8);
  const auto& cases = fields[1].type.cases();
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].payload->kind(), TypeDesc::Kind::kBool);
  EXPECT_FALSE(cases[1].payload.has_value());
  EXPECT_EQ(P("flags { a, b }").names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(P("tuple<u8, s8>").elements().size(), 2u);
  EXPECT_EQ(TypeDesc().kind(), TypeDesc::Kind::kJson);
  EXPECT_EQ(TypeDesc(), P("json"));
  EXPECT_FALSE(P("list<u8>") == P("list<s8>"));
  EXPECT_FALSE(P("record { a: u8 }") == P("record { b: u8 }"));
  EXPECT_FALSE(P("result<u8>") == P("result<_, u8>"));
}

TEST(FunctionTypeTest, RejectsMalformedWithPositions) {
  EXPECT_EQ(ParseError(""), "at byte 0: expected a type, found end of input");
  EXPECT_EQ(ParseError("list<u8"), "at byte 7: expected '>', found end of input");
  EXPECT_EQ(ParseError("tuple<u8,,u8>"), "at byte 9: expected a type, found ','");
  EXPECT_EQ(ParseError("u8 u8"), "at byte 3: expected end of type, found 'u'");
  EXPECT_EQ(ParseError("list<int>"), "at byte 5: unknown type `int`, found 'i'");
  EXPECT_EQ(ParseError("record { a: u8, a: u8 }"), "at byte 16: duplicate name `a`");
  EXPECT_EQ(ParseError("string\xC3\xA9"), "at byte 6: expected end of type, found byte 0xC3");
  for (std::string_view text : {
           "String",
           "u128",
           "list",
           "list<>",
           "list<u8>>",
           "option<u8, u8>",
           "result<_>",
           "result<>",
           "result<u8, u8, u8>",
           "result<,u8>",
           "tuple<>",
           "tuple<u8,>",
           "record {}",
           "record { a }",
           "record { a: }",
           "record { A_b: u8 }",
           "record { a--b: u8 }",
           "record { -a: u8 }",
           "record { a-: u8 }",
           "record { 1a: u8 }",
           "record { aB: u8 }",
           "record { a: u8",
           "record a: u8 }",
           "enum {}",
           "enum { a, a }",
           "enum { a b }",
           "variant {}",
           "variant { a() }",
           "variant { a(u8 }",
           "variant { a, a(u8) }",
           "flags { }",
           "flags { x, x }",
           "flags { é }",
           "{",
           "}",
           "<",
           ">",
           "record { a: u8 } }",
           "_",
           "%u8",
           "list<%u8>",
           "record { %: u8 }",
       }) {
    ParseError(text);
  }
}

TEST(FunctionTypeTest, HostileInputsAreBounded) {
  // Nesting at the limit parses; one deeper fails with a clear message.
  auto nested = [](int depth) {
    std::string s;
    for (int i = 1; i < depth; ++i) s += "list<";
    s += "u8";
    for (int i = 1; i < depth; ++i) s += ">";
    return s;
  };
  EXPECT_TRUE(TypeDesc::Parse(nested(TypeDesc::kMaxDepth)).has_value());
  EXPECT_NE(ParseError(nested(TypeDesc::kMaxDepth + 1)).find("nested deeper than 64"),
            std::string::npos);
  // Unbalanced openers far beyond the depth limit stop at the limit rather
  // than recursing (no stack exhaustion).
  std::string opened;
  for (int i = 0; i < 2000; ++i) opened += "option<";
  EXPECT_NE(ParseError(opened).find("nested deeper"), std::string::npos);
  std::string records;
  for (int i = 0; i < 1000; ++i) records += "record { a: ";
  EXPECT_NE(ParseError(records).find("nested deeper"), std::string::npos);
  // Length limit.
  std::string huge = "record { a" + std::string(TypeDesc::kMaxLength, 'a') + ": u8 }";
  EXPECT_NE(ParseError(huge).find("the limit is"), std::string::npos);
  std::string spaces(TypeDesc::kMaxLength + 1, ' ');
  EXPECT_NE(ParseError(spaces).find("the limit is"), std::string::npos);
  // A long but legal type works.
  std::string wide = "enum { c0";
  for (int i = 1; i < 1000; ++i) wide += ", c" + std::to_string(i);
  wide += " }";
  EXPECT_EQ(P(wide).names().size(), 1000u);
  // Embedded NUL and invalid UTF-8.
  ParseError(std::string_view("u8\0", 3));
  ParseError("\xff");
}

TEST(FunctionTypeTest, ChecksIntegersByRange) {
  ExpectAccepts("u8", 0);
  ExpectAccepts("u8", 255);
  EXPECT_EQ(CheckError("u8", 256), "value: expected u8, got 256");
  EXPECT_EQ(CheckError("u8", -1), "value: expected u8, got -1");
  ExpectAccepts("s8", -128);
  CheckError("s8", 128);
  CheckError("s8", -129);
  ExpectAccepts("s16", -32768);
  CheckError("s16", 32768);
  ExpectAccepts("u16", 65535);
  CheckError("u16", 65536);
  ExpectAccepts("s32", -2147483648LL);
  CheckError("s32", 2147483648LL);
  ExpectAccepts("u32", 4294967295ULL);
  CheckError("u32", 4294967296ULL);
  ExpectAccepts("s64", Json::parse("-9223372036854775808"));
  CheckError("s64", Json::parse("9223372036854775808"));
  ExpectAccepts("u64", Json::parse("18446744073709551615"));
  CheckError("u64", Json::parse("18446744073709551616"));  // parses as a float
  CheckError("u64", -1);
  EXPECT_EQ(CheckError("u32", Json::parse("1.5")), "value: expected u32, got 1.5");
  CheckError("u32", Json::parse("1.0"));  // fractions are never integers
  CheckError("u32", "1");
  CheckError("u32", true);
  CheckError("u32", nullptr);
}

TEST(FunctionTypeTest, ChecksFloatsBoolsCharsStrings) {
  ExpectAccepts("f64", 1.5);
  ExpectAccepts("f64", 3);
  ExpectAccepts("f64", Json::parse("1e300"));
  ExpectAccepts("f32", Json::parse("3.4e38"));
  CheckError("f32", Json::parse("1e39"));
  CheckError("f64", "1.5");
  CheckError("f64", Json(std::numeric_limits<double>::infinity()));
  ExpectAccepts("bool", false);
  CheckError("bool", 0);
  ExpectAccepts("char", "a");
  ExpectAccepts("char", "\xC3\xA9");          // é, 2 bytes
  ExpectAccepts("char", "\xF0\x9F\x98\x80");  // emoji, 4 bytes
  CheckError("char", "ab");
  CheckError("char", "");
  CheckError("char", "e\xCC\x81");  // e + combining accent: two scalar values
  CheckError("char", 97);
  CheckError("char", std::string("\xC3"));  // invalid UTF-8 built programmatically
  ExpectAccepts("string", "");
  ExpectAccepts("string", "h\xC3\xA9llo \xF0\x9F\x98\x80");
  CheckError("string", 1);
  CheckError("string", std::string("\xED\xA0\x80"));  // a UTF-16 surrogate
  CheckError("string", std::string("\xC0\x80"));      // overlong NUL
  ExpectAccepts("json", Json::parse(R"({"anything": [1, null, "x"]})"));
  ExpectAccepts("json", nullptr);
}

TEST(FunctionTypeTest, ChecksContainers) {
  ExpectAccepts("list<u8>", Json::array());
  ExpectAccepts("list<u8>", Json::parse("[1, 2, 3]"));
  EXPECT_EQ(CheckError("list<u8>", Json::parse("[1, 2, 300]")), "value[2]: expected u8, got 300");
  CheckError("list<u8>", Json::object());
  ExpectAccepts("option<u8>", nullptr);
  ExpectAccepts("option<u8>", 7);
  CheckError("option<u8>", "7");
  ExpectAccepts("tuple<u8, string>", Json::parse(R"([1, "a"])"));
  EXPECT_EQ(CheckError("tuple<u8, string>", Json::parse("[1]")),
            "value: expected an array of 2, got an array of 1");
  CheckError("tuple<u8, string>", Json::parse(R"([1, "a", 2])"));
  EXPECT_EQ(CheckError("tuple<u8, string>", Json::parse("[1, 2]")),
            "value[1]: expected string, got 2");
}

TEST(FunctionTypeTest, ChecksResults) {
  ExpectAccepts("result", Json::parse(R"({"ok": null})"));
  ExpectAccepts("result", Json::parse(R"({"err": null})"));
  EXPECT_EQ(CheckError("result", Json::parse(R"({"ok": 1})")),
            "value.ok: expected null (no value), got 1");
  ExpectAccepts("result<u8, string>", Json::parse(R"({"ok": 1})"));
  ExpectAccepts("result<u8, string>", Json::parse(R"({"err": "bad"})"));
  EXPECT_EQ(CheckError("result<u8, string>", Json::parse(R"({"err": 1})")),
            "value.err: expected string, got 1");
  CheckError("result<u8, string>", Json::parse(R"({"ok": null})"));
  ExpectAccepts("result<_, string>", Json::parse(R"({"ok": null})"));
  CheckError("result<u8, string>", Json::parse(R"({"ok": 1, "err": "x"})"));
  CheckError("result<u8, string>", Json::parse(R"({"value": 1})"));
  CheckError("result<u8, string>", Json::parse(R"({})"));
  CheckError("result<u8, string>", Json::parse(R"(["ok", 1])"));
  CheckError("result<u8, string>", "ok");
}

TEST(FunctionTypeTest, ChecksRecords) {
  const char* type = "record { name: string, age: option<u8>, tags: list<string> }";
  ExpectAccepts(type, Json::parse(R"({"name": "a", "age": 3, "tags": []})"));
  ExpectAccepts(type, Json::parse(R"({"name": "a", "age": null, "tags": []})"));
  ExpectAccepts(type, Json::parse(R"({"tags": ["x"], "name": "a"})"));  // option may be missing
  EXPECT_EQ(CheckError(type, Json::parse(R"({"name": "a"})")), "value: missing field `tags`");
  EXPECT_EQ(CheckError(type, Json::parse(R"({"name": "a", "tags": [], "extra": 1})")),
            "value: unknown field \"extra\"");
  EXPECT_EQ(CheckError(type, Json::parse(R"({"name": "a", "tags": ["x", 2]})")),
            "value.tags[1]: expected string, got 2");
  CheckError(type, Json::array());
}

TEST(FunctionTypeTest, ChecksEnumsVariantsFlags) {
  ExpectAccepts("enum { red, green }", "green");
  EXPECT_EQ(CheckError("enum { red, green }", "blue"),
            "value: expected one of \"red\", \"green\", got \"blue\"");
  CheckError("enum { red, green }", 0);

  const char* v = "variant { none, some(u8), pair(tuple<u8, u8>) }";
  ExpectAccepts(v, "none");
  ExpectAccepts(v, Json::parse(R"({"none": null})"));
  ExpectAccepts(v, Json::parse(R"({"some": 5})"));
  ExpectAccepts(v, Json::parse(R"({"pair": [1, 2]})"));
  EXPECT_EQ(CheckError(v, Json::parse(R"({"some": 300})")), "value.some: expected u8, got 300");
  EXPECT_EQ(CheckError(v, "some"), "value: case `some` needs a payload: {\"some\": ...}");
  CheckError(v, Json::parse(R"({"none": 1})"));
  CheckError(v, Json::parse(R"({"other": 1})"));
  CheckError(v, "other");
  CheckError(v, Json::parse(R"({"some": 1, "none": null})"));
  CheckError(v, Json::object());
  CheckError(v, 1);

  ExpectAccepts("flags { read, write }", Json::array());
  ExpectAccepts("flags { read, write }", Json::parse(R"(["write", "read"])"));
  EXPECT_EQ(CheckError("flags { read, write }", Json::parse(R"(["read", "read"])")),
            "value[1]: duplicate flag \"read\"");
  CheckError("flags { read, write }", Json::parse(R"(["exec"])"));
  CheckError("flags { read, write }", Json::parse("[1]"));
  CheckError("flags { read, write }", "read");
}

TEST(FunctionTypeTest, ErrorsNameDeepPathsAndTruncateValues) {
  TypeDesc t = P("list<record { items: list<option<variant { v(tuple<char, u8>) }>> }>");
  Json value = Json::parse(R"([{"items": []}, {"items": [null, {"v": ["x", 256]}]}])");
  auto r = t.Check(value, "params[1]");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), "params[1][1].items[1].v[1]: expected u8, got 256");

  std::string long_text(10000, 'x');
  std::string err = CheckError("u8", long_text);
  EXPECT_LT(err.size(), 200u);
  EXPECT_NE(err.find("(10000 bytes)"), std::string::npos);
}

FunctionSignature Sig() {
  auto sig = FunctionSignatureFromJson(Json::parse(R"({
    "ffqn": "testing:shop/orders.place",
    "params": [{"name": "customer", "type": "string"},
               {"name": "items", "type": "list<u8>"}],
    "return_type": "result<u64, string>"})"));
  EXPECT_TRUE(sig.has_value()) << sig.error();
  return *sig;
}

TEST(FunctionTypeTest, CheckParamsNamesTheParameter) {
  FunctionSignature sig = Sig();
  EXPECT_TRUE(CheckParams(sig, Json::parse(R"(["bob", [1, 2]])")).has_value());
  auto bad = CheckParams(sig, Json::parse(R"(["bob", [1, 2, 3, 300]])"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error(), "parameter `items`: params[1][3]: expected u8, got 300");
  EXPECT_EQ(CheckParams(sig, Json::parse(R"(["bob"])")).error(),
            "testing:shop/orders.place: expected 2 params, got 1");
  EXPECT_FALSE(CheckParams(sig, Json::parse(R"(["bob", [], 1])")).has_value());
  EXPECT_FALSE(CheckParams(sig, Json::parse(R"({"customer": "bob"})")).has_value());
  EXPECT_FALSE(CheckParams(sig, nullptr).has_value());
}

TEST(FunctionTypeTest, CheckReturnValueUsesTheResultSides) {
  FunctionSignature sig = Sig();
  EXPECT_TRUE(CheckReturnValue(sig, ReturnValueOk{Json(5)}).has_value());
  EXPECT_EQ(CheckReturnValue(sig, ReturnValueOk{Json("5")}).error(),
            "return.ok: expected u64, got \"5\"");
  EXPECT_FALSE(CheckReturnValue(sig, ReturnValueOk{std::nullopt}).has_value());
  EXPECT_TRUE(CheckReturnValue(sig, ReturnValueErr{Json("no stock")}).has_value());
  EXPECT_FALSE(CheckReturnValue(sig, ReturnValueErr{Json(1)}).has_value());

  sig.return_type = P("result");
  EXPECT_TRUE(CheckReturnValue(sig, ReturnValueOk{std::nullopt}).has_value());
  EXPECT_TRUE(CheckReturnValue(sig, ReturnValueOk{Json(nullptr)}).has_value());
  EXPECT_FALSE(CheckReturnValue(sig, ReturnValueOk{Json(1)}).has_value());
  EXPECT_FALSE(CheckReturnValue(sig, ReturnValueErr{Json("x")}).has_value());

  sig.return_type = P("u8");  // not a result: ok values checked, err values not
  EXPECT_TRUE(CheckReturnValue(sig, ReturnValueOk{Json(1)}).has_value());
  EXPECT_FALSE(CheckReturnValue(sig, ReturnValueOk{Json(-1)}).has_value());
  EXPECT_TRUE(CheckReturnValue(sig, ReturnValueErr{Json("x")}).has_value());

  sig.return_type.reset();
  EXPECT_TRUE(CheckReturnValue(sig, ReturnValueOk{Json("anything")}).has_value());
}

TEST(FunctionTypeTest, SignatureJsonRoundTrips) {
  FunctionSignature sig = Sig();
  Json json = FunctionSignatureToJson(sig);
  EXPECT_EQ(json.dump(),
            R"({"ffqn":"testing:shop/orders.place","params":[{"name":"customer","type":"string"},)"
            R"({"name":"items","type":"list<u8>"}],"return_type":"result<u64, string>"})");
  auto back = FunctionSignatureFromJson(json);
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(*back, sig);

  sig.return_type.reset();
  sig.params.clear();
  json = FunctionSignatureToJson(sig);
  EXPECT_TRUE(json["return_type"].is_null());
  EXPECT_EQ(*FunctionSignatureFromJson(json), sig);
  json.erase("return_type");
  EXPECT_EQ(*FunctionSignatureFromJson(json), sig);
}

TEST(FunctionTypeTest, SignatureJsonRejectsMalformed) {
  for (
      std::string_view text : {
          R"([])",
          R"({})",
          R"({"ffqn": "nope", "params": []})",
          R"({"ffqn": 1, "params": []})",
          R"({"ffqn": "a:b/c.d"})",
          R"({"ffqn": "a:b/c.d", "params": {}})",
          R"({"ffqn": "a:b/c.d", "params": [], "extra": 1})",
          R"({"ffqn": "a:b/c.d", "params": [{"name": "x"}]})",
          R"({"ffqn": "a:b/c.d", "params": [{"name": "x", "type": "u8", "more": 1}]})",
          R"({"ffqn": "a:b/c.d", "params": [{"name": "x_y", "type": "u8"}]})",
          R"({"ffqn": "a:b/c.d", "params": [{"name": "x", "type": "u9"}]})",
          R"({"ffqn": "a:b/c.d", "params": [{"name": "x", "type": "u8"}, {"name": "x", "type": "u8"}]})",
          R"({"ffqn": "a:b/c.d", "params": [], "return_type": 5})",
          R"({"ffqn": "a:b/c.d", "params": [], "return_type": "result<"})",
      }) {
    auto r = FunctionSignatureFromJson(Json::parse(text));
    EXPECT_FALSE(r.has_value()) << text;
  }
  auto r = FunctionSignatureFromJson(
      Json::parse(R"({"ffqn": "a:b/c.d", "params": [{"name": "x", "type": "list<u8"}]})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), "a:b/c.d: params[0] `x`: type at byte 7: expected '>', found end of input");
}

TEST(FunctionTypeTest, IsValidTypeName) {
  for (std::string_view ok : {"a", "a-b", "a1-b2", "HTTP", "get-HTTP-x"}) {
    EXPECT_TRUE(IsValidTypeName(ok)) << ok;
  }
  for (std::string_view bad : {"", "-", "a-", "-a", "a--b", "1a", "aB", "a_b", "a b", "é"}) {
    EXPECT_FALSE(IsValidTypeName(bad)) << bad;
  }
}

}  // namespace
}  // namespace stele::core
