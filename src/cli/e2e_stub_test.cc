// End-to-end tests of `stele execution stub` through the real `stele`
// binary (e2e_fixture.h) on the example wasm workflow human_approval: its
// child is a stub activity that only the API completes. A successful stub,
// the same result again, a different result (409, exit 5), and a stub
// racing a cancel of the same child (exactly one wins), and a cancel of a
// delay the workflow never requested (nothing written). Skipped when the
// wasm guests were not built.
#include <atomic>
#include <chrono>
#include <thread>

#include "e2e_fixture.h"

namespace {

class E2eStubTest : public E2eTest {
 protected:
  // Submits an expense and waits until the workflow is blocked on its
  // approval; returns {workflow id, the stub child's id}.
  std::pair<std::string, std::string> BlockedExpense(const std::string& params) {
    std::string id = Submit(kExpense, params);
    EXPECT_TRUE(WaitForStatus(id, "blocked_by_join_set"))
        << HttpJson("/v1/executions/" + id).dump() << server_.Log();
    // The child is derived: listed only with --show-derived.
    json top = CliJson({"execution", "list", "--id-prefix", id + "."});
    EXPECT_EQ(top["executions"].size(), 0u) << top.dump();
    json derived = CliJson({"execution", "list", "--show-derived", "--id-prefix", id + "."});
    EXPECT_EQ(derived["executions"].size(), 1u) << derived.dump();
    if (derived["executions"].size() != 1) return {id, ""};
    const json& child = derived["executions"][0];
    EXPECT_EQ(child["ffqn"], kApprove) << child.dump();
    // Nothing runs a stub activity: its child stays pending until stubbed.
    EXPECT_EQ(child["pending_state"]["status"], "pending_at") << child.dump();
    return {id, child["execution_id"].get<std::string>()};
  }

  // Responses delivered to `parent` that name `child`.
  size_t ResponsesNaming(const std::string& parent, const std::string& child) {
    json responses = CliJson({"execution", "responses", parent, "--length", "1000"});
    size_t n = 0;
    for (const json& r : responses["responses"])
      n += r.dump().find("\"" + child + "\"") != std::string::npos;
    return n;
  }
};

// The documented path: find the child, stub it (exit 0, `stubbed`), the
// workflow continues with the approval; the same result again is accepted,
// another result is a conflict (exit 5) and changes nothing.
TEST_F(E2eStubTest, StubCompletesAWorkflowsChild) {
  START_SERVER(Approval());
  auto [id, child] = BlockedExpense(R"([120, "Ada"])");
  ASSERT_FALSE(child.empty());

  CliRun stub = Cli({"execution", "stub", child, R"({"ok": true})"});
  EXPECT_EQ(stub.code, 0) << stub.out << stub.err;
  EXPECT_EQ(stub.out, "stubbed\n");
  EXPECT_TRUE(stub.err.empty()) << stub.err;

  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 0) << result.out << result.err << server_.Log();
  EXPECT_EQ(result.out, "ok \"paid\"\n");
  EXPECT_EQ(Cli({"execution", "result", child}).out, "ok true\n");
  // The parent's response: the child's result in the result endpoint's
  // shape, printed as a row of its own.
  json responses = CliJson({"execution", "responses", id});
  ASSERT_GE(responses["responses"].size(), 1u) << responses.dump();
  EXPECT_EQ(responses["responses"][0]["response"]["event"]["event"]["result"], json({{"ok", true}}))
      << responses.dump();
  CliRun printed = Cli({"execution", "responses", id});
  EXPECT_NE(printed.out.find("child " + child + " finished: ok true"), std::string::npos)
      << printed.out;

