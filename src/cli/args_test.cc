// Unit tests of the strict argv parser (cli/args.h): what is accepted, what
// each command's fields become, and every kind of malformed input.
#include "cli/args.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

namespace stele::cli {
namespace {

constexpr const char* kId = "E_01HZX3V2Q9G8T6W4M3K2J1H0AB";
constexpr const char* kChildId = "E_01HZX3V2Q9G8T6W4M3K2J1H0AB.o:1_1";
constexpr const char* kDelayId = "Delay_01HZX3V2Q9G8T6W4M3K2J1H0AB.o:1_1";

EnvLookup Env(std::map<std::string, std::string> vars = {}) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

Command MustParse(std::vector<std::string> args, EnvLookup env = Env()) {
  auto cmd = ParseArgs(args, env);
  EXPECT_TRUE(cmd.has_value()) << (cmd ? "" : cmd.error().message);
  return cmd ? *cmd : Command{};
}

std::string MustFail(std::vector<std::string> args, EnvLookup env = Env()) {
  auto cmd = ParseArgs(args, env);
  EXPECT_FALSE(cmd.has_value());
  return cmd ? "" : cmd.error().message;
}

TEST(CliArgs, SubmitWithAllFlags) {
  Command c = MustParse({"execution", "submit", "ns:pkg/ifc.fn", R"([1, "two", {"x": null}])",
                         "--id", kId, "--follow", "--scheduled-at=2030-01-01T00:00:00Z",
                         "--timeout", "10m", "--max-retries", "3"});
  EXPECT_EQ(c.kind, CommandKind::kExecutionSubmit);
  EXPECT_EQ(c.ffqn, "ns:pkg/ifc.fn");
  EXPECT_EQ(c.params, core::Json::parse(R"([1, "two", {"x": null}])"));
  EXPECT_EQ(c.execution_id, kId);
  EXPECT_TRUE(c.follow);
  EXPECT_EQ(c.scheduled_at, "2030-01-01T00:00:00Z");
  EXPECT_EQ(c.submit_timeout, "10m");
  EXPECT_EQ(c.max_retries, 3u);
  EXPECT_FALSE(c.deadline.has_value());
  EXPECT_EQ(c.global.api_url, kDefaultApiUrl);
  EXPECT_FALSE(c.global.token.has_value());
  EXPECT_FALSE(c.global.json);
}

TEST(CliArgs, GlobalFlagsAnywhereAndEnvironment) {
  Command c = MustParse(
      {"--json", "execution", "--api-url", "http://127.0.0.1:9", "get", kId, "--token=abc"});
  EXPECT_EQ(c.kind, CommandKind::kExecutionGet);
  EXPECT_TRUE(c.global.json);
  EXPECT_EQ(c.global.api_url, "http://127.0.0.1:9");
  EXPECT_EQ(c.global.token, "abc");

  Command e =
      MustParse({"component", "list"},
                Env({{"STELE_API_URL", "https://example.org:8443/"}, {"STELE_TOKEN", "t0k"}}));
  EXPECT_EQ(e.global.api_url, "https://example.org:8443/");
  EXPECT_EQ(e.global.token, "t0k");
  // Flags beat the environment.
  Command f = MustParse({"component", "list", "--api-url", "http://[::1]:5005", "--token", "x"},
                        Env({{"STELE_API_URL", "http://bad host"}, {"STELE_TOKEN", "t0k"}}));
  EXPECT_EQ(f.global.api_url, "http://[::1]:5005");
  EXPECT_EQ(f.global.token, "x");
}

TEST(CliArgs, ParamsStartingWithDashAfterDoubleDash) {
  // `--` ends the flags, so a positional that looks like a flag is data.
  std::string msg = MustFail({"execution", "submit", "ns:pkg/ifc.fn", "--", "-1"});
  EXPECT_NE(msg.find("JSON array"), std::string::npos) << msg;
}

TEST(CliArgs, EveryCommandParses) {
  EXPECT_EQ(MustParse({"execution", "get", kChildId}).execution_id, kChildId);
  Command r = MustParse({"execution", "result", kId, "--timeout", "15"});
  EXPECT_EQ(r.kind, CommandKind::kExecutionResult);
  EXPECT_EQ(r.timeout_seconds, 15u);
  Command l = MustParse({"execution", "list", "--ffqn-prefix", "ns:", "--id-prefix", "E_01",
                         "--show-derived", "--hide-finished", "--cursor", "E_X", "--direction",
                         "newer", "--length", "5"});
  EXPECT_EQ(l.kind, CommandKind::kExecutionList);
  EXPECT_EQ(l.list.ffqn_prefix, "ns:");
  EXPECT_EQ(l.list.execution_id_prefix, "E_01");
  EXPECT_TRUE(l.list.show_derived);
  EXPECT_TRUE(l.list.hide_finished);
  EXPECT_EQ(l.list.cursor, "E_X");
  EXPECT_EQ(l.list.direction, "newer");
  EXPECT_EQ(l.list.length, 5u);
  Command ev = MustParse({"execution", "events", kId, "--since-version", "3", "--length", "2"});
  EXPECT_EQ(ev.since_version, 3u);
  EXPECT_EQ(ev.length, 2u);
  Command rs = MustParse({"execution", "responses", kId, "--cursor", "7"});
  EXPECT_EQ(rs.cursor, "7");
  Command ce = MustParse({"execution", "cancel", kChildId});
  EXPECT_FALSE(ce.cancel_is_delay);
  Command cd = MustParse({"execution", "cancel", kDelayId});
  EXPECT_TRUE(cd.cancel_is_delay);
  EXPECT_EQ(cd.execution_id, kDelayId);
  Command s = MustParse({"execution", "stub", kChildId, R"({"err": "denied"})"});
  EXPECT_EQ(s.stub_result, core::Json::parse(R"({"err": "denied"})"));
  const std::string digest = "sha256:" + std::string(64, 'a');
  const std::string other = "sha256:" + std::string(64, 'b');
  Command u = MustParse({"execution", "upgrade", kId, digest});
  EXPECT_EQ(u.kind, CommandKind::kExecutionUpgrade);
  EXPECT_EQ(u.execution_id, kId);
  EXPECT_EQ(u.upgrade_digest, digest);
  EXPECT_EQ(u.upgrade_from, std::nullopt);
  EXPECT_FALSE(u.force);
  Command uf = MustParse({"execution", "upgrade", kId, digest, "--from", other, "--force"});
  EXPECT_EQ(uf.upgrade_from, other);
  EXPECT_TRUE(uf.force);
  EXPECT_EQ(MustParse({"component", "list"}).kind, CommandKind::kComponentList);
  EXPECT_EQ(MustParse({"--version"}).kind, CommandKind::kVersion);
}

TEST(CliArgs, ParamsFromFile) {
  auto path =
      std::filesystem::temp_directory_path() / ("stele_cli_params_" + std::to_string(::getpid()));
  {
    std::ofstream f(path);
    f << R"(["from", "file"])";
  }
  Command c = MustParse({"execution", "submit", "ns:pkg/ifc.fn", "@" + path.string()});
  EXPECT_EQ(c.params, core::Json::parse(R"(["from", "file"])"));
  std::filesystem::remove(path);
  std::string msg = MustFail({"execution", "submit", "ns:pkg/ifc.fn", "@" + path.string()});
  EXPECT_NE(msg.find("cannot read"), std::string::npos) << msg;
}

TEST(CliArgs, HelpEverywhere) {
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{},
                                             {"--help"},
                                             {"-h"},
                                             {"help"},
                                             {"execution", "--help"},
                                             {"help", "execution", "submit"},
                                             {"execution", "submit", "--help"},
                                             // Help wins over missing or malformed arguments.
                                             {"execution", "stub", "-h", "not-an-id"},
                                             {"component", "list", "--help"}}) {
    if (args.empty()) {
      EXPECT_FALSE(ParseArgs(args, Env()).has_value());  // no command at all is a usage error
      continue;
    }
    Command c = MustParse(args);
    EXPECT_EQ(c.kind, CommandKind::kHelp);
    EXPECT_NE(c.help_text.find("Usage"), std::string::npos) << c.help_text;
  }
  EXPECT_NE(MustParse({"execution", "submit", "--help"}).help_text.find("--scheduled-at"),
            std::string::npos);
  EXPECT_NE(MustParse({"--help"}).help_text.find("Exit codes"), std::string::npos);
}

