// Text helpers shared by the ToString functions of core's value types
// (execution_event.cc, pending_state.cc). Not part of the public API.
//
// Threading: pure functions. Ownership: plain values.
#pragma once

#include <string>

#include "base/time.h"

namespace stele::core::display_internal {

// `t` as RFC 3339 between backticks: "`2026-01-01T00:00:00Z`".
//
// Built with reserve + append on purpose: the obvious
// "`" + FormatRfc3339(t) + "`" makes g++ 12 at -O3 report a false
// -Wrestrict inside the inlined operator+ (it cannot prove that the
// temporary and the literal do not overlap), which -Werror turns into a
// build failure of Release builds.
inline std::string BacktickQuoted(DateTime t) {
  const std::string text = FormatRfc3339(t);
  std::string quoted;
  quoted.reserve(text.size() + 2);
  quoted.push_back('`');
  quoted.append(text);
  quoted.push_back('`');
  return quoted;
}

}  // namespace stele::core::display_internal
