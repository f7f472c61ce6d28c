// stele/result.h — Result<T, E>: a value or an error, the one
// error-handling type of Stele, in its public API and inside it.
//
// The shape and the member names follow C++23 std::expected (has_value,
// value, error, operator*, operator->, value_or), so that Result can become an
// alias of std::expected once both supported compilers offer it in our
// language mode (g++ 12 only has it under -std=c++23, clang 14 not at all).
//
// Differences from std::expected, all deliberate:
//   - Misuse (value() on an error, error() on a value, * or -> on an error)
//     is a programmer error and aborts with a message on stderr; no
//     exception is ever thrown. All accessors are checked, not only value():
//     one predictable branch is nothing next to what a durable engine does per
//     call, and reading the wrong variant member would be undefined behaviour.
//   - Construction from Unexpected<G> is implicit whenever E is constructible
//     from G, so that STELE_TRY can widen a narrow error (say DbErrorGeneric)
//     into the caller's wider one (DbErrorWrite) without ceremony. Error
//     families that must not convert silently simply must not be
//     constructible from each other.
//
// Errors are made with Unexpected, exactly as with std::expected:
//
//   Result<Version, DbErrorWrite> Append(...) {
//     if (!found) return Unexpected(DbErrorWrite::NotFound());
//     STELE_TRY(CheckNotFinished(...));                 // Result<void, G>
//     STELE_ASSIGN_OR_RETURN(auto log, ReadLog(...));    // Result<Log, G>
//     return log.next_version;
//   }
//
// Threading: a Result is a plain value; as with any standard type, concurrent
// const access is safe and anything else needs external synchronisation.
// Ownership: a Result owns its value or its error.

#pragma once

#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>
#include <variant>

namespace stele {

namespace internal {
// Accessing the wrong side of a Result is a programmer error.
[[noreturn]] inline void ResultMisuse(const char* what) {
  std::fprintf(stderr, "stele: %s\n", what);
  std::abort();
}
}  // namespace internal

// Wraps an error so that it can be told apart from a value when a Result is
// built, even when T and E are the same or convertible types.
template <class E>
class Unexpected {
  static_assert(std::is_object_v<E> && !std::is_array_v<E> && !std::is_const_v<E> &&
                    !std::is_volatile_v<E>,
                "Unexpected<E> requires a non-const, non-array object type");

 public:
  explicit Unexpected(E error) : error_(std::move(error)) {}

  E& error() & noexcept { return error_; }
  const E& error() const& noexcept { return error_; }
  E&& error() && noexcept { return std::move(error_); }

 private:
  E error_;
};

template <class E>
Unexpected(E) -> Unexpected<E>;

namespace internal {

template <class T>
inline constexpr bool kIsUnexpected = false;
template <class E>
inline constexpr bool kIsUnexpected<Unexpected<E>> = true;

// U initialises the value of the Result type R: it is neither R itself (that
// is copy/move construction) nor an Unexpected (that is an error).
template <class U, class R>
concept ValueInitializer =
    !std::is_same_v<std::remove_cvref_t<U>, R> && !kIsUnexpected<std::remove_cvref_t<U>> &&
    std::is_constructible_v<typename R::value_type, U>;

}  // namespace internal

template <class T, class E>
class [[nodiscard]] Result {
  static_assert(std::is_object_v<T> && !std::is_array_v<T>,
                "Result<T, E> requires T to be void or a non-array object type");
  static_assert(!internal::kIsUnexpected<std::remove_cv_t<T>>,
                "Result<Unexpected<...>, E> is not meaningful");
  static_assert(std::is_object_v<E> && !std::is_array_v<E> && !std::is_const_v<E>,
                "Result<T, E> requires E to be a non-const, non-array object type");

 public:
  using value_type = T;
  using error_type = E;

  // A success holding `value`. Implicit when U converts to T, so that
  // `return value;` works in a function returning Result. Errors never come
  // through here (they need Unexpected), so this cannot be ambiguous with E
  // even when E is constructible from U.
  template <internal::ValueInitializer<Result> U = T>
  explicit(!std::is_convertible_v<U, T>) Result(U&& value)
      : storage_(std::in_place_index<kValue>, std::forward<U>(value)) {}

