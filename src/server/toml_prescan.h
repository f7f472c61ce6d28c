// A scan of TOML text before toml++ parses it: toml++ 3.3 (Debian 12) has
// undefined behaviour on some inputs that are errors anyway, so those are
// refused here with a line number. Pure functions; no state.
#pragma once

#include <string_view>

namespace stele::server {

// The line of the first non-ASCII byte outside a string or a comment, or
// 0. TOML allows non-ASCII only there, and toml++ 3.3 (Debian 12) reaches
// __builtin_unreachable() in is_non_ascii_horizontal_whitespace on such a
// character (U+00A1..U+0499) wherever it checks for whitespace: in a bare
// key, or in a malformed bare value (both found by tests/fuzz/config).
// Refuse it before the parser sees it. A quote opens a string only where
// a TOML token can start (line start, or after = [ { , .); elsewhere, as
// in `x = ab"""c`, toml++ reads it as part of a bare value, and so must
// this scan.
int LineOfNonAsciiOutsideStrings(std::string_view text);

}  // namespace stele::server
