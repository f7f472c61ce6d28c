// A scan of TOML text before toml++ parses it: toml++ 3.3 (Debian 12) has
// undefined behaviour on some inputs, so those are refused here with a line
// number and a reason. Pure functions; no state.
//
// The hazard: is_non_ascii_horizontal_whitespace reaches
// __builtin_unreachable() for U+00A1..U+0499, U+2CDE..U+30D7 and
// U+FB26..U+FEFE (all but the few real whitespace code points of those
// ranges), and toml++ asks it about the character at hand wherever it
// skips or checks for whitespace:
//   - in code (outside strings and comments): after a key, in a bare value,
//     wherever whitespace may be. TOML allows non-ASCII only in strings and
//     comments, so any non-ASCII byte in code is refused;
//   - after a backslash in a basic string (an escape must be ASCII anyway);
//   - at the first character after a line-ending backslash of a multi-line
//     basic string and the whitespace it trims. That one is valid TOML and
//     still refused; `\u00E9` in its place reads the same.
// Found by tests/fuzz/config (its UBSan build reports the unreachable).
//
// Strings are found as toml++ finds them: a quote opens a string only where
// a key or a value starts (line start, after `=`, a `.` between keys, `[`,
// `{` and `,` in arrays and inline tables); a bare value runs, quotes, dots
// and brackets included, up to a value terminator (whitespace, `,`, `]`,
// `}`, `#`), so `x = -a.b["c` holds no string.
#pragma once

#include <optional>
#include <string_view>

namespace stele::server {

struct TomlHazard {
  int line = 0;
  std::string_view reason;  // a static string
};

// The first input toml++ 3.3 must not see, or nullopt.
std::optional<TomlHazard> FindTomlHazard(std::string_view text);

}  // namespace stele::server
