// DbMain: `stele db check` — the consistency checker (storage/check) on the
// database of a config file, or of a SQLite path / PostgreSQL URL given
// directly (docs/cli.md, docs/reliability.md).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "server/config.h"
#include "server/server_main.h"
#include "storage/check/consistency_check.h"
#include "storage/sqlite/sqlite_pool.h"
#if STELE_SERVER_HAVE_POSTGRES
#include "storage/postgres/postgres_pool.h"
#endif

namespace stele::server {

namespace {

constexpr int kClean = 0;
constexpr int kFindings = 1;
constexpr int kUsage = 2;
constexpr int kUnavailable = 3;

void PrintUsage(std::FILE* out) {
  std::fputs(
      "usage: stele db check [--config PATH | --sqlite PATH | --postgres URL]\n"
      "                      [--max-findings N] [--quiet]\n"
      "  --config PATH     the server's TOML configuration; its [database] is checked\n"
      "                    (default ./stele.toml, or the built-in default database\n"
      "                    when that file does not exist)\n"
      "  --sqlite PATH     check this SQLite database file\n"
      "  --postgres URL    check this PostgreSQL database (libpq URL or string)\n"
      "  --max-findings N  stop listing after N findings (default 1000)\n"
      "  --quiet           print only the summary line\n"
      "exit status: 0 consistent, 1 findings, 2 usage or config error,\n"
      "             3 database unavailable\n",
      out);
}

struct Target {
  std::optional<std::string> sqlite;
  std::optional<std::string> postgres;
};

int OpenAndCheck(const Target& target, size_t max_findings, bool quiet) {
  std::unique_ptr<storage::DbPool> pool;
  if (target.postgres) {
#if STELE_SERVER_HAVE_POSTGRES
    storage::postgres::PostgresOptions options;
    options.conninfo = *target.postgres;
    auto opened = storage::postgres::PostgresPool::Open(options);
    if (!opened) {
      std::fprintf(stderr, "stele db check: cannot open the PostgreSQL database: %s\n",
                   opened.error().ToString().c_str());
      return kUnavailable;
    }
    pool = std::move(*opened);
#else
    std::fputs("stele db check: this build has no PostgreSQL backend\n", stderr);
    return kUnavailable;
#endif
  } else {
    const std::string& path = *target.sqlite;
    std::error_code ec;
    // Opening would create a missing file: checking nothing is an error.
    if (!std::filesystem::is_regular_file(path, ec)) {
      std::fprintf(stderr, "stele db check: no SQLite database at `%s`\n", path.c_str());
      return kUnavailable;
    }
    storage::sqlite::SqliteOptions options;
    options.path = path;
    options.read_connections = 1;
    auto opened = storage::sqlite::SqlitePool::Open(options);
    if (!opened) {
      std::fprintf(stderr, "stele db check: cannot open the SQLite database `%s`: %s\n",
                   path.c_str(), opened.error().ToString().c_str());
      return kUnavailable;
    }
    pool = std::move(*opened);
  }
  auto api = pool->ExternalApiConn();
  if (!api) {
    std::fprintf(stderr, "stele db check: %s\n", api.error().ToString().c_str());
    pool->Close();
    return kUnavailable;
  }
  storage::check::CheckOptions options;
  options.max_findings = max_findings;
  auto report = storage::check::CheckStore(**api, options);
  api->reset();
  pool->Close();
  if (!report) {
    std::fprintf(stderr, "stele db check: cannot read the database: %s\n",
                 report.error().c_str());
    return kUnavailable;
  }
  if (!quiet) {
    for (const auto& f : report->findings) {
      std::printf("%s: %s\n", f.execution_id.c_str(), f.description.c_str());
    }
  }
  std::printf("checked %llu execution(s), %llu event(s), %llu response(s): %zu finding(s)%s\n",
              static_cast<unsigned long long>(report->executions),
              static_cast<unsigned long long>(report->events),
              static_cast<unsigned long long>(report->responses), report->findings.size(),
              report->truncated ? " (list truncated)" : "");
  std::fflush(stdout);
  return report->findings.empty() ? kClean : kFindings;
}

// The value of `--name VALUE` or `--name=VALUE` at argv[i]; advances i.
std::optional<std::string> FlagValue(int argc, char** argv, int& i, std::string_view name) {
  std::string_view arg = argv[i];
  if (arg == name) {
    if (i + 1 >= argc) return std::nullopt;
    return std::string(argv[++i]);
  }
  return std::string(arg.substr(name.size() + 1));
}

bool IsFlag(std::string_view arg, std::string_view name) {
  return arg == name || (arg.starts_with(name) && arg.size() > name.size() &&
                         arg[name.size()] == '=');
}

int Usage(const std::string& message) {
  std::fprintf(stderr, "stele db check: %s\n", message.c_str());
  PrintUsage(stderr);
  return kUsage;
}

}  // namespace

int DbMain(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(stderr);
    return kUsage;
  }
  std::string_view sub = argv[1];
  if (sub == "--help" || sub == "-h" || sub == "help") {
    PrintUsage(stdout);
    return kClean;
  }
  if (sub != "check") {
    std::fprintf(stderr, "stele db: unknown subcommand `%s`\n", argv[1]);
    PrintUsage(stderr);
    return kUsage;
  }
  std::optional<std::string> config;
  Target target;
  size_t max_findings = 1000;
  bool quiet = false;
  int sources = 0;
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      PrintUsage(stdout);
      return kClean;
    }
    if (arg == "--quiet") {
      quiet = true;
      continue;
    }
    std::optional<std::string>* slot = nullptr;
    std::string_view name;
    if (IsFlag(arg, "--config")) {
      slot = &config;
      name = "--config";
    } else if (IsFlag(arg, "--sqlite")) {
      slot = &target.sqlite;
      name = "--sqlite";
    } else if (IsFlag(arg, "--postgres")) {
      slot = &target.postgres;
      name = "--postgres";
    } else if (IsFlag(arg, "--max-findings")) {
      auto value = FlagValue(argc, argv, i, "--max-findings");
      char* end = nullptr;
      const unsigned long long n =
          value && !value->empty() && (*value)[0] != '-' ? std::strtoull(value->c_str(), &end, 10)
                                                         : 0;
      if (!value || end == nullptr || *end != '\0' || n == 0 || n > 1'000'000) {
        return Usage("--max-findings needs a number from 1 to 1000000");
      }
      max_findings = static_cast<size_t>(n);
      continue;
    } else {
      return Usage("unexpected argument `" + std::string(arg) + "`");
    }
    auto value = FlagValue(argc, argv, i, name);
    if (!value || value->empty()) return Usage(std::string(name) + " needs a value");
    *slot = std::move(value);
    ++sources;
  }
  if (sources > 1) return Usage("give at most one of --config, --sqlite and --postgres");
  if (!target.sqlite && !target.postgres) {
    const bool is_default = !config.has_value();
    const std::string path = config.value_or("stele.toml");
    auto loaded = LoadConfig(path, /*missing_ok=*/is_default, ProcessEnv());
    if (!loaded) {
      std::fputs(FormatErrors(loaded.error()).c_str(), stderr);
      std::fprintf(stderr, "stele db check: %s: invalid configuration\n", path.c_str());
      return kUsage;
    }
    if (loaded->database.postgres) {
      target.postgres = loaded->database.postgres;
    } else if (loaded->database.sqlite) {
      target.sqlite = loaded->database.sqlite;
    } else {
      return Usage(path + " names no database");
    }
  }
  return OpenAndCheck(target, max_findings, quiet);
}

}  // namespace stele::server
