#include "core/function_type.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include "base/check.h"

namespace stele::core {

struct TypeDesc::Node {
  Kind kind = Kind::kJson;
  std::vector<TypeDesc> children;  // list/option: {element}; tuple: elements
  std::optional<TypeDesc> ok;      // result
  std::optional<TypeDesc> err;     // result
  std::vector<TypeField> fields;   // record
  std::vector<TypeCase> cases;     // variant
  std::vector<std::string> names;  // enum, flags
};

namespace {

struct Keyword {
  std::string_view word;
  TypeDesc::Kind kind;
};

constexpr Keyword kPrimitives[] = {
    {"bool", TypeDesc::Kind::kBool},     {"s8", TypeDesc::Kind::kS8},
    {"s16", TypeDesc::Kind::kS16},       {"s32", TypeDesc::Kind::kS32},
    {"s64", TypeDesc::Kind::kS64},       {"u8", TypeDesc::Kind::kU8},
    {"u16", TypeDesc::Kind::kU16},       {"u32", TypeDesc::Kind::kU32},
    {"u64", TypeDesc::Kind::kU64},       {"f32", TypeDesc::Kind::kF32},
    {"f64", TypeDesc::Kind::kF64},       {"char", TypeDesc::Kind::kChar},
    {"string", TypeDesc::Kind::kString}, {"json", TypeDesc::Kind::kJson},
};

std::string_view PrimitiveName(TypeDesc::Kind kind) {
  for (const auto& k : kPrimitives) {
    if (k.kind == kind) return k.word;
  }
  return {};
}

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '%';
}

std::string Describe(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return std::string("'") + c + "'";
  static constexpr char kHex[] = "0123456789ABCDEF";
  return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 0xf];
}

}  // namespace

bool IsValidTypeName(std::string_view name) {
  if (name.empty()) return false;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('-', start);
    if (end == std::string_view::npos) end = name.size();
    std::string_view word = name.substr(start, end - start);
    if (word.empty()) return false;
    bool lower = word[0] >= 'a' && word[0] <= 'z';
    bool upper = word[0] >= 'A' && word[0] <= 'Z';
    if (!lower && !upper) return false;
    for (char c : word) {
      bool digit = c >= '0' && c <= '9';
      if (!(digit || (lower && c >= 'a' && c <= 'z') || (upper && c >= 'A' && c <= 'Z'))) {
        return false;
      }
    }
    if (end == name.size()) break;
    start = end + 1;
  }
  return true;
}

// Recursive descent over the grammar of docs/types.md. Depth is bounded, so
// the recursion is too.
class TypeParser {
 public:
  explicit TypeParser(std::string_view text) : text_(text) {}

  Result<TypeDesc, std::string> ParseAll() {
    if (text_.size() > TypeDesc::kMaxLength) {
      return Unexpected("type string is " + std::to_string(text_.size()) +
                        " bytes long, the limit is " + std::to_string(TypeDesc::kMaxLength));
    }
    STELE_ASSIGN_OR_RETURN(TypeDesc type, ParseType(1));
    SkipSpace();
    if (pos_ != text_.size()) return Fail("expected end of type");
    return type;
  }

 private:
  using Node = TypeDesc::Node;

