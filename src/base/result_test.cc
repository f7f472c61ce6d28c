#include "base/result.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace stele {
namespace {

// Two error families of different width, as in storage: a narrow one that
// converts implicitly into a wide one, and not back.
struct NarrowError {
  std::string reason;
};

struct WideError {
  enum class Kind { kNotFound, kGeneric };
  WideError(Kind k, std::string r) : kind(k), reason(std::move(r)) {}
  WideError(NarrowError e)  // NOLINT(google-explicit-constructor)
      : kind(Kind::kGeneric), reason(std::move(e.reason)) {}
  Kind kind;
  std::string reason;
};

static_assert(std::is_constructible_v<Result<int, WideError>, Unexpected<NarrowError>>);
static_assert(!std::is_constructible_v<Result<int, NarrowError>, Unexpected<WideError>>);
static_assert(std::is_copy_constructible_v<Result<std::string, WideError>>);
static_assert(std::is_move_constructible_v<Result<std::unique_ptr<int>, WideError>>);
static_assert(!std::is_copy_constructible_v<Result<std::unique_ptr<int>, WideError>>);
// A bare error never converts into a Result; it has to be wrapped.
static_assert(!std::is_convertible_v<WideError, Result<int, WideError>>);
static_assert(!std::is_convertible_v<NarrowError, Result<void, NarrowError>>);

Result<int, NarrowError> ParsePositive(int x) {
  if (x <= 0) return Unexpected(NarrowError{"not positive: " + std::to_string(x)});
  return x;
}

Result<void, NarrowError> CheckEven(int x) {
  if (x % 2 != 0) return Unexpected(NarrowError{"odd"});
  return {};
}

TEST(ResultTest, HoldsValue) {
  Result<int, NarrowError> r = 42;
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r.value(), 42);
  EXPECT_EQ(*r, 42);
  EXPECT_EQ(r.value_or(7), 42);
}

TEST(ResultTest, HoldsError) {
  Result<int, NarrowError> r = Unexpected(NarrowError{"bad"});
  ASSERT_FALSE(r.has_value());
  EXPECT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(r.error().reason, "bad");
  EXPECT_EQ(r.value_or(7), 7);
}

TEST(ResultTest, SameValueAndErrorTypeIsUnambiguous) {
  Result<std::string, std::string> ok = std::string("value");
  Result<std::string, std::string> err = Unexpected(std::string("error"));
  Result<std::string, std::string> from_literal = "literal";
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(*ok, "value");
  ASSERT_FALSE(err.has_value());
  EXPECT_EQ(err.error(), "error");
  EXPECT_EQ(*from_literal, "literal");
}

TEST(ResultTest, ConvertsValueFromConvertibleType) {
  Result<std::string, int> r = "hello";
  EXPECT_EQ(r->size(), 5u);
  Result<int64_t, std::string> wide = 3;  // int -> int64_t, E is unrelated.
  EXPECT_EQ(*wide, 3);
}

TEST(ResultTest, ConvertsErrorThroughUnexpected) {
  Result<int, WideError> r = Unexpected(NarrowError{"narrow"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, WideError::Kind::kGeneric);
  EXPECT_EQ(r.error().reason, "narrow");

  const Unexpected<NarrowError> lvalue(NarrowError{"copied"});
  Result<void, WideError> v = lvalue;
  EXPECT_EQ(v.error().reason, "copied");
  EXPECT_EQ(lvalue.error().reason, "copied");
}

TEST(ResultTest, MoveOnlyValue) {
  Result<std::unique_ptr<int>, NarrowError> r = std::make_unique<int>(5);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(**r, 5);
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 5);
  Result<std::unique_ptr<int>, NarrowError> moved = std::make_unique<int>(6);
  Result<std::unique_ptr<int>, NarrowError> target = std::move(moved);
  EXPECT_EQ(**target, 6);
}

TEST(ResultTest, CopyAndAssign) {
  Result<std::vector<int>, NarrowError> a = std::vector<int>{1, 2, 3};
  Result<std::vector<int>, NarrowError> b = a;
  EXPECT_EQ(b->size(), 3u);
  b = Unexpected(NarrowError{"now an error"});
  EXPECT_FALSE(b.has_value());
  b = a;
  EXPECT_EQ(*b, (std::vector<int>{1, 2, 3}));
}

TEST(ResultTest, ArrowOperator) {
  Result<std::string, NarrowError> r = std::string("abc");
  EXPECT_EQ(r->size(), 3u);
  const auto& cr = r;
  EXPECT_EQ(cr->front(), 'a');
}

TEST(ResultTest, ValueOrOnRvalueMovesValue) {
  Result<std::unique_ptr<int>, NarrowError> r = std::make_unique<int>(1);
  std::unique_ptr<int> p = std::move(r).value_or(nullptr);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 1);
  Result<std::unique_ptr<int>, NarrowError> e = Unexpected(NarrowError{"x"});
  EXPECT_EQ(std::move(e).value_or(nullptr), nullptr);
}

