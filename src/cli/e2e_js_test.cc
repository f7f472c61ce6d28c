// End-to-end tests of JavaScript components (docs/js.md) through the real
// `stele` binary (e2e_fixture.h): a [[workflow_js]] calling an
// [[activity_js]] with its configured env, submitted and followed with the
// CLI; the backtrace of the JS workflow with file, line and column through
// the API; `stele server verify` naming the file and line of a broken
// module; an endless loop interrupted, retried, then failed; and an upgrade to
// changed code that ends in nondeterminism. The modules are plain JS
// written by the test (no build step).
#include "e2e_fixture.h"

namespace {

constexpr const char* kWorkflowJs = R"(import { Err } from "stele";

export const functions = {
  "e2e:js/wf.hello": {
    params: [["name", "string"]],
    returns: "string",
    run: async (ctx, name) => {
      const greeting = await ctx.call("e2e:js/act.greet", [name]);
      await ctx.sleep(SLEEP_MS);
      return greeting + " at step " + (Date.now() > 0);
    },
  },
  "e2e:js/wf.loop": {
    run: async () => { for (;;) {} },
  },
};
)";

constexpr const char* kActivityJs = R"(export const functions = {
  "e2e:js/act.greet": {
    params: [["name", "string"]],
    returns: "string",
    run: async (ctx, name) => ctx.env.GREETING + ", " + name,
  },
};
)";

class E2eJsTest : public E2eTest {
 protected:
  // The JS components and a stub one, with `workflow` as hello.js.
  void WriteJsConfig(const std::string& workflow) {
    WriteFile(dir_ / "hello.js", workflow);
    WriteFile(dir_ / "greet.js", kActivityJs);
    std::string toml = "data_dir = \"" + (dir_ / "data").string() +
                       "\"\n\n[api]\nlisten = \"127.0.0.1:0\"\n\n[database]\nsqlite = \"" +
                       sqlite_.string() +
                       "\"\n\n[executor]\ntick_sleep = \"50ms\"\n\n"
                       "[watcher]\ntick_sleep = \"50ms\"\nleeway = \"100ms\"\n\n"
                       "[[workflow_js]]\nname = \"hello_js\"\nlocation = \"hello.js\"\n"
                       "guest_slice = \"200ms\"\nretry_backoff = \"100ms\"\n\n"
                       "[[activity_js]]\nname = \"greet_js\"\nlocation = \"greet.js\"\n"
                       "env = { GREETING = \"Hello\" }\n";
    WriteFile(dir_ / "stele.toml", toml);
  }
  std::string Workflow(int sleep_ms, bool changed = false) {
    std::string text = kWorkflowJs;
    text.replace(text.find("SLEEP_MS"), 8, std::to_string(sleep_ms));
    if (changed) {
      // Inside the recorded prefix: another activity argument.
      text.replace(text.find("[name]"), 6, "[name + \"!\"]");
    }
    return text;
  }
  void StartJs(const std::string& workflow) {
    WriteJsConfig(workflow);
    CliRun verify = RunStele({"server", "verify", "--config", (dir_ / "stele.toml").string()});
    if (verify.code != 0 && verify.err.find("not supported") != std::string::npos) {
      const char* required = std::getenv("STELE_REQUIRE_WASM");
      if (required != nullptr && std::string(required) == "1") {
        FAIL() << "STELE_REQUIRE_WASM=1 but the server cannot load JavaScript: " << verify.err;
      }
      GTEST_SKIP() << "this server build has no JavaScript runtime: " << verify.err;
    }
    ASSERT_EQ(verify.code, 0) << verify.out << verify.err;
    ASSERT_TRUE(server_.Start(dir_ / "stele.toml", dir_ / "server.log"));
    api_ = server_.url();
  }
};

#define START_JS(workflow) \
  StartJs(workflow);       \
  if (IsSkipped() || HasFatalFailure()) return

