// End-to-end tests of what `stele` prints and says (e2e_fixture.h): help
// that names every command, error messages that say a thing once, why a
// server cannot be reached, tables whose columns never touch, next-page
// hints that run as printed, failure reasons printed whole, results in the
// order of the function's keys, the API's one result shape in events and
// responses, STELE_LOG checked at start-up, and activity output and
// workflow logs in the server's log at its default level.
#include <regex>
#include <sstream>

#include "e2e_fixture.h"

namespace {

// The words after "next page: stele " on the last hint line of `out`, split
// as a shell would (print.cc quotes with single quotes when needed).
std::vector<std::string> HintArgs(const std::string& out) {
  const std::string marker = "next page: stele ";
  size_t at = out.rfind(marker);
  if (at == std::string::npos) return {};
  std::string line = out.substr(at + marker.size());
  line = line.substr(0, line.find('\n'));
  std::vector<std::string> words;
  std::string word;
  bool quoted = false, any = false;
  for (char c : line) {
    if (c == '\'') {
      quoted = !quoted;
      any = true;
    } else if (c == ' ' && !quoted) {
      if (any) words.push_back(word);
      word.clear();
      any = false;
    } else {
      word += c;
      any = true;
    }
  }
  if (any) words.push_back(word);
  return words;
}

bool IsTimestamp(const std::string& text) {
  static const std::regex kRfc3339("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9.]+Z");
  return std::regex_match(text, kRfc3339);
}

const std::vector<std::string> kListColumns = {"EXECUTION", "FUNCTION", "STATE", "CREATED"};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

size_t Occurrences(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// `table`'s rows (the lines after the header, up to the first line that
// does not start with `row_prefix`), each checked against the header's
// column starts: the cell of every column begins exactly there, after at
// least two spaces. Returns the rows' cells.
std::vector<std::vector<std::string>> Cells(const std::string& table,
                                            const std::vector<std::string>& columns,
                                            const std::string& row_prefix) {
  std::vector<std::string> lines = Lines(table);
  std::vector<std::vector<std::string>> rows;
  if (lines.empty()) {
    ADD_FAILURE() << "no table";
    return rows;
  }
  std::vector<size_t> starts;
  for (const std::string& c : columns) {
    size_t at = lines[0].find(c);
    EXPECT_NE(at, std::string::npos) << c << " in " << lines[0];
    starts.push_back(at);
  }
  for (size_t i = 1; i < lines.size() && lines[i].rfind(row_prefix, 0) == 0; ++i) {
    const std::string& line = lines[i];
    if (line.rfind("next page:", 0) == 0) break;
    if (line.rfind(' ', 0) == 0) continue;  // a reason or detail under its row
    std::vector<std::string> cells;
    for (size_t c = 0; c < starts.size(); ++c) {
      if (c > 0) {
        EXPECT_TRUE(line.size() > starts[c] && line.compare(starts[c] - 2, 2, "  ") == 0 &&
                    line[starts[c]] != ' ')
            << "column " << columns[c] << " of\n"
            << line << "\nin\n"
            << table;
      }
      size_t end = c + 1 < starts.size() ? starts[c + 1] : line.size();
      std::string cell = line.size() > starts[c] ? line.substr(starts[c], end - starts[c]) : "";
      while (!cell.empty() && cell.back() == ' ') cell.pop_back();
      cells.push_back(cell);
    }
    rows.push_back(cells);
  }
  return rows;
}

// Each test file has its own fixture name: gtest requires one fixture class
// per suite, and every file has its own copy of E2eTest.
class E2eOutputTest : public E2eTest {};

TEST(E2eBinary, HelpNamesEveryCommand) {
  CliRun help = RunStele({"--help"});
  EXPECT_EQ(help.code, 0);
  for (const char* command :
       {"stele server run|verify", "stele db check", "stele execution submit",
        "stele execution get", "stele execution result", "stele execution list",
        "stele execution events", "stele execution responses", "stele execution cancel",
        "stele execution stub", "stele execution upgrade", "stele component list", "stele help",
        "stele --version"}) {
    EXPECT_NE(help.out.find(command), std::string::npos) << command << " in\n" << help.out;
  }
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"help", "db"}, "usage: stele db check"},
      {{"help", "db", "check"}, "usage: stele db check"},
      {{"db", "check", "--help"}, "usage: stele db check"},
      {{"help", "server"}, "usage: stele server run"},
      {{"help", "server", "run"}, "usage: stele server run"},
      {{"help", "execution"}, "stele execution list"},
      {{"help", "execution", "list"}, "Usage: stele execution list"},
      {{"help", "component", "list"}, "Usage: stele component list"},
      {{"help", "help"}, "stele db check"},
  };
  for (const auto& [args, expected] : cases) {
    CliRun r = RunStele(args);
    EXPECT_EQ(r.code, 0) << args[1] << ": " << r.err;
    EXPECT_NE(r.out.find(expected), std::string::npos) << args[1] << ": " << r.out;
    EXPECT_TRUE(r.err.empty()) << r.err;
  }
  EXPECT_EQ(RunStele({"help", "bogus"}).code, 2);
}

