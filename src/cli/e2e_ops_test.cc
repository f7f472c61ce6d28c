// End-to-end tests through the real `stele` binary (e2e_fixture.h), the
// operations beyond the basics: `scheduled_at` on submit, a huge body over
// raw HTTP (413), a second server on an address in use, a cancel racing an
// activity that finishes, and on the example wasm workflow durable_sleep a
// stored backtrace, a delay cancel and an upgrade to a new component
// digest (skipped when the wasm guest was not built), and a full disk
// under a running server (503, then recovery; root only).
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "e2e_fixture.h"

namespace {

// Its own suite name: gtest requires one fixture class per suite, and each
// test file has its own (anonymous) E2eTest. It can put the database on a
// small tmpfs of its own (root only), unmounted in teardown.
class E2eOpsTest : public E2eTest {
 protected:
  void TearDown() override {
    server_.Kill(SIGKILL);
    if (!mounted_.empty()) ::umount2(mounted_.c_str(), MNT_DETACH);
    E2eTest::TearDown();
  }

  // Mounts a tmpfs of `size` ("4m") at `dir`; why not, when that fails.
  std::optional<std::string> MountTmpfs(const fs::path& dir, const std::string& size) {
    fs::create_directories(dir);
    const std::string data = "size=" + size + ",mode=0755";
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, data.c_str()) != 0) {
      return "cannot mount a tmpfs at " + dir.string() + " (" + std::strerror(errno) + ")";
    }
    mounted_ = dir;
    return std::nullopt;
  }

  fs::path mounted_;
};

// Fills the file system of `path` with a file of zeros until ENOSPC, then
// gives `spare` bytes back; returns the size of the file.
size_t FillDisk(const fs::path& path, size_t spare) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return 0;
  std::string chunk(4096, '\0');
  size_t written = 0;
  for (;;) {
    const ssize_t n = ::write(fd, chunk.data(), chunk.size());
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  written = written > spare ? written - spare : 0;
  if (::ftruncate(fd, static_cast<off_t>(written)) != 0) written = 0;
  ::close(fd);
  return written;
}

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
  CliRun submitted =
      Cli({"execution", "submit", kEcho, R"(["later"])", "--scheduled-at", scheduled});
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

// A second `stele server run` (its own database) on the address of a
// running one exits at once with an error naming the key and the address,
// for `[api] listen` and `[api] ui_listen` alike; the first keeps answering
// every request. (httplib's listening sockets had SO_REUSEPORT: the second
// server started and the kernel split the connections between the two, a
// `get` answering 404 every other time.)
TEST_F(E2eOpsTest, SecondServerOnAnAddressInUseFailsToStart) {
  START_SERVER();
  const std::string id = Submit(kEcho, R"(["first"])");
  ASSERT_EQ(Cli({"execution", "result", id, "--timeout", "30"}).out, "ok \"first\"\n");
  const std::string address = "127.0.0.1:" + std::to_string(server_.port());
  std::string toml = ReadFile(dir_ / "stele.toml");
  auto replace = [&](const std::string& from, const std::string& to) {
    size_t at = toml.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    toml.replace(at, from.size(), to);
  };
  replace(sqlite_.string(), (dir_ / "second.sqlite").string());
  replace((dir_ / "data").string(), (dir_ / "second-data").string());
  const std::string listen = "listen = \"127.0.0.1:0\"\n";
  for (const std::string& key : {std::string("[api] listen"), std::string("[api] ui_listen")}) {
    std::string second = toml;
    second.replace(second.find(listen), listen.size(),
                   key == "[api] listen" ? "listen = \"" + address + "\"\n"
                                         : listen + "ui = true\nui_listen = \"" + address + "\"\n");
    WriteFile(dir_ / "second.toml", second);
    CliRun run = RunStele({"server", "run", "--config", (dir_ / "second.toml").string()});
    EXPECT_EQ(run.code, 1) << key << " (-1: it was still running, killed)\n" << run.err;
    EXPECT_NE(run.err.find("cannot listen on " + address + " (" + key + ")"), std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find("already in use"), std::string::npos) << run.err;
  }
  // Every request reaches the first server, on new connections each.
  for (int i = 0; i < 20; ++i) {
    auto res = Http().Get("/v1/executions/" + id);
    ASSERT_TRUE(res) << i;
    EXPECT_EQ(res->status, 200) << i << ": " << res->body;
  }
}

