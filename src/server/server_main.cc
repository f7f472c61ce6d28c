// ServerMain: parses `server run|verify [--config PATH]` and dispatches.
#include "server/server_main.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "base/log.h"
#include "base/log_config.h"
#include "server/components.h"
#include "server/config.h"
#include "server/server.h"
#include "server/webhooks.h"

namespace stele::server {

namespace {

constexpr const char* kDefaultConfig = "stele.toml";

void PrintUsage(std::FILE* out) {
  std::fputs(
      "usage: stele server run [--config PATH]\n"
      "       stele server verify [--config PATH]\n"
      "  --config PATH   the TOML configuration (default ./stele.toml; `run` uses\n"
      "                  built-in defaults when the default file does not exist)\n",
      out);
}

struct Loaded {
  ServerConfig config;
  std::vector<LoadedComponent> components;
};

// Loads the config and every component; prints the errors.
std::optional<Loaded> LoadAll(const std::string& path, bool missing_ok) {
  auto config = LoadConfig(path, missing_ok, ProcessEnv());
  if (!config) {
    std::fputs(FormatErrors(config.error()).c_str(), stderr);
    return std::nullopt;
  }
  auto components = LoadComponents(*config, path);
  if (!components) {
    std::fputs(FormatErrors(components.error()).c_str(), stderr);
    return std::nullopt;
  }
  return Loaded{std::move(*config), std::move(*components)};
}

int Verify(const std::string& path) {
  auto loaded = LoadAll(path, false);
  if (!loaded) {
    std::fprintf(stderr, "%s: invalid configuration\n", path.c_str());
    return 1;
  }
  // Webhooks compile at start too; verify says what start would.
  auto webhooks = LoadWebhooks(loaded->config, path);
  if (!webhooks) {
    std::fputs(FormatErrors(webhooks.error()).c_str(), stderr);
    std::fprintf(stderr, "%s: invalid configuration\n", path.c_str());
    return 1;
  }
  size_t functions = 0;
  for (const auto& c : loaded->components) functions += c.functions.size();
  std::printf("%s: OK (%zu component(s), %zu function(s), %zu webhook(s))\n", path.c_str(),
              loaded->components.size(), functions, webhooks->size());
  return 0;
}

int Run(const std::string& path, bool is_default) {
  auto loaded = LoadAll(path, is_default);
  if (!loaded) return 1;
  // Block the shutdown signals before any thread starts, so every thread
  // inherits the mask and only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &signals, &previous);
  auto server = Server::Start(std::move(loaded->config), std::move(loaded->components));
  if (!server) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    std::fprintf(stderr, "stele server: %s\n", server.error().c_str());
    return 1;
  }
  std::fprintf(stderr, "stele server: listening on port %d\n", (*server)->port());
  if ((*server)->ui_port() > 0) {
    std::fprintf(stderr, "stele server: web UI on port %d\n", (*server)->ui_port());
  }
  int received = 0;
  sigwait(&signals, &received);
  std::fprintf(stderr, "stele server: %s received, shutting down\n",
               received == SIGINT ? "SIGINT" : "SIGTERM");
  (*server)->Stop();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return 0;
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
  std::string path = kDefaultConfig;
  bool is_default = true;
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--config" && i + 1 < argc) {
      path = argv[++i];
      is_default = false;
    } else if (arg.starts_with("--config=")) {
      path = std::string(arg.substr(9));
      is_default = false;
    } else if (arg == "--help" || arg == "-h") {
      PrintUsage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "stele server %s: unexpected argument `%s`\n", argv[1], argv[i]);
      PrintUsage(stderr);
      return 2;
    }
  }
  if (path.empty()) {
    std::fputs("stele server: --config needs a path\n", stderr);
    return 2;
  }
  // STELE_LOG before anything else: a typo must neither hide nor flood the
  // log unnoticed. Unset, the server logs at info, so that workflow logs
  // and activity output reach its log (docs/config.md, "Logging").
  auto level = LogLevelFromEnvironment();
  if (!level) {
    std::fprintf(stderr, "stele server: %s\n", level.error().c_str());
    return 2;
  }
  if (sub == "verify") return Verify(path);
  SetLogLevel(level->value_or(LogLevel::kInfo));
  return Run(path, is_default);
}

}  // namespace stele::server
