// ServerMain: parses `server run|verify [--config PATH]` and dispatches.
#include "server/server_main.h"

#include <cstdio>
#include <string>
#include <string_view>

namespace stele::server {

namespace {

void PrintUsage(std::FILE* out) {
  std::fputs(
      "usage: stele server run [--config PATH]\n"
      "       stele server verify [--config PATH]\n"
      "  --config PATH   the TOML configuration (default ./stele.toml)\n",
      out);
}

}  // namespace

int ServerMain(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(stderr);
    return 2;
  }
  std::string_view sub = argv[1];
  if (sub == "--help" || sub == "-h" || sub == "help") {
    PrintUsage(stdout);
    return 0;
  }
  if (sub != "run" && sub != "verify") {
    std::fprintf(stderr, "stele server: unknown subcommand `%s`\n", argv[1]);
    PrintUsage(stderr);
    return 2;
  }
  std::fputs("stele server: not implemented yet\n", stderr);
  return 1;
}

}  // namespace stele::server