TEST_F(E2eJsTest, AJsWorkflowCallsAJsActivityWithABacktraceOfItsSource) {
  START_JS(Workflow(1));
  CliRun run = Cli({"execution", "submit", "e2e:js/wf.hello", R"(["Ada"])", "--follow"});
  EXPECT_EQ(run.code, 0) << run.out << run.err << server_.Log();
  EXPECT_NE(run.out.find("Hello, Ada at step true"), std::string::npos) << run.out;

  const json components = HttpJson("/v1/components");
  std::map<std::string, std::string> types;
  for (const json& c : components["components"]) types[c["name"]] = c["type"];
  EXPECT_EQ(types["hello_js"], "workflow_js");
  EXPECT_EQ(types["greet_js"], "activity_js");

  const std::string id = Submit("e2e:js/wf.hello", R"(["Bo"])");
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.out, "ok \"Hello, Bo at step true\"\n") << result.err;
  // The last operation that wrote events was the sleep, at line 9.
  const json trace = HttpJson("/v1/executions/" + id + "/backtrace");
  ASSERT_TRUE(trace.contains("wasm_backtrace")) << trace.dump();
  const json& frame = trace["wasm_backtrace"]["frames"][0];
  EXPECT_EQ(frame["module"], "hello_js") << trace.dump();
  ASSERT_FALSE(frame["symbols"].empty()) << trace.dump();
  EXPECT_EQ(frame["symbols"][0]["file"], "hello.js") << trace.dump();
  EXPECT_EQ(frame["symbols"][0]["line"], 9) << trace.dump();
  EXPECT_EQ(frame["symbols"][0]["col"], 17) << trace.dump();  // `sleep` of ctx.sleep
}

TEST_F(E2eJsTest, VerifyNamesTheFileAndLineOfABrokenModule) {
  std::string broken = Workflow(1);
  broken.replace(broken.find("run: async () => { for (;;) {} },"), 33,
                 "run: async () => { for (;;) { },");
  WriteJsConfig(broken);
  CliRun verify = RunStele({"server", "verify", "--config", (dir_ / "stele.toml").string()});
  if (verify.err.find("not supported") != std::string::npos) GTEST_SKIP() << verify.err;
  EXPECT_EQ(verify.code, 1);
  // The table's line in stele.toml, then the module's own position.
  EXPECT_NE(verify.err.find("stele.toml:16: workflow_js"), std::string::npos) << verify.err;
  EXPECT_NE(verify.err.find("component `hello_js`: hello.js:1"), std::string::npos) << verify.err;
  EXPECT_NE(verify.err.find("SyntaxError"), std::string::npos) << verify.err;
}

// An endless loop is stopped at its slice (guest_slice = 200ms), retried,
// and in the third attempt fails for good saying why; the server keeps
// serving.
TEST_F(E2eJsTest, AnEndlessLoopIsInterruptedThenFailsAfterBoundedAttempts) {
  START_JS(Workflow(1));
  const std::string id = Submit("e2e:js/wf.loop", "[]");
  CliRun result = Cli({"execution", "result", id, "--timeout", "60"});
  EXPECT_NE(result.code, 0);
  EXPECT_NE((result.out + result.err).find("exceeded its CPU time slice"), std::string::npos)
      << result.out << result.err << server_.Log();
  EXPECT_NE((result.out + result.err).find("in 3 attempts"), std::string::npos)
      << result.out << result.err;
  EXPECT_EQ(Count(EventTypes(id), "temporarily_timed_out"), 2u);
  EXPECT_TRUE(server_.Running());
}

