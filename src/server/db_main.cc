// DbMain: `stele db check` — the consistency checker (storage/check) — and
// `stele db gc` — retention once (service::ExecutionService::CollectFinished)
// — on the database of a config file, or of a SQLite path / PostgreSQL URL
// given directly (docs/cli.md, docs/reliability.md).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "base/time.h"
#include "server/config.h"
#include "server/server_main.h"
#include "service/execution_service.h"
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
      "       stele db gc --older-than DURATION\n"
      "                   [--config PATH | --sqlite PATH | --postgres URL] [--batch-size N]\n"
      "  check             report inconsistencies of the database\n"
      "  gc                delete finished executions, once (see [retention] in docs/config.md)\n"
      "  --config PATH     the server's TOML configuration; its [database] is used\n"
      "                    (default ./stele.toml, or the built-in default database\n"
      "                    when that file does not exist)\n"
      "  --sqlite PATH     this SQLite database file (it must exist)\n"
      "  --postgres URL    this PostgreSQL database (libpq URL or string)\n"
      "  --max-findings N  check: stop listing after N findings (default 1000)\n"
      "  --quiet           check: print only the summary line\n"
      "  --older-than D    gc (required): delete the top-level executions that finished,\n"
      "                    with all their children, at least D ago: \"7d\", \"12h\", \"30m\"\n"
      "  --batch-size N    gc: top-level executions per transaction, 1..10000 (default 100)\n"
      "exit status: check: 0 consistent, 1 findings; gc: 0 done;\n"
      "             both: 2 usage or config error, 3 database unavailable\n",
      out);
}

struct Target {
  std::optional<std::string> sqlite;
  std::optional<std::string> postgres;
};

// Opens the target's database, never creating one; nullptr (after printing
// why, prefixed by `verb`) when it cannot.
std::unique_ptr<storage::DbPool> OpenTargetPool(const Target& target, const char* verb) {
  if (target.postgres) {
#if STELE_SERVER_HAVE_POSTGRES
    storage::postgres::PostgresOptions options;
    options.conninfo = *target.postgres;
    auto opened = storage::postgres::PostgresPool::Open(options);
    if (!opened) {
      std::fprintf(stderr, "stele db %s: cannot open the PostgreSQL database: %s\n", verb,
                   opened.error().ToString().c_str());
      return nullptr;
    }
    return std::move(*opened);
#else
    std::fprintf(stderr, "stele db %s: this build has no PostgreSQL backend\n", verb);
    return nullptr;
#endif
  }
  const std::string& path = *target.sqlite;
  std::error_code ec;
  // Opening would create a missing file: checking or collecting nothing is
  // an error.
  if (!std::filesystem::is_regular_file(path, ec)) {
    std::fprintf(stderr, "stele db %s: no SQLite database at `%s`\n", verb, path.c_str());
    return nullptr;
  }
  storage::sqlite::SqliteOptions options;
  options.path = path;
  options.read_connections = 1;
  auto opened = storage::sqlite::SqlitePool::Open(options);
  if (!opened) {
    std::fprintf(stderr, "stele db %s: cannot open the SQLite database `%s`: %s\n", verb,
                 path.c_str(), opened.error().ToString().c_str());
    return nullptr;
  }
  return std::move(*opened);
}

int OpenAndCheck(const Target& target, size_t max_findings, bool quiet) {
  std::unique_ptr<storage::DbPool> pool = OpenTargetPool(target, "check");
  if (!pool) return kUnavailable;
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
    std::fprintf(stderr, "stele db check: cannot read the database: %s\n", report.error().c_str());
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
  return arg == name ||
         (arg.starts_with(name) && arg.size() > name.size() && arg[name.size()] == '=');
}

// Parses a count flag's value: a number from 1 to `max`.
std::optional<size_t> CountValue(const std::optional<std::string>& value, size_t max) {
  char* end = nullptr;
  const unsigned long long n =
      value && !value->empty() && (*value)[0] != '-' ? std::strtoull(value->c_str(), &end, 10) : 0;
  if (!value || end == nullptr || *end != '\0' || n == 0 || n > max) return std::nullopt;
  return static_cast<size_t>(n);
}

