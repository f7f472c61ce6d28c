// FunctionFqn: fully qualified function name `ns:pkg/ifc.fn` or
// `ns:pkg/ifc@1.2.0.fn` (the interface may carry a version, so the function
// name is split off at the last '.').
#pragma once

#include <compare>
#include <string>
#include <string_view>

#include "base/result.h"
#include "core/ids.h"

namespace stele::core {

class FunctionFqn {
 public:
  // Validates both halves: interface `ns:pkg/ifc[@semver]` (namespace, package
  // and interface of [a-z0-9-] words, lower kebab case), function name
  // non-empty, without '.', of [A-Za-z0-9_-].
  static Result<FunctionFqn, IdParseError> Create(std::string ifc_fqn, std::string function_name);
  static Result<FunctionFqn, IdParseError> Parse(std::string_view text);

  const std::string& ifc_fqn() const { return ifc_fqn_; }
  const std::string& function_name() const { return function_name_; }
  std::string ToString() const { return ifc_fqn_ + "." + function_name_; }

  friend bool operator==(const FunctionFqn&, const FunctionFqn&) = default;
  friend auto operator<=>(const FunctionFqn&, const FunctionFqn&) = default;

 private:
  FunctionFqn(std::string ifc, std::string fn)
      : ifc_fqn_(std::move(ifc)), function_name_(std::move(fn)) {}
  std::string ifc_fqn_;
  std::string function_name_;
};

}  // namespace stele::core
