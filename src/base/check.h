// Always-on and debug-only assertions for programmer errors.
//
// A failed check means the program itself is wrong (a broken invariant or a
// violated precondition), not that the outside world misbehaved: those cases
// are returned as `stele::Result` errors instead. Continuing after a broken
// invariant in a durable engine risks writing a corrupt event log, so a failed
// check prints where and why to stderr and calls std::abort().
//
//   STELE_CHECK(cond, msg)   evaluated in every build.
//   STELE_ASSERT(cond, msg)  evaluated only when NDEBUG is not defined. In
//                            release builds neither argument is evaluated,
//                            but both must still compile.
//
// `msg` is anything convertible to std::string_view (a literal, a
// std::string). It is evaluated only when the check fails.
//
// Threading: safe to use from any thread.

#ifndef STELE_BASE_CHECK_H_
#define STELE_BASE_CHECK_H_

#include <string_view>

namespace stele::internal {

// Prints "file:line: check failed: condition: message" to stderr and aborts.
// Out of line so that the failure path adds only a call to each check site.
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              std::string_view message) noexcept;

}  // namespace stele::internal

#define STELE_CHECK(cond, msg)                                          \
  do {                                                                  \
    if (!(cond)) [[unlikely]] {                                         \
      ::stele::internal::CheckFailed(__FILE__, __LINE__, #cond, (msg)); \
    }                                                                   \
  } while (false)

#ifdef NDEBUG
// `if (false)` keeps the arguments type-checked (and their variables "used")
// without evaluating them.
#define STELE_ASSERT(cond, msg) \
  do {                          \
    if (false) {                \
      static_cast<void>(cond);  \
      static_cast<void>(msg);   \
    }                           \
  } while (false)
#else
#define STELE_ASSERT(cond, msg) STELE_CHECK(cond, msg)
#endif

#endif  // STELE_BASE_CHECK_H_