  // The same result again: idempotent, and --json prints the server's document.
  CliRun again = Cli({"--json", "execution", "stub", child, R"({"ok": true})"});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(json::parse(again.out, nullptr, false), json({{"execution_id", child}})) << again.out;
  // Another result: 409, exit 5, nothing on stdout, the server's message on stderr.
  CliRun other = Cli({"execution", "stub", child, R"({"err": "no"})"});
  EXPECT_EQ(other.code, 5) << other.out << other.err;
  EXPECT_TRUE(other.out.empty()) << other.out;
  EXPECT_NE(other.err.find("conflict"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("409"), std::string::npos) << other.err;
  EXPECT_EQ(Cli({"execution", "result", child}).out, "ok true\n");

  // The workflow received exactly one response for the approval.
  EXPECT_EQ(ResponsesNaming(id, child), 1u);
  EXPECT_EQ(Count(EventTypes(child), "finished"), 1u);
  CliRun check = DbCheck();
  EXPECT_EQ(check.code, 0) << check.out << check.err;
}

// Pause and resume through the CLI: a paused workflow whose approval
// arrives stays paused (its response is kept), lists by status, and
// finishes after the resume; bad input writes nothing.
TEST_F(E2eStubTest, APausedWorkflowWaitsForItsResume) {
  START_SERVER(Approval());
  auto [id, child] = BlockedExpense(R"([75, "Grace"])");
  ASSERT_FALSE(child.empty());

  CliRun paused = Cli({"execution", "pause", id, "--reason", "audit"});
  EXPECT_EQ(paused.code, 0) << paused.out << paused.err;
  EXPECT_EQ(paused.out, "paused\n");
  EXPECT_TRUE(WaitForStatus(id, "paused")) << HttpJson("/v1/executions/" + id).dump();
  json listed = CliJson({"execution", "list", "--status", "paused"});
  ASSERT_EQ(listed["executions"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["executions"][0]["execution_id"], id);
  EXPECT_EQ(Cli({"execution", "list", "--status", "asleep"}).code, 2);

  ASSERT_EQ(Cli({"execution", "stub", child, R"({"ok": true})"}).code, 0);
  EXPECT_EQ(ResponsesNaming(id, child), 1u) << "the response arrives while paused";
  EXPECT_EQ(Cli({"execution", "result", id, "--timeout", "1"}).code, 7) << "paused: not run";
  EXPECT_EQ(HttpJson("/v1/executions/" + id)["pending_state"]["status"], "paused");

  CliRun resumed = Cli({"execution", "resume", id});
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(resumed.out, "resumed\n");
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 0) << result.out << result.err << server_.Log();
  EXPECT_EQ(result.out, "ok \"paid\"\n");
  EXPECT_EQ(Count(EventTypes(id), "paused"), 1u);
  EXPECT_EQ(Count(EventTypes(id), "resumed"), 1u);

  EXPECT_EQ(Cli({"execution", "pause", id}).code, 5) << "finished: nothing to pause";
  EXPECT_EQ(Cli({"execution", "pause", "E_01KCR3SKWK5W50MA4Z2GJ9SXD4"}).code, 3);
  EXPECT_EQ(Cli({"execution", "pause", "banana"}).code, 2);
  CliRun check = DbCheck();
  EXPECT_EQ(check.code, 0) << check.out << check.err;
}

// A rejection (err) is recorded and the workflow takes the other branch.
TEST_F(E2eStubTest, StubWithAnErrResult) {
  START_SERVER(Approval());
  auto [id, child] = BlockedExpense(R"([7, "Bo"])");
  ASSERT_FALSE(child.empty());
  CliRun stub = Cli({"execution", "stub", child, R"({"err": "over budget"})"});
  EXPECT_EQ(stub.code, 0) << stub.err;
  EXPECT_EQ(Cli({"execution", "result", id, "--timeout", "30"}).out, "ok \"rejected\"\n");
  CliRun child_result = Cli({"execution", "result", child});
  EXPECT_EQ(child_result.code, 1);
  EXPECT_EQ(child_result.out, "err \"over budget\"\n");
  // A value the declared return type (result<bool, string>) refuses: 400, exit 2.
  auto [id2, child2] = BlockedExpense(R"([8, "Cy"])");
  ASSERT_FALSE(child2.empty());
  CliRun typed = Cli({"execution", "stub", child2, R"({"ok": "yes"})"});
  EXPECT_EQ(typed.code, 2) << typed.err;
  EXPECT_EQ(HttpJson("/v1/executions/" + child2)["pending_state"]["status"], "pending_at");
}

// Issue 16: `stele execution cancel` of a delay the workflow never
// requested, next to its blocking stub child. It used to answer
// `cancelled` and append a response for it, and the workflow then failed
// with nondeterminism_detected. Now: exit 3 (404) with the server's
// message, nothing written, `db check` clean, and the workflow goes on.
TEST_F(E2eStubTest, CancellingADelayThatWasNeverRequestedChangesNothing) {
  START_SERVER(Approval());
  auto [id, child] = BlockedExpense(R"([50, "Di"])");
  ASSERT_FALSE(child.empty());
  auto snapshot = [&] {
    json out = json::array();
    for (const std::string& e : {id, child}) {
      out.push_back({HttpJson("/v1/executions/" + e)["pending_state"],
                     CliJson({"execution", "events", e, "--length", "1000"}),
                     CliJson({"execution", "responses", e, "--length", "1000"})});
    }
    return out;
  };
  // The workflow waits warm for its child until its 2 s lease ends, and
  // only then does its run end and store its backtraces: wait until every
  // history event names its backtrace, then take the snapshot once two in
  // a row agree.
  EXPECT_TRUE(WaitFor([&] {
    json events = CliJson({"execution", "events", id, "--length", "1000"})["events"];
    for (const json& e : events) {
      if (e["event"].contains("history_event") && !e.contains("backtrace_id")) return false;
    }
    return true;
  })) << Cli({"execution", "events", id}).out;
  json before = snapshot();
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    json again = snapshot();
    if (again == before) break;
    before = std::move(again);
  }
  const std::string made_up = "Delay_" + id.substr(std::string("E_").size()) + ".o:1-sleep_9";
  CliRun cancel = Cli({"execution", "cancel", made_up});
  EXPECT_EQ(cancel.code, 3) << cancel.out << cancel.err;
  EXPECT_TRUE(cancel.out.empty()) << cancel.out;
  EXPECT_NE(cancel.err.find(made_up + ": not found"), std::string::npos) << cancel.err;
  EXPECT_NE(cancel.err.find("HTTP 404"), std::string::npos) << cancel.err;
  // A JSON patch: the whole snapshots are too long to read in a CI log.
  json after = snapshot();
  EXPECT_TRUE(after == before) << "changed: " << json::diff(before, after).dump();
  CliRun check = DbCheck();
  EXPECT_EQ(check.code, 0) << check.out << check.err;