// Changed code inside the recorded prefix: created on v1, upgraded to v2,
// the execution ends with nondeterminism detected.
TEST_F(E2eJsTest, UpgradedToCodeChangedInItsPrefixIsNondeterminism) {
  START_JS(Workflow(3'600'000));
  const std::string id = Submit("e2e:js/wf.hello", R"(["Cy"])");
  ASSERT_TRUE(WaitForStatus(id, "blocked_by_join_set")) << server_.Log();
  const std::string v1 = HttpJson("/v1/executions/" + id)["component_digest"];
  server_.Kill(SIGTERM);
  ASSERT_TRUE(server_.WaitExit().has_value()) << server_.Log();
  WriteFile(dir_ / "hello.js", Workflow(3'600'000, /*changed=*/true));
  ASSERT_TRUE(server_.Start(dir_ / "stele.toml", dir_ / "server.log"));
  api_ = server_.url();
  std::string v2;
  const json components = HttpJson("/v1/components");
  for (const json& c : components["components"]) {
    if (c["name"] == "hello_js") v2 = c["digest"];
  }
  ASSERT_NE(v1, v2);
  auto res = Http().Put("/v1/executions/" + id + "/upgrade",
                        json{{"old_digest", v1}, {"new_digest", v2}}.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  ASSERT_EQ(Cli({"execution", "cancel", DelayIdOf(id)}).code, 0);
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_NE(result.code, 0);
  EXPECT_NE((result.out + result.err).find("nondeterminism"), std::string::npos)
      << result.out << result.err << server_.Log();
}

// The TypeScript examples of examples/js as the build bundled them
// (stele_js_examples), on the real server: a workflow calling a JS activity
// with the configured greeting, and a fan-out over JS activities.
TEST_F(E2eJsTest, TheTypeScriptExamplesRun) {
#ifndef STELE_E2E_JS_EXAMPLES_DIR
  GTEST_SKIP() << "the TypeScript examples are not part of this build (no npm)";
#else
  const fs::path examples = STELE_E2E_JS_EXAMPLES_DIR;
  if (!fs::exists(examples / "workflows.js")) {
    GTEST_SKIP() << "the TypeScript examples were not built: " << examples;
  }
  const std::string toml = "data_dir = \"" + (dir_ / "data").string() +
                           "\"\n\n[api]\nlisten = \"127.0.0.1:0\"\n\n"
                           "[database]\nsqlite = \"" +
                           sqlite_.string() +
                           "\"\n\n[executor]\ntick_sleep = \"50ms\"\n\n"
                           "[[workflow_js]]\nname = \"hello_js\"\nlocation = \"" +
                           (examples / "workflows.js").string() +
                           "\"\n\n[[activity_js]]\nname = \"hello_js_activities\"\nlocation = \"" +
                           (examples / "activities.js").string() +
                           "\"\nenv = { GREETING = \"Hi\" }\n";
  WriteFile(dir_ / "stele.toml", toml);
  CliRun verify = RunStele({"server", "verify", "--config", (dir_ / "stele.toml").string()});
  if (verify.err.find("not supported") != std::string::npos) GTEST_SKIP() << verify.err;
  ASSERT_EQ(verify.code, 0) << verify.out << verify.err;
  ASSERT_TRUE(server_.Start(dir_ / "stele.toml", dir_ / "server.log"));
  api_ = server_.url();
  const std::string welcome = Submit("demo:hello-js/api.welcome", R"(["Ada"])");
  const std::string squares = Submit("demo:hello-js/api.sum-of-squares", "[5]");
  CliRun a = Cli({"execution", "result", welcome, "--timeout", "30"});
  EXPECT_EQ(a.out, "ok \"Hi, Ada!\"\n") << a.err << server_.Log();
  CliRun b = Cli({"execution", "result", squares, "--timeout", "30"});
  EXPECT_EQ(b.out, "ok 55\n") << b.err << server_.Log();
  // The declared types come from the module: a string where a u32 is
  // declared is refused at submission.
  CliRun bad = Cli({"execution", "submit", "demo:hello-js/api.sum-of-squares", R"(["five"])"});
  EXPECT_NE(bad.code, 0);
#endif
}

}  // namespace