  Unexpected<std::string> Fail(std::string_view expected) const {
    std::string found = pos_ >= text_.size() ? "end of input" : Describe(text_[pos_]);
    return Unexpected("at byte " + std::to_string(pos_) + ": " + std::string(expected) +
                      ", found " + found);
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Peek(char c) {
    SkipSpace();
    return pos_ < text_.size() && text_[pos_] == c;
  }

  bool Accept(char c) {
    if (!Peek(c)) return false;
    ++pos_;
    return true;
  }

  Result<void, std::string> Expect(char c) {
    if (Accept(c)) return {};
    return Fail(std::string("expected '") + c + "'");
  }

  std::string_view ReadWord() {
    SkipSpace();
    std::size_t start = pos_;
    while (pos_ < text_.size() && IsWordChar(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  // A kebab-case name, optionally escaped with a leading '%' (WIT's way of
  // using a keyword as a name); the '%' is not part of the name.
  Result<std::string, std::string> ReadName(std::string_view what) {
    SkipSpace();
    std::size_t start = pos_;
    std::string_view word = ReadWord();
    if (!word.empty() && word[0] == '%') word.remove_prefix(1);
    if (!IsValidTypeName(word)) {
      pos_ = start;
      return Fail("expected " + std::string(what) + " (a kebab-case name)");
    }
    return std::string(word);
  }

  Result<void, std::string> CheckUnique(std::set<std::string>& seen, const std::string& name,
                                        std::size_t at) {
    if (seen.insert(name).second) return {};
    return Unexpected("at byte " + std::to_string(at) + ": duplicate name `" + name + "`");
  }

  Result<TypeDesc, std::string> ParseType(int depth) {
    SkipSpace();
    if (depth > TypeDesc::kMaxDepth) {
      return Fail("type nested deeper than " + std::to_string(TypeDesc::kMaxDepth) + " levels");
    }
    std::size_t start = pos_;
    std::string_view word = ReadWord();
    for (const auto& k : kPrimitives) {
      if (word == k.word) {
        auto node = std::make_shared<Node>();
        node->kind = k.kind;
        return TypeDesc(std::move(node));
      }
    }
    auto node = std::make_shared<Node>();
    if (word == "list" || word == "option") {
      node->kind = word == "list" ? TypeDesc::Kind::kList : TypeDesc::Kind::kOption;
      STELE_TRY(Expect('<'));
      STELE_ASSIGN_OR_RETURN(TypeDesc element, ParseType(depth + 1));
      node->children.push_back(std::move(element));
      STELE_TRY(Expect('>'));
    } else if (word == "result") {
      node->kind = TypeDesc::Kind::kResult;
      if (Accept('<')) {
        SkipSpace();
        std::size_t before = pos_;
        if (ReadWord() == "_") {
          if (!Peek(','))
            return Fail("expected ',' after `result<_` (write `result` for no types)");
        } else {
          pos_ = before;
          STELE_ASSIGN_OR_RETURN(TypeDesc ok, ParseType(depth + 1));
          node->ok = std::move(ok);
        }
        if (Accept(',')) {
          STELE_ASSIGN_OR_RETURN(TypeDesc err, ParseType(depth + 1));
          node->err = std::move(err);
        }
        STELE_TRY(Expect('>'));
      }
    } else if (word == "tuple") {
      node->kind = TypeDesc::Kind::kTuple;
      STELE_TRY(Expect('<'));
      do {
        STELE_ASSIGN_OR_RETURN(TypeDesc element, ParseType(depth + 1));
        node->children.push_back(std::move(element));
      } while (Accept(','));
      STELE_TRY(Expect('>'));
    } else if (word == "record" || word == "enum" || word == "variant" || word == "flags") {
      STELE_TRY(ParseBraced(word, depth, *node));
    } else {
      pos_ = start;
      return Fail(word.empty() ? "expected a type" : "unknown type `" + std::string(word) + "`");
    }
    return TypeDesc(std::move(node));
  }

  // `{ member, member, }`: at least one member, trailing comma allowed.
  Result<void, std::string> ParseBraced(std::string_view word, int depth, Node& node) {
    node.kind = word == "record"    ? TypeDesc::Kind::kRecord
                : word == "enum"    ? TypeDesc::Kind::kEnum
                : word == "variant" ? TypeDesc::Kind::kVariant
                                    : TypeDesc::Kind::kFlags;
    STELE_TRY(Expect('{'));
    std::set<std::string> seen;
    do {
      if (Peek('}') && !seen.empty()) break;  // trailing comma
      SkipSpace();
      std::size_t at = pos_;
      if (node.kind == TypeDesc::Kind::kRecord) {
        STELE_ASSIGN_OR_RETURN(std::string name, ReadName("a field name"));
        STELE_TRY(CheckUnique(seen, name, at));
        STELE_TRY(Expect(':'));
        STELE_ASSIGN_OR_RETURN(TypeDesc type, ParseType(depth + 1));
        node.fields.push_back(TypeField{std::move(name), std::move(type)});
      } else if (node.kind == TypeDesc::Kind::kVariant) {
        STELE_ASSIGN_OR_RETURN(std::string name, ReadName("a case name"));
        STELE_TRY(CheckUnique(seen, name, at));
        TypeCase c{std::move(name), std::nullopt};
        if (Accept('(')) {
          STELE_ASSIGN_OR_RETURN(TypeDesc payload, ParseType(depth + 1));
          c.payload = std::move(payload);
          STELE_TRY(Expect(')'));
        }
        node.cases.push_back(std::move(c));
      } else {
        STELE_ASSIGN_OR_RETURN(
            std::string name,
            ReadName(node.kind == TypeDesc::Kind::kEnum ? "a case name" : "a flag name"));
        STELE_TRY(CheckUnique(seen, name, at));
        node.names.push_back(std::move(name));
      }
    } while (Accept(','));
    return Expect('}');
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

TypeDesc::TypeDesc() = default;

Result<TypeDesc, std::string> TypeDesc::Parse(std::string_view text) {
  return TypeParser(text).ParseAll();
}

TypeDesc::Kind TypeDesc::kind() const { return node_ ? node_->kind : Kind::kJson; }

const TypeDesc& TypeDesc::element() const {
  STELE_CHECK(kind() == Kind::kList || kind() == Kind::kOption,
              "TypeDesc::element: not a list/option");
  return node_->children[0];
}

const TypeDesc* TypeDesc::ok() const {
  STELE_CHECK(kind() == Kind::kResult, "TypeDesc::ok: not a result");
  return node_->ok ? &*node_->ok : nullptr;
}

const TypeDesc* TypeDesc::err() const {
  STELE_CHECK(kind() == Kind::kResult, "TypeDesc::err: not a result");
  return node_->err ? &*node_->err : nullptr;
}

const std::vector<TypeDesc>& TypeDesc::elements() const {
  STELE_CHECK(kind() == Kind::kTuple, "TypeDesc::elements: not a tuple");
  return node_->children;
}

const std::vector<TypeField>& TypeDesc::fields() const {
  STELE_CHECK(kind() == Kind::kRecord, "TypeDesc::fields: not a record");
  return node_->fields;
}

const std::vector<TypeCase>& TypeDesc::cases() const {
  STELE_CHECK(kind() == Kind::kVariant, "TypeDesc::cases: not a variant");
  return node_->cases;
}

const std::vector<std::string>& TypeDesc::names() const {
  STELE_CHECK(kind() == Kind::kEnum || kind() == Kind::kFlags,
              "TypeDesc::names: not an enum/flags");
  return node_->names;
}

std::string TypeDesc::ToString() const {
  switch (kind()) {
    case Kind::kList:
      return "list<" + element().ToString() + ">";
    case Kind::kOption:
      return "option<" + element().ToString() + ">";
    case Kind::kResult: {
      if (!ok() && !err()) return "result";
      std::string out = "result<" + (ok() ? ok()->ToString() : std::string("_"));
      if (err()) out += ", " + err()->ToString();
      return out + ">";
    }
    case Kind::kTuple: {
      std::string out = "tuple<";
      for (std::size_t i = 0; i < elements().size(); ++i) {
        out += (i ? ", " : "") + elements()[i].ToString();
      }
      return out + ">";
    }
    case Kind::kRecord: {
      std::string out = "record { ";
      for (std::size_t i = 0; i < fields().size(); ++i) {
        out += (i ? ", " : "") + fields()[i].name + ": " + fields()[i].type.ToString();
      }
      return out + " }";
    }
    case Kind::kVariant: {
      std::string out = "variant { ";
      for (std::size_t i = 0; i < cases().size(); ++i) {
        out += (i ? ", " : "") + cases()[i].name;
        if (cases()[i].payload) out += "(" + cases()[i].payload->ToString() + ")";
      }
      return out + " }";
    }
    case Kind::kEnum:
    case Kind::kFlags: {
      std::string out = kind() == Kind::kEnum ? "enum { " : "flags { ";
      for (std::size_t i = 0; i < names().size(); ++i) out += (i ? ", " : "") + names()[i];
      return out + " }";
    }
    default:
      return std::string(PrimitiveName(kind()));
  }
}

bool operator==(const TypeDesc& a, const TypeDesc& b) {
  if (a.kind() != b.kind()) return false;
  if (a.node_ == b.node_ || !a.node_ || !b.node_) return true;  // same tree, or both `json`
  const TypeDesc::Node& x = *a.node_;
  const TypeDesc::Node& y = *b.node_;
  return x.children == y.children && x.ok == y.ok && x.err == y.err && x.fields == y.fields &&
         x.cases == y.cases && x.names == y.names;
}

// ---------------------------------------------------------------------------
// Check: the JSON mapping of docs/types.md.

namespace {

constexpr std::size_t kMaxQuoted = 64;

std::string Got(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case Json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      if (s.size() <= kMaxQuoted)
        return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
      return Json(s.substr(0, kMaxQuoted)).dump(-1, ' ', false, Json::error_handler_t::replace) +
             "... (" + std::to_string(s.size()) + " bytes)";
    }
    case Json::value_t::array:
      return "an array of " + std::to_string(v.size());
    case Json::value_t::object:
      return "an object";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return v.dump();
    default:
      return "an unsupported JSON value";
  }
}

Unexpected<std::string> Mismatch(std::string_view path, std::string_view expected, const Json& v) {
  return Unexpected(std::string(path) + ": expected " + std::string(expected) + ", got " + Got(v));
}

bool IntegerInRange(const Json& v, std::int64_t min, std::uint64_t max) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() <= max;
  if (v.is_number_integer()) {
    std::int64_t x = v.get<std::int64_t>();
    return x >= min && (x < 0 || static_cast<std::uint64_t>(x) <= max);
  }
  return false;
}

// Number of Unicode scalar values in `s`, or -1 when `s` is not valid UTF-8
// (overlong forms, surrogates and values past U+10FFFF are invalid).
long CountScalars(std::string_view s) {
  long count = 0;
  std::size_t i = 0;
  while (i < s.size()) {
    auto b = static_cast<unsigned char>(s[i]);
    std::size_t len;
    std::uint32_t cp;
    if (b < 0x80) {
      len = 1;
      cp = b;
    } else if ((b & 0xe0) == 0xc0) {
      len = 2;
      cp = b & 0x1f;
    } else if ((b & 0xf0) == 0xe0) {
      len = 3;
      cp = b & 0x0f;
    } else if ((b & 0xf8) == 0xf0) {
      len = 4;
      cp = b & 0x07;
    } else {
      return -1;
    }
    if (i + len > s.size()) return -1;
    for (std::size_t k = 1; k < len; ++k) {
      auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xc0) != 0x80) return -1;
      cp = (cp << 6) | (c & 0x3f);
    }
    static constexpr std::uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
    i += len;
    ++count;
  }
  return count;
}

std::string Quote(const std::string& name) { return "`" + name + "`"; }

std::string OneOf(const std::vector<std::string>& names) {
  std::string out = "one of ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i == 8) return out + ", ...";
    out += (i ? ", " : "") + Json(names[i]).dump();
  }
  return out;
}

}  // namespace

