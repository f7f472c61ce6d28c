#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace stele::internal {

void CheckFailed(const char* file, int line, const char* condition,
                 std::string_view message) noexcept {
  // Plain stdio rather than the logging facade: a check may fire inside the
  // logger or during static destruction, and this path must not depend on
  // anything that could itself be broken.
  std::fprintf(stderr, "%s:%d: check failed: %s: %.*s\n", file, line, condition,
               static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace stele::internal
