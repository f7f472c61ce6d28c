// The function type model: WIT-like type strings for the parameters and the
// return type of functions (workflows and activities), their JSON mapping and
// the type check of submitted values. docs/types.md is the user-facing
// description of the grammar and of the JSON mapping; keep them in sync.
//
//   auto t = TypeDesc::Parse("record { id: u64, tags: list<string> }");
//   STELE_TRY(t->Check(value, "params[0]"));
//
// Type strings come from operators (server config, wasm exports) and from API
// callers, so Parse treats them as hostile: bounded length and nesting depth,
// every error names the byte offset. Check is bounded by the type's depth
// (the `json` type is never descended into).
//
// Threading: a TypeDesc is an immutable value; copies share the tree, so any
// number of threads may use it concurrently. Ownership: plain values.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "core/function_fqn.h"
#include "core/json.h"
#include "core/return_value.h"

namespace stele::core {

struct TypeField;
struct TypeCase;

class TypeDesc {
 public:
  enum class Kind {
    kBool,
    kS8,
    kS16,
    kS32,
    kS64,
    kU8,
    kU16,
    kU32,
    kU64,
    kF32,
    kF64,
    kChar,
    kString,
    kList,
    kOption,
    kResult,
    kTuple,
    kRecord,
    kEnum,
    kVariant,
    kFlags,
    kJson,  // any JSON value, unchecked
  };

  // Hostile-input guards of Parse.
  static constexpr std::size_t kMaxLength = 16 * 1024;  // bytes of the type string
  static constexpr int kMaxDepth = 64;                  // nested list/option/result/...

  // The `json` type (any value). Exists so that TypeDesc is a regular value
  // type (vectors, aggregates); real types come from Parse.
  TypeDesc();

  // Parses a type string (grammar in docs/types.md). Errors read
  // "at byte 12: expected '>', found ','".
  static Result<TypeDesc, std::string> Parse(std::string_view text);

  // Canonical form: single spaces after ',' and ':', "record { a: u8 }",
  // "result<_, string>". Parse(ToString()) == *this.
  std::string ToString() const;

  Kind kind() const;

  // kList, kOption: the element type. REQUIRES: that kind.
  const TypeDesc& element() const;
  // kResult: the ok / err type, nullptr when that side carries no value.
  const TypeDesc* ok() const;
  const TypeDesc* err() const;
  // kTuple: the element types (at least one).
  const std::vector<TypeDesc>& elements() const;
  // kRecord: the fields in declaration order (at least one, distinct names).
  const std::vector<TypeField>& fields() const;
  // kVariant: the cases (at least one, distinct names).
  const std::vector<TypeCase>& cases() const;
  // kEnum, kFlags: the case / flag names (at least one, distinct).
  const std::vector<std::string>& names() const;

  // Checks that `value` is a valid JSON encoding of this type (mapping in
  // docs/types.md). `path` names the value in errors:
  //   "params[1][3]: expected u8, got 300".
  Result<void, std::string> Check(const Json& value, std::string_view path = "value") const;

  friend bool operator==(const TypeDesc& a, const TypeDesc& b);

  struct Node;  // defined in function_type.cc

 private:
  explicit TypeDesc(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  friend class TypeParser;
  std::shared_ptr<const Node> node_;  // null means `json`
};

struct TypeField {
  std::string name;
  TypeDesc type;
  friend bool operator==(const TypeField&, const TypeField&) = default;
};

struct TypeCase {
  std::string name;
  std::optional<TypeDesc> payload;  // nullopt: a case without payload
  friend bool operator==(const TypeCase&, const TypeCase&) = default;
};

// True for WIT names: kebab-case words, each word all lower or all upper
// case letters and digits, starting with a letter ("a-b2", "HTTP-get").
bool IsValidTypeName(std::string_view name);

struct ParamSpec {
  std::string name;  // kebab-case, unique within a signature
  TypeDesc type;
  friend bool operator==(const ParamSpec&, const ParamSpec&) = default;
};

// What a function accepts and returns. return_type nullopt: the function's
// values are not checked (and the listing shows null).
struct FunctionSignature {
  FunctionFqn ffqn;
  std::vector<ParamSpec> params;
  std::optional<TypeDesc> return_type;
  friend bool operator==(const FunctionSignature&, const FunctionSignature&) = default;
};

// `params` must be a JSON array of exactly the signature's arity whose
// elements check against the parameter types. Errors name the parameter:
//   "parameter `items`: params[1][3]: expected u8, got 300".
Result<void, std::string> CheckParams(const FunctionSignature& signature, const Json& params);

// Checks a function's own return value against the declared return type.
// A `result<T, E>` return type checks an ok value against T and an err value
// against E (a side without a type requires no value, i.e. absent or null);
// any other return type checks only ok values, against the whole type. No
// declared return type: everything passes.
Result<void, std::string> CheckReturnValue(const FunctionSignature& signature,
                                           const ReturnValueOk& value);
Result<void, std::string> CheckReturnValue(const FunctionSignature& signature,
                                           const ReturnValueErr& value);

// {"ffqn": "ns:pkg/ifc.fn", "params": [{"name": "a", "type": "u8"}],
//  "return_type": "result<string>" | null}; types in canonical form.
Json FunctionSignatureToJson(const FunctionSignature& signature);
// The inverse; validates the ffqn, the types, the parameter names (kebab-case,
// distinct) and rejects unknown keys. "return_type" may be absent or null.
Result<FunctionSignature, std::string> FunctionSignatureFromJson(const Json& json);

}  // namespace stele::core
