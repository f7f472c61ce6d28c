#include "core/function_fqn.h"

#include <string>

namespace stele::core {
namespace {

Unexpected<IdParseError> FfqnError(std::string_view text, std::string_view reason) {
  return Unexpected(
      IdParseError{"invalid function name `" + std::string(text) + "`: " + std::string(reason)});
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Lower kebab case: words of [a-z0-9] joined by single '-'.
bool IsKebabLabel(std::string_view text) {
  if (text.empty() || text.front() == '-' || text.back() == '-') return false;
  char previous = 0;
  for (char c : text) {
    if (c == '-') {
      if (previous == '-') return false;
    } else if (!IsLowerAlnum(c)) {
      return false;
    }
    previous = c;
  }
  return true;
}

// A numeric semver part: digits without a leading zero.
bool IsNumericPart(std::string_view text) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return false;
  for (char c : text) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

// Dot-separated non-empty identifiers of [0-9A-Za-z-] (semver pre-release
// and build metadata).
bool IsDotIdentifiers(std::string_view text) {
  if (text.empty()) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = text.find('.', start);
    const std::string_view part = text.substr(start, dot - start);
    if (part.empty()) return false;
    for (char c : part) {
      if (!IsAlnum(c) && c != '-') return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// MAJOR.MINOR.PATCH[-pre][+build], as WIT package versions are semver.
bool IsSemver(std::string_view text) {
  const size_t plus = text.find('+');
  if (plus != std::string_view::npos) {
    if (!IsDotIdentifiers(text.substr(plus + 1))) return false;
    text = text.substr(0, plus);
  }
  const size_t dash = text.find('-');
  if (dash != std::string_view::npos) {
    if (!IsDotIdentifiers(text.substr(dash + 1))) return false;
    text = text.substr(0, dash);
  }
  for (int i = 0; i < 2; ++i) {
    const size_t dot = text.find('.');
    if (dot == std::string_view::npos || !IsNumericPart(text.substr(0, dot))) return false;
    text = text.substr(dot + 1);
  }
  return IsNumericPart(text);
}

// `ns:pkg/ifc[@semver]`; returns the reason when invalid.
std::optional<std::string_view> ValidateIfcFqn(std::string_view ifc) {
  std::string_view version;
  if (const size_t at = ifc.find('@'); at != std::string_view::npos) {
    version = ifc.substr(at + 1);
    ifc = ifc.substr(0, at);
    if (!IsSemver(version)) return "interface version is not semver";
  }
  const size_t colon = ifc.find(':');
  if (colon == std::string_view::npos) return "expected `namespace:package/interface`";
  const size_t slash = ifc.find('/', colon);
  if (slash == std::string_view::npos) return "expected `namespace:package/interface`";
  if (!IsKebabLabel(ifc.substr(0, colon))) return "namespace is not lower kebab case";
  if (!IsKebabLabel(ifc.substr(colon + 1, slash - colon - 1))) {
    return "package is not lower kebab case";
  }
  if (!IsKebabLabel(ifc.substr(slash + 1))) return "interface is not lower kebab case";
  return std::nullopt;
}

bool IsValidFunctionName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!IsAlnum(c) && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace

Result<FunctionFqn, IdParseError> FunctionFqn::Create(std::string ifc_fqn,
                                                      std::string function_name) {
  if (const auto reason = ValidateIfcFqn(ifc_fqn)) {
    return FfqnError(ifc_fqn + "." + function_name, *reason);
  }
  if (!IsValidFunctionName(function_name)) {
    return FfqnError(ifc_fqn + "." + function_name,
                     "function name must be non-empty [A-Za-z0-9_-]");
  }
  return FunctionFqn(std::move(ifc_fqn), std::move(function_name));
}

Result<FunctionFqn, IdParseError> FunctionFqn::Parse(std::string_view text) {
  // The last '.' separates the function: versions contain dots, function
  // names never do.
  const size_t dot = text.rfind('.');
  if (dot == std::string_view::npos) return FfqnError(text, "expected `<interface>.<function>`");
  return Create(std::string(text.substr(0, dot)), std::string(text.substr(dot + 1)));
}

}  // namespace stele::core
