// ServerMain's argument handling and `verify` (the `run` path is covered
// end to end by the CLI's tests through the real binary and signals).
#include "server/server_main.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace stele::server {
namespace {

int Main(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return ServerMain(static_cast<int>(argv.size()), argv.data());
}

TEST(ServerMainTest, Usage) {
  EXPECT_EQ(Main({"server"}), 2);
  EXPECT_EQ(Main({"server", "launch"}), 2);
  EXPECT_EQ(Main({"server", "verify", "--bogus"}), 2);
  EXPECT_EQ(Main({"server", "verify", "--config"}), 2);
  EXPECT_EQ(Main({"server", "--help"}), 0);
}

TEST(ServerMainTest, VerifyTheExampleConfig) {
#if STELE_SERVER_HAVE_EXEC
  EXPECT_EQ(Main({"server", "verify", "--config",
                  std::string(STELE_SOURCE_DIR) + "/examples/server/stele.toml"}),
            0);
#endif
  auto dir = std::filesystem::temp_directory_path() / "stele_server_main_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bad.toml") << "[api]\nlisten = 12\n";
  EXPECT_EQ(Main({"server", "verify", "--config", (dir / "bad.toml").string()}), 1);
  EXPECT_EQ(Main({"server", "verify", "--config=" + (dir / "missing.toml").string()}), 1);
  EXPECT_EQ(Main({"server", "run", "--config", (dir / "missing.toml").string()}), 1);
  std::filesystem::remove_all(dir);
}

// Valid TOML whose components cannot be loaded: `verify` exits 1 and names
// each broken component with the file and the line of its table on stderr
// (and prints no OK line).
TEST(ServerMainTest, VerifyReportsBrokenComponents) {
  auto dir = std::filesystem::temp_directory_path() / "stele_server_main_broken";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "garbage.wasm", std::ios::binary) << "this is not WebAssembly";
  const std::string config = (dir / "stele.toml").string();
  const std::string missing = (dir / "missing.sh").string();
  std::ofstream(config) << "[api]\nlisten = \"127.0.0.1:0\"\n\n"  // lines 1-3
                        << "[[activity_exec]]\n"                  // line 4
                        << "name = \"no_program\"\ncommand = [\"" << missing << "\"]\n"
                        << "[[activity_exec.functions]]\nffqn = \"t:x/y.run\"\nparams = []\n\n"
                        << "[[workflow_wasm]]\n"  // line 11
                        << "name = \"garbage\"\nlocation = \"garbage.wasm\"\n";
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int code = Main({"server", "verify", "--config", config});
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 1) << err;
  EXPECT_EQ(out.find("OK"), std::string::npos) << out;
  using ::testing::HasSubstr;
  // Both are reported, not only the first.
  EXPECT_THAT(err, HasSubstr(config + ":4: activity_exec.command: component `no_program`"));
#if STELE_SERVER_HAVE_EXEC
  EXPECT_THAT(err, HasSubstr("no such program"));
#endif
  EXPECT_THAT(err, HasSubstr(config + ":11: workflow_wasm.location: component `garbage`"));
  EXPECT_LT(err.find(config + ":4:"), err.find(config + ":11:")) << "in file order: " << err;
  EXPECT_THAT(err, HasSubstr(config + ": invalid configuration"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stele::server
