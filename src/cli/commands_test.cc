// Unit tests of the client commands against a scripted HTTP server on
// 127.0.0.1: the request each command sends, how answers are printed, and
// the exit code each kind of failure maps to. The real server is exercised
// by e2e_test.cc.
#include "cli/commands.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <mutex>
#include <sstream>
#include <thread>

namespace stele::cli {
namespace {

using nlohmann::json;

constexpr const char* kId = "E_01HZX3V2Q9G8T6W4M3K2J1H0AB";

struct Recorded {
  std::string method;
  std::string path;
  std::string query;  // "k=v&..." as received
  std::string body;
  std::string authorization;
};

// A scripted API server: each route answers with a fixed status and body.
class FakeApi {
 public:
  FakeApi() {
    // Recorded before routing (a logger would run after the response is
    // sent, racing with the test reading the record).
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response&) {
      std::lock_guard lock(mu_);
      std::string query;
      for (const auto& [k, v] : req.params) query += (query.empty() ? "" : "&") + k + "=" + v;
      recorded_.push_back(
          {req.method, req.path, query, req.body, req.get_header_value("Authorization")});
      return httplib::Server::HandlerResponse::Unhandled;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the accept loop runs would be lost and join() would
    // hang: wait (bounded) until the loop is up.
    for (int i = 0; i < 5000 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~FakeApi() {
    server_.stop();
    thread_.join();
  }

  void Answer(const std::string& method, const std::string& pattern, int status, json body) {
    auto handler = [this, status, text = body.dump()](const httplib::Request& req,
                                                      httplib::Response& res) {
      {
        // The body is read after routing; one client at a time.
        std::lock_guard lock(mu_);
        if (!recorded_.empty()) recorded_.back().body = req.body;
      }
      res.status = status;
      res.set_content(text, "application/json");
    };
    if (method == "GET") server_.Get(pattern, handler);
    if (method == "POST") server_.Post(pattern, handler);
    if (method == "PUT") server_.Put(pattern, handler);
    if (method == "DELETE") server_.Delete(pattern, handler);
  }
  httplib::Server& server() { return server_; }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Recorded> recorded() {
    std::lock_guard lock(mu_);
    return recorded_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Recorded> recorded_;
};

struct CliRun {
  int code;
  std::string out;
  std::string err;
};

CliRun Cli(const FakeApi& api, std::vector<std::string> args) {
  args.push_back("--api-url");
  args.push_back(api.url());
  std::ostringstream out, err;
  int code = CliMain(
      args, [](const char*) { return std::nullopt; }, out, err);
  return {code, out.str(), err.str()};
}

json Error(const std::string& kind) {
  return {{"error", {{"kind", kind}, {"message", kind + " happened"}}}};
}

TEST(CliCommands, SubmitSendsTheRequestAndPrintsTheId) {
  FakeApi api;
  api.Answer("POST", "/v1/executions", 201, {{"execution_id", kId}});
  CliRun r = Cli(api, {"execution", "submit", "ns:pkg/ifc.fn", R"([1, {"a": "b"}])", "--id", kId,
                       "--token", "s3cret"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, std::string(kId) + "\n");
  auto rec = api.recorded();
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0].method, "POST");
  EXPECT_EQ(
      json::parse(rec[0].body),
      json::parse(R"({"ffqn": "ns:pkg/ifc.fn", "params": [1, {"a": "b"}], "execution_id": ")" +
                  std::string(kId) + "\"}"));
  EXPECT_EQ(rec[0].authorization, "Bearer s3cret");
}

TEST(CliCommands, ComponentListShowsWebhooksWithTheirRoutes) {
  FakeApi api;
  json doc = {{"components",
               {{{"name", "saga"},
                 {"type", "workflow"},
                 {"digest", "sha256:aa"},
                 {"functions", {{{"ffqn", "shop:orders/saga.place-order"}}}}}}},
              {"webhooks",
               {{{"name", "orders"},
                 {"type", "webhook_endpoint"},
                 {"digest", "sha256:bb"},
                 {"route", "POST /orders/:id"},
                 {"auth", "none"}}}}};
  api.Answer("GET", "/v1/components", 200, doc);
  CliRun r = Cli(api, {"component", "list"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "saga  workflow  sha256:aa\n  shop:orders/saga.place-order\n"
            "orders  webhook_endpoint  sha256:bb\n  POST /orders/:id  (auth none)\n");
}

TEST(CliCommands, JsonOutputIsTheServersDocument) {
  FakeApi api;
  json doc = {{"execution_id", kId},
              {"ffqn", "ns:pkg/ifc.fn"},
              {"pending_state", {{"status", "finished"}}},
              {"result", {{"err", "no"}}}};
  api.Answer("GET", "/v1/executions/" + std::string(kId), 200, doc);
  CliRun r = Cli(api, {"--json", "execution", "get", kId});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(json::parse(r.out), doc);
  CliRun human = Cli(api, {"execution", "get", kId});
  EXPECT_EQ(human.code, 0);
  EXPECT_NE(human.out.find("err \"no\""), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("finished"), std::string::npos) << human.out;
}

TEST(CliCommands, ResultExitCodeFollowsTheOutcome) {
  FakeApi api;
  std::string base = "/v1/executions/" + std::string(kId) + "/result";
  api.Answer("GET", base, 200, {{"execution_error", {{"kind", "timed_out"}}}});
  CliRun failed = Cli(api, {"execution", "result", kId, "--timeout", "3"});
  EXPECT_EQ(failed.code, 1);
  EXPECT_NE(failed.out.find("timed_out"), std::string::npos);
  ASSERT_EQ(api.recorded().size(), 1u);
  EXPECT_EQ(api.recorded().back().query, "timeout=3");
}

TEST(CliCommands, HttpErrorsMapToDocumentedExitCodes) {
  struct Case {
    int status;
    int code;
  };
  for (Case c : {Case{400, 2}, Case{401, 6}, Case{404, 3}, Case{408, 7}, Case{409, 5}, Case{413, 2},
                 Case{500, 4}, Case{503, 4}}) {
    FakeApi api;
    api.Answer("PUT", "/v1/executions/" + std::string(kId) + "/cancel", c.status,
               Error("k" + std::to_string(c.status)));
    CliRun r = Cli(api, {"execution", "cancel", kId});
    EXPECT_EQ(r.code, c.code) << "HTTP " << c.status;
    EXPECT_TRUE(r.out.empty());
    EXPECT_NE(r.err.find("k" + std::to_string(c.status) + " happened"), std::string::npos) << r.err;
  }
}

TEST(CliCommands, NonJsonAnswersAreServerErrors) {
  FakeApi api;
  api.server().Get("/v1/components", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("<html>proxy</html>", "text/html");
  });
  CliRun r = Cli(api, {"component", "list"});
  EXPECT_EQ(r.code, 4);
  EXPECT_NE(r.err.find("not JSON"), std::string::npos) << r.err;
}

TEST(CliCommands, UnreachableServerIsExitCode4) {
  std::ostringstream out, err;
  // Port 1 on loopback: nothing listens there in the test environment.
  int code = CliMain(
      {"component", "list", "--api-url", "http://127.0.0.1:1"},
      [](const char*) { return std::nullopt; }, out, err);
  EXPECT_EQ(code, 4);
  // Why, in words: not httplib's enumerator name ("Connection").
  EXPECT_EQ(err.str(),
            "stele: cannot reach the server at http://127.0.0.1:1: connection refused\n");
}

TEST(CliCommands, UsageErrorsSendNothing) {
  FakeApi api;
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{"execution", "submit", "ns:pkg/ifc.fn", "[1,"},
                                             {"execution", "stub", kId, "{}"},
                                             {"execution", "get", "E_x"},
                                             {"execution", "frobnicate"}}) {
    CliRun r = Cli(api, args);
    EXPECT_EQ(r.code, 2);
    EXPECT_FALSE(r.err.empty());
  }
  EXPECT_TRUE(api.recorded().empty());
}

TEST(CliCommands, ListSendsFiltersAndPrintsTheNextCursor) {
  FakeApi api;
  api.Answer("GET", "/v1/executions", 200,
             {{"executions",
               {{{"execution_id", kId},
                 {"ffqn", "ns:pkg/ifc.fn"},
                 {"pending_state", {{"status", "locked"}}}}}},
              {"next_cursor", "CUR"}});
  CliRun r = Cli(
      api, {"execution", "list", "--ffqn-prefix", "ns:pkg/", "--hide-finished", "--length", "1"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(kId), std::string::npos);
  EXPECT_NE(r.out.find("--cursor CUR"), std::string::npos) << r.out;
  auto rec = api.recorded();
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_NE(rec[0].query.find("ffqn_prefix=ns:pkg/"), std::string::npos) << rec[0].query;
  EXPECT_NE(rec[0].query.find("hide_finished=true"), std::string::npos);
  EXPECT_NE(rec[0].query.find("length=1"), std::string::npos);
}

TEST(CliCommands, CancelOfADelayUsesTheDelayRoute) {
  FakeApi api;
  std::string delay = "Delay_01HZX3V2Q9G8T6W4M3K2J1H0AB.o:1_1";
  api.Answer("PUT", R"(/v1/delays/([^/]+)/cancel)", 200, {{"outcome", "cancelled"}});
  CliRun r = Cli(api, {"execution", "cancel", delay});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "cancelled\n");
  ASSERT_EQ(api.recorded().size(), 1u);
  EXPECT_EQ(api.recorded()[0].path, "/v1/delays/" + delay + "/cancel");
}

TEST(CliCommands, StubSendsTheResultAndPrintsStubbed) {
  FakeApi api;
  const std::string child = std::string(kId) + ".o:1_1";
  api.Answer("PUT", R"(/v1/executions/([^/]+)/stub)", 200, {{"execution_id", child}});
  CliRun r = Cli(api, {"execution", "stub", child, R"({"ok": {"approved": true}})"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "stubbed\n");
  EXPECT_TRUE(r.err.empty()) << r.err;
  auto rec = api.recorded();
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0].method, "PUT");
  EXPECT_EQ(rec[0].path, "/v1/executions/" + child + "/stub");
  EXPECT_EQ(json::parse(rec[0].body), json::parse(R"({"result": {"ok": {"approved": true}}})"));

