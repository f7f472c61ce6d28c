#include "storage/postgres/test_database.h"

#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <utility>

#include "storage/postgres/pg_conn.h"

namespace stele::storage::postgres::testing {

using internal::PgConn;

namespace {

std::string Quote(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

Result<std::unique_ptr<PgConn>, DbErrorGeneric> ConnectAdmin() {
  auto admin = AdminConninfo();
  if (!admin) return Unexpected(DbErrorGeneric::Uncategorized(UnavailableReason()));
  auto conn = PgConn::Connect(*admin);
  if (!conn) return Unexpected(conn.error().ToGeneric());
  return std::move(*conn);
}

// CREATE DATABASE fails while another session is still leaving the
// template; retry briefly.
Result<void, DbErrorGeneric> ExecRetrying(PgConn& conn, const std::string& sql) {
  for (int attempt = 0;; ++attempt) {
    auto done = conn.ExecScript(sql);
    if (done) return {};
    if (attempt >= 50 || done.error().sqlstate != "55006") {
      return Unexpected(done.error().ToGeneric());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

struct Template {
  std::mutex mu;
  std::string name;  // empty until made
};
Template& TheTemplate() {
  static Template* t = new Template();  // never destroyed: see atexit below
  return *t;
}

std::string UniqueName(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  return std::string(prefix) + std::to_string(::getpid()) + "_" +
         std::to_string(counter.fetch_add(1));
}

// Forwards to a PostgresPool and drops its schema afterwards.
class DroppingPool final : public DbPool {
 public:
  DroppingPool(std::unique_ptr<PostgresPool> inner, std::string schema)
      : inner_(std::move(inner)), schema_(std::move(schema)) {}
  ~DroppingPool() override {
    inner_->Close();
    inner_.reset();
    DropSchema(schema_);
  }
  Result<std::unique_ptr<DbExecutor>, DbErrorGeneric> DbExecConn() override {
    return inner_->DbExecConn();
  }
  Result<std::unique_ptr<DbConnection>, DbErrorGeneric> Connection() override {
    return inner_->Connection();
  }
  Result<std::unique_ptr<DbExternalApi>, DbErrorGeneric> ExternalApiConn() override {
    return inner_->ExternalApiConn();
  }
  Result<std::unique_ptr<DbConnectionTest>, DbErrorGeneric> ConnectionTest() override {
    return inner_->ConnectionTest();
  }
  void Close() override { inner_->Close(); }

 private:
  std::unique_ptr<PostgresPool> inner_;
  std::string schema_;
};

}  // namespace

std::optional<std::string> AdminConninfo() {
  const char* url = std::getenv("STELE_TEST_POSTGRES_URL");
  if (url == nullptr || *url == '\0') return std::nullopt;
  return std::string(url);
}

std::string UnavailableReason() {
  return "STELE_TEST_POSTGRES_URL is not set (run the tests under scripts/with_postgres.sh, "
         "or point it at a server where this role may CREATE DATABASE)";
}

bool PostgresTestsRequired() {
  const char* required = std::getenv("STELE_REQUIRE_POSTGRES_TESTS");
  return required != nullptr && std::string(required) == "1";
}

Result<std::string, DbErrorGeneric> WithDatabase(const std::string& conninfo,
                                                 const std::string& dbname) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  if (options == nullptr) {
    std::string message = error != nullptr ? error : "invalid connection string";
    if (error != nullptr) PQfreemem(error);
    return Unexpected(DbErrorGeneric::Uncategorized("cannot parse `" + conninfo + "`: " + message));
  }
  std::string out;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (std::string(o->keyword) == "dbname" || o->val == nullptr) continue;
    out += std::string(o->keyword) + "=" + Quote(o->val) + " ";
  }
  PQconninfoFree(options);
  return out + "dbname=" + Quote(dbname);
}

Result<std::string, DbErrorGeneric> CreateFreshDatabase() {
  STELE_ASSIGN_OR_RETURN(auto admin, ConnectAdmin());
  Template& tmpl = TheTemplate();
  {
    std::lock_guard lock(tmpl.mu);
    if (tmpl.name.empty()) {
      static std::once_flag registered;
      std::call_once(registered, [] {
        std::atexit([] {
          Template& t = TheTemplate();
          std::lock_guard l(t.mu);
          if (!t.name.empty()) DropDatabase(t.name);
          t.name.clear();
        });
      });
      const std::string name = UniqueName("stele_tmpl_");
      STELE_TRY(ExecRetrying(*admin, "CREATE DATABASE " + name));
      STELE_ASSIGN_OR_RETURN(std::string conninfo, WithDatabase(*AdminConninfo(), name));
      PostgresOptions options;
      options.conninfo = conninfo;
      options.max_connections = 1;
      STELE_ASSIGN_OR_RETURN(auto pool, PostgresPool::Open(options));
      pool->Close();
      pool.reset();
      tmpl.name = name;
    }
    const std::string name = UniqueName("stele_test_");
    STELE_TRY(ExecRetrying(*admin, "CREATE DATABASE " + name + " TEMPLATE " + tmpl.name));
    return name;
  }
}

void DropDatabase(const std::string& dbname) {
  auto admin = ConnectAdmin();
  if (!admin) return;
  (void)(*admin)->ExecScript("DROP DATABASE IF EXISTS " + dbname + " WITH (FORCE)");
}

Result<std::string, DbErrorGeneric> WithSearchPath(const std::string& conninfo,
                                                   const std::string& schema) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  if (options == nullptr) {
    std::string message = error != nullptr ? error : "invalid connection string";
    if (error != nullptr) PQfreemem(error);
    return Unexpected(DbErrorGeneric::Uncategorized("cannot parse `" + conninfo + "`: " + message));
  }
  std::string out;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (std::string(o->keyword) == "options" || o->val == nullptr) continue;
    out += std::string(o->keyword) + "=" + Quote(o->val) + " ";
  }
  PQconninfoFree(options);
  return out + "options=" + Quote("-c search_path=" + schema);
}

Result<std::unique_ptr<DbPool>, DbErrorGeneric> OpenFreshPool(PostgresOptions options) {
  auto admin_conninfo = AdminConninfo();
  if (!admin_conninfo) return std::unique_ptr<DbPool>();
  // A schema per pool is far cheaper than a database per pool (no file
  // copy, no checkpoint): creating it and migrating takes milliseconds.
  const std::string schema = UniqueName("stele_test_");
  {
    STELE_ASSIGN_OR_RETURN(auto admin, ConnectAdmin());
    if (auto created = admin->ExecScript("CREATE SCHEMA " + schema); !created) {
      return Unexpected(created.error().ToGeneric());
    }
  }
  STELE_ASSIGN_OR_RETURN(options.conninfo, WithSearchPath(*admin_conninfo, schema));
  // Notices of concurrent test processes on the same database stay apart.
  options.channel = schema;
  auto pool = PostgresPool::Open(options);
  if (!pool) {
    DropSchema(schema);
    return Unexpected(std::move(pool).error());
  }
  return std::unique_ptr<DbPool>(new DroppingPool(std::move(*pool), schema));
}

void DropSchema(const std::string& schema) {
  auto admin = ConnectAdmin();
  if (!admin) return;
  (void)(*admin)->ExecScript("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
}

}  // namespace stele::storage::postgres::testing
