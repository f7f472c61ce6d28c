// Runs the example guests of examples/wasm (C and C++ workflows, wasi-libc
// activities in C and C++) end to end, so that the examples stay working.
// The examples written in both languages run once per language (the C++
// file is the C one's name + "_cpp").
#include <gtest/gtest.h>

#include <string>

#include "runtime/wasm_host/wasm_host_test_util.h"

namespace stele::runtime::wasm_host::testing {
namespace {

using core::Json;

std::string Example(const char* name) {
  return std::string(STELE_EXAMPLES_WASM_DIR) + "/" + name + "_t.wasm";
}

std::shared_ptr<const WasmComponent> Load(const char* name, GuestKind kind) {
  return LoadOrDie(Example(name).c_str(), name, kind);
}

class WasmExamplesTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override {
    env_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::filesystem::path dir_;
  std::unique_ptr<Env> env_;
};

// Parameter: "" for the C example, "_cpp" for its C++ version.
class WasmExamplesByLanguageTest : public WasmExamplesTest,
                                   public ::testing::WithParamInterface<const char*> {
 protected:
  std::shared_ptr<const WasmComponent> LoadIn(const std::string& name, GuestKind kind) {
    return Load((name + GetParam()).c_str(), kind);
  }
};

INSTANTIATE_TEST_SUITE_P(Languages, WasmExamplesByLanguageTest, ::testing::Values("", "_cpp"),
                         [](const ::testing::TestParamInfo<const char*>& language) {
                           return std::string(language.param).empty() ? std::string("C")
                                                                      : std::string("Cpp");
                         });

// The C workflow with hello's activity in C, then in C++.
TEST_P(WasmExamplesByLanguageTest, Hello) {
  EnvConfig config;
  config.workflows = Load("hello_workflow", GuestKind::kWorkflow);
  config.activities = LoadIn("hello_activity", GuestKind::kActivity);
  env_ = std::make_unique<Env>(dir_, std::move(config));
  auto id = env_->Submit("demo:hello/api.welcome", Json::array({"Ada"}));
  EXPECT_EQ(env_->Await(id),
            core::SupportedFunctionReturnValue(core::ReturnValueOk{Json("hello, Ada")}));
}

TEST_F(WasmExamplesTest, FanOutInCpp) {
  EnvConfig config;
  config.workflows = Load("fan_out", GuestKind::kWorkflow);
  config.activities = Load("square_activity", GuestKind::kActivity);
  env_ = std::make_unique<Env>(dir_, std::move(config));
  auto id = env_->Submit("math:squares/api.sum-of-squares", Json::array({4}));
  EXPECT_EQ(env_->Await(id), core::SupportedFunctionReturnValue(
                                 core::ReturnValueOk{Json{{"n", 4}, {"sum_of_squares", 30}}}));
}

// The replay scenarios run under both blocking strategies, each writing the
// same history (ExpectSameHistoryUnderBothStrategies).
TEST_P(WasmExamplesByLanguageTest, DurableSleepUnderBothStrategies) {
  EnvConfig config;
  config.workflows = LoadIn("durable_sleep", GuestKind::kWorkflow);
  ExpectSameHistoryUnderBothStrategies(config, [](Env& env, const core::ExecutionId& id) {
    env.Submit("demo:reminder/api.remind", Json::array({0, "Bob"}), id);
    EXPECT_EQ(env.Await(id), core::SupportedFunctionReturnValue(
                                 core::ReturnValueOk{Json("time to stretch, Bob")}));
  });
}

// The saga's activities are native; they record the steps they ran.
EnvConfig SagaConfig(std::shared_ptr<std::vector<std::string>> calls,
                     std::shared_ptr<const WasmComponent> saga) {
  EnvConfig config;
  config.workflows = std::move(saga);
  auto record = [calls](std::string step, Json value) -> ActivityFn {
    return [calls, step, value](ActivityContext&, const Json&) -> ActivityResult {
      calls->push_back(step);
      return value;
    };
  };
  config.native_activities["shop:payments/card.charge"] =
      record("charge", Json{{"payment", "P-1"}});
  config.native_activities["shop:payments/card.refund"] = record("refund", Json(true));
  config.native_activities["shop:stock/items.reserve"] =
      record("reserve", Json{{"reservation", "R-1"}});
  config.native_activities["shop:stock/items.release"] = record("release", Json(true));
  config.native_activities["shop:shipping/parcels.ship"] =
      [calls](ActivityContext&, const Json& p) -> ActivityResult {
    if (p.at(1).get<std::string>().empty()) return Unexpected(Json("no shipping address"));
    calls->push_back("ship");
    return Json{{"tracking", "T-1"}};
  };
  return config;
}

TEST_P(WasmExamplesByLanguageTest, OrderSagaPlacesAnOrderUnderBothStrategies) {
  auto calls = std::make_shared<std::vector<std::string>>();
  EnvConfig config = SagaConfig(calls, LoadIn("order_saga", GuestKind::kWorkflow));
  ExpectSameHistoryUnderBothStrategies(config, [&](Env& env, const core::ExecutionId& id) {
    calls->clear();
    env.Submit("shop:orders/saga.place-order", Json::array({"A-1", 4999, "teapot", "Baker St"}),
               id);
    EXPECT_EQ(env.Await(id), core::SupportedFunctionReturnValue(
                                 core::ReturnValueOk{Json{{"order", "A-1"}, {"tracking", "T-1"}}}));
    EXPECT_EQ(*calls, (std::vector<std::string>{"charge", "reserve", "ship"}));
  });
}

TEST_P(WasmExamplesByLanguageTest, OrderSagaCompensatesAFailedShipmentUnderBothStrategies) {
  auto calls = std::make_shared<std::vector<std::string>>();
  EnvConfig config = SagaConfig(calls, LoadIn("order_saga", GuestKind::kWorkflow));
  ExpectSameHistoryUnderBothStrategies(config, [&](Env& env, const core::ExecutionId& id) {
    calls->clear();
    env.Submit("shop:orders/saga.place-order", Json::array({"A-2", 4999, "teapot", ""}), id);
    auto result = env.Await(id, std::chrono::seconds(60));
    const auto* err = std::get_if<core::ReturnValueErr>(&result);
    ASSERT_NE(err, nullptr);
    EXPECT_EQ(err->err, Json({{"failed_step", "ship"}}));
    // Compensations ran in reverse order after the failed shipment.
    EXPECT_EQ(*calls, (std::vector<std::string>{"charge", "reserve", "release", "refund"}));
  });
}

TEST_P(WasmExamplesByLanguageTest, HumanApprovalUnderBothStrategies) {
  EnvConfig config;
  config.workflows = LoadIn("human_approval", GuestKind::kWorkflow);
  config.stubs = {"demo:expenses/manager.approve"};
  config.native_activities["demo:expenses/bank.pay"] =
      [](ActivityContext&, const Json&) -> ActivityResult { return Json("paid"); };
  ExpectSameHistoryUnderBothStrategies(config, [](Env& env, const core::ExecutionId& id) {
    env.Submit("demo:expenses/flow.expense", Json::array({120, "Ada"}), id);
    ASSERT_TRUE(env.WaitUntil([&] { return env.StateName(id) == "BlockedByJoinSet"; }));
    auto children = env.api().ListExecutions(Ffqn("demo:expenses/manager.approve"), false,
                                             core::ExecutionListPagination{});
    ASSERT_TRUE(children);
    ASSERT_EQ(children->size(), 1u);
    ASSERT_TRUE(env.engine().Stub(children->front().execution_id.ToString(),
                                  ExecutionResult::Ok(Json(true))));
    EXPECT_EQ(env.Await(id), core::SupportedFunctionReturnValue(core::ReturnValueOk{Json("paid")}));
  });
}

// docs/model.md §8.6 from a wasm guest: receive with a timeout, both ways,
// and publish, read back through the Engine.
TEST_P(WasmExamplesByLanguageTest, AwaitApprovalReceivesAMessageOrTimesOut) {
  EnvConfig config;
  config.workflows = LoadIn("await_approval", GuestKind::kWorkflow);
  env_ = std::make_unique<Env>(dir_, std::move(config));
  const core::ExecutionId approved = core::ExecutionId::Generate();
  env_->Submit("demo:approvals/api.await-approval", Json::array({3'600'000}), approved);
  auto waiting =
      env_->engine().GetValue(approved.ToString(), "stage", std::nullopt, std::chrono::seconds(30));
  ASSERT_TRUE(waiting) << waiting.error().ToString();
  EXPECT_EQ(waiting->value, Json("waiting"));
  ASSERT_TRUE(env_->engine().SendMessage(approved.ToString(), "approvals", Json{{"by", "ann"}}));
  EXPECT_EQ(env_->Await(approved), core::SupportedFunctionReturnValue(
                                       core::ReturnValueOk{Json(R"(approved: {"by":"ann"})")}));
  auto stage = env_->engine().GetValue(approved.ToString(), "stage");
  ASSERT_TRUE(stage);
  EXPECT_EQ(stage->value, Json("approved"));

  const core::ExecutionId late = core::ExecutionId::Generate();
  env_->Submit("demo:approvals/api.await-approval", Json::array({10}), late);
  EXPECT_EQ(env_->Await(late),
            core::SupportedFunctionReturnValue(core::ReturnValueOk{Json("nobody approved")}));
}

}  // namespace
}  // namespace stele::runtime::wasm_host::testing