// Under a hard open-file limit below what [api] max_connections needs, the
// default is lowered to what fits (the server answers 503 past it rather
// than the kernel refusing), while a configured value is kept with a
// warning.
TEST_F(E2eOpsTest, TheDefaultConnectionLimitFitsTheOpenFileLimit) {
  const auto metric = [](const std::string& text, const std::string& name) {
    const size_t at = text.find("\n" + name + " ");
    return at == std::string::npos
               ? std::string("missing")
               : text.substr(at + name.size() + 2, text.find('\n', at + 1) - at - name.size() - 2);
  };
  for (const bool configured : {false, true}) {
    SCOPED_TRACE(configured ? "max_connections = 3500" : "the default");
    const fs::path config = dir_ / (configured ? "configured.toml" : "default.toml");
    WriteFile(config, "data_dir = \"" + (dir_ / (configured ? "d2" : "d1")).string() +
                          "\"\n[api]\nlisten = \"127.0.0.1:0\"\n" +
                          (configured ? "max_connections = 3500\n" : ""));
    ServerProcess server;
    ASSERT_TRUE(server.Start(config, dir_ / "fit.log", 4096));
    httplib::Client http("127.0.0.1", server.port());
    auto metrics = http.Get("/metrics");
    ASSERT_TRUE(metrics);
    // 4,096 files less the 1,024 kept for the database and the runtimes.
    EXPECT_EQ(metric(metrics->body, "stele_http_max_connections"), configured ? "3500" : "3072");
    const std::string log = server.Log();
    EXPECT_EQ(log.find("lowered to fit the open-file limit") != std::string::npos, !configured)
        << log;
    EXPECT_EQ(log.find("is below what [api] max_connections = 3500 needs") != std::string::npos,
              configured)
        << log;
    server.Kill(SIGKILL);
  }
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
    ASSERT_TRUE(WaitFor([&] { return RunCount() >= static_cast<size_t>(round) + 1; }))
        << server_.Log();
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
    std::string outcome = CancelOutcomeOf(*cancel);
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
  std::cout << "cancel/finish outcomes: cancelled " << outcomes["cancelled"]
            << ", already_finished " << outcomes["already_finished"] << "\n";
}