  // A failure. Implicit whenever E is constructible from G; see the file
  // comment for why this is wider than std::expected.
  template <class G>
  Result(const Unexpected<G>& unexpected)  // NOLINT(google-explicit-constructor)
      requires std::is_constructible_v<E, const G&>
      : storage_(std::in_place_index<kError>, unexpected.error()) {}

  template <class G>
  Result(Unexpected<G>&& unexpected)  // NOLINT(google-explicit-constructor)
      requires std::is_constructible_v<E, G>
      : storage_(std::in_place_index<kError>, std::move(unexpected).error()) {}

  bool has_value() const noexcept { return storage_.index() == kValue; }
  explicit operator bool() const noexcept { return has_value(); }

  // REQUIRES: has_value(); aborts otherwise.
  T& value() & { return *ValuePtr(); }
  const T& value() const& { return *ValuePtr(); }
  T&& value() && { return std::move(*ValuePtr()); }

  // REQUIRES: has_value(); aborts otherwise.
  T& operator*() & { return *ValuePtr(); }
  const T& operator*() const& { return *ValuePtr(); }
  T&& operator*() && { return std::move(*ValuePtr()); }
  T* operator->() { return ValuePtr(); }
  const T* operator->() const { return ValuePtr(); }

  // REQUIRES: !has_value(); aborts otherwise.
  E& error() & { return *ErrorPtr(); }
  const E& error() const& { return *ErrorPtr(); }
  E&& error() && { return std::move(*ErrorPtr()); }

  // The value, or `default_value` converted to T when this holds an error.
  template <class U>
  T value_or(U&& default_value) const& {
    static_assert(std::is_copy_constructible_v<T> && std::is_convertible_v<U, T>,
                  "value_or() const& requires a copyable T and a U convertible to T");
    if (has_value()) return *std::get_if<kValue>(&storage_);
    return static_cast<T>(std::forward<U>(default_value));
  }
  template <class U>
  T value_or(U&& default_value) && {
    static_assert(std::is_move_constructible_v<T> && std::is_convertible_v<U, T>,
                  "value_or() && requires a movable T and a U convertible to T");
    if (has_value()) return std::move(*std::get_if<kValue>(&storage_));
    return static_cast<T>(std::forward<U>(default_value));
  }

 private:
  // Indices rather than types into the variant: T and E may be the same type.
  static constexpr std::size_t kValue = 0;
  static constexpr std::size_t kError = 1;

  T* ValuePtr() {
    if (!has_value()) [[unlikely]] {
      internal::ResultMisuse("Result: value accessed but the Result holds an error");
    }
    return std::get_if<kValue>(&storage_);
  }
  const T* ValuePtr() const {
    if (!has_value()) [[unlikely]] {
      internal::ResultMisuse("Result: value accessed but the Result holds an error");
    }
    return std::get_if<kValue>(&storage_);
  }
  E* ErrorPtr() {
    if (has_value()) [[unlikely]] {
      internal::ResultMisuse("Result: error() called but the Result holds a value");
    }
    return std::get_if<kError>(&storage_);
  }
  const E* ErrorPtr() const {
    if (has_value()) [[unlikely]] {
      internal::ResultMisuse("Result: error() called but the Result holds a value");
    }
    return std::get_if<kError>(&storage_);
  }

  std::variant<T, E> storage_;
};

// "Success or error" with nothing to return on success.
template <class E>
class [[nodiscard]] Result<void, E> {
  static_assert(std::is_object_v<E> && !std::is_array_v<E> && !std::is_const_v<E>,
                "Result<void, E> requires E to be a non-const, non-array object type");

 public:
  using value_type = void;
  using error_type = E;

  // Success.
  Result() = default;

  template <class G>
  Result(const Unexpected<G>& unexpected)  // NOLINT(google-explicit-constructor)
      requires std::is_constructible_v<E, const G&>
      : storage_(std::in_place_index<kError>, unexpected.error()) {}

  template <class G>
  Result(Unexpected<G>&& unexpected)  // NOLINT(google-explicit-constructor)
      requires std::is_constructible_v<E, G>
      : storage_(std::in_place_index<kError>, std::move(unexpected).error()) {}

  bool has_value() const noexcept { return storage_.index() == kValue; }
  explicit operator bool() const noexcept { return has_value(); }

  // REQUIRES: !has_value(); aborts otherwise.
  E& error() & { return *ErrorPtr(); }
  const E& error() const& { return *ErrorPtr(); }
  E&& error() && { return std::move(*ErrorPtr()); }

