// Where a run keeps its data: DbTarget (passed to child processes) and
// FreshDb (a new SQLite file or PostgreSQL database per run).
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bench/workloads/workloads.h"

namespace stele::bench {
namespace {

constexpr const char* kSqlitePrefix = "sqlite:";
constexpr const char* kPostgresPrefix = "postgres:";

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

std::string DbTarget::Encode() const {
  return is_postgres() ? kPostgresPrefix + postgres_conninfo : kSqlitePrefix + sqlite_path;
}

DbTarget DbTarget::Decode(const std::string& arg) {
  DbTarget target;
  if (StartsWith(arg, kPostgresPrefix)) {
    target.postgres_conninfo = arg.substr(std::string(kPostgresPrefix).size());
  } else if (StartsWith(arg, kSqlitePrefix)) {
    target.sqlite_path = arg.substr(std::string(kSqlitePrefix).size());
  } else {
    target.sqlite_path = arg;
  }
  return target;
}

FreshDb::FreshDb(const Knobs& knobs, const std::string& name) {
  if (knobs.postgres_url.empty()) {
    target_.sqlite_path = knobs.dir + "/" + name + ".sqlite";
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::error_code ec;
      std::filesystem::remove(target_.sqlite_path + suffix, ec);
    }
    return;
  }
  // Unique per process and run, so that concurrent or killed runs never
  // meet an old database.
  static std::atomic<uint32_t> counter{0};
  postgres_admin_ = knobs.postgres_url;
  postgres_dbname_ = "stele_bench_" + name + "_" + std::to_string(::getpid()) + "_" +
                     std::to_string(counter.fetch_add(1));
  auto conninfo = pg::CreateDatabase(postgres_admin_, postgres_dbname_);
  if (!conninfo) {
    std::fprintf(stderr, "workloads: cannot create database %s: %s\n", postgres_dbname_.c_str(),
                 conninfo.error().ToString().c_str());
    std::exit(1);
  }
  target_.postgres_conninfo = *conninfo;
}

FreshDb::~FreshDb() {
  if (!postgres_dbname_.empty()) pg::DropDatabase(postgres_admin_, postgres_dbname_);
}

uint64_t FreshDb::Bytes() const {
  if (target_.is_postgres()) return pg::DatabaseBytes(target_.postgres_conninfo);
  uint64_t total = 0;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    auto size = std::filesystem::file_size(target_.sqlite_path + suffix, ec);
    if (!ec) total += size;
  }
  return total;
}

uint64_t FreshDb::WalBytes() const {
  if (target_.is_postgres()) return 0;
  std::error_code ec;
  auto size = std::filesystem::file_size(target_.sqlite_path + "-wal", ec);
  return ec ? 0 : size;
}

}  // namespace stele::bench