// Malformed and hostile input: each is a usage error with a message that
// names the problem.
TEST(CliArgs, RejectsMalformedInput) {
  struct Case {
    std::vector<std::string> args;
    std::string expect;  // substring of the message
  };
  const std::string long_arg(100000, 'A');
  std::vector<Case> cases = {
      {{"bogus"}, "unknown command"},
      {{"execution"}, "missing subcommand"},
      {{"execution", "launch"}, "unknown command"},
      {{"execution", "get"}, "missing arguments"},
      {{"execution", "get", kId, kId}, "too many"},
      {{"execution", "get", kId, "--bogus"}, "unknown flag"},
      {{"execution", "get", kId, "-x"}, "unknown flag"},
      {{"execution", "get", kId, "--timeout", "3"}, "has no flag"},
      {{"execution", "get", kId, "--follow=yes"}, "takes no value"},
      {{"execution", "get", kId, "--json", "--json"}, "given twice"},
      {{"execution", "get", "--api-url"}, "needs a value"},
      {{"execution", "get", "not-an-id"}, "invalid execution id"},
      {{"execution", "get", "E_01HZX3V2Q9G8T6W4M3K2J1H0AB/../../x"}, "invalid execution id"},
      {{"execution", "get", long_arg}, "invalid execution id"},
      {{"execution", "submit", "nope", "[]"}, "invalid function name"},
      {{"execution", "submit", "ns:pkg/ifc.fn", "[1,"}, "not valid JSON"},
      {{"execution", "submit", "ns:pkg/ifc.fn", "{\"a\":1}"}, "JSON array"},
      {{"execution", "submit", "ns:pkg/ifc.fn", "\"\xff\xfe\""}, "not valid JSON"},
      {{"execution", "submit", "ns:pkg/ifc.fn", "[" + std::string(100000, '[')}, "not valid JSON"},
      {{"execution", "submit", "ns:pkg/ifc.fn", "[]", "--id", "E_bad"}, "top-level execution id"},
      {{"execution", "submit", "ns:pkg/ifc.fn", "[]", "--id", kChildId}, "top-level execution id"},
      {{"execution", "submit", "ns:pkg/ifc.fn", "[]", "--scheduled-at="}, "needs a time"},
      {{"execution", "submit", "ns:pkg/ifc.fn", "[]", "--timeout="}, "needs a duration"},
      {{"execution", "submit", "ns:pkg/ifc.fn", "[]", "--deadline="}, "needs a time"},
      {{"execution", "submit", "ns:pkg/ifc.fn", "[]", "--timeout", "1m", "--deadline",
        "2030-01-01T00:00:00Z"},
       "not both"},
      {{"execution", "submit", "ns:pkg/ifc.fn", "[]", "--max-retries", "lots"},
       "expects an integer"},
      {{"execution", "result", kId, "--timeout", "-1"}, "expects an integer"},
      {{"execution", "result", kId, "--timeout", "99999999999999999999"}, "expects an integer"},
      {{"execution", "result", kId, "--timeout", "5s"}, "expects an integer"},
      {{"execution", "list", "--length", "0"}, "expects an integer"},
      {{"execution", "list", "--direction", "sideways"}, "older"},
      {{"execution", "cancel", "Delay_nope"}, "invalid delay id"},
      {{"execution", "stub", kId, "42"}, "RESULT_JSON"},
      {{"execution", "stub", kId, R"({"ok": 1, "err": 2})"}, "RESULT_JSON"},
      {{"execution", "stub", kId, R"({"maybe": 1})"}, "RESULT_JSON"},
      {{"execution", "upgrade", kId, "sha256:nope"}, "invalid digest `sha256:nope`"},
      {{"execution", "upgrade", kId}, "missing arguments"},
      {{"execution", "upgrade", kId, "sha256:" + std::string(64, 'a'), "--from", "x"},
       "`--from`: invalid digest `x`"},
      {{"component", "list", "extra"}, "too many"},
      {{"execution", "list", "--api-url", "ftp://x"}, "http://"},
      {{"execution", "list", "--api-url", "http://host:0"}, "invalid port"},
      {{"execution", "list", "--api-url", "http://host:70000"}, "invalid port"},
      {{"execution", "list", "--api-url", "http://host/api"}, "path"},
      {{"execution", "list", "--api-url", "http://"}, "no host"},
      {{"execution", "list", "--api-url", "http://a b"}, "malformed host"},
      {{"execution", "list", "--token", "bad\r\nX-Injected: 1"}, "token"},
      {{"execution", "list", "--token", ""}, "token"},
      {{"server", "run"}, "must come first"},
      {{"--json", "db", "check"}, "`db` must come first: stele db check"},
      {{"--version", "execution", "list"}, "takes no command"},
  };
  for (const Case& c : cases) {
    std::string msg = MustFail(c.args);
    EXPECT_NE(msg.find(c.expect), std::string::npos)
        << "args[0..]: " << (c.args.empty() ? "" : c.args[0].substr(0, 40))
        << " ... message: " << msg;
  }
  // A bad URL in the environment is reported too.
  std::string msg = MustFail({"component", "list"}, Env({{"STELE_API_URL", "localhost:5005"}}));
  EXPECT_NE(msg.find("http://"), std::string::npos) << msg;
  msg = MustFail({"component", "list"}, Env({{"STELE_TOKEN", "a\nb"}}));
  EXPECT_NE(msg.find("STELE_TOKEN"), std::string::npos) << msg;
}