 private:
  static constexpr std::size_t kValue = 0;
  static constexpr std::size_t kError = 1;

  E* ErrorPtr() {
    if (has_value()) [[unlikely]] {
      internal::ResultMisuse("Result: error() called but the Result holds a value");
    }
    return std::get_if<kError>(&storage_);
  }
  const E* ErrorPtr() const {
    if (has_value()) [[unlikely]] {
      internal::ResultMisuse("Result: error() called but the Result holds a value");
    }
    return std::get_if<kError>(&storage_);
  }

  std::variant<std::monostate, E> storage_;
};

}  // namespace stele

// ---------------------------------------------------------------------------
// Propagation macros, after abseil's status_macros.h. Use no other helpers.
//
// Both work in any function returning a Result<U, F> (U may be void) where F
// is constructible from the error type G of the Result they inspect; the
// error is moved out and converted G -> F by Result's Unexpected constructor.
// Both consume `expr`: if it names a variable, that variable is moved from.
//
// STELE_TRY(expr)
//   `expr` is a Result<X, G> (X may be void). On error, returns it from the
//   enclosing function; otherwise discards the value.
//
// STELE_ASSIGN_OR_RETURN(lhs, expr)
//   `expr` is a Result<X, G>. On error, returns it from the enclosing
//   function; otherwise moves the value into `lhs`, which may be a new
//   declaration (`auto x`, `Version v`, `const auto& x`) or an existing
//   lvalue (`x`, `out->field`). If `lhs` itself contains a top-level comma,
//   wrap it in parentheses: STELE_ASSIGN_OR_RETURN((std::pair<A, B> p), F()).
//   Expands to several statements (it declares a hidden temporary in the
//   current scope), so it cannot be the body of an unbraced if/for/while.
// ---------------------------------------------------------------------------

#define STELE_TRY(...) \
  STELE_INTERNAL_TRY_IMPL(STELE_INTERNAL_CONCAT(stele_try_tmp_, __COUNTER__), __VA_ARGS__)

#define STELE_ASSIGN_OR_RETURN(lhs, ...)                                                           \
  STELE_INTERNAL_ASSIGN_OR_RETURN_IMPL(STELE_INTERNAL_CONCAT(stele_assign_tmp_, __COUNTER__), lhs, \
                                       __VA_ARGS__)

// Implementation details below; do not use directly.

#define STELE_INTERNAL_CONCAT_IMPL(a, b) a##b
#define STELE_INTERNAL_CONCAT(a, b) STELE_INTERNAL_CONCAT_IMPL(a, b)

#define STELE_INTERNAL_TRY_IMPL(tmp, ...)                 \
  do {                                                    \
    auto&& tmp = (__VA_ARGS__);                           \
    if (!tmp.has_value()) [[unlikely]] {                  \
      return ::stele::Unexpected(std::move(tmp).error()); \
    }                                                     \
  } while (false)

#define STELE_INTERNAL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, ...) \
  auto&& tmp = (__VA_ARGS__);                               \
  if (!tmp.has_value()) [[unlikely]] {                      \
    return ::stele::Unexpected(std::move(tmp).error());     \
  }                                                         \
  STELE_INTERNAL_UNPAREN(lhs) = *std::move(tmp)

// STELE_INTERNAL_UNPAREN((a, b)) is `a, b`; STELE_INTERNAL_UNPAREN(a) is `a`.
// If the argument starts with a parenthesis, STELE_INTERNAL_UNPAREN_PROBE
// consumes it; either way the probe's name is then pasted onto a prefix that
// expands to nothing.
#define STELE_INTERNAL_UNPAREN(x) STELE_INTERNAL_UNPAREN_APPLY(STELE_INTERNAL_UNPAREN_PROBE x)
#define STELE_INTERNAL_UNPAREN_PROBE(...) STELE_INTERNAL_UNPAREN_PROBE __VA_ARGS__
#define STELE_INTERNAL_UNPAREN_APPLY(...) STELE_INTERNAL_UNPAREN_PASTE(__VA_ARGS__)
#define STELE_INTERNAL_UNPAREN_PASTE(...) STELE_INTERNAL_UNPAREN_DROP_##__VA_ARGS__
#define STELE_INTERNAL_UNPAREN_DROP_STELE_INTERNAL_UNPAREN_PROBE
