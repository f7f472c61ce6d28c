// End-to-end tests through the real `stele` binary (e2e_fixture.h), the
// operations beyond the basics: `scheduled_at` on submit, a huge body over
// raw HTTP (413), a cancel racing an activity that finishes, and on the
// example wasm workflow durable_sleep a stored backtrace, a delay cancel and
// an upgrade to a new component digest (skipped when the wasm guest was
// not built).
#include "e2e_fixture.h"

namespace {

// Its own suite name: gtest requires one fixture class per suite, and each
// test file has its own (anonymous) E2eTest.
class E2eOpsTest : public E2eTest {};

// Seconds since the epoch of an RFC 3339 UTC time ("...Z", fraction optional).
double EpochSeconds(const std::string& text) {
  std::tm tm{};
  if (text.size() < 20 || strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return -1;
  double seconds = static_cast<double>(timegm(&tm));
  if (text[19] == '.') seconds += std::atof(("0" + text.substr(19, text.find('Z') - 19)).c_str());
  return seconds;
}

std::string Rfc3339(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// `scheduled_at` on submit: the execution stays pending_at until then and
// is locked only after it; one far ahead stays pending (and can be cancelled).
TEST_F(E2eOpsTest, ScheduledAtDefersTheFirstRun) {
  START_SERVER();
  const auto at = std::chrono::system_clock::now() + std::chrono::seconds(4);
  const std::string scheduled = Rfc3339(at);
  CliRun submitted = Cli({"execution", "submit", kEcho, R"(["later"])", "--scheduled-at", scheduled});
  ASSERT_EQ(submitted.code, 0) << submitted.err;
  std::string id = submitted.out.substr(0, submitted.out.find('\n'));
  json doc = HttpJson("/v1/executions/" + id);
  EXPECT_EQ(doc["first_scheduled_at"], scheduled) << doc.dump();
  if (std::chrono::system_clock::now() < at - std::chrono::milliseconds(500)) {
    // Still before the time (the read came back early enough to tell).
    EXPECT_EQ(doc["pending_state"]["status"], "pending_at") << doc.dump();
    EXPECT_EQ(doc["pending_state"]["scheduled_at"], scheduled) << doc.dump();
    auto early = Http().Get("/v1/executions/" + id + "/result?timeout=0");
    ASSERT_TRUE(early);
    EXPECT_EQ(early->status, 408) << early->body;
  }
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(result.out, "ok \"later\"\n");
  // The first lock came at or after the scheduled time.
  json events = CliJson({"execution", "events", id, "--length", "1000"});
  bool saw_lock = false;
  for (const json& e : events["events"]) {
    if (!e["event"].contains("locked")) continue;
    saw_lock = true;
    EXPECT_GE(EpochSeconds(e["created_at"]), EpochSeconds(scheduled)) << e.dump();
    break;
  }
  EXPECT_TRUE(saw_lock) << events.dump();

  // Far ahead: pending, listed as unfinished, cancellable.
  std::string far = Submit(kEcho, R"(["never"])");
  json ahead = {{"ffqn", kEcho}, {"params", {"ahead"}}, {"scheduled_at", "2999-01-01T00:00:00Z"}};
  auto posted = Http().Post("/v1/executions", ahead.dump(), "application/json");
  ASSERT_TRUE(posted);
  ASSERT_EQ(posted->status, 201) << posted->body;
  std::string ahead_id = json::parse(posted->body)["execution_id"];
  EXPECT_EQ(HttpJson("/v1/executions/" + ahead_id)["pending_state"]["scheduled_at"],
            "2999-01-01T00:00:00Z");
  EXPECT_EQ(Cli({"execution", "result", far, "--timeout", "30"}).code, 0);
  json open = CliJson({"execution", "list", "--hide-finished"});
  ASSERT_EQ(open["executions"].size(), 1u) << open.dump();
  EXPECT_EQ(open["executions"][0]["execution_id"], ahead_id);
  EXPECT_EQ(Cli({"execution", "cancel", ahead_id}).out, "cancelled\n");
}

// A body over max_body_bytes (1 MiB by default) through raw HTTP: 413 with
// the error envelope, nothing written, and the server keeps serving.
TEST_F(E2eOpsTest, HugeBodyIs413) {
  START_SERVER(NoExec());
  json body = {{"ffqn", kEcho}, {"params", {std::string(2 << 20, 'a')}}};
  auto res = Http().Post("/v1/executions", body.dump(), "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 413) << res->body.substr(0, 200);
  json error = json::parse(res->body, nullptr, false);
  ASSERT_TRUE(error.is_object() && error.contains("error")) << res->body.substr(0, 200);
  EXPECT_EQ(error["error"]["kind"], "too_large");
  EXPECT_EQ(CliJson({"execution", "list", "--length", "1000"})["executions"].size(), 0u);
  auto health = Http().Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

// A cancel racing an exec activity that is finishing (its hold file is
// removed at the same moment): the execution ends either cancelled or ok,
// with exactly one Finished event, and the cancel's outcome says which.
TEST_F(E2eOpsTest, CancelRacingAFinishingActivity) {
  START_SERVER();
  std::map<std::string, int> outcomes;
  for (int round = 0; round < 4; ++round) {
    WriteFile(dir_ / "hold", "");
    std::string id = Submit(kSlow, "[]");
    ASSERT_TRUE(WaitFor([&] { return RunCount() >= static_cast<size_t>(round) + 1; })) << server_.Log();
    std::optional<httplib::Result> cancel;
    std::thread canceller([&] {
      // Later each round (the script notices the hold file within 50 ms),
      // so that both sides win some rounds; the checks hold either way.
      std::this_thread::sleep_for(std::chrono::milliseconds(40 * round));
      cancel.emplace(Http().Put("/v1/executions/" + id + "/cancel", "{}", "application/json"));
    });
    fs::remove(dir_ / "hold");
    canceller.join();
    ASSERT_TRUE(cancel && *cancel);
    ASSERT_EQ((*cancel)->status, 200) << (*cancel)->body;
    std::string outcome = json::parse((*cancel)->body)["outcome"];
    ++outcomes[outcome];
    CliRun result = Cli({"--json", "execution", "result", id, "--timeout", "30"});
    json recorded = json::parse(result.out, nullptr, false);
    if (outcome == "cancelled") {
      EXPECT_EQ(result.code, 1) << result.out << result.err;
      EXPECT_EQ(recorded["execution_error"]["kind"], "cancelled") << result.out;
    } else {
      EXPECT_EQ(outcome, "already_finished");
      EXPECT_EQ(result.code, 0) << result.out << result.err;
      EXPECT_EQ(recorded, json({{"ok", "done"}})) << result.out;
    }
    std::vector<std::string> types = EventTypes(id);
    EXPECT_EQ(Count(types, "finished"), 1u) << ::testing::PrintToString(types);
    EXPECT_EQ(types.back(), "finished") << ::testing::PrintToString(types);
  }
  std::cout << "cancel/finish outcomes: cancelled " << outcomes["cancelled"] << ", already_finished "
            << outcomes["already_finished"] << "\n";
}

// A wasm workflow sleeping for an hour: its stored backtrace (the guest's
// frames at the sleep), then a cancel of its delay, after which the sleep
// returns and the workflow finishes.
TEST_F(E2eOpsTest, WasmBacktraceAndDelayCancel) {
  START_SERVER(Options{std::nullopt, false, true});
  std::string id = Submit("demo:reminder/api.remind", R"([3600, "Ada"])");
  ASSERT_TRUE(WaitForStatus(id, "blocked_by_join_set")) << HttpJson("/v1/executions/" + id).dump()
                                                        << server_.Log();
  // The run's backtraces are stored when the run ends, just after the
  // events that block it: wait for them (bounded).
  auto bt = Http().Get("/v1/executions/" + id + "/backtrace");
  for (int i = 0; i < 200 && bt && bt->status == 404; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    bt = Http().Get("/v1/executions/" + id + "/backtrace");
  }
  ASSERT_TRUE(bt);
  ASSERT_EQ(bt->status, 200) << bt->body;
  json trace = json::parse(bt->body);
  EXPECT_EQ(trace["execution_id"], id);
  const json& frames = trace["wasm_backtrace"]["frames"];
  ASSERT_FALSE(frames.empty()) << trace.dump();
  bool in_remind = false;
  for (const json& f : frames) {
    EXPECT_EQ(f["module"], "durable_sleep") << f.dump();
    if (f["func_name"].get<std::string>().find("remind") != std::string::npos) in_remind = true;
  }
  EXPECT_TRUE(in_remind) << "the guest function is named in the trace: " << trace.dump();
  EXPECT_LT(trace["version_min_including"].get<int>(), trace["version_max_excluding"].get<int>());
  auto first = Http().Get("/v1/executions/" + id + "/backtrace?version=first");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200) << first->body;
  auto bad = Http().Get("/v1/executions/" + id + "/backtrace?version=latest");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);

  std::string delay = DelayIdOf(id);
  ASSERT_EQ(delay.rfind("Delay_", 0), 0u) << delay;
  CliRun cancelled = Cli({"execution", "cancel", delay});
  EXPECT_EQ(cancelled.code, 0) << cancelled.err;
  EXPECT_EQ(cancelled.out, "cancelled\n");
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 0) << result.out << result.err << server_.Log();
  EXPECT_EQ(result.out, "ok \"time to stretch, Ada\"\n");
  // Cancelling the delay again changes nothing and says so.
  auto again = Http().Put("/v1/delays/" + delay + "/cancel", "{}", "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200) << again->body;
  EXPECT_EQ(json::parse(again->body)["outcome"], "cancelled");
  EXPECT_EQ(Count(EventTypes(id), "finished"), 1u);
  // The workflow's response: the delay, finished (cancelled).
  json responses = CliJson({"execution", "responses", id});
  ASSERT_EQ(responses["responses"].size(), 1u) << responses.dump();
  EXPECT_NE(responses.dump().find(delay), std::string::npos) << responses.dump();
}

// Upgrade on the real binary: a workflow blocked on v1 of durable_sleep, the
// server restarted with other bytes (a custom section appended: a new
// digest, same code), the execution moved to the new digest (wrong digests
// are refused), then it finishes.
TEST_F(E2eOpsTest, WasmUpgradeToANewDigest) {
  START_SERVER(Options{std::nullopt, false, true});
  std::string id = Submit("demo:reminder/api.remind", R"([3600, "Bo"])");
  ASSERT_TRUE(WaitForStatus(id, "blocked_by_join_set")) << server_.Log();
  const std::string v1 = HttpJson("/v1/executions/" + id)["component_digest"];
  server_.Kill(SIGTERM);
  ASSERT_TRUE(server_.WaitExit().has_value()) << server_.Log();
  {
    // A custom section (id 0) named "e2e" holding "v2".
    std::ofstream out(dir_ / "durable_sleep.wasm", std::ios::binary | std::ios::app);
    const char section[] = {0x00, 0x06, 0x03, 'e', '2', 'e', 'v', '2'};
    out.write(section, sizeof section);
  }
  ASSERT_TRUE(server_.Start(dir_ / "stele.toml", dir_ / "server.log"));
  api_ = server_.url();
  std::string v2;
  const json components = HttpJson("/v1/components");
  for (const json& c : components["components"]) {
    if (c["name"] == "durable_sleep") v2 = c["digest"];
  }
  ASSERT_EQ(v2.rfind("sha256:", 0), 0u) << HttpJson("/v1/components").dump() << server_.Log();
  ASSERT_NE(v1, v2);
  EXPECT_EQ(HttpJson("/v1/executions/" + id)["component_digest"], v1) << "not moved by itself";

  auto put = [&](const std::string& target, const json& body) {
    auto res = Http().Put("/v1/executions/" + target + "/upgrade", body.dump(), "application/json");
    EXPECT_TRUE(res);
    return res ? std::make_pair(res->status, json::parse(res->body, nullptr, false))
               : std::make_pair(0, json());
  };
  auto wrong = put(id, {{"old_digest", v2}, {"new_digest", v2}});
  EXPECT_EQ(wrong.first, 409) << wrong.second.dump();
  EXPECT_EQ(wrong.second["error"]["kind"], "conflict");
  EXPECT_EQ(put(id, {{"old_digest", "sha256:nope"}, {"new_digest", v2}}).first, 400);
  EXPECT_EQ(put(id, {{"old_digest", v1}}).first, 400);
  EXPECT_EQ(put("E_01J0E2E00000000000000000ZZ", {{"old_digest", v1}, {"new_digest", v2}}).first, 404);
  EXPECT_EQ(HttpJson("/v1/executions/" + id)["component_digest"], v1) << "refused upgrades wrote nothing";
  auto ok = put(id, {{"old_digest", v1}, {"new_digest", v2}});
  ASSERT_EQ(ok.first, 200) << ok.second.dump();
  EXPECT_EQ(ok.second["component_digest"], v2);
  EXPECT_EQ(HttpJson("/v1/executions/" + id)["component_digest"], v2);

  std::string delay = DelayIdOf(id);
  ASSERT_EQ(Cli({"execution", "cancel", delay}).code, 0);
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 0) << result.out << result.err << server_.Log();
  EXPECT_EQ(result.out, "ok \"time to stretch, Bo\"\n");
  // Finished: an upgrade is refused now.
  EXPECT_EQ(put(id, {{"old_digest", v2}, {"new_digest", v1}}).first, 409);
}

}  // namespace