int GcRun(const Target& target, std::chrono::milliseconds older_than, uint32_t batch_size) {
  std::unique_ptr<storage::DbPool> opened = OpenTargetPool(target, "gc");
  if (!opened) return kUnavailable;
  std::shared_ptr<storage::DbPool> pool(std::move(opened));
  service::ServiceOptions options;
  options.pool = pool;
  options.retention_batch_size = batch_size;
  options.start_watcher = false;
  auto service = service::ExecutionService::Create(std::move(options));
  if (!service) {
    std::fprintf(stderr, "stele db gc: %s\n", service.error().message.c_str());
    pool->Close();
    return kUnavailable;
  }
  auto report = (*service)->CollectFinished(older_than);
  service->reset();
  pool->Close();
  if (!report) {
    std::fprintf(stderr, "stele db gc: %s\n", report.error().message.c_str());
    return report.error().kind == service::ServiceError::Kind::kInvalidArgument ? kUsage
                                                                                : kUnavailable;
  }
  std::printf(
      "deleted %llu execution(s) finished before %s: %llu top-level, with %llu "
      "child execution(s)\n",
      static_cast<unsigned long long>(report->deleted), FormatRfc3339(report->cutoff).c_str(),
      static_cast<unsigned long long>(report->deleted_top_level),
      static_cast<unsigned long long>(report->deleted - report->deleted_top_level));
  std::fflush(stdout);
  return kClean;
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
  if (sub != "check" && sub != "gc") {
    std::fprintf(stderr, "stele db: unknown subcommand `%s`\n", argv[1]);
    PrintUsage(stderr);
    return kUsage;
  }
  const bool gc = sub == "gc";
  auto usage = [&](const std::string& message) {
    std::fprintf(stderr, "stele db %s: %s\n", gc ? "gc" : "check", message.c_str());
    PrintUsage(stderr);
    return kUsage;
  };
  std::optional<std::string> config;
  Target target;
  size_t max_findings = 1000;
  bool quiet = false;
  std::optional<std::chrono::milliseconds> older_than;
  uint32_t batch_size = 100;
  int sources = 0;
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      PrintUsage(stdout);
      return kClean;
    }
    if (!gc && arg == "--quiet") {
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
    } else if (!gc && IsFlag(arg, "--max-findings")) {
      auto n = CountValue(FlagValue(argc, argv, i, "--max-findings"), 1'000'000);
      if (!n) return usage("--max-findings needs a number from 1 to 1000000");
      max_findings = *n;
      continue;
    } else if (gc && IsFlag(arg, "--batch-size")) {
      auto n = CountValue(FlagValue(argc, argv, i, "--batch-size"), storage::kMaxRetentionBatch);
      if (!n) return usage("--batch-size needs a number from 1 to 10000");
      batch_size = static_cast<uint32_t>(*n);
      continue;
    } else if (gc && IsFlag(arg, "--older-than")) {
      auto value = FlagValue(argc, argv, i, "--older-than");
      if (!value || value->empty()) {
        return usage("--older-than needs a duration, e.g. --older-than 7d");
      }
      auto parsed = ParseDurationText(*value);
      if (!parsed) return usage("--older-than: " + parsed.error());
      if (parsed->count() == 0) return usage("--older-than must be positive, got `" + *value + "`");
      older_than = *parsed;
      continue;
    } else {
      return usage("unexpected argument `" + std::string(arg) + "`");
    }
    auto value = FlagValue(argc, argv, i, name);
    if (!value || value->empty()) return usage(std::string(name) + " needs a value");
    *slot = std::move(value);
    ++sources;
  }
  if (sources > 1) return usage("give at most one of --config, --sqlite and --postgres");
  // Checked before the database is opened: a mistyped age deletes nothing.
  if (gc && !older_than) {
    return usage(
        "--older-than is required: the age of the finished executions to delete, "
        "e.g. --older-than 7d");
  }
  if (!target.sqlite && !target.postgres) {
    const bool is_default = !config.has_value();
    const std::string path = config.value_or("stele.toml");
    auto loaded = LoadConfig(path, /*missing_ok=*/is_default, ProcessEnv());
    if (!loaded) {
      std::fputs(FormatErrors(loaded.error()).c_str(), stderr);
      std::fprintf(stderr, "stele db %s: %s: invalid configuration\n", gc ? "gc" : "check",
                   path.c_str());
      return kUsage;
    }
    if (loaded->database.postgres) {
      target.postgres = loaded->database.postgres;
    } else if (loaded->database.sqlite) {
      target.sqlite = loaded->database.sqlite;
    } else {
      return usage(path + " names no database");
    }
  }
  if (gc) return GcRun(target, *older_than, batch_size);
  return OpenAndCheck(target, max_findings, quiet);
}

}  // namespace stele::server
