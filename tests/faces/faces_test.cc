// One scenario through both faces of Stele: libstele's Engine and the
// stele server's HTTP API, each on its own SQLite file, serving the same
// C++ workflow and activity (the server through in-process components).
// Both are thin adapters over service::ExecutionService, so:
//   - the same submission gives the same event log (times, run and
//     executor ids masked) and the same children with the same results;
//   - the same bad input gives the same message, whatever the face.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/time.h"
#include "core/json_codec.h"
#include "runtime/native/activity_worker.h"
#include "runtime/native/workflow_worker.h"
#include "server/components.h"
#include "server/config.h"
#include "server/server.h"
#include "stele/stele.h"
#include "storage/db_external_api.h"
#include "storage/sqlite/sqlite_pool.h"

namespace stele {
namespace {

constexpr const char* kFlow = "faces:demo/api.flow";
constexpr const char* kDouble = "faces:demo/api.double";
constexpr const char* kId = "E_01KBNHM5FQW81KP5Y3XMNX31K4";

ActivityResult Double(ActivityContext&, const Json& params) {
  return Json(params.at(0).get<int64_t>() * 2);
}

// A call, then two submissions to one join set awaited in turn.
Task<Json> Flow(WorkflowContext& ctx, Json params) {
  const int64_t n = params.at(0).get<int64_t>();
  ExecutionResult first = co_await ctx.call(kDouble, Params(n));
  JoinSet js = co_await ctx.new_join_set();
  co_await ctx.submit(js, kDouble, Params(first.value.get<int64_t>()));
  co_await ctx.submit(js, kDouble, Params(n + 1));
  int64_t sum = first.value.get<int64_t>();
  for (int i = 0; i < 2; ++i) {
    auto next = co_await ctx.join_next(js);
    if (!next) co_return Json("join_next failed: " + next.error().message);
    sum += next->result.value.get<int64_t>();
  }
  co_return Json(sum);
}

// Replaces what differs between two runs of the same scenario: instants,
// run and executor ids.
void Mask(core::Json& json) {
  if (json.is_object() || json.is_array()) {
    for (auto& item : json) Mask(item);
  } else if (json.is_string()) {
    const std::string text = json.get<std::string>();
    if (ParseRfc3339(text)) {
      json = "<time>";
    } else if (text.starts_with("Run_") || text.starts_with("Exr_")) {
      json = "<id>";
    }
  }
}

// The log of `id` without its Locked events (how often a run extends its
// lease is a matter of timing, not of the face), masked.
std::vector<std::string> MaskedLog(storage::DbExternalApi& api, const std::string& id) {
  auto parsed = core::ExecutionId::Parse(id);
  EXPECT_TRUE(parsed.has_value()) << id;
  auto events = api.ListExecutionEvents(*parsed, core::Version(0), 1000, false);
  EXPECT_TRUE(events.has_value());
  std::vector<std::string> out;
  for (const auto& event : *events) {
    if (std::holds_alternative<core::Locked>(event.event)) continue;
    core::Json json = core::ToJson(event);
    Mask(json);
    out.push_back(core::SerializeJson(json));
  }
  return out;
}

// The ids of `parent`'s children, in id order.
std::vector<std::string> Children(storage::DbExternalApi& api, const std::string& parent) {
  using IdPage = core::Pagination<std::optional<core::ExecutionId>>;
  auto rows = api.ListExecutions(std::nullopt, false, IdPage::NewerThan(100, std::nullopt, false));
  EXPECT_TRUE(rows.has_value());
  std::vector<std::string> out;
  for (const auto& row : *rows) {
    const std::string id = row.execution_id.ToString();
    if (id != parent && id.starts_with(parent)) out.push_back(id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

class FacesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("stele_faces_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    StartEngine();
    StartServer();
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
    server_.reset();
    engine_.reset();
    engine_api_.reset();
    if (engine_pool_) engine_pool_->Close();
    std::filesystem::remove_all(dir_);
  }

  void StartEngine() {
    storage::sqlite::SqliteOptions sqlite;
    sqlite.path = (dir_ / "engine.sqlite").string();
    engine_pool_ = std::shared_ptr<storage::sqlite::SqlitePool>(
        std::move(storage::sqlite::SqlitePool::Open(sqlite).value()));
    engine_api_ = std::move(engine_pool_->ExternalApiConn().value());
    EngineOptions options;
    options.pool = engine_pool_;
    engine_ = std::move(Engine::Open(options).value());
    ASSERT_TRUE(engine_->RegisterActivity(kDouble, Double));
    ASSERT_TRUE(engine_->RegisterWorkflow(kFlow, Flow));
    ASSERT_TRUE(engine_->Start());
  }

  // The server with an empty [executor] section (the defaults both faces
  // share) and the same functions as in-process components, named as the
  // Engine names its groups so that the Created events match.
  void StartServer() {
    const std::string toml = "[api]\nlisten = \"127.0.0.1:0\"\n[database]\nsqlite = \"" +
                             (dir_ / "server.sqlite").string() + "\"\n";
    auto config = server::ParseConfig(toml, "stele.toml", dir_.string(), server::ProcessEnv());
    ASSERT_TRUE(config.has_value()) << server::FormatErrors(config.error());
    server::ServerHooks hooks;

    server::LoadedComponent activities;
    activities.config.name = "native_activities_r5_b100_t10000_e";
    activities.config.kind = server::ComponentKind::kActivityExec;
    activities.config.max_retries = 5;
    activities.config.lock_expiry = std::chrono::seconds(10);
    activities.component_id =
        core::ComponentId{core::ComponentType::kActivityNative, activities.config.name, {}};
    activities.kind = runtime::workflow::FunctionKind::kActivity;
    activities.functions = {core::FunctionSignature{*core::FunctionFqn::Parse(kDouble), {}, {}}};
    activities.functions[0].params.push_back({"n", *core::TypeDesc::Parse("s64")});
    activities.make_worker =
        [](const service::WorkerEnv&) -> Result<std::shared_ptr<executor::Worker>, std::string> {
      return std::shared_ptr<executor::Worker>(
          std::make_shared<runtime::native::NativeActivityWorker>(
              std::vector<runtime::native::NativeActivity>{
                  {*core::FunctionFqn::Parse(kDouble), Double}},
              ActivityOptions{}));
    };
    hooks.extra_components.push_back(std::move(activities));

    server::LoadedComponent workflows;
    workflows.config.name = "native_workflows";
    workflows.config.kind = server::ComponentKind::kWorkflowWasm;
    workflows.config.lock_expiry = std::chrono::seconds(2);
    workflows.component_id =
        core::ComponentId{core::ComponentType::kWorkflowNative, "native_workflows", {}};
    workflows.kind = runtime::workflow::FunctionKind::kWorkflow;
    workflows.functions = {core::FunctionSignature{*core::FunctionFqn::Parse(kFlow), {}, {}}};
    workflows.functions[0].params.push_back({"n", *core::TypeDesc::Parse("s64")});
    workflows.make_worker = [](const service::WorkerEnv& env)
        -> Result<std::shared_ptr<executor::Worker>, std::string> {
      auto conn = env.pool->Connection();
      if (!conn) return Unexpected(conn.error().ToString());
      std::map<core::FunctionFqn, runtime::native::NativeWorkflow> map;
      map.emplace(*core::FunctionFqn::Parse(kFlow),
                  runtime::native::NativeWorkflow{runtime::native::AdaptOkOnly(Flow),
                                                  env.workflow_run, false});
      return std::shared_ptr<executor::Worker>(
          std::make_shared<runtime::native::NativeWorkflowWorker>(
              std::move(map), std::shared_ptr<storage::DbConnection>(std::move(*conn)), env.clock,
              env.registry, env.dispatch, env.handoff, env.cancels));
    };
    hooks.extra_components.push_back(std::move(workflows));

    auto server = server::Server::Start(std::move(*config), {}, std::move(hooks));
    ASSERT_TRUE(server.has_value()) << server.error();
    server_ = std::move(*server);
    server_api_ = std::move(server_->pool().ExternalApiConn().value());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(30, 0);
  }

  // The server's answer to a submission: its status and error message (if any).
  std::pair<int, std::string> HttpSubmit(const core::Json& body) {
    auto res = client_->Post("/v1/executions", core::SerializeJson(body), "application/json");
    EXPECT_TRUE(res);
    if (!res) return {0, ""};
    auto json = core::ParseJson(res->body);
    std::string message;
    if (json && json->contains("error")) message = (*json)["error"]["message"].get<std::string>();
    return {res->status, message};
  }

  std::filesystem::path dir_;
  std::shared_ptr<storage::sqlite::SqlitePool> engine_pool_;
  std::unique_ptr<storage::DbExternalApi> engine_api_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<storage::DbExternalApi> server_api_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(FacesTest, OneSubmissionGivesTheSameLogThroughBothFaces) {
  SubmitOptions options;
  options.execution_id = kId;
  ASSERT_EQ(engine_->Submit(kFlow, Params(3), options).value(), kId);
  ExecutionResult engine_result = engine_->WaitForResult(kId, std::chrono::seconds(30)).value();

  auto [status, message] =
      HttpSubmit({{"ffqn", kFlow}, {"params", Json::array({3})}, {"execution_id", kId}});
  ASSERT_EQ(status, 201) << message;
  auto res = client_->Get(std::string("/v1/executions/") + kId + "/result?timeout=30");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;

  // 3*2 + (6*2) + (4*2) = 26, and the same value through both faces.
  ASSERT_TRUE(engine_result.ok()) << engine_result.ToString();
  EXPECT_EQ(engine_result.value, Json(26));
  EXPECT_EQ(core::ParseJson(res->body).value()["result"], (core::Json{{"ok", 26}}));

  EXPECT_EQ(MaskedLog(*engine_api_, kId), MaskedLog(*server_api_, kId));
  const std::vector<std::string> children = Children(*engine_api_, kId);
  ASSERT_EQ(children.size(), 3u);
  EXPECT_EQ(children, Children(*server_api_, kId));
  for (const std::string& child : children) {
    EXPECT_EQ(MaskedLog(*engine_api_, child), MaskedLog(*server_api_, child)) << child;
  }
}

TEST_F(FacesTest, BadInputReadsTheSameThroughBothFaces) {
  struct Case {
    std::string ffqn;
    Json params;
    std::optional<std::string> id;
  };
  const std::vector<Case> cases = {
      {"nope", Json::array(), std::nullopt},                     // malformed ffqn
      {"faces:demo/api.missing", Json::array(), std::nullopt},   // unknown ffqn
      {kFlow, Json::object(), std::nullopt},                     // params not an array
      {kFlow, Json::array({3}), std::string("E_nope")},          // malformed id
      {kFlow, Json::array({3}), std::string(kId) + ".o:1-x_1"},  // a child id
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.ffqn + " " + c.params.dump() + " " + c.id.value_or(""));
    SubmitOptions options;
    options.execution_id = c.id;
    auto engine_error = engine_->Submit(c.ffqn, c.params, options);
    ASSERT_FALSE(engine_error.has_value());
    core::Json body = {{"ffqn", c.ffqn}, {"params", c.params}};
    if (c.id) body["execution_id"] = *c.id;
    auto [status, message] = HttpSubmit(body);
    EXPECT_GE(status, 400);
    EXPECT_EQ(engine_error.error().message, message);
  }

  // A resubmission with other params: a conflict, in the same words.
  SubmitOptions options;
  options.execution_id = kId;
  ASSERT_TRUE(engine_->Submit(kFlow, Params(1), options).has_value());
  ASSERT_EQ(
      HttpSubmit({{"ffqn", kFlow}, {"params", Json::array({1})}, {"execution_id", kId}}).first,
      201);
  auto engine_conflict = engine_->Submit(kFlow, Params(2), options);
  ASSERT_FALSE(engine_conflict.has_value());
  EXPECT_EQ(engine_conflict.error().kind, Error::Kind::kConflict);
  auto [status, message] =
      HttpSubmit({{"ffqn", kFlow}, {"params", Json::array({2})}, {"execution_id", kId}});
  EXPECT_EQ(status, 409);
  EXPECT_EQ(engine_conflict.error().message, message);

  // An unknown execution: not found, in the same words.
  const std::string unknown = "E_01ARZ3NDEKTSV4RRFFQ69G5FAV";
  auto engine_missing = engine_->GetStatus(unknown);
  ASSERT_FALSE(engine_missing.has_value());
  EXPECT_EQ(engine_missing.error().kind, Error::Kind::kNotFound);
  auto res = client_->Get("/v1/executions/" + unknown);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(core::ParseJson(res->body).value()["error"]["message"].get<std::string>(),
            engine_missing.error().message);
}

}  // namespace
}  // namespace stele