Result<void, std::string> TypeDesc::Check(const Json& v, std::string_view path) const {
  using K = Kind;
  const std::string p(path);
  switch (kind()) {
    case K::kJson:
      return {};
    case K::kBool:
      if (!v.is_boolean()) return Mismatch(path, "bool", v);
      return {};
    case K::kS8:
    case K::kS16:
    case K::kS32:
    case K::kS64:
    case K::kU8:
    case K::kU16:
    case K::kU32:
    case K::kU64: {
      std::int64_t min = 0;
      std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
      switch (kind()) {
        case K::kS8:
          min = INT8_MIN;
          max = INT8_MAX;
          break;
        case K::kS16:
          min = INT16_MIN;
          max = INT16_MAX;
          break;
        case K::kS32:
          min = INT32_MIN;
          max = INT32_MAX;
          break;
        case K::kS64:
          min = INT64_MIN;
          max = INT64_MAX;
          break;
        case K::kU8:
          max = UINT8_MAX;
          break;
        case K::kU16:
          max = UINT16_MAX;
          break;
        case K::kU32:
          max = UINT32_MAX;
          break;
        default:
          break;
      }
      if (!IntegerInRange(v, min, max)) return Mismatch(path, PrimitiveName(kind()), v);
      return {};
    }
    case K::kF32:
    case K::kF64: {
      if (!v.is_number()) return Mismatch(path, PrimitiveName(kind()), v);
      if (v.is_number_float()) {
        double d = v.get<double>();
        if (!std::isfinite(d) || (kind() == K::kF32 && std::fabs(d) > FLT_MAX)) {
          return Mismatch(path, PrimitiveName(kind()), v);
        }
      }
      return {};
    }
    case K::kChar:
      if (!v.is_string() || CountScalars(v.get_ref<const std::string&>()) != 1) {
        return Mismatch(path, "char (a string of one Unicode scalar value)", v);
      }
      return {};
    case K::kString:
      if (!v.is_string()) return Mismatch(path, "string", v);
      if (CountScalars(v.get_ref<const std::string&>()) < 0) {
        return Unexpected(p + ": string is not valid UTF-8");
      }
      return {};
    case K::kList: {
      if (!v.is_array()) return Mismatch(path, "an array", v);
      for (std::size_t i = 0; i < v.size(); ++i) {
        STELE_TRY(element().Check(v[i], p + "[" + std::to_string(i) + "]"));
      }
      return {};
    }
    case K::kOption:
      if (v.is_null()) return {};
      return element().Check(v, path);
    case K::kResult: {
      if (!v.is_object() || v.size() != 1 || (!v.contains("ok") && !v.contains("err"))) {
        return Mismatch(path, R"({"ok": ...} or {"err": ...})", v);
      }
      bool is_ok = v.contains("ok");
      const TypeDesc* side = is_ok ? ok() : err();
      std::string side_path = p + (is_ok ? ".ok" : ".err");
      const Json& inner = v.begin().value();
      if (!side) {
        if (!inner.is_null()) return Mismatch(side_path, "null (no value)", inner);
        return {};
      }
      return side->Check(inner, side_path);
    }
    case K::kTuple: {
      const auto& types = elements();
      if (!v.is_array() || v.size() != types.size()) {
        return Mismatch(path, "an array of " + std::to_string(types.size()), v);
      }
      for (std::size_t i = 0; i < types.size(); ++i) {
        STELE_TRY(types[i].Check(v[i], p + "[" + std::to_string(i) + "]"));
      }
      return {};
    }
    case K::kRecord: {
      if (!v.is_object()) return Mismatch(path, "an object (record)", v);
      for (const auto& [key, value] : v.items()) {
        bool known = false;
        for (const auto& f : fields()) known = known || f.name == key;
        if (!known)
          return Unexpected(p + ": unknown field " +
                            Json(key).dump(-1, ' ', false, Json::error_handler_t::replace));
      }
      for (const auto& f : fields()) {
        auto it = v.find(f.name);
        if (it == v.end()) {
          if (f.type.kind() == K::kOption) continue;
          return Unexpected(p + ": missing field " + Quote(f.name));
        }
        STELE_TRY(f.type.Check(*it, p + "." + f.name));
      }
      return {};
    }
    case K::kEnum: {
      if (v.is_string()) {
        for (const auto& n : names()) {
          if (n == v.get_ref<const std::string&>()) return {};
        }
      }
      return Mismatch(path, OneOf(names()), v);
    }
    case K::kVariant: {
      const TypeCase* found = nullptr;
      const Json* payload = nullptr;
      std::string key;
      if (v.is_string()) {
        key = v.get<std::string>();
      } else if (v.is_object() && v.size() == 1) {
        key = v.begin().key();
        payload = &v.begin().value();
      } else {
        return Mismatch(path, R"("case" or {"case": payload})", v);
      }
      for (const auto& c : cases()) {
        if (c.name == key) found = &c;
      }
      if (!found) {
        std::vector<std::string> case_names;
        for (const auto& c : cases()) case_names.push_back(c.name);
        return Unexpected(p + ": unknown case " + Got(Json(key)) + ", expected " +
                          OneOf(case_names));
      }
      if (!found->payload) {
        if (payload && !payload->is_null()) {
          return Mismatch(p + "." + key, "null (case " + Quote(key) + " has no payload)", *payload);
        }
        return {};
      }
      if (!payload) {
        return Unexpected(p + ": case " + Quote(key) + " needs a payload: {\"" + key + "\": ...}");
      }
      return found->payload->Check(*payload, p + "." + key);
    }
    case K::kFlags: {
      if (!v.is_array()) return Mismatch(path, "an array of flag names", v);
      std::set<std::string> seen;
      for (std::size_t i = 0; i < v.size(); ++i) {
        std::string item_path = p + "[" + std::to_string(i) + "]";
        bool known = false;
        if (v[i].is_string()) {
          for (const auto& n : names()) known = known || n == v[i].get_ref<const std::string&>();
        }
        if (!known) return Mismatch(item_path, "a flag, " + OneOf(names()), v[i]);
        if (!seen.insert(v[i].get<std::string>()).second) {
          return Unexpected(item_path + ": duplicate flag " + Got(v[i]));
        }
      }
      return {};
    }
  }
  return Unexpected(p + ": unsupported type");
}