// A wasm workflow sleeping for an hour: its stored backtrace (the guest's
// frames at the sleep), then a cancel of its delay, after which the sleep
// returns and the workflow finishes.
TEST_F(E2eOpsTest, WasmBacktraceAndDelayCancel) {
  START_SERVER(Options{std::nullopt, false, true});
  std::string id = Submit("demo:reminder/api.remind", R"([3600, "Ada"])");
  ASSERT_TRUE(WaitForStatus(id, "blocked_by_join_set"))
      << HttpJson("/v1/executions/" + id).dump() << server_.Log();
  // The run stores its backtraces after its guest returned, i.e. after the
  // JoinNext that blocked it: wait (bounded) for them.
  std::optional<httplib::Result> stored;
  WaitFor([&] {
    stored.emplace(Http().Get("/v1/executions/" + id + "/backtrace"));
    return *stored && (*stored)->status != 404;
  });
  httplib::Result& bt = *stored;
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
// are refused), by `stele execution upgrade` too, then it finishes.
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
  EXPECT_EQ(put("E_01J0E2E00000000000000000ZZ", {{"old_digest", v1}, {"new_digest", v2}}).first,
            404);
  EXPECT_EQ(HttpJson("/v1/executions/" + id)["component_digest"], v1)
      << "refused upgrades wrote nothing";
  // The CLI: a digest no component serves is refused (exit 5, naming it)
  // and writes nothing; the served one is accepted.
  const std::string unserved = "sha256:" + std::string(64, '0');
  CliRun refused = Cli({"execution", "upgrade", id, unserved});
  EXPECT_EQ(refused.code, 5) << refused.out << refused.err;
  EXPECT_NE(refused.err.find(unserved), std::string::npos) << refused.err;
  EXPECT_EQ(HttpJson("/v1/executions/" + id)["component_digest"], v1);
  CliRun stale = Cli({"execution", "upgrade", id, v2, "--from", v2});
  EXPECT_EQ(stale.code, 5) << "it runs v1, not v2: " << stale.err;
  CliRun moved = Cli({"execution", "upgrade", id, v2});
  ASSERT_EQ(moved.code, 0) << moved.out << moved.err << server_.Log();
  EXPECT_EQ(moved.out, "upgraded " + id + " from " + v1 + " to " + v2 + "\n");
  EXPECT_EQ(HttpJson("/v1/executions/" + id)["component_digest"], v2);
  // --force moves it to a digest this server does not serve (v1 now); back
  // to v2 with --from and --json.
  CliRun forced = Cli({"execution", "upgrade", id, v1, "--force"});
  ASSERT_EQ(forced.code, 0) << forced.err;
  EXPECT_EQ(HttpJson("/v1/executions/" + id)["component_digest"], v1);
  json back = CliJson({"execution", "upgrade", id, v2, "--from", v1});
  EXPECT_EQ(back, json({{"execution_id", id}, {"component_digest", v2}}));
  EXPECT_EQ(HttpJson("/v1/executions/" + id)["component_digest"], v2);

  std::string delay = DelayIdOf(id);
  ASSERT_EQ(Cli({"execution", "cancel", delay}).code, 0);
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 0) << result.out << result.err << server_.Log();
  EXPECT_EQ(result.out, "ok \"time to stretch, Bo\"\n");
  // Finished: an upgrade is refused now.
  EXPECT_EQ(put(id, {{"old_digest", v2}, {"new_digest", v1}}).first, 409);
}

