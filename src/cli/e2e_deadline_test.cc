// Deadlines and retry limits of one submission through the real `stele`
// binary (docs/cli.md, `submit --timeout/--deadline/--max-retries`): bad
// values exit 2 with the server's message and submit nothing; a running
// exec activity past its deadline ends `timed_out` and its command is
// stopped.
#include "e2e_fixture.h"

namespace {

// Its own suite name: each e2e file's fixture is its own class.
class E2eDeadlineTest : public E2eTest {};

TEST_F(E2eDeadlineTest, SubmitWithBadDeadlinesExitsTwoAndSubmitsNothing) {
  START_SERVER();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--timeout", "-5s"}, "timeout"},
      {{"--timeout", "0s"}, "timeout must be positive"},
      {{"--timeout", "soon"}, "timeout"},
      {{"--deadline", "yesterday"}, "RFC 3339"},
      {{"--deadline", "2001-01-01T00:00:00Z"}, "not in the future"},
      {{"--timeout", "1m", "--deadline", "2999-01-01T00:00:00Z"}, "not both"},
      {{"--max-retries", "-1"}, "--max-retries"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args = {"execution", "submit", kEcho, R"(["x"])"};
    args.insert(args.end(), flags.begin(), flags.end());
    CliRun r = Cli(args);
    EXPECT_EQ(r.code, 2) << flags[0] << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << flags[0] << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  json list = CliJson({"execution", "list"});
  EXPECT_TRUE(list["executions"].empty()) << list.dump();
}

TEST_F(E2eDeadlineTest, ARunningActivityPastItsTimeoutEndsTimedOut) {
  START_SERVER();
  WriteFile(dir_ / "hold", "");  // the command runs until stopped
  CliRun submit =
      Cli({"execution", "submit", kSlow, "[]", "--timeout", "1s", "--max-retries", "0"});
  ASSERT_EQ(submit.code, 0) << submit.err;
  const std::string id = submit.out.substr(0, submit.out.find('\n'));
  CliRun result = Cli({"--json", "execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 1) << result.out << result.err;
  json doc = json::parse(result.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << result.out;
  EXPECT_NE(doc.dump().find("timed_out"), std::string::npos) << doc.dump();
  EXPECT_NE(doc.dump().find("deadline"), std::string::npos) << doc.dump();
  // The Created event holds the deadline and the retry limit.
  json events = CliJson({"execution", "events", id});
  EXPECT_NE(events.dump().find("\"max_retries\":0"), std::string::npos) << events.dump();
  EXPECT_NE(events.dump().find("\"deadline\""), std::string::npos) << events.dump();
}

}  // namespace