// ---------------------------------------------------------------------------
// Signatures.

Result<void, std::string> CheckParams(const FunctionSignature& signature, const Json& params) {
  const std::string fn = signature.ffqn.ToString();
  if (!params.is_array()) {
    return Unexpected(fn + ": params must be a JSON array, got " + Got(params));
  }
  if (params.size() != signature.params.size()) {
    return Unexpected(fn + ": expected " + std::to_string(signature.params.size()) +
                      " params, got " + std::to_string(params.size()));
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamSpec& spec = signature.params[i];
    auto checked = spec.type.Check(params[i], "params[" + std::to_string(i) + "]");
    if (!checked) return Unexpected("parameter " + Quote(spec.name) + ": " + checked.error());
  }
  return {};
}

namespace {

Result<void, std::string> CheckSide(const TypeDesc* side, const std::optional<Json>& value,
                                    std::string_view path) {
  if (!side) {
    if (value && !value->is_null()) return Mismatch(path, "no value", *value);
    return {};
  }
  return side->Check(value ? *value : Json(nullptr), path);
}

}  // namespace

Result<void, std::string> CheckReturnValue(const FunctionSignature& signature,
                                           const ReturnValueOk& value) {
  if (!signature.return_type) return {};
  const TypeDesc& type = *signature.return_type;
  if (type.kind() == TypeDesc::Kind::kResult) return CheckSide(type.ok(), value.ok, "return.ok");
  return type.Check(value.ok ? *value.ok : Json(nullptr), "return.ok");
}

