#include "core/function_fqn.h"

#include <gtest/gtest.h>

#include <string>

namespace stele::core {
namespace {

TEST(FunctionFqnTest, ParsesPlainAndVersionedNames) {
  auto plain = FunctionFqn::Parse("testing:fibo/fibo.fibo");
  ASSERT_TRUE(plain.has_value()) << plain.error().message;
  EXPECT_EQ(plain->ifc_fqn(), "testing:fibo/fibo");
  EXPECT_EQ(plain->function_name(), "fibo");
  EXPECT_EQ(plain->ToString(), "testing:fibo/fibo.fibo");

  // The version contains dots: the function is split off at the last one.
  auto versioned = FunctionFqn::Parse("wasi:cli/run@0.2.0.run");
  ASSERT_TRUE(versioned.has_value()) << versioned.error().message;
  EXPECT_EQ(versioned->ifc_fqn(), "wasi:cli/run@0.2.0");
  EXPECT_EQ(versioned->function_name(), "run");
  EXPECT_EQ(versioned->ToString(), "wasi:cli/run@0.2.0.run");

  for (std::string_view text :
       {"testing:fibo-obelisk-ext/fibo.fibo-submit", "a:b/c@1.2.3-rc.1+build.5.f_n",
        "ns1:p-2/i3.Fn_Name-2", "wasi:http/types@0.2.0-rc-2023-11-10.new-fields"}) {
    auto parsed = FunctionFqn::Parse(text);
    ASSERT_TRUE(parsed.has_value()) << text << ": " << parsed.error().message;
    EXPECT_EQ(parsed->ToString(), text);
  }
}

TEST(FunctionFqnTest, CreateValidatesBothHalves) {
  auto created = FunctionFqn::Create("wasi:cli/run@0.2.0", "run");
  ASSERT_TRUE(created.has_value());
  EXPECT_EQ(*created, *FunctionFqn::Parse("wasi:cli/run@0.2.0.run"));
  EXPECT_FALSE(FunctionFqn::Create("wasi:cli/run", "a.b").has_value());
  EXPECT_FALSE(FunctionFqn::Create("wasi:cli/run", "").has_value());
  EXPECT_FALSE(FunctionFqn::Create("wasi:cli", "run").has_value());
}

TEST(FunctionFqnTest, RejectsMalformed) {
  for (std::string_view text : {
           "",
           "run",
           ".run",
           "wasi:cli/run",          // no function
           "wasi:cli/run.",         // empty function
           "wasi:cli/run@0.2.0",    // the version's last dot is not a function separator
           "wasi:cli.run",          // no interface
           "cli/run.run",           // no namespace
           ":cli/run.run",          // empty namespace
           "wasi:/run.run",         // empty package
           "wasi:cli/.run",         // empty interface
           "Wasi:cli/run.run",      // upper case namespace
           "wasi:cli/Run.run",      // upper case interface
           "wasi:cli/run-.run",     // trailing dash
           "wasi:cli/r--un.run",    // double dash
           "wasi:cli/run/x.run",    // nested interface
           "wasi:c:li/run.run",     // two colons
           "wasi:cli/run@.run",     // empty version
           "wasi:cli/run@0.2.run",  // not semver
           "wasi:cli/run@01.2.0.run",
           "wasi:cli/run@0.2.0-.run",
           "wasi:cli/run@0.2.0@1.run",
           "wasi:cli/run.r un",
           "wasi:cli/run.r:un",
           "wasi:cli/r_un.run",
       }) {
    EXPECT_FALSE(FunctionFqn::Parse(text).has_value()) << text;
  }
}

TEST(FunctionFqnTest, ErrorNamesTheInput) {
  auto bad = FunctionFqn::Parse("wasi:cli/Run.run");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("wasi:cli/Run.run"), std::string::npos);
}

TEST(FunctionFqnTest, OrdersLexicographically) {
  EXPECT_LT(*FunctionFqn::Parse("a:b/c.d"), *FunctionFqn::Parse("a:b/c.e"));
}

}  // namespace
}  // namespace stele::core
