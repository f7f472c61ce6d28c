// Test fixture of the in-process API tests (api_test.cc, api_race_test.cc):
// a real Server on 127.0.0.1 (port 0) with a temp SQLite file, driven by
// httplib::Client. Components: a stub activity from the TOML config,
// in-process test activities (echo, block, fail, gate; ServerHooks) and a
// workflow component without an executor, whose executions the tests write
// by hand to parent stub children.
//
// Threading: TestActivities is called on executor threads and by the test.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "core/json_codec.h"
#include "server/components.h"
#include "server/config.h"
#include "server/server.h"

namespace stele::server::testing {

using core::Json;

inline constexpr const char* kEcho = "test:act/ifc.echo";
inline constexpr const char* kBlock = "test:act/ifc.block";
inline constexpr const char* kFail = "test:act/ifc.fail";
inline constexpr const char* kGate = "test:act/ifc.gate";
inline constexpr const char* kParent = "test:wf/ifc.parent";
inline constexpr const char* kApprove = "test:stub/ifc.approve";

// The value of the series `series` (name and labels, exactly as printed) in
// a Prometheus text body; nullopt when absent.
inline std::optional<double> MetricValue(const std::string& body, const std::string& series) {
  const std::string prefix = series + " ";
  for (size_t at = 0; at < body.size();) {
    size_t end = body.find('\n', at);
    if (end == std::string::npos) end = body.size();
    if (body.compare(at, prefix.size(), prefix) == 0) {
      return std::stod(body.substr(at + prefix.size(), end - at - prefix.size()));
    }
    at = end + 1;
  }
  return std::nullopt;
}

inline core::FunctionFqn Ffqn(const char* text) { return *core::FunctionFqn::Parse(text); }

// echo(value: string) -> string returns its argument; block waits for its
// cancellation; fail returns err("nope"); gate waits until the test opens
// the gate for its execution (then returns ok("done"), even when it was
// cancelled meanwhile: the storage decides who wins) or it is cancelled.
class TestActivities final : public executor::Worker {
 public:
  executor::WorkerResult Run(executor::WorkerContext ctx) override {
    if (ctx.ffqn == Ffqn(kGate)) return RunGate(ctx);
    if (ctx.ffqn == Ffqn(kEcho)) {
      return executor::WorkerResult::Ok(core::ReturnValueOk{ctx.params.at(0)}, ctx.version);
    }
    if (ctx.ffqn == Ffqn(kFail)) {
      return executor::WorkerResult::Ok(core::ReturnValueErr{Json("nope")}, ctx.version);
    }
    {
      std::lock_guard lock(mu_);
      ++blocked_;
    }
    cv_.notify_all();
    std::mutex m;
    std::condition_variable cv;
    bool cancelled = false;
    uint64_t reg = ctx.cancel.OnCancel([&] {
      std::lock_guard lock(m);
      cancelled = true;
      cv.notify_all();
    });
    {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return cancelled; });
    }
    ctx.cancel.Unregister(reg);
    return executor::WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kCancelled,
                                         "cancelled");
  }
  const std::vector<core::FunctionFqn>& ExportedFunctions() const override { return ffqns_; }

  void WaitForBlocked(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return blocked_ >= n; });
  }
  // Waits until a gate run of `id` has started.
  void WaitForGate(const core::ExecutionId& id) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return at_gate_.contains(id); });
  }
  void WaitForGateCount(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return at_gate_.size() >= n; });
  }
  void OpenGate(const core::ExecutionId& id) {
    {
      std::lock_guard lock(mu_);
      open_.insert(id);
    }
    cv_.notify_all();
  }

 private:
  executor::WorkerResult RunGate(const executor::WorkerContext& ctx) {
    auto cancelled = std::make_shared<bool>(false);
    // Registered before taking mu_: the callback runs at once (and takes
    // mu_) when the run is already cancelled.
    uint64_t reg = ctx.cancel.OnCancel([this, cancelled] {
      {
        std::lock_guard lock(mu_);
        *cancelled = true;
      }
      cv_.notify_all();
    });
    bool opened = false;
    {
      std::unique_lock lock(mu_);
      at_gate_.insert(ctx.execution_id);
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_.contains(ctx.execution_id) || *cancelled; });
      opened = open_.contains(ctx.execution_id);
    }
    ctx.cancel.Unregister(reg);
    if (opened) return executor::WorkerResult::Ok(core::ReturnValueOk{Json("done")}, ctx.version);
    return executor::WorkerResult::Fatal(ctx.version, executor::FatalErrorKind::kCancelled,
                                         "cancelled");
  }

  std::vector<core::FunctionFqn> ffqns_{Ffqn(kEcho), Ffqn(kBlock), Ffqn(kFail), Ffqn(kGate)};
  std::mutex mu_;
  std::condition_variable cv_;
  int blocked_ = 0;                      // guarded by mu_
  std::set<core::ExecutionId> at_gate_;  // guarded by mu_
  std::set<core::ExecutionId> open_;     // guarded by mu_
};

