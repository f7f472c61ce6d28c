// The HTTP API, in process: a real Server on 127.0.0.1 (port 0) with a
// temp SQLite file, driven by httplib::Client. Components: a stub activity
// from the TOML config and in-process test activities (ServerHooks).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>

#include "core/json_codec.h"
#include "server/components.h"
#include "server/config.h"
#include "server/server.h"

namespace stele::server {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using core::Json;

const char* kEcho = "test:act/ifc.echo";
const char* kBlock = "test:act/ifc.block";
const char* kFail = "test:act/ifc.fail";
const char* kParent = "test:wf/ifc.parent";
const char* kApprove = "test:stub/ifc.approve";

core::FunctionFqn Ffqn(const char* text) { return *core::FunctionFqn::Parse(text); }

// echo(value: string) -> string returns its argument; block waits for its
// cancellation; fail returns err("nope").
class TestActivities final : public executor::Worker {
 public:
  executor::WorkerResult Run(executor::WorkerContext ctx) override {
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

 private:
  std::vector<core::FunctionFqn> ffqns_{Ffqn(kEcho), Ffqn(kBlock), Ffqn(kFail)};
  std::mutex mu_;
  std::condition_variable cv_;
  int blocked_ = 0;
};

core::FunctionSignature Sig(const char* ffqn, std::vector<std::pair<std::string, std::string>> params,
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

  void StartServer(const std::string& api_extra) {
    dir_ = std::filesystem::temp_directory_path() /
           ("stele_api_test_" + std::string(::testing::UnitTest::GetInstance()
                                                ->current_test_info()
                                                ->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::string toml = "[api]\nlisten = \"127.0.0.1:0\"\nmax_body_bytes = 65536\n" + api_extra +
                       "\n[executor]\ntick_sleep = \"20ms\"\n"
                       "[watcher]\ntick_sleep = \"50ms\"\n"
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
    LoadedComponent acts;
    acts.config.name = "test_activities";
    acts.config.lock_expiry = std::chrono::seconds(60);
    acts.config.max_retries = 0;
    acts.component_id = core::ComponentId{core::ComponentType::kActivityNative, "test_activities",
                                          Sha256Digest("test activities")};
    acts.kind = runtime::workflow::FunctionKind::kActivity;
    acts.functions = {Sig(kEcho, {{"value", "string"}}, "string"), Sig(kBlock, {}, std::nullopt),
                      Sig(kFail, {}, std::nullopt)};
    auto worker = activities_;
    acts.make_worker = [worker](const WorkerEnv&) -> Result<std::shared_ptr<executor::Worker>, std::string> {
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

  // A parent workflow blocked on a stub child; returns the child's id.
  core::ExecutionIdDerived ParentWithStubChild() {
    auto db = server_->pool().Connection();
    EXPECT_TRUE(db.has_value());
    DateTime now = SystemClock::Instance().Now();
    core::ExecutionId parent = core::ExecutionId::Generate();
    auto join_set = *core::JoinSetId::Create(core::JoinSetKind::kNamed, "js");
    core::ExecutionIdDerived child = parent.NextLevel(join_set, 1);
    EXPECT_TRUE((*db)->Create(storage::CreateRequest{now, parent, Ffqn(kParent), Json::array(),
                                                     std::nullopt, now, workflow_id_, {},
                                                     std::nullopt}));
    auto locked = (*db)->LockOne(now, workflow_id_, parent, core::RunId::Generate(),
                                 core::Version(1), core::ExecutorId::Generate(),
                                 now + std::chrono::seconds(60),
                                 core::ComponentRetryConfig{std::nullopt, core::Duration{}});
    EXPECT_TRUE(locked.has_value());
    std::vector<storage::AppendRequest> batch;
    batch.push_back({now, core::HistoryEventRequest{core::HistoryJoinSetCreate{join_set}}});
    batch.push_back({now, core::HistoryEventRequest{core::HistoryJoinSetRequest{
                              join_set, core::ChildExecutionRequest{child, Ffqn(kApprove),
                                                                     Json::array()}}}});
    core::ComponentId stub_id{core::ComponentType::kActivityStub, "approvals", stub_digest_};
    storage::CreateRequest child_req{now,          core::ExecutionId(child), Ffqn(kApprove),
                                     Json::array(), std::pair{parent, join_set}, now,
                                     stub_id,       {},          std::nullopt};
    auto v = (*db)->AppendBatchCreateNewExecution(now, batch, parent, locked->next_version,
                                                  {child_req});
    EXPECT_TRUE(v.has_value()) << (v ? "" : v.error().ToString());
    return child;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<httplib::Client> client_;
  std::shared_ptr<TestActivities> activities_;
  core::InputContentDigest stub_digest_;
  core::ComponentId workflow_id_;
};

TEST_F(ApiTest, SubmitRunsAndReturnsTheResult) {
  std::string id = Submit({{"ffqn", kEcho}, {"params", {"hello"}}});
  ASSERT_THAT(id, ::testing::StartsWith("E_"));
  auto res = Get("/v1/executions/" + id + "/result?timeout=30");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(Body(res)["result"], Json({{"ok", "hello"}}));

  auto status = Get("/v1/executions/" + id);
  ASSERT_EQ(status->status, 200);
  Json body = Body(status);
  EXPECT_EQ(body["execution_id"], id);
  EXPECT_EQ(body["ffqn"], kEcho);
  EXPECT_EQ(body["pending_state"]["status"], "finished");
  EXPECT_EQ(body["result"], Json({{"ok", "hello"}}));
  EXPECT_TRUE(body["created_at"].is_string());
  EXPECT_TRUE(body["first_scheduled_at"].is_string());
  EXPECT_THAT(body["component_digest"].get<std::string>(), ::testing::StartsWith("sha256:"));
}

TEST_F(ApiTest, ErrResultIsReported) {
  std::string id = Submit({{"ffqn", kFail}, {"params", Json::array()}});
  auto res = Get("/v1/executions/" + id + "/result?timeout=30");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(Body(res)["result"], Json({{"err", "nope"}}));
}

TEST_F(ApiTest, SubmitIsIdempotentPerExecutionId) {
  std::string id = core::ExecutionId::Generate().ToString();
  Json scheduled = {{"ffqn", kEcho},
                    {"params", {"x"}},
                    {"execution_id", id},
                    {"scheduled_at", "2999-01-01T00:00:00Z"}};
  EXPECT_EQ(Submit(scheduled, 201), id);
  EXPECT_EQ(Submit(scheduled, 200), id);
  scheduled["params"] = {"y"};
  auto conflict = Post("/v1/executions", scheduled);
  EXPECT_EQ(conflict->status, 409);
  EXPECT_EQ(ErrorKind(conflict), "conflict");
  // Scheduled far ahead: still pending, with no result.
  Json body = Body(Get("/v1/executions/" + id));
  EXPECT_EQ(body["pending_state"]["status"], "pending_at");
  EXPECT_EQ(body["first_scheduled_at"], "2999-01-01T00:00:00Z");
  EXPECT_FALSE(body.contains("result"));
  auto waited = Get("/v1/executions/" + id + "/result?timeout=0");
  EXPECT_EQ(waited->status, 408);
  EXPECT_EQ(ErrorKind(waited), "timeout");
}

TEST_F(ApiTest, SubmitValidation) {
  struct Case {
    Json body;
    int status;
    std::string message_part;
  };
  std::vector<Case> cases = {
      {{{"params", Json::array()}}, 400, "`ffqn` is required"},
      {{{"ffqn", 5}}, 400, "`ffqn` is required"},
      {{{"ffqn", "../../etc/passwd"}}, 400, "invalid ffqn"},
      {{{"ffqn", "nobody:x/y.z"}}, 404, "unknown ffqn"},
      {{{"ffqn", kApprove}}, 400, "stub activity"},
      {{{"ffqn", kEcho}, {"params", "hello"}}, 400, "must be a JSON array"},
      {{{"ffqn", kEcho}, {"params", {42}}}, 400, "parameter"},
      {{{"ffqn", kEcho}, {"params", {"a", "b"}}}, 400, "params"},
      {{{"ffqn", kEcho}, {"params", {"a"}}, {"execution_id", "E_nope"}}, 400, "invalid execution id"},
      {{{"ffqn", kEcho}, {"params", {"a"}}, {"execution_id", 7}}, 400, "execution_id"},
      {{{"ffqn", kEcho},
        {"params", {"a"}},
        {"execution_id", core::ExecutionId::Generate().ToString() + ".n:js_1"}},
       400,
       "child id"},
      {{{"ffqn", kEcho}, {"params", {"a"}}, {"scheduled_at", "tomorrow"}}, 400, "RFC 3339"},
      {{{"ffqn", kEcho}, {"params", {"a"}}, {"colour", "red"}}, 400, "unknown field `colour`"},
  };
  for (const auto& c : cases) {
    auto res = Post("/v1/executions", c.body);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, c.status) << c.body.dump() << " → " << res->body;
    Json body = Body(res);
    ASSERT_TRUE(body.contains("error")) << res->body;
    EXPECT_THAT(body["error"]["message"].get<std::string>(), HasSubstr(c.message_part))
        << c.body.dump();
  }
  // Nothing was created by any of them.
  Json list = Body(Get("/v1/executions"));
  EXPECT_THAT(list["executions"], SizeIs(0));
}

TEST_F(ApiTest, HostileBodies) {
  auto malformed = client_->Post("/v1/executions", "{\"ffqn\": ", "application/json");
  EXPECT_EQ(malformed->status, 400);
  EXPECT_THAT(Body(malformed)["error"]["message"].get<std::string>(), HasSubstr("malformed JSON"));
  auto not_object = client_->Post("/v1/executions", "[1,2]", "application/json");
  EXPECT_EQ(not_object->status, 400);
  auto empty = client_->Post("/v1/executions", "", "application/json");
  EXPECT_EQ(empty->status, 400);
  std::string deep = "{\"ffqn\": \"test:act/ifc.echo\", \"params\": [" + std::string(5000, '[') +
                     std::string(5000, ']') + "]}";
  auto nested = client_->Post("/v1/executions", deep, "application/json");
  EXPECT_EQ(nested->status, 400) << nested->body.substr(0, 200);
  std::string huge = "{\"ffqn\": \"test:act/ifc.echo\", \"params\": [\"" + std::string(100000, 'x') + "\"]}";
  auto too_large = client_->Post("/v1/executions", huge, "application/json");
  ASSERT_TRUE(too_large);
  EXPECT_EQ(too_large->status, 413);
  EXPECT_EQ(ErrorKind(too_large), "too_large");
  auto bad_utf8 = client_->Post("/v1/executions", "{\"ffqn\": \"\xff\xfe\"}", "application/json");
  EXPECT_EQ(bad_utf8->status, 400);
  Json list = Body(Get("/v1/executions"));
  EXPECT_THAT(list["executions"], SizeIs(0));
}

TEST_F(ApiTest, InvalidAndUnknownIds) {
  for (std::string path : {"/v1/executions/nope", "/v1/executions/..",
                           "/v1/executions/E_01ARZ3NDEKTSV4RRFFQ69G5FAV%00",
                           "/v1/executions/E_01ARZ3NDEKTSV4RRFFQ69G5FAV.n:x_1%2e%2e"}) {
    auto res = Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 400) << path << " " << res->body;
    EXPECT_EQ(ErrorKind(res), "validation") << path;
  }
  // An encoded '/' is decoded before routing: no route has that shape.
  auto traversal = Get("/v1/executions/E_..%2F..%2Fetc%2Fpasswd");
  EXPECT_EQ(traversal->status, 404);
  EXPECT_EQ(ErrorKind(traversal), "not_found");
  std::string missing = core::ExecutionId::Generate().ToString();
  for (std::string suffix : {"", "/result", "/events", "/responses", "/backtrace"}) {
    auto res = Get("/v1/executions/" + missing + suffix);
    EXPECT_EQ(res->status, 404) << suffix << " " << res->body;
    EXPECT_EQ(ErrorKind(res), "not_found") << suffix;
  }
  EXPECT_EQ(Put("/v1/executions/" + missing + "/cancel", Json::object())->status, 404);
  auto no_route = Get("/v2/whatever");
  EXPECT_EQ(no_route->status, 404);
  EXPECT_EQ(ErrorKind(no_route), "not_found");
}

TEST_F(ApiTest, ListWithFiltersAndCursor) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(Submit({{"ffqn", kEcho}, {"params", {"v"}}}));
  std::string fail = Submit({{"ffqn", kFail}});
  ASSERT_EQ(Get("/v1/executions/" + fail + "/result?timeout=30")->status, 200);

  Json all = Body(Get("/v1/executions?length=100"));
  ASSERT_THAT(all["executions"], SizeIs(6));
  EXPECT_EQ(all["executions"][0]["execution_id"], fail);  // newest first
  EXPECT_FALSE(all.contains("next_cursor"));

  Json echo = Body(Get("/v1/executions?ffqn_prefix=test:act/ifc.ec"));
  EXPECT_THAT(echo["executions"], SizeIs(5));
  Json by_id = Body(Get("/v1/executions?execution_id_prefix=" + ids[2]));
  ASSERT_THAT(by_id["executions"], SizeIs(1));
  EXPECT_EQ(by_id["executions"][0]["execution_id"], ids[2]);

  // Pages of two, older and back newer.
  Json page1 = Body(Get("/v1/executions?length=2"));
  ASSERT_THAT(page1["executions"], SizeIs(2));
  ASSERT_TRUE(page1.contains("next_cursor"));
  Json page2 = Body(Get("/v1/executions?length=2&cursor=" + page1["next_cursor"].get<std::string>()));
  ASSERT_THAT(page2["executions"], SizeIs(2));
  EXPECT_EQ(page2["executions"][0]["execution_id"], ids[3]);
  Json back = Body(Get("/v1/executions?length=2&direction=newer&cursor=" +
                       page2["executions"][0]["execution_id"].get<std::string>()));
  ASSERT_THAT(back["executions"], SizeIs(2));
  EXPECT_EQ(back["executions"][0]["execution_id"], fail);

  for (std::string bad : {"length=0", "length=100000", "direction=sideways", "cursor=zzz",
                          "show_derived=maybe", "length=-1", "length=1x"}) {
    auto res = Get("/v1/executions?" + bad);
    EXPECT_EQ(res->status, 400) << bad;
  }
}

TEST_F(ApiTest, HideFinished) {
  std::string done = Submit({{"ffqn", kFail}});
  ASSERT_EQ(Get("/v1/executions/" + done + "/result?timeout=30")->status, 200);
  std::string later = Submit({{"ffqn", kEcho}, {"params", {"v"}}, {"scheduled_at", "2999-01-01T00:00:00Z"}});
  Json open = Body(Get("/v1/executions?hide_finished=true"));
  ASSERT_THAT(open["executions"], SizeIs(1));
  EXPECT_EQ(open["executions"][0]["execution_id"], later);
}

TEST_F(ApiTest, EventsAndResponses) {
  std::string id = Submit({{"ffqn", kEcho}, {"params", {"e"}}});
  ASSERT_EQ(Get("/v1/executions/" + id + "/result?timeout=30")->status, 200);
  Json events = Body(Get("/v1/executions/" + id + "/events"));
  ASSERT_GE(events["events"].size(), 3u);  // created, locked, finished
  EXPECT_TRUE(events["events"][0]["event"].contains("created")) << events.dump();
  Json tail = Body(Get("/v1/executions/" + id + "/events?since_version=1&length=1"));
  ASSERT_THAT(tail["events"], SizeIs(1));
  EXPECT_EQ(tail["next_since_version"], 2);
  EXPECT_EQ(Get("/v1/executions/" + id + "/events?length=0")->status, 400);
  EXPECT_EQ(Get("/v1/executions/" + id + "/events?since_version=x")->status, 400);

  Json none = Body(Get("/v1/executions/" + id + "/responses"));
  EXPECT_THAT(none["responses"], SizeIs(0));
}

TEST_F(ApiTest, StubAChildAndSeeTheParentsResponse) {
  core::ExecutionIdDerived child = ParentWithStubChild();
  std::string cid = child.ToString();
  std::string parent = child.SplitToParts().first.ToString();

  // Validation before anything is written.
  EXPECT_EQ(Put("/v1/executions/" + cid + "/stub", {{"result", {{"maybe", 1}}}})->status, 400);
  EXPECT_EQ(Put("/v1/executions/" + cid + "/stub", {{"result", {{"ok", 42}}}})->status, 400)
      << "result<string, string> does not accept 42";
  EXPECT_EQ(Put("/v1/executions/" + cid + "/stub", Json::object())->status, 400);
  EXPECT_EQ(Put("/v1/executions/" + parent + "/stub", {{"result", {{"ok", "x"}}}})->status, 400);

  auto stubbed = Put("/v1/executions/" + cid + "/stub", {{"result", {{"ok", "approved"}}}});
  ASSERT_EQ(stubbed->status, 200) << stubbed->body;
  EXPECT_EQ(Put("/v1/executions/" + cid + "/stub", {{"result", {{"ok", "approved"}}}})->status, 200);
  auto other = Put("/v1/executions/" + cid + "/stub", {{"result", {{"err", "denied"}}}});
  EXPECT_EQ(other->status, 409);

  Json child_status = Body(Get("/v1/executions/" + cid));
  EXPECT_EQ(child_status["result"], Json({{"ok", "approved"}}));
  Json responses = Body(Get("/v1/executions/" + parent + "/responses"));
  ASSERT_THAT(responses["responses"], SizeIs(1));
  EXPECT_EQ(responses["responses"][0]["cursor"], 0);
  Json after = Body(Get("/v1/executions/" + parent + "/responses?cursor=0"));
  EXPECT_THAT(after["responses"], SizeIs(0));

  // Derived ids are listed only with show_derived.
  EXPECT_THAT(Body(Get("/v1/executions"))["executions"], SizeIs(1));
  EXPECT_THAT(Body(Get("/v1/executions?show_derived=true"))["executions"], SizeIs(2));
  // Workflows cannot be cancelled.
  EXPECT_EQ(Put("/v1/executions/" + parent + "/cancel", Json::object())->status, 400);
}

TEST_F(ApiTest, CancelARunningActivity) {
  std::string id = Submit({{"ffqn", kBlock}});
  activities_->WaitForBlocked(1);
  auto cancelled = Put("/v1/executions/" + id + "/cancel", Json::object());
  ASSERT_EQ(cancelled->status, 200) << cancelled->body;
  EXPECT_EQ(Body(cancelled)["outcome"], "cancelled");
  auto result = Get("/v1/executions/" + id + "/result?timeout=30");
  ASSERT_EQ(result->status, 200);
  EXPECT_EQ(Body(result)["result"]["execution_error"]["kind"], "cancelled");
  auto again = Put("/v1/executions/" + id + "/cancel", Json::object());
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(Body(again)["outcome"], "cancelled");

  std::string done = Submit({{"ffqn", kFail}});
  ASSERT_EQ(Get("/v1/executions/" + done + "/result?timeout=30")->status, 200);
  EXPECT_EQ(Body(Put("/v1/executions/" + done + "/cancel", Json::object()))["outcome"],
            "already_finished");
}

TEST_F(ApiTest, CancelDelayValidatesTheId) {
  EXPECT_EQ(Put("/v1/delays/nope/cancel", Json::object())->status, 400);
  std::string missing = "Delay_" + core::ExecutionId::Generate().ToString().substr(2) + ".n:js_1";
  auto res = Put("/v1/delays/" + missing + "/cancel", Json::object());
  EXPECT_EQ(res->status, 404) << res->body;
}

TEST_F(ApiTest, Upgrade) {
  std::string id = Submit({{"ffqn", kEcho}, {"params", {"u"}}, {"scheduled_at", "2999-01-01T00:00:00Z"}});
  std::string old_digest = Body(Get("/v1/executions/" + id))["component_digest"];
  std::string new_digest = Sha256Digest("v2").ToString();
  EXPECT_EQ(Put("/v1/executions/" + id + "/upgrade", {{"old_digest", "sha256:bad"}, {"new_digest", new_digest}})->status, 400);
  EXPECT_EQ(Put("/v1/executions/" + id + "/upgrade", {{"old_digest", new_digest}, {"new_digest", new_digest}})->status, 409);
  auto ok = Put("/v1/executions/" + id + "/upgrade", {{"old_digest", old_digest}, {"new_digest", new_digest}});
  ASSERT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(Body(Get("/v1/executions/" + id))["component_digest"], new_digest);
}

TEST_F(ApiTest, BacktraceNotStored) {
  std::string id = Submit({{"ffqn", kFail}});
  auto res = Get("/v1/executions/" + id + "/backtrace");
  EXPECT_EQ(res->status, 404);
  EXPECT_THAT(Body(res)["error"]["message"].get<std::string>(), HasSubstr("no backtrace stored"));
  EXPECT_EQ(Get("/v1/executions/" + id + "/backtrace?version=first")->status, 404);
  EXPECT_EQ(Get("/v1/executions/" + id + "/backtrace?version=3")->status, 404);
  EXPECT_EQ(Get("/v1/executions/" + id + "/backtrace?version=latest")->status, 400);
}

TEST_F(ApiTest, ComponentsHealthzMetrics) {
  Json components = Body(Get("/v1/components"));
  ASSERT_THAT(components["components"], SizeIs(3));
  EXPECT_EQ(components["components"][0]["name"], "approvals");
  EXPECT_EQ(components["components"][0]["type"], "activity_stub");
  EXPECT_EQ(components["components"][0]["functions"][0]["ffqn"], kApprove);
  EXPECT_EQ(components["components"][0]["functions"][0]["return_type"], "result<string, string>");
  EXPECT_EQ(components["components"][1]["functions"][0]["params"][0]["type"], "string");

  auto health = Get("/healthz");
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(Body(health)["status"], "ok");
  auto metrics = Get("/metrics");
  ASSERT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->body, HasSubstr("stele_components 3"));
  EXPECT_THAT(metrics->body, HasSubstr("stele_http_responses_total{code=\"200\"}"));
  EXPECT_THAT(metrics->body, HasSubstr("stele_sqlite_queued_ops"));
  EXPECT_THAT(metrics->body, HasSubstr("stele_executions{state=\"pending_at\"}"));
  EXPECT_THAT(metrics->body, HasSubstr("stele_executions{state=\"finished\"}"));
  EXPECT_THAT(metrics->body, HasSubstr("# TYPE stele_lock_latency_seconds histogram"));
  EXPECT_THAT(metrics->body, ::testing::ContainsRegex("stele_lock_latency_seconds_bucket\\{component=\"[a-z_]+\",le=\"\\+Inf\"\\} [1-9]"));
  EXPECT_THAT(metrics->body, HasSubstr("stele_record_latency_seconds_count"));
}

TEST_F(ApiTest, FollowStreamsStatesUntilFinished) {
  std::string id = Submit({{"ffqn", kBlock}});
  activities_->WaitForBlocked(1);
  std::string stream;
  std::thread canceller;
  bool cancel_started = false;
  auto res = client_->Get(("/v1/executions/" + id + "/follow").c_str(),
                          [&](const char* data, size_t len) {
                            stream.append(data, len);
                            if (!cancel_started && stream.find("\"locked\"") != std::string::npos) {
                              cancel_started = true;
                              canceller = std::thread([&] {
                                httplib::Client c("127.0.0.1", server_->port());
                                c.Put(("/v1/executions/" + id + "/cancel").c_str(), "{}",
                                      "application/json");
                              });
                            }
                            return true;
                          });
  if (canceller.joinable()) canceller.join();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(stream, HasSubstr("event: state\ndata: {\"status\":\"locked\""));
  EXPECT_THAT(stream, HasSubstr("event: finished\ndata: "));
  EXPECT_THAT(stream, HasSubstr("\"kind\":\"cancelled\""));
  EXPECT_EQ(Get("/v1/executions/E_nope/follow")->status, 400);
}

TEST_F(ApiTest, ResultTimeoutIsCapped) {
  std::string id = Submit({{"ffqn", kFail}});
  EXPECT_EQ(Get("/v1/executions/" + id + "/result?timeout=99999999")->status, 400);
  EXPECT_EQ(Get("/v1/executions/" + id + "/result?timeout=abc")->status, 400);
}

class ApiTokenTest : public ApiTest {
 protected:
  void SetUp() override {
    // sha256("letmein")
    StartServer("token_sha256 = \"" + Sha256Hex("letmein") + "\"\n");
  }
};

TEST_F(ApiTokenTest, BearerTokenIsRequired) {
  auto missing = Get("/v1/components");
  EXPECT_EQ(missing->status, 401);
  EXPECT_EQ(ErrorKind(missing), "unauthorized");
  client_->set_bearer_token_auth("wrong");
  EXPECT_EQ(Get("/v1/components")->status, 401);
  EXPECT_EQ(Post("/v1/executions", {{"ffqn", kEcho}, {"params", {"x"}}})->status, 401);
  client_->set_bearer_token_auth("letmein");
  EXPECT_EQ(Get("/v1/components")->status, 200);
  EXPECT_EQ(Get("/healthz")->status, 200);
  // Nothing was submitted by the unauthorised request.
  EXPECT_THAT(Body(Get("/v1/executions"))["executions"], SizeIs(0));
}

class ApiPlainTokenTest : public ApiTest {
 protected:
  void SetUp() override { StartServer("token = \"plain-token\"\n"); }
};

TEST_F(ApiPlainTokenTest, PlainToken) {
  EXPECT_EQ(Get("/v1/executions")->status, 401);
  client_->set_bearer_token_auth("plain-token");
  EXPECT_EQ(Get("/v1/executions")->status, 200);
  client_->set_bearer_token_auth("plain-token-longer");
  EXPECT_EQ(Get("/v1/executions")->status, 401);
}

TEST(ServerStartTest, BadListenAddressIsAClearError) {
  auto config = ParseConfig("[api]\nlisten = \"203.0.113.1:1\"\n", "stele.toml",
                            (std::filesystem::temp_directory_path() / "stele_api_badlisten").string(),
                            ProcessEnv());
  ASSERT_TRUE(config.has_value());
  auto server = Server::Start(std::move(*config), {});
  ASSERT_FALSE(server.has_value());
  EXPECT_THAT(server.error(), HasSubstr("cannot listen"));
  std::filesystem::remove_all(std::filesystem::temp_directory_path() / "stele_api_badlisten");
}

}  // namespace
}  // namespace stele::server