Result<void, std::string> CheckReturnValue(const FunctionSignature& signature,
                                           const ReturnValueErr& value) {
  if (!signature.return_type || signature.return_type->kind() != TypeDesc::Kind::kResult) return {};
  return CheckSide(signature.return_type->err(), value.err, "return.err");
}

Json FunctionSignatureToJson(const FunctionSignature& signature) {
  Json params = Json::array();
  for (const auto& p : signature.params) {
    Json param = Json::object();
    param["name"] = p.name;
    param["type"] = p.type.ToString();
    params.push_back(std::move(param));
  }
  Json out = Json::object();
  out["ffqn"] = signature.ffqn.ToString();
  out["params"] = std::move(params);
  out["return_type"] =
      signature.return_type ? Json(signature.return_type->ToString()) : Json(nullptr);
  return out;
}

Result<FunctionSignature, std::string> FunctionSignatureFromJson(const Json& json) {
  if (!json.is_object())
    return Unexpected("function signature must be a JSON object, got " + Got(json));
  for (const auto& [key, value] : json.items()) {
    if (key != "ffqn" && key != "params" && key != "return_type") {
      return Unexpected("function signature: unknown key " + Got(Json(key)));
    }
  }
  auto ffqn_it = json.find("ffqn");
  if (ffqn_it == json.end() || !ffqn_it->is_string()) {
    return Unexpected("function signature: \"ffqn\" must be a string");
  }
  auto ffqn = FunctionFqn::Parse(ffqn_it->get<std::string>());
  if (!ffqn) return Unexpected("function signature: ffqn: " + ffqn.error().message);
  const std::string fn = ffqn->ToString();

  auto params_it = json.find("params");
  if (params_it == json.end() || !params_it->is_array()) {
    return Unexpected(fn + ": \"params\" must be an array");
  }
  std::vector<ParamSpec> params;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < params_it->size(); ++i) {
    const Json& param = (*params_it)[i];
    const std::string where = fn + ": params[" + std::to_string(i) + "]";
    if (!param.is_object() || param.size() != 2 || !param.contains("name") ||
        !param.contains("type") || !param["name"].is_string() || !param["type"].is_string()) {
      return Unexpected(where + ": expected {\"name\": string, \"type\": string}");
    }
    std::string name = param["name"].get<std::string>();
    if (!IsValidTypeName(name)) {
      return Unexpected(where + ": name " + Got(Json(name)) + " is not a kebab-case name");
    }
    if (!seen.insert(name).second) return Unexpected(where + ": duplicate name " + Quote(name));
    auto type = TypeDesc::Parse(param["type"].get<std::string>());
    if (!type) return Unexpected(where + " " + Quote(name) + ": type " + type.error());
    params.push_back(ParamSpec{std::move(name), std::move(*type)});
  }

  std::optional<TypeDesc> return_type;
  auto ret_it = json.find("return_type");
  if (ret_it != json.end() && !ret_it->is_null()) {
    if (!ret_it->is_string()) return Unexpected(fn + ": \"return_type\" must be a string or null");
    auto type = TypeDesc::Parse(ret_it->get<std::string>());
    if (!type) return Unexpected(fn + ": return_type: " + type.error());
    return_type = std::move(*type);
  }
  return FunctionSignature{std::move(*ffqn), std::move(params), std::move(return_type)};
}

}  // namespace stele::core
