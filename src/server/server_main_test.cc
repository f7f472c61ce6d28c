// ServerMain's argument handling and `verify` (the `run` path is covered
// end to end by the CLI's tests through the real binary and signals).
#include "server/server_main.h"

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

}  // namespace
}  // namespace stele::server