TEST(E2eBinary, ErrorMessagesSayItOnce) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"execution", "submit", "nope", "[]"}, "invalid function name `nope`"},
      {{"execution", "get", "nope"}, "invalid execution id `nope`"},
      {{"execution", "cancel", "Delay_nope"}, "invalid delay id `Delay_nope`"},
  };
  for (const auto& [args, said] : cases) {
    CliRun r = RunStele(args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("stele: " + said + ": ", 0), 0u) << r.err;
    EXPECT_EQ(Occurrences(r.err, said), 1u) << r.err;
  }
}

TEST(E2eBinary, UnreachableServerSaysWhy) {
  // Port 1 on loopback: nothing listens there.
  CliRun r = RunStele({"--api-url", "http://127.0.0.1:1", "execution", "list"});
  EXPECT_EQ(r.code, 4);
  EXPECT_EQ(r.err, "stele: cannot reach the server at http://127.0.0.1:1: connection refused\n");
}

TEST(E2eBinary, InvalidLogLevelIsRefusedAtStartUp) {
  const std::string said =
      "STELE_LOG=`verbose` is not a log level; use one of trace, debug, info, warn, error";
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"server", "run", "--config", "/nonexistent/stele.toml"},
           {"server", "verify", "--config", "/nonexistent/stele.toml"},
           {"db", "check", "--sqlite", "/nonexistent/stele.sqlite"},
           {"--api-url", "http://127.0.0.1:1", "execution", "list"}}) {
    CliRun r = RunStele(args, {{"STELE_LOG", "verbose"}});
    EXPECT_EQ(r.code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(said), std::string::npos) << args[0] << ": " << r.err;
  }
  EXPECT_EQ(RunStele({"--version"}, {{"STELE_LOG", "Debug"}}).code, 0) << "case-insensitive";
}

TEST_F(E2eOutputTest, ListColumnsNeverTouchAndHintsRunAsPrinted) {
  START_SERVER();
  const std::string ok = Submit(kEcho, R"(["a"])");
  const std::string err = Submit(kFail, "[]");
  const std::string crashed = Submit(kCrash, "[]");
  EXPECT_EQ(Cli({"execution", "result", ok, "--timeout", "30"}).code, 0);
  EXPECT_EQ(Cli({"execution", "result", err, "--timeout", "30"}).code, 1);
  EXPECT_EQ(Cli({"execution", "result", crashed, "--timeout", "30"}).code, 1);

  // States of different widths ("finished: ok", "finished: err", an
  // execution error's kind): every column starts where its header does.
  CliRun table = Cli({"execution", "list", "--ffqn-prefix", "e2e:test/exec."});
  ASSERT_EQ(table.code, 0) << table.err;
  auto rows = Cells(table.out, kListColumns, "E_");
  ASSERT_EQ(rows.size(), 3u) << table.out;
  const std::vector<std::string> ids = {crashed, err, ok};  // newest first
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][0], ids[i]) << table.out;
    EXPECT_TRUE(IsTimestamp(rows[i][3])) << rows[i][3] << " in\n" << table.out;
  }
  EXPECT_EQ(rows[0][1], kCrash);
  EXPECT_EQ(rows[1][2], "finished: err");
  EXPECT_EQ(rows[2][2], "finished: ok");

  // The hint repeats every flag; run as printed, it gives the next page.
  CliRun first = Cli(
      {"execution", "list", "--ffqn-prefix", "e2e:test/exec.", "--show-derived", "--length", "1"});
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.out.find("next page: stele execution list --ffqn-prefix e2e:test/exec. "
                           "--show-derived --length 1 --cursor " +
                           crashed + "\n"),
            std::string::npos)
      << first.out;
  CliRun second = Cli(HintArgs(first.out));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(Cells(second.out, kListColumns, "E_").at(0).at(0), err) << second.out;

  // --direction too: newer than the oldest, then on from the hint.
  CliRun newer = Cli({"execution", "list", "--ffqn-prefix", "e2e:test/exec.", "--direction",
                      "newer", "--length", "1", "--cursor", ok});
  ASSERT_EQ(newer.code, 0) << newer.err;
  EXPECT_EQ(Cells(newer.out, kListColumns, "E_").at(0).at(0), err) << newer.out;
  std::vector<std::string> hint = HintArgs(newer.out);
  EXPECT_NE(std::find(hint.begin(), hint.end(), "--direction"), hint.end()) << newer.out;
  CliRun newest = Cli(hint);
  ASSERT_EQ(newest.code, 0) << newest.err;
  EXPECT_EQ(Cells(newest.out, kListColumns, "E_").at(0).at(0), crashed) << newest.out;

  // Events: a hint with the id and the page length.
  CliRun events = Cli({"execution", "events", ok, "--length", "1"});
  ASSERT_EQ(events.code, 0) << events.err;
  std::vector<std::string> next = HintArgs(events.out);
  EXPECT_EQ(next, (std::vector<std::string>{"execution", "events", ok, "--length", "1",
                                            "--since-version", "1"}))
      << events.out;
}