TEST(ResultTest, VoidResult) {
  Result<void, NarrowError> ok;
  EXPECT_TRUE(ok.has_value());
  EXPECT_TRUE(static_cast<bool>(ok));
  Result<void, NarrowError> err = Unexpected(NarrowError{"e"});
  EXPECT_FALSE(err.has_value());
  EXPECT_EQ(err.error().reason, "e");
  Result<void, NarrowError> copy = err;
  EXPECT_EQ(copy.error().reason, "e");
  EXPECT_EQ(std::move(copy).error().reason, "e");
}

TEST(ResultDeathTest, ValueOnErrorAborts) {
  Result<int, NarrowError> r = Unexpected(NarrowError{"bad"});
  EXPECT_DEATH(static_cast<void>(r.value()),
               "stele: Result: value accessed but the Result holds an error");
  EXPECT_DEATH(static_cast<void>(*r), "holds an error");
}

TEST(ResultDeathTest, ErrorOnValueAborts) {
  Result<int, NarrowError> r = 1;
  EXPECT_DEATH(static_cast<void>(r.error()),
               "stele: Result: error\\(\\) called but the Result holds a value");
  Result<void, NarrowError> v;
  EXPECT_DEATH(static_cast<void>(v.error()), "holds a value");
}

// --- Propagation macros ----------------------------------------------------

// STELE_TRY and STELE_ASSIGN_OR_RETURN from Narrow into Wide, value and void.
Result<int, WideError> SumOfPositiveEvens(int a, int b) {
  STELE_TRY(CheckEven(a));
  STELE_TRY(CheckEven(b));
  STELE_ASSIGN_OR_RETURN(auto x, ParsePositive(a));
  STELE_ASSIGN_OR_RETURN(int y, ParsePositive(b));
  return x + y;
}

TEST(ResultMacrosTest, PropagatesAcrossErrorTypes) {
  Result<int, WideError> ok = SumOfPositiveEvens(2, 4);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(*ok, 6);

  Result<int, WideError> odd = SumOfPositiveEvens(2, 3);
  ASSERT_FALSE(odd.has_value());
  EXPECT_EQ(odd.error().kind, WideError::Kind::kGeneric);
  EXPECT_EQ(odd.error().reason, "odd");

  Result<int, WideError> negative = SumOfPositiveEvens(-2, 4);
  ASSERT_FALSE(negative.has_value());
  EXPECT_EQ(negative.error().reason, "not positive: -2");
}

Result<void, WideError> AssignIntoExisting(int a, int* out) {
  int existing = 0;
  STELE_ASSIGN_OR_RETURN(existing, ParsePositive(a));
  STELE_ASSIGN_OR_RETURN(*out, ParsePositive(existing * 10));
  return {};
}

TEST(ResultMacrosTest, AssignsToExistingLvalues) {
  int out = 0;
  ASSERT_TRUE(AssignIntoExisting(3, &out).has_value());
  EXPECT_EQ(out, 30);
  out = -1;
  Result<void, WideError> r = AssignIntoExisting(0, &out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, "not positive: 0");
  EXPECT_EQ(out, -1);  // Untouched on error.
}

// Same error type end to end, and void results propagated by STELE_TRY into a
// function returning a value.
Result<std::string, NarrowError> Describe(int a) {
  STELE_TRY(CheckEven(a));
  STELE_ASSIGN_OR_RETURN(const auto& value, ParsePositive(a));
  return "even " + std::to_string(value);
}

TEST(ResultMacrosTest, SameErrorType) {
  EXPECT_EQ(*Describe(8), "even 8");
  EXPECT_EQ(Describe(7).error().reason, "odd");
  EXPECT_EQ(Describe(-4).error().reason, "not positive: -4");
}

Result<std::unique_ptr<int>, NarrowError> MakeBox(int x) {
  if (x < 0) return Unexpected(NarrowError{"negative box"});
  return std::make_unique<int>(x);
}

Result<int, WideError> Unbox(int x) {
  STELE_ASSIGN_OR_RETURN(std::unique_ptr<int> box, MakeBox(x));
  // A comma in the declaration needs parentheses around it.
  STELE_ASSIGN_OR_RETURN((std::pair<int, int> pair),
                         Result<std::pair<int, int>, NarrowError>(std::pair<int, int>{*box, 1}));
  return pair.first + pair.second;
}

TEST(ResultMacrosTest, MoveOnlyValuesAndParenthesizedDeclarations) {
  EXPECT_EQ(*Unbox(4), 5);
  EXPECT_EQ(Unbox(-1).error().reason, "negative box");
}

Result<int, WideError> ConsumeNamedResult(Result<std::unique_ptr<int>, NarrowError> named) {
  STELE_ASSIGN_OR_RETURN(auto box, named);  // Moves out of `named`.
  return *box;
}

TEST(ResultMacrosTest, AcceptsNamedResults) {
  EXPECT_EQ(*ConsumeNamedResult(MakeBox(9)), 9);
  EXPECT_EQ(ConsumeNamedResult(MakeBox(-9)).error().reason, "negative box");
}

TEST(ResultMacrosTest, EvaluatesExpressionOnce) {
  int calls = 0;
  auto counted = [&calls]() -> Result<int, NarrowError> {
    ++calls;
    return 1;
  };
  auto body = [&]() -> Result<int, NarrowError> {
    STELE_TRY(counted());
    STELE_ASSIGN_OR_RETURN(int v, counted());
    return v;
  };
  EXPECT_EQ(*body(), 1);
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace stele