// The disk of the database fills up while the real server runs (a 4 MiB
// tmpfs and a ballast file; mounting needs root). Submissions get 503
// database_unavailable with the error envelope and Retry-After (the CLI
// exits 4), refused ones do not exist, reads keep working; once space
// returns the same process accepts writes again, and after a SIGKILL and a
// restart every acknowledged submission is there and the file is consistent.
TEST_F(E2eOpsTest, FullDiskIs503ThenRecovers) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root (uid " << ::geteuid()
                 << "): the test mounts a small tmpfs for the database and fills it";
  }
  const fs::path mnt = dir_ / "mnt";
  if (auto why = MountTmpfs(mnt, "4m")) GTEST_SKIP() << *why << "; the test needs CAP_SYS_ADMIN";
  sqlite_ = mnt / "stele.sqlite";
  START_SERVER();
  auto post = [&](const std::string& id, const std::string& value) {
    // Far ahead: nothing runs, so the only writes are the submissions.
    json body = {{"ffqn", kEcho},
                 {"params", {value}},
                 {"execution_id", id},
                 {"scheduled_at", "2999-01-01T00:00:00Z"}};
    return Http().Post("/v1/executions", body.dump(), "application/json");
  };
  auto new_id = [](int i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%06d", i);
    return "E_01J0E2EF0000000000000" + std::string(buf).substr(1);
  };
  // Work done before the disk fills up.
  std::string done = Submit(kEcho, R"(["before"])");
  ASSERT_EQ(Cli({"execution", "result", done, "--timeout", "30"}).code, 0);

  const size_t ballast = FillDisk(mnt / "ballast", 256 * 1024);
  ASSERT_GT(ballast, 0u);
  const std::string big(32 * 1024, 'x');
  std::vector<std::string> accepted, refused;
  for (int i = 0; i < 400 && refused.size() < 3; ++i) {
    const std::string id = new_id(i);
    auto res = post(id, big + std::to_string(i));
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    if (res->status == 201) {
      accepted.push_back(id);
      continue;
    }
    ASSERT_EQ(res->status, 503) << res->body;
    json error = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(error.is_object() && error.contains("error")) << res->body;
    EXPECT_EQ(error["error"]["kind"], "database_unavailable") << res->body;
    EXPECT_NE(error["error"]["message"].get<std::string>().find("full"), std::string::npos)
        << res->body;
    EXPECT_EQ(res->get_header_value("Retry-After"), "1");
    refused.push_back(id);
  }
  ASSERT_FALSE(refused.empty()) << "the disk never filled up (" << accepted.size() << " accepted)";
  std::cout << "[ disk    ] " << ballast << " bytes of ballast; " << accepted.size()
            << " submissions accepted, then " << refused.size() << " refused with 503\n";
  // The CLI: a server error, exit 4, the kind on stderr, nothing on stdout.
  WriteFile(dir_ / "big.json", "[\"" + big + "\"]");
  CliRun cli = Cli({"execution", "submit", kEcho, "@" + (dir_ / "big.json").string()});
  EXPECT_EQ(cli.code, 4) << cli.out << cli.err;
  EXPECT_TRUE(cli.out.empty()) << cli.out;
  EXPECT_NE(cli.err.find("database_unavailable"), std::string::npos) << cli.err;

  // Reads keep working; a refused submission does not exist.
  EXPECT_EQ(Cli({"execution", "result", done}).out, "ok \"before\"\n");
  for (const auto& id : refused) {
    auto res = Http().Get("/v1/executions/" + id);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404) << id << ": " << res->body;
  }
  EXPECT_EQ(CliJson({"execution", "list", "--length", "1000"})["executions"].size(),
            1 + accepted.size());
  auto health = Http().Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200) << health->body;

  // Space returns: the same process takes writes again, refused ids anew.
  fs::remove(mnt / "ballast");
  for (const auto& id : refused) {
    auto res = post(id, "after");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 201) << res->body;
  }
  std::string after = Submit(kEcho, R"(["after"])");
  EXPECT_EQ(Cli({"execution", "result", after, "--timeout", "30"}).out, "ok \"after\"\n");

  // Nothing acknowledged is lost, even across a crash.
  server_.Kill(SIGKILL);
  ASSERT_TRUE(server_.Start(dir_ / "stele.toml", dir_ / "server.log"));
  api_ = server_.url();
  json all = CliJson({"execution", "list", "--length", "1000"});
  std::set<std::string> ids;
  for (const json& e : all["executions"]) ids.insert(e["execution_id"].get<std::string>());
  EXPECT_EQ(ids.size(), 2 + accepted.size() + refused.size()) << all.dump().substr(0, 500);
  for (const auto& id : accepted) EXPECT_TRUE(ids.contains(id)) << id;
  for (const auto& id : refused) EXPECT_TRUE(ids.contains(id)) << id;
  EXPECT_EQ(Cli({"execution", "result", done}).out, "ok \"before\"\n");
  // A sample of the accepted params survived intact.
  for (const std::string& id : {accepted.front(), accepted.back()}) {
    json events = CliJson({"execution", "events", id, "--length", "1"});
    const std::string params = events["events"][0]["event"]["created"]["params"].dump();
    EXPECT_NE(params.find(big), std::string::npos) << id << ": " << params.substr(0, 100);
  }
  CliRun check = DbCheck();
  EXPECT_EQ(check.code, 0) << check.out << check.err;
}

}  // namespace
