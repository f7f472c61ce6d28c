// stele/source_location.h — SourceLocation: std::source_location where the standard library has it.
// libstdc++ 12 provides it only with __builtin_source_location (g++ 12,
// clang 15+); clang 14 (the libFuzzer build, tests/fuzz) gets this small
// stand-in built on the __builtin_FILE/LINE/FUNCTION that clang 14 has.
// Threading: a plain value.
#pragma once

#include <version>

#if defined(__cpp_lib_source_location)
#include <source_location>
#endif

namespace stele {

#if defined(__cpp_lib_source_location)
using SourceLocation = std::source_location;
#else
class SourceLocation {
 public:
  static constexpr SourceLocation current(const char* file = __builtin_FILE(),
                                          const char* function = __builtin_FUNCTION(),
                                          unsigned line = __builtin_LINE()) noexcept {
    SourceLocation loc;
    loc.file_ = file;
    loc.function_ = function;
    loc.line_ = line;
    return loc;
  }
  constexpr SourceLocation() noexcept = default;
  constexpr unsigned line() const noexcept { return line_; }
  constexpr unsigned column() const noexcept { return 0; }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  unsigned line_ = 0;
};
#endif

}  // namespace stele