  CliRun as_json = Cli(api, {"--json", "execution", "stub", child, R"({"err": null})"});
  EXPECT_EQ(as_json.code, 0) << as_json.err;
  EXPECT_EQ(json::parse(as_json.out), json({{"execution_id", child}}));
  ASSERT_EQ(api.recorded().size(), 2u);
  EXPECT_EQ(json::parse(api.recorded()[1].body), json::parse(R"({"result": {"err": null}})"));
}

TEST(CliCommands, FollowStreamsUntilFinished) {
  FakeApi api;
  std::mutex mu;
  bool finished = false;
  api.server().Get("/v1/executions/" + std::string(kId),
                   [&](const httplib::Request&, httplib::Response& res) {
                     std::lock_guard lock(mu);
                     json doc = {{"execution_id", kId},
                                 {"pending_state", {{"status", finished ? "finished" : "locked"}}}};
                     if (finished) doc["result"] = {{"err", "denied"}};
                     res.set_content(doc.dump(), "application/json");
                   });
  api.server().Get("/v1/executions/" + std::string(kId) + "/follow", [&](const httplib::Request&,
                                                                         httplib::Response& res) {
    {
      std::lock_guard lock(mu);
      finished = true;
    }
    res.set_content(
        ": keep-alive\n\ndata: {\"pending_state\": {\"status\": \"pending_at\"}}\n\n"
        "data: {\"pending_state\": {\"status\": \"finished\"}}\n\n",
        "text/event-stream");
  });
  CliRun r = Cli(api, {"execution", "get", kId, "--follow"});
  EXPECT_EQ(r.code, 1) << r.err;  // finished with err
  EXPECT_NE(r.out.find("state: locked"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("state: pending_at"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("result: err \"denied\""), std::string::npos) << r.out;
}

TEST(CliCommands, ScheduleCommandsSendTheirRequests) {
  FakeApi api;
  json schedule = {{"name", "nightly"},
                   {"schedule", "0 30 2 * * *"},
                   {"time_zone", "Europe/Berlin"},
                   {"ffqn", "ns:pkg/ifc.fn"},
                   {"params", {1}},
                   {"overlap", "skip"},
                   {"catch_up", "all"},
                   {"catch_up_limit", 3},
                   {"source", "api"},
                   {"paused", false},
                   {"last_tick", "2030-01-01T00:00:00Z"},
                   {"next_tick", "2030-01-01T01:30:00Z"}};
  api.Answer("POST", "/v1/schedules", 201, schedule);
  api.Answer("GET", "/v1/schedules", 200, {{"schedules", {schedule}}});
  api.Answer("GET", R"(/v1/schedules/([^/]+))", 200, schedule);
  api.Answer("PUT", R"(/v1/schedules/([^/]+)/pause)", 200, schedule);
  api.Answer("DELETE", R"(/v1/schedules/([^/]+))", 200, {{"deleted", "nightly"}});
  api.Answer("POST", R"(/v1/schedules/([^/]+)/trigger)", 201, {{"execution_id", kId}});

  CliRun created =
      Cli(api, {"schedule", "create", "nightly", "0 30 2 * * *", "ns:pkg/ifc.fn", "[1]",
                "--time-zone", "Europe/Berlin", "--catch-up", "all", "--catch-up-limit", "3"});
  EXPECT_EQ(created.code, 0) << created.err;
  EXPECT_NE(created.out.find("0 30 2 * * * in Europe/Berlin"), std::string::npos) << created.out;
  EXPECT_NE(created.out.find("all (at most 3)"), std::string::npos) << created.out;
  CliRun listed = Cli(api, {"schedule", "list"});
  EXPECT_EQ(listed.code, 0);
  EXPECT_NE(listed.out.find("SCHEDULE"), std::string::npos);
  EXPECT_NE(listed.out.find("2030-01-01T01:30:00Z"), std::string::npos) << listed.out;
  EXPECT_EQ(Cli(api, {"schedule", "pause", "nightly"}).out, "paused nightly\n");
  EXPECT_EQ(Cli(api, {"schedule", "delete", "nightly"}).out, "deleted nightly\n");
  EXPECT_EQ(Cli(api, {"schedule", "trigger", "nightly"}).out, std::string(kId) + "\n");
  CliRun as_json = Cli(api, {"--json", "schedule", "get", "nightly"});
  EXPECT_EQ(json::parse(as_json.out), schedule);

  auto rec = api.recorded();
  ASSERT_EQ(rec.size(), 6u);
  EXPECT_EQ(rec[0].method, "POST");
  EXPECT_EQ(json::parse(rec[0].body), json::parse(R"({"name": "nightly", "schedule": "0 30 2 * * *",
                            "ffqn": "ns:pkg/ifc.fn", "params": [1], "time_zone": "Europe/Berlin",
                            "catch_up": "all", "catch_up_limit": 3})"));
  EXPECT_EQ(rec[2].method, "PUT");
  EXPECT_EQ(rec[2].path, "/v1/schedules/nightly/pause");
  EXPECT_EQ(rec[3].method, "DELETE");
  EXPECT_EQ(rec[4].path, "/v1/schedules/nightly/trigger");
}

TEST(CliCommands, ScheduleErrorsMapToExitCodes) {
  FakeApi api;
  api.Answer("GET", R"(/v1/schedules/([^/]+))", 404, Error("not_found"));
  api.Answer("POST", "/v1/schedules", 400, Error("validation"));
  EXPECT_EQ(Cli(api, {"schedule", "get", "nope"}).code, 3);
  EXPECT_EQ(Cli(api, {"schedule", "create", "s", "61 * * * * *", "ns:pkg/ifc.fn", "[]"}).code, 2);
  const size_t sent = api.recorded().size();
  // Malformed names never reach the server.
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"schedule", "get", "../etc"},
           {"schedule", "pause", "a/b"},
           {"schedule", "delete", ""},
           {"schedule", "trigger", std::string(129, 'a')},
           {"schedule", "create", "s", "* * * * * *", "not-an-ffqn", "[]"},
           {"schedule", "create", "s", "* * * * * *", "ns:pkg/ifc.fn", "{}"},
           {"schedule", "create", "s", "", "ns:pkg/ifc.fn", "[]"},
           {"schedule", "create", "s", "* * * * * *", "ns:pkg/ifc.fn", "[]", "--overlap", "x"},
           {"schedule", "create", "s", "* * * * * *", "ns:pkg/ifc.fn", "[]", "--catch-up-limit",
            "0"},
           {"schedule", "list", "extra"},
           {"schedule", "frobnicate", "s"}}) {
    CliRun r = Cli(api, args);
    EXPECT_EQ(r.code, 2) << args[1];
    EXPECT_FALSE(r.err.empty());
  }
  EXPECT_EQ(api.recorded().size(), sent);
}

}  // namespace
}  // namespace stele::cli