inline core::FunctionSignature Sig(const char* ffqn,
                                   std::vector<std::pair<std::string, std::string>> params,
                                   std::optional<std::string> ret) {
  core::FunctionSignature sig{Ffqn(ffqn), {}, std::nullopt};
  for (auto& [name, type] : params) sig.params.push_back({name, *core::TypeDesc::Parse(type)});
  if (ret) sig.return_type = *core::TypeDesc::Parse(*ret);
  return sig;
}

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(""); }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  // `api_extra` goes into [api], `executor_extra` into [executor].
  void StartServer(const std::string& api_extra, const std::string& executor_extra = "") {
    dir_ = std::filesystem::temp_directory_path() /
           ("stele_api_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::string toml = "[api]\nlisten = \"127.0.0.1:0\"\nmax_body_bytes = 65536\n" + api_extra +
                       "\n[executor]\ntick_sleep = \"20ms\"\n" + executor_extra +
                       "\n[watcher]\ntick_sleep = \"50ms\"\n"
                       "[[activity_stub]]\nname = \"approvals\"\n"
                       "[[activity_stub.functions]]\nffqn = \"test:stub/ifc.approve\"\n"
                       "return_type = \"result<string, string>\"\n";
    auto config = ParseConfig(toml, "stele.toml", dir_.string(), ProcessEnv());
    ASSERT_TRUE(config.has_value()) << FormatErrors(config.error());
    auto components = LoadComponents(*config, "stele.toml");
    ASSERT_TRUE(components.has_value()) << FormatErrors(components.error());
    stub_digest_ = (*components)[0].component_id.input_digest;

    activities_ = std::make_shared<TestActivities>();
    ServerHooks hooks;
    hooks.metrics_snapshot_max_age = metrics_snapshot_max_age_;
    LoadedComponent acts;
    acts.config.name = "test_activities";
    acts.config.lock_expiry = std::chrono::seconds(60);
    acts.config.max_retries = 0;
    acts.component_id = core::ComponentId{core::ComponentType::kActivityNative, "test_activities",
                                          Sha256Digest("test activities")};
    acts.kind = runtime::workflow::FunctionKind::kActivity;
    acts.functions = {Sig(kEcho, {{"value", "string"}}, "string"), Sig(kBlock, {}, std::nullopt),
                      Sig(kFail, {}, std::nullopt), Sig(kGate, {}, std::nullopt)};
    auto worker = activities_;
    acts.make_worker =
        [worker](const WorkerEnv&) -> Result<std::shared_ptr<executor::Worker>, std::string> {
      return std::shared_ptr<executor::Worker>(worker);
    };
    hooks.extra_components.push_back(std::move(acts));
    // A workflow without an executor: parents of stub children, created by hand.
    LoadedComponent wf;
    wf.config.name = "test_workflows";
    wf.component_id = core::ComponentId{core::ComponentType::kWorkflow, "test_workflows",
                                        Sha256Digest("test workflows")};
    wf.kind = runtime::workflow::FunctionKind::kWorkflow;
    wf.functions = {Sig(kParent, {}, std::nullopt)};
    workflow_id_ = wf.component_id;
    hooks.extra_components.push_back(std::move(wf));

    auto server = Server::Start(std::move(*config), std::move(*components), std::move(hooks));
    ASSERT_TRUE(server.has_value()) << server.error();
    server_ = std::move(*server);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(30, 0);
  }

  static Json Body(const httplib::Result& res) {
    if (!res) return Json();
    auto json = core::ParseJson(res->body);
    return json ? *json : Json();
  }
  static std::string ErrorKind(const httplib::Result& res) {
    Json body = Body(res);
    if (!body.contains("error")) return "<no error envelope: " + (res ? res->body : "") + ">";
    return body["error"]["kind"].get<std::string>();
  }

  httplib::Result Post(const std::string& path, const Json& body) {
    return client_->Post(path.c_str(), core::SerializeJson(body), "application/json");
  }
  httplib::Result Put(const std::string& path, const Json& body) {
    return client_->Put(path.c_str(), core::SerializeJson(body), "application/json");
  }
  httplib::Result Get(const std::string& path) { return client_->Get(path.c_str()); }

  std::string Submit(const Json& body, int expected_status = 201) {
    auto res = Post("/v1/executions", body);
    EXPECT_TRUE(res);
    if (!res) return "";
    EXPECT_EQ(res->status, expected_status) << res->body;
    return Body(res).value("execution_id", "");
  }

  // A parent workflow (locked by hand) that requested a stub child; with
  // `join_next` it also awaits it (blocked_by_join_set until the child
  // finishes). Returns the child's id.
  core::ExecutionIdDerived ParentWithStubChild(bool join_next = false) {
    auto db = server_->pool().Connection();
    EXPECT_TRUE(db.has_value());
    DateTime now = SystemClock::Instance().Now();
    core::ExecutionId parent = core::ExecutionId::Generate();
    auto join_set = *core::JoinSetId::Create(core::JoinSetKind::kNamed, "js");
    core::ExecutionIdDerived child = parent.NextLevel(join_set, 1);
    EXPECT_TRUE((*db)->Create(storage::CreateRequest{now,
                                                     parent,
                                                     Ffqn(kParent),
                                                     Json::array(),
                                                     std::nullopt,
                                                     now,
                                                     workflow_id_,
                                                     {},
                                                     std::nullopt}));
    auto locked =
        (*db)->LockOne(now, workflow_id_, parent, core::RunId::Generate(), core::Version(1),
                       core::ExecutorId::Generate(), now + std::chrono::seconds(60),
                       core::ComponentRetryConfig{std::nullopt, core::Duration{}});
    EXPECT_TRUE(locked.has_value());
    std::vector<storage::AppendRequest> batch;
    batch.push_back({now, core::HistoryEventRequest{core::HistoryJoinSetCreate{join_set}}});
    batch.push_back(
        {now, core::HistoryEventRequest{core::HistoryJoinSetRequest{
                  join_set, core::ChildExecutionRequest{child, Ffqn(kApprove), Json::array()}}}});
    if (join_next) {
      batch.push_back({now, core::HistoryEventRequest{core::HistoryJoinNext{
                                join_set, now + std::chrono::seconds(60), Ffqn(kApprove), false}}});
    }
    core::ComponentId stub_id{core::ComponentType::kActivityStub, "approvals", stub_digest_};
    storage::CreateRequest child_req{now,
                                     core::ExecutionId(child),
                                     Ffqn(kApprove),
                                     Json::array(),
                                     std::pair{parent, join_set},
                                     now,
                                     stub_id,
                                     {},
                                     std::nullopt};
    auto v =
        (*db)->AppendBatchCreateNewExecution(now, batch, parent, locked->next_version, {child_req});
    EXPECT_TRUE(v.has_value()) << (v ? "" : v.error().ToString());
    return child;
  }

  std::filesystem::path dir_;
  // ServerHooks::metrics_snapshot_max_age of the next StartServer.
  std::chrono::milliseconds metrics_snapshot_max_age_ = std::chrono::seconds(5);
  std::unique_ptr<Server> server_;
  std::unique_ptr<httplib::Client> client_;
  std::shared_ptr<TestActivities> activities_;
  core::InputContentDigest stub_digest_;
  core::ComponentId workflow_id_;
};

}  // namespace stele::server::testing
