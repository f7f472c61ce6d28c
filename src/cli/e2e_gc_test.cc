// End-to-end test of `stele db gc` (docs/cli.md) on the real binary, next
// to a running server on the same SQLite file: malformed ages are refused
// with a clear error before the database is opened, a valid one deletes
// the finished executions only, and `stele db check` stays clean.
#include "e2e_fixture.h"

namespace {

class E2eGcTest : public E2eTest {};

std::string GcRfc3339(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

TEST_F(E2eGcTest, GcDeletesFinishedExecutionsAndRefusesMalformedAges) {
  START_SERVER();
  std::vector<std::string> finished;
  for (const char* who : {R"(["a"])", R"(["b"])", R"(["c"])"}) {
    finished.push_back(Submit(kEcho, who));
    EXPECT_EQ(Cli({"execution", "result", finished.back(), "--timeout", "30"}).code, 0);
  }
  // Pending for a day: not finished, never collected.
  const std::string pending = [&] {
    CliRun r = Cli({"execution", "submit", kEcho, R"(["later"])", "--scheduled-at",
                    GcRfc3339(std::chrono::system_clock::now() + std::chrono::hours(24))});
    EXPECT_EQ(r.code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }();
  auto all_there = [&] {
    for (const std::string& id : finished) {
      if (Cli({"execution", "get", id}).code != 0) return false;
    }
    return Cli({"execution", "get", pending}).code == 0;
  };

  const std::string db = sqlite_.string();
  struct Bad {
    std::vector<std::string> args;
    std::string said;
  };
  const std::vector<Bad> bad = {
      {{"db", "gc", "--sqlite", db, "--older-than", "banana"},
       "stele db gc: --older-than: invalid duration `banana`: expected a whole number and a unit"},
      {{"db", "gc", "--sqlite", db, "--older-than", "-7d"},
       "stele db gc: --older-than: invalid duration `-7d`"},
      {{"db", "gc", "--sqlite", db, "--older-than=0s"},
       "stele db gc: --older-than must be positive, got `0s`"},
      {{"db", "gc", "--sqlite", db, "--older-than", "400d"}, "is over a year"},
      {{"db", "gc", "--sqlite", db}, "stele db gc: --older-than is required"},
      {{"db", "gc", "--sqlite", db, "--older-than"}, "--older-than needs a duration"},
      {{"db", "gc", "--sqlite", db, "--older-than", "1s", "--batch-size", "0"},
       "--batch-size needs a number from 1 to 10000"},
      {{"db", "gc", "--older-than", "1s", "--quiet"}, "unexpected argument `--quiet`"},
  };
  for (const Bad& b : bad) {
    CliRun r = RunStele(b.args);
    EXPECT_EQ(r.code, 2) << b.args.back() << ": " << r.err;
    EXPECT_NE(r.err.find(b.said), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  EXPECT_TRUE(all_there()) << "a refused gc deleted something";
  // A missing database is not created.
  CliRun missing =
      RunStele({"db", "gc", "--sqlite", (dir_ / "none.sqlite").string(), "--older-than", "1s"});
  EXPECT_EQ(missing.code, 3) << missing.err;
  EXPECT_FALSE(fs::exists(dir_ / "none.sqlite"));

  // Too young yet for a day's age: nothing goes.
  CliRun young = RunStele({"db", "gc", "--sqlite", db, "--older-than", "1d"});
  EXPECT_EQ(young.code, 0) << young.err;
  EXPECT_EQ(young.out.rfind("deleted 0 execution(s) finished before ", 0), 0u) << young.out;
  EXPECT_TRUE(all_there());

  // Everything finished at least a second ago goes (the server keeps
  // running on the same file), through the config file this time.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  CliRun gc = RunStele({"db", "gc", "--config", (dir_ / "stele.toml").string(), "--older-than",
                        "1s", "--batch-size", "2"});
  EXPECT_EQ(gc.code, 0) << gc.err;
  EXPECT_NE(gc.out.find("deleted 3 execution(s)"), std::string::npos) << gc.out;
  EXPECT_NE(gc.out.find(": 3 top-level, with 0 child execution(s)"), std::string::npos) << gc.out;
  for (const std::string& id : finished) {
    CliRun get = Cli({"execution", "get", id});
    EXPECT_EQ(get.code, 3) << id << ": " << get.out << get.err;
  }
  EXPECT_EQ(Cli({"execution", "get", pending}).code, 0);
  CliRun check = DbCheck();
  EXPECT_EQ(check.code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("checked 1 execution(s)"), std::string::npos) << check.out;
}

}  // namespace
