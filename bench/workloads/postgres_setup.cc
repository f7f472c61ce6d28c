// The PostgreSQL side of the workloads: fresh databases through libpq and
// the engine's PostgresPool. Without the backend (no libpq at build time)
// every call fails with a clear message.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "bench/workloads/workloads.h"

#if STELE_BENCH_HAVE_POSTGRES
#include <libpq-fe.h>

#include "storage/postgres/postgres_pool.h"
#include "storage/postgres/test_database.h"
#endif

namespace stele::bench::pg {

#if STELE_BENCH_HAVE_POSTGRES
namespace {

// One connection for a few administrative statements.
class AdminConn {
 public:
  explicit AdminConn(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {}
  ~AdminConn() { PQfinish(conn_); }
  AdminConn(const AdminConn&) = delete;
  AdminConn& operator=(const AdminConn&) = delete;

  bool ok() const { return PQstatus(conn_) == CONNECTION_OK; }
  std::string error() const { return PQerrorMessage(conn_); }
  // The first column of the first row, or an error.
  Result<std::string, Error> Exec(const std::string& sql) {
    PGresult* res = PQexec(conn_, sql.c_str());
    const ExecStatusType status = PQresultStatus(res);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      Error error = Error::Storage(sql + ": " + PQresultErrorMessage(res));
      PQclear(res);
      return Unexpected(std::move(error));
    }
    std::string value;
    if (status == PGRES_TUPLES_OK && PQntuples(res) > 0 && PQnfields(res) > 0) {
      value = PQgetvalue(res, 0, 0);
    }
    PQclear(res);
    return value;
  }

 private:
  PGconn* conn_;
};

uint32_t PoolConnections() {
  const char* v = std::getenv("STELE_BENCH_PG_CONNECTIONS");
  if (v == nullptr || *v == '\0') return 16;
  return static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
}

}  // namespace

Result<std::shared_ptr<storage::DbPool>, Error> OpenPool(const std::string& conninfo) {
  storage::postgres::PostgresOptions options;
  options.conninfo = conninfo;
  options.max_connections = PoolConnections();
  auto pool = storage::postgres::PostgresPool::Open(options);
  if (!pool)
    return Unexpected(Error::Storage("cannot open PostgreSQL: " + pool.error().ToString()));
  return std::shared_ptr<storage::DbPool>(std::move(*pool));
}

Result<std::string, Error> CreateDatabase(const std::string& admin, const std::string& dbname) {
  AdminConn conn(admin);
  if (!conn.ok()) return Unexpected(Error::Storage("cannot connect: " + conn.error()));
  STELE_TRY(conn.Exec("CREATE DATABASE " + dbname));
  auto conninfo = storage::postgres::testing::WithDatabase(admin, dbname);
  if (!conninfo) return Unexpected(Error::InvalidArgument(conninfo.error().ToString()));
  return *std::move(conninfo);
}

void DropDatabase(const std::string& admin, const std::string& dbname) {
  AdminConn conn(admin);
  if (conn.ok()) (void)conn.Exec("DROP DATABASE IF EXISTS " + dbname + " WITH (FORCE)");
}

uint64_t DatabaseBytes(const std::string& conninfo) {
  AdminConn conn(conninfo);
  if (!conn.ok()) return 0;
  auto bytes = conn.Exec(
      "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
      "JOIN pg_namespace n ON n.oid = c.relnamespace "
      "WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')");
  return bytes ? std::strtoull(bytes->c_str(), nullptr, 10) : 0;
}

std::string ServerSettings(const std::string& admin) {
  AdminConn conn(admin);
  if (!conn.ok()) return "unreachable";
  std::string out;
  for (const char* name :
       {"server_version", "fsync", "synchronous_commit", "full_page_writes", "shared_buffers"}) {
    auto value = conn.Exec(std::string("SHOW ") + name);
    out += std::string(out.empty() ? "" : " ") + name + "=" + (value ? *value : "?");
  }
  return out;
}

#else  // !STELE_BENCH_HAVE_POSTGRES

namespace {
Error NoBackend() { return Error::FailedPrecondition("this build has no PostgreSQL backend"); }
}  // namespace

Result<std::shared_ptr<storage::DbPool>, Error> OpenPool(const std::string&) {
  return Unexpected(NoBackend());
}
Result<std::string, Error> CreateDatabase(const std::string&, const std::string&) {
  return Unexpected(NoBackend());
}
void DropDatabase(const std::string&, const std::string&) {}
uint64_t DatabaseBytes(const std::string&) { return 0; }
std::string ServerSettings(const std::string&) { return "no PostgreSQL backend in this build"; }

#endif

}  // namespace stele::bench::pg