// The parsers' messages name what was invalid; the CLI passes them on
// without saying it again ("invalid function name `nope`: invalid function
// name `nope`: ..." before).
TEST(CliArgs, InvalidNamesAreReportedOnce) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"execution", "submit", "nope", "[]"}, "invalid function name `nope`"},
      {{"execution", "get", "nope"}, "invalid execution id `nope`"},
      {{"execution", "events", "E_x.o:1_1"}, "invalid execution id `E_x.o:1_1`"},
      {{"execution", "cancel", "Delay_nope"}, "invalid delay id `Delay_nope`"},
  };
  for (const auto& [args, said] : cases) {
    std::string msg = MustFail(args);
    EXPECT_EQ(msg.rfind(said + ": ", 0), 0u) << msg;
    EXPECT_EQ(msg.find(said, 1), std::string::npos) << msg;
  }
}

TEST(CliArgs, HelpNamesEveryCommand) {
  const std::string help = TopLevelHelp();
  for (const char* command :
       {"stele server run|verify", "stele db check [--config PATH", "stele execution submit",
        "stele execution list", "stele execution stub", "stele execution upgrade",
        "stele component list", "stele help"}) {
    EXPECT_NE(help.find(command), std::string::npos) << command;
  }
  Command h = MustParse({"help", "help"});
  EXPECT_EQ(h.kind, CommandKind::kHelp);
  EXPECT_EQ(h.help_text, help);
  Command list = MustParse({"help", "execution", "list"});
  EXPECT_NE(list.help_text.find("Usage: stele execution list"), std::string::npos);
}

}  // namespace
}  // namespace stele::cli