  // The workflow still takes its approval and finishes normally.
  EXPECT_EQ(Cli({"execution", "stub", child, R"({"ok": true})"}).code, 0);
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 0) << result.out << result.err << server_.Log();
  EXPECT_EQ(result.out, "ok \"paid\"\n");
  check = DbCheck();
  EXPECT_EQ(check.code, 0) << check.out << check.err;
}

// A stub and a cancel of the same child at once, over raw HTTP: exactly one
// wins. Stub first: 200, the cancel finds it finished; cancel first: the
// stub is a 409. Either way the child has one Finished event, the workflow
// gets exactly one response for it and finishes on the matching branch, and
// the database is consistent.
TEST_F(E2eStubTest, StubRacingACancel) {
  START_SERVER(Approval());
  std::map<std::string, int> winners;
  for (int round = 0; round < 6; ++round) {
    auto [id, child] = BlockedExpense("[" + std::to_string(100 + round) + ", \"Race\"]");
    ASSERT_FALSE(child.empty());
    std::atomic<int> ready{0};
    auto barrier = [&] {
      ++ready;
      while (ready.load() < 2) std::this_thread::yield();
    };
    std::optional<httplib::Result> stub, cancel;
    // Alternate which request is sent first, so that both sides win rounds.
    std::thread stubber([&] {
      auto http = Http();
      barrier();
      if (round % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      stub.emplace(http.Put("/v1/executions/" + child + "/stub", R"({"result": {"ok": true}})",
                            "application/json"));
    });
    std::thread canceller([&] {
      auto http = Http();
      barrier();
      if (round % 2 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      cancel.emplace(http.Put("/v1/executions/" + child + "/cancel", "{}", "application/json"));
    });
    stubber.join();
    canceller.join();
    ASSERT_TRUE(stub && *stub && cancel && *cancel);
    const std::string outcome = CancelOutcomeOf(*cancel);
    const int stub_status = (*stub)->status;
    json child_doc = HttpJson("/v1/executions/" + child);
    CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
    EXPECT_EQ(result.code, 0) << result.out << result.err << server_.Log();
    if (stub_status == 200) {
      ++winners["stub"];
      EXPECT_EQ(outcome, "already_finished") << "both won";
      EXPECT_EQ(child_doc["result"], json({{"ok", true}})) << child_doc.dump();
      EXPECT_EQ(result.out, "ok \"paid\"\n");
    } else {
      ++winners["cancel"];
      EXPECT_EQ(stub_status, 409) << (*stub)->body;
      EXPECT_EQ(json::parse((*stub)->body, nullptr, false)["error"]["kind"], "conflict");
      EXPECT_EQ(outcome, "cancelled") << "neither won";
      EXPECT_EQ(child_doc["result"]["execution_error"]["kind"], "cancelled") << child_doc.dump();
      EXPECT_EQ(result.out, "ok \"rejected\"\n");
    }
    std::vector<std::string> types = EventTypes(child);
    EXPECT_EQ(Count(types, "finished"), 1u) << ::testing::PrintToString(types);
    EXPECT_EQ(types.back(), "finished") << ::testing::PrintToString(types);
    EXPECT_EQ(ResponsesNaming(id, child), 1u);
  }
  std::cout << "stub/cancel winners: stub " << winners["stub"] << ", cancel " << winners["cancel"]
            << "\n";
  CliRun check = DbCheck();
  EXPECT_EQ(check.code, 0) << check.out << check.err;
}

}  // namespace