TEST_F(E2eOutputTest, EventsPrintFailureReasonsWhole) {
  START_SERVER();
  const std::string id = Submit(kCrash, "[]");
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 1);
  EXPECT_NE(result.out.find(CrashStderr()), std::string::npos) << result.out;
  CliRun events = Cli({"execution", "events", id});
  ASSERT_EQ(events.code, 0) << events.err;
  EXPECT_NE(events.out.find("exit status 3"), std::string::npos) << events.out;
  EXPECT_NE(events.out.find(CrashStderr()), std::string::npos) << events.out;
  EXPECT_NE(events.out.find("second line"), std::string::npos) << events.out;
  // The columns hold with long reasons around.
  auto rows = Cells(events.out, {"VERSION", "CREATED", "EVENT", "DETAILS"}, "");
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0][0], "0");
  EXPECT_EQ(rows[0][2], "created");
}

TEST_F(E2eOutputTest, ResultsKeepTheFunctionsKeyOrder) {
  START_SERVER();
  const std::string id = Submit(kRecord, "[]");
  CliRun result = Cli({"execution", "result", id, "--timeout", "30"});
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(result.out, "ok " + std::string(kRecordResult) + "\n");
  CliRun as_json = Cli({"--json", "execution", "result", id});
  EXPECT_EQ(as_json.out, R"({"ok":)" + std::string(kRecordResult) + "}\n");
  CliRun get = Cli({"execution", "get", id});
  EXPECT_NE(get.out.find("Result:     ok " + std::string(kRecordResult)), std::string::npos)
      << get.out;
  // The finished event holds the result in the result endpoint's shape.
  CliRun events = Cli({"--json", "execution", "events", id});
  EXPECT_NE(events.out.find(R"("finished":{"result":{"ok":)" + std::string(kRecordResult) + "}"),
            std::string::npos)
      << events.out;
  CliRun human = Cli({"execution", "events", id});
  EXPECT_NE(human.out.find("ok " + std::string(kRecordResult)), std::string::npos) << human.out;
}

TEST_F(E2eOutputTest, ActivityStderrReachesTheServerLog) {
  START_SERVER();  // STELE_LOG unset: the server's default level
  const std::string id = Submit(kEcho, R"(["logged"])");
  EXPECT_EQ(Cli({"execution", "result", id, "--timeout", "30"}).code, 0);
  EXPECT_NE(server_.Log().find(" INFO exec_activity_worker.cc"), std::string::npos)
      << server_.Log();
  EXPECT_NE(server_.Log().find("exec activity " + id + " attempt 1 stderr: echo got \"logged\""),
            std::string::npos)
      << server_.Log();
}

// The durable_sleep workflow: its log line in the server log, its delay's
// response as {"ok": null} (fired) and printed as a row with every cell.
TEST_F(E2eOutputTest, WorkflowLogAndDelayResponse) {
  START_SERVER(Options{std::nullopt, false, true});
  const std::string id = Submit("demo:reminder/api.remind", R"([1, "e2e"])");
  EXPECT_EQ(Cli({"execution", "result", id, "--timeout", "30"}).code, 0) << server_.Log();
  EXPECT_NE(server_.Log().find(" INFO workflow " + id + ": sleeping"), std::string::npos)
      << server_.Log();

  json responses = CliJson({"execution", "responses", id});
  ASSERT_EQ(responses["responses"].size(), 1u) << responses.dump();
  const json& response = responses["responses"][0]["response"];
  EXPECT_EQ(response["event"]["event"]["result"], json({{"ok", nullptr}})) << responses.dump();
  CliRun human = Cli({"execution", "responses", id});
  ASSERT_EQ(human.code, 0) << human.err;
  auto rows = Cells(human.out, {"CURSOR", "CREATED", "JOIN SET", "RESPONSE"}, "0");
  ASSERT_EQ(rows.size(), 1u) << human.out;
  EXPECT_EQ(rows[0][1], response["created_at"]) << human.out;
  EXPECT_EQ(rows[0][2], response["event"]["join_set_id"]) << human.out;
  EXPECT_EQ(rows[0][3],
            "delay " + response["event"]["event"]["delay_id"].get<std::string>() + " fired")
      << human.out;

  // The finished event holds the same document as the result endpoint.
  json events = CliJson({"execution", "events", id, "--length", "1000"});
  json finished;
  for (const json& e : events["events"]) {
    if (e["event"].contains("finished")) finished = e["event"]["finished"]["result"];
  }
  EXPECT_EQ(finished, CliJson({"execution", "result", id})) << events.dump();
}

}  // namespace
