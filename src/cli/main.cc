// The `stele` executable: `stele server ...` runs the server (composition
// root in src/server), `stele db ...` checks its database (src/server/
// db_main.cc), everything else is the HTTP client (cli/commands.h).
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/log_config.h"
#include "cli/commands.h"

#if STELE_CLI_HAS_SERVER
#include "server/server_main.h"
#endif

int main(int argc, char** argv) {
  // `stele help server|db [...]` is `stele server|db --help`: their usage
  // lives with their parsers in src/server.
  char help_flag[] = "--help";
  char* help_argv[] = {nullptr, nullptr, help_flag, nullptr};
  if (argc >= 3 && std::string_view(argv[1]) == "help" &&
      (std::string_view(argv[2]) == "server" || std::string_view(argv[2]) == "db")) {
    help_argv[1] = argv[2];
    argc = 3;
    argv = help_argv;
  }
  // Checked before any command runs (ServerMain checks it again, as its
  // own entry point): a misspelt level is an error, not a silent default.
  if (auto level = stele::LogLevelFromEnvironment(); !level) {
    std::cerr << "stele: " << level.error() << "\n";
    return 2;
  }
  if (argc >= 2 && std::string_view(argv[1]) == "server") {
#if STELE_CLI_HAS_SERVER
    return stele::server::ServerMain(argc - 1, argv + 1);
#else
    std::cerr << "stele server: not built yet (this build has no src/server)\n";
    return 4;
#endif
  }
  if (argc >= 2 && std::string_view(argv[1]) == "db") {
#if STELE_CLI_HAS_SERVER
    return stele::server::DbMain(argc - 1, argv + 1);
#else
    std::cerr << "stele db: not built yet (this build has no src/server)\n";
    return 4;
#endif
  }
  // A reader that closes our stdout early (`stele execution list | head`)
  // must not kill us with SIGPIPE halfway through a request.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  auto env = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  int code = stele::cli::CliMain(args, env, std::cout, std::cerr);
  std::cout.flush();
  return code;
}
